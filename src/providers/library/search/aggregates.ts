/**
 * What the search engine keeps about the whole library and its most frequent words, current with
 * every upsert and removal, so that the largest result sets need no counting pass:
 *
 * - a search without words (the picker's "everything, filtered by type/extension/year/
 *   orientation") takes its facets and total from a few hundred per-combination counts and its
 *   newest-first page from a walk down a date order (ComboCounts, DateOrder);
 * - a one-word search for a word in a large share of the library (or a prefix with a merged
 *   list) takes its facets and total from that list's counts (frequent.ts), so it only
 *   ranks its page.
 *
 * At a million assets the first went from a 15–20 ms pass to 1–2 ms, the second from 10–13 ms
 * to under 1 (docs/benchmarks.md). Scoped searches (a folder, an account's folder limits) and
 * several words still take the engine's full pass over their matches: their sets are not known
 * in advance.
 */

/** Live documents and their keyword counts, per combination code (documents.ts's facetRows). */
export class ComboCounts {
  /** Per combination: live documents. */
  live = new Int32Array(16);
  /** Per keyword code: live documents, all combinations together. */
  all: Int32Array<ArrayBuffer> = NO_COUNTS;
  /**
   * Per combination: live documents per keyword code (created on the combination's first
   * document). The table grows towards combinations × keyword values; past `budget` entries (a
   * library with thousands of combinations and tens of thousands of keywords) it is dropped for
   * good (null), and a query whose keyword facet depends on its column filters takes the
   * engine's pass, as before.
   */
  byCombo: Int32Array<ArrayBuffer>[] | null = [];
  private entries = 0;

  constructor(private readonly budget: number) {}

  /** Entries held. */
  get size(): number {
    return this.live.length + this.all.length + this.entries;
  }

  /** Adds (sign 1) or removes (sign −1) one document of `combo` with the keyword codes `kws[0..n)`. */
  add(combo: number, kws: ArrayLike<number>, n: number, sign: 1 | -1): void {
    if (combo >= this.live.length) this.live = widen(this.live, combo + 1);
    this.live[combo]! += sign;
    this.all = addKeywords(this.all, kws, n, sign);
    if (this.byCombo === null) return;
    const before = this.byCombo[combo] ?? NO_COUNTS;
    const after = addKeywords(before, kws, n, sign);
    this.entries += after.length - before.length;
    if (this.entries > this.budget) {
      this.byCombo = null;
      this.entries = 0;
    } else this.byCombo[combo] = after;
  }
}

const NO_COUNTS: Int32Array<ArrayBuffer> = new Int32Array(0);

/** `counts` with `sign` added at each keyword code of kws[0..n): the same array, or a wider copy. */
function addKeywords(counts: Int32Array<ArrayBuffer>, kws: ArrayLike<number>, n: number, sign: 1 | -1): Int32Array<ArrayBuffer> {
  for (let i = 0; i < n; i++) {
    const k = kws[i]!;
    if (k >= counts.length) counts = widen(counts, k + 1);
    counts[k]! += sign;
  }
  return counts;
}

/** `a` copied into a zeroed array of at least `size` entries (doubling, so growth is amortised). */
function widen(a: Int32Array<ArrayBuffer>, size: number): Int32Array<ArrayBuffer> {
  const b = new Int32Array(Math.max(size, a.length * 2, 16));
  b.set(a);
  return b;
}

/**
 * Live document numbers grouped by combination and, within one, newest first (modification time
 * descending, row id ascending), as of the moment the order was built. A filtered page then reads
 * only the groups that pass, each from its front, and stops in a group at the first document
 * older than the page's last. Documents numbered from `builtN` on came later and are not in it; a
 * document that died since is still listed (callers skip dead ones). The engine rebuilds the
 * order once the late documents are many (`stale`).
 */
export class DateOrder {
  private constructor(
    readonly docs: Int32Array,
    /** Group c is docs[starts[c] .. starts[c + 1]). */
    readonly starts: Int32Array,
    readonly builtN: number,
  ) {}

