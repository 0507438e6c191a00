/**
 * What the search engine keeps beside the posting list of a frequent term (one in a large share
 * of the library), current with every upsert and removal:
 *
 * - `counts`: its live documents per combination and per combination and keyword (ComboCounts),
 *   so that a one-word search needs no counting pass for column filters or one keyword filter;
 * - `bits`/`ranks`: a bitmap of its documents with a rank directory (the entries before each
 *   32-document word), so that whether a document is in the list, and at which entry, costs a
 *   word read and a popcount: two frequent words intersect a word of 32 documents at a time
 *   instead of one posting at a time (scoring.ts's andLists);
 * - `maxTf`/`minDl`/`minRow`: per block of BLOCK entries the largest frequency, the shortest
 *   document and the smallest row id: an upper bound on the BM25 key of any entry in the block
 *   (BM25 grows with the frequency and shrinks with the length), so that a page is ranked by
 *   scoring only the blocks that can still reach it ("block-max" in the literature).
 *
 * At a million documents the bitmap and its ranks cost ≈ 250 KiB and the counts up to 4 MiB
 * (1.9 MiB for the benchmark's `photo`); the engine keeps them for the few dozen terms above
 * TERM_COUNTS_MIN_DOCS within its budget, and for large merged prefix lists (engine.ts).
 */
import { ComboCounts } from './aggregates.js';

/** The entries of a posting list (postings.ts) that build() reads. */
export interface PostingEntries {
  readonly docs: Int32Array;
  readonly tf: Uint16Array;
  readonly n: number;
}

/** Entries per block of `maxTf`/`minDl`. */
export const BLOCK = 64;
const BLOCK_SHIFT = 6;

/** Entries of one list's counts before they are given up (ComboCounts): 4 MiB. */
const COUNTS_BUDGET = 1 << 20;

export class FrequentList {
  readonly counts = new ComboCounts(COUNTS_BUDGET);
  /** Bit d set for every entry's document d (dead documents too: callers check `alive`). */
  bits: Int32Array;
  /**
   * ranks[w]: entries in the words before w. Only read for a word holding a set bit, and the list
   * only grows at its end, so an append sets the rank of a new last word and nothing else.
   */
  ranks: Int32Array;
  maxTf: Uint16Array;
  minDl: Float32Array;
  /** Per block, its smallest row id: a block whose bound only ties the page's last key can still lose on the row id. */
  minRow: Int32Array;

  private constructor(words: number, blocks: number) {
    this.bits = new Int32Array(words);
    this.ranks = new Int32Array(words);
    this.maxTf = new Uint16Array(blocks);
    this.minDl = new Float32Array(blocks).fill(Infinity);
    this.minRow = new Int32Array(blocks).fill(0x7fffffff);
  }

  /** The extras of list p (its counts are the engine's to fill: they need facet rows). */
  static build(p: PostingEntries, dl: Float32Array, rowid: Int32Array): FrequentList {
    const f = new FrequentList(p.n ? (p.docs[p.n - 1]! >>> 5) + 1 : 0, (p.n + BLOCK - 1) >>> BLOCK_SHIFT);
    for (let i = 0; i < p.n; i++) f.set(i, p.docs[i]!, p.tf[i]!, dl[p.docs[i]!]!, rowid[p.docs[i]!]!);
    return f;
  }

  /** Records the list's entry `at` (its last): document d with frequency tf, length dl and row id. */
  add(at: number, d: number, tf: number, dl: number, row: number): void {
    const w = d >>> 5;
    if (w >= this.bits.length) {
      this.bits = widen(this.bits, w + 1);
      this.ranks = widen(this.ranks, w + 1);
    }
    const b = at >>> BLOCK_SHIFT;
    if (b >= this.maxTf.length) {
      const maxTf = new Uint16Array(Math.max(b + 1, this.maxTf.length * 2));
      maxTf.set(this.maxTf);
      const minDl = new Float32Array(maxTf.length).fill(Infinity);
      minDl.set(this.minDl);
      const minRow = new Int32Array(maxTf.length).fill(0x7fffffff);
      minRow.set(this.minRow);
      this.maxTf = maxTf;
      this.minDl = minDl;
      this.minRow = minRow;
    }
    this.set(at, d, tf, dl, row);
  }

  /** 4-byte entries held (for the engine's memory budgets). */
  get size(): number {
    return this.counts.size + 2 * this.bits.length + 3 * this.maxTf.length;
  }

  private set(at: number, d: number, tf: number, dl: number, row: number): void {
    const w = d >>> 5;
    if (this.bits[w] === 0) this.ranks[w] = at; // the word's first entry
    this.bits[w]! |= 1 << (d & 31);
    const b = at >>> BLOCK_SHIFT;
    if (tf > this.maxTf[b]!) this.maxTf[b] = tf;
    if (dl < this.minDl[b]!) this.minDl[b] = dl;
    if (row < this.minRow[b]!) this.minRow[b] = row;
  }
}

function widen(a: Int32Array, size: number): Int32Array {
  const b = new Int32Array(Math.max(size, a.length * 2));
  b.set(a);
  return b;
}
