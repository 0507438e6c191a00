/**
 * The search engine's terms: each term's posting list (postings.ts), and the terms in sorted order
 * so that a query word finds every term it is a prefix of.
 */
import { Postings } from './postings.js';
import { LargeMap } from '../large-map.js';

/** The terms' part of a snapshot (engine.ts's EngineState): every list's entries, one after another. */
export interface TermState {
  terms: string[];
  postingLengths: Int32Array;
  postingDocs: Int32Array;
  postingTf: Uint16Array;
}

export class TermDictionary {
  private readonly lists = new LargeMap<string, Postings>();
  /** Terms in sorted order for prefix ranges, plus terms added since the last sort. */
  private sorted: string[] = [];
  private recent: string[] = [];

  get(term: string): Postings | undefined {
    return this.lists.get(term);
  }

  /** A term met for the first time, with its list. */
  add(term: string, p: Postings): void {
    this.lists.set(term, p);
    this.recent.push(term);
  }

  values(): IterableIterator<Postings> {
    return this.lists.values();
  }

  private sort(): void {
    this.sorted = [...this.lists.keys()].sort();
    this.recent = [];
  }

  /** The posting lists of every term starting with `prefix`. */
  expand(prefix: string): Postings[] {
    if (this.recent.length > 4096 || (this.recent.length && !this.sorted.length)) this.sort();
    const out: Postings[] = [];
    const s = this.sorted;
    let lo = 0;
    let hi = s.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (s[mid]! < prefix) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < s.length && s[i]!.startsWith(prefix); i++) {
      const p = this.lists.get(s[i]!);
      if (p?.n) out.push(p.view());
    }
    for (const t of this.recent) {
      if (!t.startsWith(prefix)) continue;
      const p = this.lists.get(t);
      if (p?.n) out.push(p.view());
    }
    return out;
  }

  /** Drops the lists' growth slack and sorts the terms (after a bulk build). */
  trim(): void {
    for (const p of this.lists.values()) p.trim();
    if (this.recent.length) this.sort();
  }

  /** Follows a renumbering of the documents (DocumentTable.compact; −1: dead), dropping dead postings. */
  remap(map: Int32Array): void {
    for (const [t, p] of this.lists) {
      p.view();
      let k = 0;
      for (let i = 0; i < p.n; i++) {
        const to = map[p.docs[i]!]!;
        if (to < 0) continue;
        p.docs[k] = to;
        p.tf[k] = p.tf[i]!;
        k++;
      }
      p.n = k;
      if (k === 0) this.lists.delete(t);
    }
    this.sort();
  }

  exportState(): TermState {
    const terms = [...this.lists.keys()];
    const postingLengths = new Int32Array(terms.length);
    let total = 0;
    terms.forEach((t, i) => (total += postingLengths[i] = this.lists.get(t)!.n));
    const postingDocs = new Int32Array(total);
    const postingTf = new Uint16Array(total);
    let at = 0;
    for (const t of terms) {
      const p = this.lists.get(t)!;
      p.copyTo(postingDocs, postingTf, at);
      at += p.n;
    }
    return { terms, postingLengths, postingDocs, postingTf };
  }

  /** The terms of a snapshot (its arrays are used in place, not copied). */
  static fromState(st: TermState): TermDictionary {
    const d = new TermDictionary();
    let at = 0;
    st.terms.forEach((t, i) => {
      const len = st.postingLengths[i]!;
      // A term with one posting (most of them: file numbers, rare names) stays two numbers until
      // a query reads it: two typed-array views each for a million of them cost ≈ 150 MB of heap,
      // and every minor GC pays for a large old generation.
      if (len === 1) d.lists.set(t, new Postings(st.postingDocs[at]!, st.postingTf[at]!));
      else if (len > 1) d.lists.set(t, Postings.over(st.postingDocs.subarray(at, at + len), st.postingTf.subarray(at, at + len)));
      at += len;
    });
    d.sorted = [...d.lists.keys()].sort();
    return d;
  }
}
