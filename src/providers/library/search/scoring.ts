/**
 * The candidate set of a query and its BM25 scores: the word passes that make it (the first word)
 * and narrow it (each later word), over posting lists and the document table's columns, in
 * scratch arrays reused from query to query (the engine is synchronous: one query at a time).
 * The candidates come out in document order for the counting pass (collect.ts).
 *
 * The query's hot loops each live in a small method of their own. V8 compiles a long-running loop
 * on the stack (OSR) and caches that code; code after the loop that had not yet run when it was
 * compiled then deoptimised on every call ("insufficient type feedback", 25 deopts in 30 searches
 * when the loops shared `collect`), and the loop ran unoptimised. One loop per method with nothing
 * cold after it keeps them compiled. Per-call closures are avoided in them for the same reason (a
 * new closure is a "wrong call target").
 */
import type { DocumentTable } from './documents.js';
import { MAX_TF, type Postings } from './postings.js';
import type { RankParams } from './types.js';

export const K1 = 1.2;
export const B = 0.75;

export class Scorer {
  /** Per document: the summed weighted frequency of the word being spread. */
  private tfDense = new Float32Array(0);
  /** One bit per document, all clear between queries. */
  private seen = new Int32Array(0);
  /** Per word of `seen`: how many bits are set in the words before it (intersectList). */
  private before = new Int32Array(0);
  /** The candidates (document numbers, in order) and their scores so far. */
  cand = new Int32Array(0);
  candScore = new Float64Array(0);

  constructor(private readonly table: DocumentTable) {}

  /**
   * The live documents of several lists with their summed frequencies, in order, in cand and
   * candScore; −1 when a sum exceeds MAX_TF.
   */
  mergeLists(lists: Postings[]): number {
    for (const p of lists) this.spreadAndMark(p);
    const k = this.drainMarked(0, 0, false);
    for (let i = 0; i < k; i++) if (this.candScore[i]! > MAX_TF) return -1;
    return k;
  }

  /** Sizes the scratch arrays for `size` documents (before each query). */
  scratch(size: number): void {
    if (this.tfDense.length < size) {
      this.tfDense = new Float32Array(Math.max(size, this.tfDense.length * 2));
      this.seen = new Int32Array((this.tfDense.length + 31) >>> 5);
      this.before = new Int32Array(this.seen.length);
    }
    if (this.cand.length < size) {
      this.cand = new Int32Array(Math.max(size, this.cand.length * 2));
      this.candScore = new Float64Array(this.cand.length);
    }
  }

  /** Every live document, keyed by modification time (a search without words, in collect's pass). */
  allByDate(): number {
    const { cand, candScore } = this;
    const { alive, mtime } = this.table;
    let k = 0;
    for (let d = 0, n = this.table.n; d < n; d++) {
      if (alive[d] === 0) continue;
      cand[k] = d;
      candScore[k++] = mtime[d]!;
    }
    return k;
  }


  /**
   * Scores one query word into the candidates: the first word makes them, a later word keeps
   * those it also matches. A later word's single posting list is probed or intersected as a
   * bitmap; several (a prefix) have their frequencies spread into a dense array.
   */
  applyWord(lists: Postings[], first: boolean, count: number, avgdl: number, word: number, idf: number[], fixed: RankParams | null): number {
    // The constants of saturation().
    const c0 = K1 * (1 - B);
    const c1 = (K1 * B) / avgdl;
    const idfOf = (df: number) => (idf[word] = fixed?.idf[word] ?? this.idf(df));
    if (!first && lists.length === 1) {
      // Few candidates against a long list: a binary search each; otherwise a bitmap of the list
      // (a frequent list has one).
      const p = lists[0]!;
      const idf = idfOf(this.table.liveCount(p));
      return count * 20 < p.n && p.frequent === null ? this.probe(p, count, idf, c0, c1) : this.intersectList(p, count, idf, c0, c1);
    }
    if (first && lists.length === 1) {
      // The live entries are the word's document frequency: score first, scale by idf after.
      const k = this.firstList(lists[0]!, c0, c1);
      this.scale(k, idfOf(k));
      return k;
    }
    // Dense: spread the word's (summed, for a prefix matching several terms) frequencies.
    if (first) {
      // The candidates must come out in document order: collect() then reads the per-document
      // rows front to back, where list order misses the cache on nearly every document. A bitmap
      // of the documents seen gives the order for n/32 word reads.
      for (const p of lists) this.spreadAndMark(p);
      const k = this.drainMarked(c0, c1, true);
      this.scale(k, idfOf(k));
      return k;
    }
    let df = 0;
    for (const p of lists) df += this.spread(p);
    const k = this.intersectSpread(count, idfOf(df), c0, c1);
    for (const p of lists) this.clearSpread(p);
    return k;
  }

