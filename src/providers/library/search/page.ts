/** What a search returns besides its total: the page (a bounded heap) and each facet's largest options. */

/** The `limit` largest counts (count descending, value ascending), without sorting them all. */
export function topOptions(counts: Int32Array, values: string[], limit: number): { value: string; count: number }[] {
  const top: { value: string; count: number }[] = [];
  const before = (a: { value: string; count: number }, b: { value: string; count: number }) => a.count > b.count || (a.count === b.count && a.value < b.value);
  for (let c = 1; c < counts.length; c++) {
    const n = counts[c]!;
    if (n === 0) continue;
    if (top.length === limit && n < top[limit - 1]!.count) continue;
    const o = { value: values[c]!, count: n };
    if (top.length === limit && !before(o, top[limit - 1]!)) continue;
    let i = top.length < limit ? top.length : limit - 1;
    if (top.length < limit) top.push(o);
    while (i > 0 && before(o, top[i - 1]!)) {
      top[i] = top[i - 1]!;
      i--;
    }
    top[i] = o;
  }
  return top;
}

/** The best `k` (key descending, row id ascending) of a stream, in a binary heap whose top is the worst kept. */
export class TopK {
  private readonly keys: Float64Array;
  private readonly ids: Int32Array;
  private n = 0;
  /**
   * The key a newcomer must reach: −Infinity until k are kept, then the worst kept key. Callers
   * test it before doing the work an offer needs (such as reading the row id).
   */
  threshold = -Infinity;

  /** The row id of the worst kept (meaningful once k are kept, with `threshold`). */
  get worstId(): number {
    return this.ids[0]!;
  }

  get capacity(): number {
    return this.k;
  }

  constructor(private readonly k: number) {
    this.keys = new Float64Array(Math.max(1, k));
    this.ids = new Int32Array(Math.max(1, k));
  }

  /** a ranks below b. */
  private worse(ka: number, ia: number, kb: number, ib: number): boolean {
    return ka < kb || (ka === kb && ia > ib);
  }

  offer(key: number, id: number): void {
    if (this.k <= 0) return;
    const { keys, ids } = this;
    if (this.n < this.k) {
      let i = this.n++;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (!this.worse(key, id, keys[p]!, ids[p]!)) break;
        keys[i] = keys[p]!;
        ids[i] = ids[p]!;
        i = p;
      }
      keys[i] = key;
      ids[i] = id;
      if (this.n === this.k) this.threshold = keys[0]!;
      return;
    }
    if (!this.worse(keys[0]!, ids[0]!, key, id)) return;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= this.n) break;
      const r = l + 1;
      const w = r < this.n && this.worse(keys[r]!, ids[r]!, keys[l]!, ids[l]!) ? r : l;
      if (!this.worse(keys[w]!, ids[w]!, key, id)) break;
      keys[i] = keys[w]!;
      ids[i] = ids[w]!;
      i = w;
    }
    keys[i] = key;
    ids[i] = id;
    this.threshold = keys[0]!;
  }

  sorted(): { keys: number[]; rowids: number[] } {
    const idx = [...Array(this.n).keys()].sort((a, b) => (this.worse(this.keys[a]!, this.ids[a]!, this.keys[b]!, this.ids[b]!) ? 1 : -1));
    return { keys: idx.map((i) => this.keys[i]!), rowids: idx.map((i) => this.ids[i]!) };
  }
}
