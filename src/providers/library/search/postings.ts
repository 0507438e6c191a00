/** The search engine's posting lists (engine.ts). */
import type { FrequentList } from './frequent.js';

/** The largest weighted term frequency a posting holds (16 bits). */
export const MAX_TF = 65_535;

/**
 * A growable posting list: document numbers in increasing order with their weighted term
 * frequency. Only terms with more than SMALL_MAX postings have one of their own: a term that
 * occurs once (most of a real library's: file numbers, rare names) or a few times keeps its
 * postings in the term dictionary's columns (terms.ts), and a query reading it gets a list made
 * for that query (TermDictionary.listOf).
 */
export class Postings {
  docs: Int32Array;
  tf: Uint16Array;
  n: number;
  /** Counts, bitmap and block bounds of a frequent term (SearchEngine.indexFrequentTerms). */
  frequent: FrequentList | null = null;
  /** Cached live entry count, valid while the engine's removal count is `liveAt` and n is `liveN`. */
  live = 0;
  liveAt = -1;
  liveN = -1;

  private constructor(docs: Int32Array, tf: Uint16Array, n: number) {
    this.docs = docs;
    this.tf = tf;
    this.n = n;
  }

  push(doc: number, tf: number): void {
    if (this.n === this.docs.length) {
      const cap = Math.max(4, this.n * 2);
      const docs = new Int32Array(cap);
      const t = new Uint16Array(cap);
      docs.set(this.docs);
      t.set(this.tf);
      this.docs = docs;
      this.tf = t;
    }
    this.docs[this.n] = doc;
    this.tf[this.n] = tf;
    this.n++;
  }

  /** A list over existing arrays (a snapshot's, a merged list, a one-posting term's): the first push beyond them copies. */
  static over(docs: Int32Array, tf: Uint16Array): Postings {
    return new Postings(docs, tf, docs.length);
  }

  /** Drops the growth slack (after a bulk build). */
  trim(): void {
    if (this.docs.length > this.n) {
      this.docs = this.docs.slice(0, this.n);
      this.tf = this.tf.slice(0, this.n);
    }
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

/**
 * Merged posting lists of query prefixes that match many terms ("quin" matches 1,458 terms and 1.1
 * million postings at a million assets), built the first time a search needs one and from then
 * on kept current by the engine's upsert (every new document's terms are looked up by their
 * prefixes here). A merged list is an ordinary list of the prefix's documents with their summed
 * frequencies, so it ranks and scores exactly as spreading its terms would, and a frequent one
 * gets a FrequentList like a frequent term. The least recently used go first past `budget` entries;
 * the cache is dropped when document numbers change (SearchEngine.compact) and is not saved in
 * snapshots.
 */
export class MergedPrefixes {
  private readonly lists = new Map<string, Merged>();
  /** The longest cached prefix: a term's longer prefixes need no lookup. */
  private longest = 0;

  get size(): number {
    return this.lists.size;
  }

  /** The cached list of `prefix`, marked as just used. */
  get(prefix: string): Merged | undefined {
    const m = this.lists.get(prefix);
    if (m) {
      this.lists.delete(prefix);
      this.lists.set(prefix, m);
    }
    return m;
  }

  /**
   * Keeps `list` as prefix's list (its terms holding `postings` postings in all), dropping the
   * least recently used past `budget` 4-byte entries in all.
   */
  set(prefix: string, list: Postings, postings: number, budget: number): void {
    this.lists.delete(prefix);
    let entries = cost(list);
    for (const m of this.lists.values()) entries += cost(m.list);
    for (const [k, m] of this.lists) {
      if (entries <= budget) break;
      this.lists.delete(k);
      entries -= cost(m.list);
    }
    if (entries > budget) return;
    this.lists.set(prefix, { list, postings });
    this.longest = Math.max(this.longest, prefix.length);
  }

  delete(prefix: string): void {
    this.lists.delete(prefix);
  }

  clear(): void {
    this.lists.clear();
    this.longest = 0;
  }

  *values(): IterableIterator<Postings> {
    for (const m of this.lists.values()) yield m.list;
  }

  /** Adds a new document's term, with its weighted frequency `tf`, under every cached prefix of it (in `into`). */
  prefixesOf(term: string, tf: number, into: Map<string, { tf: number; terms: number }>): void {
    for (let len = 1, max = Math.min(term.length, this.longest); len <= max; len++) {
      const prefix = term.slice(0, len);
      if (!this.lists.has(prefix)) continue;
      const sum = into.get(prefix);
      if (sum) {
        sum.tf += tf;
        sum.terms++;
      } else into.set(prefix, { tf, terms: 1 });
    }
  }

  /** The cached entry of `prefix` without marking it used (upkeep). */
  peek(prefix: string): Merged | undefined {
    return this.lists.get(prefix);
  }
}

/** A merged list, and how many postings the terms it merges hold (the query word's size, SearchEngine.wordLists). */
interface Merged {
  list: Postings;
  postings: number;
}

/** A list's memory in 4-byte entries: 6 bytes per posting and its FrequentList. */
function cost(p: Postings): number {
  return p.n * 1.5 + (p.frequent?.size ?? 0);
}