  /** Keeps the candidates in the list p (binary search per candidate), adding their scores. */
  private probe(p: Postings, count: number, idf: number, c0: number, c1: number): number {
    const { cand, candScore } = this;
    const { dl } = this.table;
    const tfs = p.tf;
    let k = 0;
    for (let c = 0; c < count; c++) {
      const d = cand[c]!;
      const at = p.find(d);
      if (at < 0) continue;
      const tf = tfs[at]!;
      cand[k] = d;
      candScore[k++] = candScore[c]! + idf * saturation(tf, dl[d]!, c0, c1);
    }
    return k;
  }

  /**
   * Keeps the candidates in the list p, adding their scores: the list's documents as a bitmap, with
   * the number of its documents before each 32-document word, so that a candidate's entry in the
   * list is that count plus a popcount (two lists of half a million: ≈ 8.5 → 6.5 ms against
   * spreading the list into tfDense and clearing it; a plain merge took ≈ 9, its branches mispredict).
   * A frequent list has them already (FrequentList).
   */
  private intersectList(p: Postings, count: number, idf: number, c0: number, c1: number): number {
    const f = p.frequent;
    if (f !== null) return this.keepMarked(f.bits, f.ranks, p.tf, count, idf, c0, c1);
    this.markList(p);
    const words = (this.table.n + 31) >>> 5;
    this.rankWords(words);
    const k = this.keepMarked(this.seen, this.before, p.tf, count, idf, c0, c1);
    this.seen.fill(0, 0, words);
    return k;
  }

  /** Sets the bits of a list's documents in `seen`. */
  private markList(p: Postings): void {
    const { seen } = this;
    const docs = p.docs;
    for (let i = 0, n = p.n; i < n; i++) seen[docs[i]! >>> 5]! |= 1 << (docs[i]! & 31);
  }

  /** `before[w]`: the bits set in the words of `seen` before w. */
  private rankWords(words: number): void {
    const { seen, before } = this;
    for (let w = 0, acc = 0; w < words; w++) {
      before[w] = acc;
      acc += popcount(seen[w]!);
    }
  }

  /**
   * Keeps the candidates whose bit is set in `bits`, adding the score of their entry in `tfs`, found
   * by `ranks` (intersectList). The candidates are in document order: past the bitmap's end, none is in it.
   */
  private keepMarked(bits: Int32Array, ranks: Int32Array, tfs: Uint16Array, count: number, idf: number, c0: number, c1: number): number {
    const { cand, candScore } = this;
    const { dl } = this.table;
    const words = bits.length;
    let k = 0;
    for (let c = 0; c < count; c++) {
      const d = cand[c]!;
      const w = d >>> 5;
      if (w >= words) break;
      const bit = 1 << (d & 31);
      const word = bits[w]!;
      if ((word & bit) === 0) continue;
      const tf = tfs[ranks[w]! + popcount(word & (bit - 1))]!;
      cand[k] = d;
      candScore[k++] = candScore[c]! + idf * saturation(tf, dl[d]!, c0, c1);
    }
    return k;
  }

  /**
   * The live documents of two frequent lists as the candidates, scored for both words (a's score
   * first, as firstList and keepMarked would add them): their bitmaps ANDed 32 documents at a time,
   * each entry found by its list's rank directory. Two words in half a million documents each:
   * ≈ 14 → 5 ms against reading one list and probing the other.
   */
  andLists(a: Postings, b: Postings, ia: number, ib: number, c0: number, c1: number): number {
    const { cand, candScore } = this;
    const { dl, alive } = this.table;
    const { bits: aBits, ranks: aRanks } = a.frequent!;
    const { bits: bBits, ranks: bRanks } = b.frequent!;
    const aTf = a.tf;
    const bTf = b.tf;
    let k = 0;
    for (let w = 0, words = Math.min(aBits.length, bBits.length); w < words; w++) {
      const wa = aBits[w]!;
      const wb = bBits[w]!;
      let both = wa & wb;
      while (both !== 0) {
        const low = both & -both;
        both ^= low;
        const d = (w << 5) | (31 - Math.clz32(low));
        if (alive[d] === 0) continue;
        const len = dl[d]!;
        const ta = aTf[aRanks[w]! + popcount(wa & (low - 1))]!;
        const tb = bTf[bRanks[w]! + popcount(wb & (low - 1))]!;
        cand[k] = d;
        candScore[k++] = saturation(ta, len, c0, c1) * ia + ib * saturation(tb, len, c0, c1);
      }
    }
    return k;
  }

  /** The live documents of one list as the candidates, scored without idf. */
  private firstList(p: Postings, c0: number, c1: number): number {
    const { cand, candScore } = this;
    const { dl, alive } = this.table;
    const { docs, tf: tfs } = p;
    let k = 0;
    for (let i = 0, n = p.n; i < n; i++) {
      const d = docs[i]!;
      if (alive[d] === 0) continue;
      const tf = tfs[i]!;
      cand[k] = d;
      candScore[k++] = saturation(tf, dl[d]!, c0, c1);
    }
    return k;
  }

