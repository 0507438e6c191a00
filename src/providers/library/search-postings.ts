/** The search engine's posting lists (search-engine.ts). */
import type { TermCounts } from './search-aggregates.js';

/**
 * A growable posting list: document numbers in increasing order with their weighted term
 * frequency. Most terms of a real library occur once (file numbers, rare names), so a single
 * entry lives in two fields; typed arrays exist from the second entry on, or when a query
 * reads the list (`view`).
 */
export class Postings {
  docs: Int32Array = EMPTY_I32;
  tf: Uint16Array = EMPTY_U16;
  n = 1;
  /** Facet counts of the term's live documents, for frequent terms (SearchEngine.countFrequentTerms). */
  counts: TermCounts | null = null;
  /** Cached live entry count, valid while the engine's removal count is `liveAt` and n is `liveN`. */
  live = 0;
  liveAt = -1;
  liveN = -1;
  private d0: number;
  private t0: number;

  constructor(doc: number, tf: number) {
    this.d0 = doc;
    this.t0 = tf;
  }

  push(doc: number, tf: number): void {
    if (this.n === this.docs.length || this.docs.length === 0) {
      const cap = Math.max(4, this.n * 2);
      const docs = new Int32Array(cap);
      const t = new Uint16Array(cap);
      if (this.docs.length === 0) {
        docs[0] = this.d0;
        t[0] = this.t0;
      } else {
        docs.set(this.docs);
        t.set(this.tf);
      }
      this.docs = docs;
      this.tf = t;
    }
    this.docs[this.n] = doc;
    this.tf[this.n] = tf;
    this.n++;
  }

  /** Copies the entries into `docs`/`tf` at `at` (snapshot export). */
  copyTo(docs: Int32Array, tf: Uint16Array, at: number): void {
    if (this.docs.length === 0) {
      docs[at] = this.d0;
      tf[at] = this.t0;
      return;
    }
    docs.set(this.docs.subarray(0, this.n), at);
    tf.set(this.tf.subarray(0, this.n), at);
  }

  /** A list over existing arrays (snapshot import); the first push beyond them copies. */
  static over(docs: Int32Array, tf: Uint16Array): Postings {
    const p = new Postings(docs[0]!, tf[0]!);
    p.docs = docs;
    p.tf = tf;
    p.n = docs.length;
    return p;
  }

  /** Drops the growth slack (after a bulk build). */
  trim(): void {
    if (this.docs.length > this.n) {
      this.docs = this.docs.slice(0, this.n);
      this.tf = this.tf.slice(0, this.n);
    }
  }

  /** The list with its typed arrays present (a single entry is materialised on first read). */
  view(): this {
    if (this.docs.length === 0 && this.n > 0) {
      this.docs = Int32Array.of(this.d0);
      this.tf = Uint16Array.of(this.t0);
    }
    return this;
  }

  /** Index of `doc`, or -1 (binary search). */
  find(doc: number): number {
    let lo = 0;
    let hi = this.n - 1;
    const docs = this.docs;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const v = docs[mid]!;
      if (v < doc) lo = mid + 1;
      else if (v > doc) hi = mid - 1;
      else return mid;
    }
    return -1;
  }
}
const EMPTY_I32 = new Int32Array(0);
const EMPTY_U16 = new Uint16Array(0);