  /**
   * A radix sort, with the keys moving alongside the documents so that every pass reads front to
   * back: by the time's upper 32 bits (a 17-minute resolution for today's dates), then by
   * combination, and the few runs left equal sorted exactly by time and row id. 0.1–0.3 s at a
   * million documents, where a comparison sort calling back into JavaScript takes most of a second.
   */
  static build(n: number, alive: Uint8Array, mtime: Float64Array, rowid: Int32Array, comboOf: (d: number) => number, combos: number): DateOrder {
    let live = 0;
    for (let d = 0; d < n; d++) live += alive[d]!;
    // Per position: the document, the time as two words made to order as the numbers do and then
    // inverted (descending), the row id, the combination. They move together.
    let cols = [0, 1, 2, 3, 4].map(() => new Int32Array(live));
    const [doc, hi, lo, row, combo] = cols as [Int32Array, Int32Array, Int32Array, Int32Array, Int32Array];
    const bits = new Float64Array(1);
    const words = new Int32Array(bits.buffer);
    for (let d = 0, i = 0; d < n; d++) {
      if (!alive[d]) continue;
      bits[0] = mtime[d]!;
      const negative = words[1]! < 0;
      doc[i] = d;
      hi[i] = negative ? words[1]! : ~(words[1]! | 0x80000000);
      lo[i] = negative ? words[0]! : ~words[0]!;
      row[i] = rowid[d]!;
      combo[i++] = comboOf(d);
    }
    const sortBy = (k: number, shift: number) => {
      const key = cols[k]!;
      const at = digitOffsets(key, shift);
      if (at === null) return;
      const next = cols.map(() => new Int32Array(live));
      for (let c = 0; c < cols.length; c++) scatter(key, shift, at.slice(), cols[c]!, next[c]!);
      cols = next;
    };
    for (let shift = 0; shift < 32; shift += DIGIT) sortBy(1, shift);
    for (let shift = 0; combos > 1 << shift; shift += DIGIT) sortBy(4, shift);
    // Runs of equal (combination, upper word) in exact order by the lower word and the row id.
    const [d1, h1, l1, r1, c1] = cols as [Int32Array, Int32Array, Int32Array, Int32Array, Int32Array];
    for (let i = 1; i < live; i++) {
      if (h1[i] !== h1[i - 1] || c1[i] !== c1[i - 1]) continue;
      const d = d1[i]!;
      const l = l1[i]!;
      const r = r1[i]!;
      let j = i;
      for (; j > 0 && h1[j - 1] === h1[i] && c1[j - 1] === c1[i] && ((l1[j - 1]! >>> 0) > (l >>> 0) || (l1[j - 1] === l && r1[j - 1]! > r)); j--) {
        d1[j] = d1[j - 1]!;
        l1[j] = l1[j - 1]!;
        r1[j] = r1[j - 1]!;
      }
      d1[j] = d;
      l1[j] = l;
      r1[j] = r;
    }
    const starts = new Int32Array(combos + 1);
    for (let i = 0; i < live; i++) starts[c1[i]! + 1]!++;
    for (let c = 0; c < combos; c++) starts[c + 1]! += starts[c]!;
    return new DateOrder(d1, starts, n);
  }

  stale(n: number): boolean {
    return n - this.builtN > Math.max(4096, this.docs.length >>> 5);
  }

  /** The first position of group c after the keyset position (key, row). */
  after(c: number, key: number, row: number, mtime: Float64Array, rowid: Int32Array): number {
    let lo = this.starts[c]!;
    let hi = this.starts[c + 1]!;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const d = this.docs[mid]!;
      const m = mtime[d]!;
      if (m > key || (m === key && rowid[d]! <= row)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

const DIGIT = 11;
const RADIX = 1 << DIGIT;

/** One stable counting-sort pass: `from` reordered into `to` by the digit of `key` at `shift`. */
function scatter(key: Int32Array, shift: number, at: Int32Array, from: Int32Array, to: Int32Array): void {
  for (let i = 0, n = key.length; i < n; i++) to[at[(key[i]! >>> shift) & (RADIX - 1)]!++] = from[i]!;
}

/** Where each value of the key's digit at `shift` starts in a stable order; null when all are one value. */
function digitOffsets(key: Int32Array, shift: number): Int32Array | null {
  const count = new Int32Array(RADIX + 1);
  for (let i = 0; i < key.length; i++) count[((key[i]! >>> shift) & (RADIX - 1)) + 1]!++;
  if (count.includes(key.length)) return null;
  for (let v = 0; v < RADIX; v++) count[v + 1]! += count[v]!;
  return count;
}