  private scale(count: number, by: number): void {
    const candScore = this.candScore;
    for (let c = 0; c < count; c++) candScore[c]! *= by;
  }

  /** Adds a list's live frequencies into tfDense and marks its documents in `seen`. */
  private spreadAndMark(p: Postings): void {
    const { tfDense, seen } = this;
    const { docs, tf: tfs } = p;
    // Dead documents too: drainMarked drops them, reading `alive` in order rather than at random.
    for (let i = 0, n = p.n; i < n; i++) {
      const d = docs[i]!;
      tfDense[d]! += tfs[i]!;
      seen[d >>> 5]! |= 1 << (d & 31);
    }
  }

  /**
   * The marked live documents, in order, as the candidates, scored without idf (or, not
   * `saturated`, with their summed frequency); clears both arrays.
   */
  private drainMarked(c0: number, c1: number, saturated: boolean): number {
    const { cand, candScore, tfDense, seen } = this;
    const { dl, alive } = this.table;
    let k = 0;
    for (let w = 0, words = (this.table.n + 31) >>> 5; w < words; w++) {
      let bits = seen[w]!;
      if (bits === 0) continue;
      seen[w] = 0;
      do {
        const low = bits & -bits;
        bits ^= low;
        const d = (w << 5) | (31 - Math.clz32(low));
        const tf = tfDense[d]!;
        tfDense[d] = 0;
        if (alive[d] === 0) continue;
        cand[k] = d;
        candScore[k++] = saturated ? saturation(tf, dl[d]!, c0, c1) : tf;
      } while (bits !== 0);
    }
    return k;
  }

  /** Adds a list's live frequencies into tfDense; the number of documents it added first. */
  private spread(p: Postings): number {
    const { tfDense } = this;
    const { alive } = this.table;
    const { docs, tf: tfs } = p;
    let df = 0;
    for (let i = 0, n = p.n; i < n; i++) {
      const d = docs[i]!;
      if (alive[d] === 0) continue;
      if (tfDense[d] === 0) df++;
      tfDense[d]! += tfs[i]!;
    }
    return df;
  }

  /** Keeps the candidates with a frequency in tfDense, adding their scores. */
  private intersectSpread(count: number, idf: number, c0: number, c1: number): number {
    const { cand, candScore, tfDense } = this;
    const { dl } = this.table;
    let k = 0;
    for (let c = 0; c < count; c++) {
      const d = cand[c]!;
      const tf = tfDense[d]!;
      if (tf === 0) continue;
      cand[k] = d;
      candScore[k++] = candScore[c]! + idf * saturation(tf, dl[d]!, c0, c1);
    }
    return k;
  }

  private clearSpread(p: Postings): void {
    const { tfDense } = this;
    const docs = p.docs;
    for (let i = 0, n = p.n; i < n; i++) tfDense[docs[i]!] = 0;
  }

  /** BM25's inverse document frequency of a word in df live documents. */
  idf(df: number): number {
    return bm25Idf(this.table.live, df);
  }

  /** Live documents in the visible folders that are in any of the lists (each counted once). */
  visibleDf(lists: Postings[], visible: Uint8Array): number {
    const { seen } = this;
    const { alive, folder } = this.table;
    let df = 0;
    if (lists.length === 1) {
      const { docs, n } = lists[0]!;
      for (let i = 0; i < n; i++) {
        const d = docs[i]!;
        df += alive[d]! & visible[folder[d]!]!;
      }
      return df;
    }
    // A prefix's terms share documents: a bit per document counts each once (cleared after).
    for (const p of lists) {
      const { docs, n } = p;
      for (let i = 0; i < n; i++) {
        const d = docs[i]!;
        const bit = 1 << (d & 31);
        if (alive[d] === 0 || visible[folder[d]!] === 0 || (seen[d >>> 5]! & bit) !== 0) continue;
        seen[d >>> 5]! |= bit;
        df++;
      }
    }
    for (const p of lists) for (let i = 0; i < p.n; i++) seen[p.docs[i]! >>> 5] = 0;
    return df;
  }}

/**
 * BM25's term-frequency saturation tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl)), with c0 = k1·(1 − b)
 * and c1 = k1·b / avgdl hoisted out of the loops. Every path computes a document's key with it,
 * so that keys (and the keyset cursors made of them) agree to the last bit.
 */
export function saturation(tf: number, dlen: number, c0: number, c1: number): number {
  return (tf * (K1 + 1)) / (tf + c0 + c1 * dlen);
}

/** Set bits of a 32-bit word. */
function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  x = (x + (x >>> 4)) & 0x0f0f0f0f;
  return Math.imul(x, 0x01010101) >>> 24;
}

/** BM25's inverse document frequency of a word in df of n documents. */
export function bm25Idf(n: number, df: number): number {
  return Math.log(1 + (n - df + 0.5) / (df + 0.5));
}
