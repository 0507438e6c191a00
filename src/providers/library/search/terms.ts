/**
 * The search engine's terms: each term's postings, and the terms in sorted order so that a query
 * word finds every term it is a prefix of.
 *
 * Most terms of a library occur once (file numbers: `IMG_0412345` is the term `0412345`; rare
 * names), so the dictionary is laid out for a million such terms: no JavaScript string, Map entry
 * or object per term, but columns of typed arrays indexed by a term number (0, 1, … in the order
 * terms are met):
 *
 * - the characters of every term, one after another (`chars`, UTF-16 code units as in a JS
 *   string, so that equality and order are exactly JavaScript's), and where each term ends;
 * - an open-addressing hash table of term numbers, probed by a word's characters;
 * - the sorted order of the terms (numbers), plus the terms met since it was last sorted;
 * - a term's postings: its posting itself when it has one (`first`: its document, `firstTf`:
 *   its frequency); from two to SMALL_MAX, a stretch of a shared arena (`small*`: `first` is
 *   where, `smallN` how many); beyond, `~k` for its own list `lists[k]` (postings.ts).
 *
 * At a million assets this holds the million file numbers in ≈ 35 bytes each where a Map of
 * strings to posting objects took ≈ 190 (docs/benchmarks.md), and a snapshot maps the columns back
 * as they are: no string to make, no term to hash into a Map, nothing to sort. The arena keeps a
 * library's long tail of rare words (a few postings each) from costing a list object and two
 * typed arrays apiece (≈ 400 bytes of heap). A query reading a term without a list of its own
 * gets one made for it, over a copy or a view that it does not keep.
 */
import { Postings } from './postings.js';

/** The terms' part of a snapshot (engine.ts's EngineState): the dictionary's columns as they are. */
export interface TermState {
  termChars: Uint16Array;
  termEnds: Int32Array;
  /** Every term number, in sorted order. */
  termOrder: Int32Array;
  termFirst: Int32Array;
  termFirstTf: Uint16Array;
  /** The hash table (TermDictionary.slots), so that a load hashes nothing. */
  termSlots: Int32Array;
  termSmallN: Uint8Array;
  /** The small-list arena as it is (SMALL_MAX). */
  smallDocs: Int32Array;
  smallTf: Uint16Array;
  /** The lists of terms with several postings (by list number): lengths, then entries one list after another. */
  listLengths: Int32Array;
  listDocs: Int32Array;
  listTf: Uint16Array;
}

/**
 * TermState as exported: the lists' entries as one chunk per list, made as they are written one
 * after another (no copy of them all, nor an array of millions of views).
 */
export type TermExport = Omit<TermState, 'listDocs' | 'listTf'> & { listDocs: Iterable<Int32Array>; listTf: Iterable<Uint16Array> };

/** Terms met since the last sort beyond which a query sorts them in. */
const UNSORTED_MAX = 4096;
/** A term of 2 to SMALL_MAX postings keeps them in the small-list arena; past it, a list of its own. */
export const SMALL_MAX = 16;
/** Arena entries left behind by lists that moved, past which (and past half the arena) it is packed. */
const SMALL_HOLES_MIN = 1 << 16;

export class TermDictionary {
  private count = 0;
  private chars: Uint16Array = new Uint16Array(1024);
  private charsUsed = 0;
  /** Term t's characters are chars[ends[t − 1] (0 for t = 0) .. ends[t]). */
  private ends: Int32Array = new Int32Array(256);
  private first: Int32Array = new Int32Array(256);
  private firstTf: Uint16Array = new Uint16Array(256);
  private lists: Postings[] = [];
  /** Per term: its postings while 2..SMALL_MAX (they are at smallDocs/smallTf[first[t] ..]), else 0. */
  private smallN: Uint8Array = new Uint8Array(256);
  /** The small-list arena: a list of n postings has room for smallRoom(n), the next power of two. */
  private smallDocs: Int32Array = new Int32Array(1024);
  private smallTf: Uint16Array = new Uint16Array(1024);
  private smallUsed = 0;
  /** Entries left behind by small lists that moved (grown, or given a list of their own). */
  private smallHoles = 0;
  /** Term number + 1 per slot, 0 when empty; at most half full (linear probing). */
  private slots: Int32Array = new Int32Array(512);
  /** Terms 0 .. sortedCount − 1 in sorted order; the later ones (met since) are not in it yet. */
  private order: Int32Array = new Int32Array(0);
  private sortedCount = 0;

  get size(): number {
    return this.count;
  }

  /**
   * Adds document d, with weighted frequency tf, to the postings of `term` (d comes after every
   * document added before). Returns the term's list when it has one of its own (the engine keeps
   * its FrequentList current), null for a term of SMALL_MAX postings or fewer.
   */
  add(term: string, d: number, tf: number): Postings | null {
    const slot = this.slotOf(term);
    const v = this.slots[slot]!;
    if (v === 0) {
      this.append(term, d, tf);
      this.slots[slot] = this.count;
      if (this.count * 2 > this.slots.length) this.rehash(this.slots.length * 2);
      return null;
    }
    const t = v - 1;
    const f = this.first[t]!;
    const n = this.smallN[t]!;
    if (n > 0) return this.pushSmall(t, n, d, tf);
    if (f < 0) {
      const p = this.lists[~f]!;
      p.push(d, tf);
      return p;
    }
    // The second posting: the term moves into the arena.
    const at = this.allocSmall(2);
    this.smallDocs[at] = f;
    this.smallTf[at] = this.firstTf[t]!;
    this.smallDocs[at + 1] = d;
    this.smallTf[at + 1] = tf;
    this.first[t] = at;
    this.smallN[t] = 2;
    return null;
  }

  /** Appends to small list t of n postings: in place, in a larger stretch, or past SMALL_MAX into a list of its own. */
  private pushSmall(t: number, n: number, d: number, tf: number): Postings | null {
    let at = this.first[t]!;
    if (n === smallRoom(n)) {
      if (n === SMALL_MAX) {
        const p = Postings.over(this.smallDocs.slice(at, at + n), this.smallTf.slice(at, at + n));
        p.push(d, tf);
        this.leaveSmall(t, n);
        this.first[t] = ~this.lists.length;
        this.lists.push(p);
        this.packIfHoley();
        return p;
      }
      const to = this.allocSmall(2 * n);
      this.smallDocs.copyWithin(to, at, at + n);
      this.smallTf.copyWithin(to, at, at + n);
      this.smallHoles += n;
      this.first[t] = at = to;
    }
    this.smallDocs[at + n] = d;
    this.smallTf[at + n] = tf;
    this.smallN[t] = n + 1;
    this.packIfHoley();
    return null;
  }

  /** Packs the arena once holes are most of it (amortised: the holes since the last packing pay for the next). */
  private packIfHoley(): void {
    if (this.smallHoles >= SMALL_HOLES_MIN && this.smallHoles * 2 > this.smallUsed) this.packSmall(this.smallUsed - this.smallHoles);
  }

  /** A stretch of `room` arena entries. */
  private allocSmall(room: number): number {
    if (this.smallUsed + room > this.smallDocs.length) {
      this.smallDocs = grown(this.smallDocs, this.smallUsed + room);
      this.smallTf = grown(this.smallTf, this.smallUsed + room);
    }
    const at = this.smallUsed;
    this.smallUsed += room;
    return at;
  }

  /** Small list t (n postings) leaves the arena: its stretch becomes a hole. */
  private leaveSmall(t: number, n: number): void {
    this.smallHoles += smallRoom(n);
    this.smallN[t] = 0;
  }

  /** Rewrites the arena without its holes, with room for `size` entries. */
  private packSmall(size: number): void {
    const docs = new Int32Array(Math.max(size, this.smallUsed - this.smallHoles));
    const tfs = new Uint16Array(docs.length);
    let o = 0;
    for (let t = 0; t < this.count; t++) {
      const n = this.smallN[t]!;
      if (n === 0) continue;
      const at = this.first[t]!;
      docs.set(this.smallDocs.subarray(at, at + n), o);
      tfs.set(this.smallTf.subarray(at, at + n), o);
      this.first[t] = o;
      o += smallRoom(n);
    }
    this.smallDocs = docs;
    this.smallTf = tfs;
    this.smallUsed = o;
    this.smallHoles = 0;
  }

  /** The posting lists of every term starting with `prefix` (sorted terms first, then those met since). */
  expand(prefix: string): Postings[] {
    const unsorted = this.count - this.sortedCount;
    if (unsorted > UNSORTED_MAX || (unsorted > 0 && this.sortedCount === 0)) this.sort();
    const out: Postings[] = [];
    const order = this.order;
    let lo = 0;
    let hi = this.sortedCount;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.compareTo(order[mid]!, prefix) < 0) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < this.sortedCount && this.startsWith(order[i]!, prefix); i++) out.push(this.listOf(order[i]!));
    for (let t = this.sortedCount; t < this.count; t++) if (this.startsWith(t, prefix)) out.push(this.listOf(t));
    return out;
  }

  /**
   * The lists of the terms with at least `min` postings. With min ≤ SMALL_MAX (tests make every
   * term frequent) the terms without a list of their own that qualify are given one for good.
   */
  listsFrom(min: number): Postings[] {
    if (min <= SMALL_MAX) {
      for (let t = 0; t < this.count; t++) {
        const n = this.smallN[t] || (this.first[t]! >= 0 ? 1 : 0);
        if (n > 0 && n >= min) this.promote(t);
      }
    }
    return this.lists.filter((p) => p.n >= min);
  }

  /** Drops the growth slack of every column and list and sorts the terms (after a bulk build). */
  trim(): void {
    for (const p of this.lists) p.trim();
    this.chars = this.chars.slice(0, this.charsUsed);
    this.ends = this.ends.slice(0, this.count);
    this.first = this.first.slice(0, this.count);
    this.firstTf = this.firstTf.slice(0, this.count);
    this.smallN = this.smallN.slice(0, this.count);
    this.packSmall(0);
    if (this.sortedCount < this.count) this.sort();
  }

  /**
   * The dictionary after a renumbering of the documents (DocumentTable.compact; −1: dead): dead
   * postings dropped, terms left without any dropped, the others in the same order.
   */
  remap(map: Int32Array): TermDictionary {
    this.sort();
    const to = new TermDictionary();
    const renumbered = new Int32Array(this.count).fill(-1);
    for (let t = 0; t < this.count; t++) {
      const f = this.first[t]!;
      const chars = this.chars.subarray(this.start(t), this.ends[t]!);
      const n = this.smallN[t]!;
      if (n === 0 && f >= 0) {
        if (map[f]! < 0) continue;
        to.appendChars(chars, map[f]!, this.firstTf[t]!);
        renumbered[t] = to.count - 1;
        continue;
      }
      // Its live postings, renumbered, in place (a list of its own, or its stretch of the arena).
      const p = n > 0 ? Postings.over(this.smallDocs.subarray(f, f + n), this.smallTf.subarray(f, f + n)) : this.lists[~f]!;
      let k = 0;
      for (let i = 0; i < p.n; i++) {
        const d = map[p.docs[i]!]!;
        if (d < 0) continue;
        p.docs[k] = d;
        p.tf[k] = p.tf[i]!;
        k++;
      }
      if (k === 0) continue;
      to.appendChars(chars, p.docs[0]!, p.tf[0]!);
      const u = to.count - 1;
      if (k > SMALL_MAX) {
        p.n = k;
        to.first[u] = ~to.lists.length;
        to.lists.push(p);
      } else if (k > 1) {
        const at = to.allocSmall(smallRoom(k));
        to.smallDocs.set(p.docs.subarray(0, k), at);
        to.smallTf.set(p.tf.subarray(0, k), at);
        to.first[u] = at;
        to.smallN[u] = k;
      }
      renumbered[t] = u;
    }
    to.rehash(slotsFor(to.count));
    // The old order, renumbered: still sorted.
    to.order = new Int32Array(to.count);
    let k = 0;
    for (let i = 0; i < this.count; i++) {
      const t = renumbered[this.order[i]!]!;
      if (t >= 0) to.order[k++] = t;
    }
    to.sortedCount = to.count;
    return to;
  }

  exportState(): TermExport {
    const n = this.count;
    return {
      termChars: this.chars.subarray(0, this.charsUsed), termEnds: this.ends.subarray(0, n), termOrder: this.sortedOrder(),
      termFirst: this.first.subarray(0, n), termFirstTf: this.firstTf.subarray(0, n), termSlots: this.slots,
      termSmallN: this.smallN.subarray(0, n), smallDocs: this.smallDocs.subarray(0, this.smallUsed), smallTf: this.smallTf.subarray(0, this.smallUsed),
      listLengths: Int32Array.from(this.lists, (p) => p.n), listDocs: chunks(this.lists, (p) => p.docs.subarray(0, p.n)), listTf: chunks(this.lists, (p) => p.tf.subarray(0, p.n)),
    };
  }

  /** The terms of a snapshot (its arrays are used in place, not copied). */
  static fromState(st: TermState): TermDictionary {
    const d = new TermDictionary();
    d.count = st.termEnds.length;
    d.chars = st.termChars;
    d.charsUsed = st.termChars.length;
    d.ends = st.termEnds;
    d.first = st.termFirst;
    d.firstTf = st.termFirstTf;
    d.order = st.termOrder;
    d.sortedCount = d.count;
    d.smallN = st.termSmallN;
    d.smallDocs = st.smallDocs;
    d.smallTf = st.smallTf;
    d.smallUsed = st.smallDocs.length;
    let room = 0;
    for (const n of st.termSmallN) if (n > 0) room += smallRoom(n);
    d.smallHoles = d.smallUsed - room;
    let at = 0;
    for (const len of st.listLengths) {
      d.lists.push(Postings.over(st.listDocs.subarray(at, at + len), st.listTf.subarray(at, at + len)));
      at += len;
    }
    d.slots = st.termSlots;
    return d;
  }

  /** Whether a snapshot's columns are consistent (lengths, bounds), so that fromState cannot read past them. */
  static validState(st: TermState): boolean {
    const n = st.termEnds.length;
    if (st.termOrder.length !== n || st.termFirst.length !== n || st.termFirstTf.length !== n) return false;
    if ((n ? st.termEnds[n - 1]! : 0) !== st.termChars.length) return false;
    const slots = st.termSlots;
    if (slots.length < 512 || (slots.length & (slots.length - 1)) !== 0 || n * 2 > slots.length) return false;
    for (const v of slots) if (v < 0 || v > n) return false;
    let total = 0;
    for (const len of st.listLengths) total += len;
    if (total !== st.listDocs.length || total !== st.listTf.length) return false;
    if (st.termSmallN.length !== n || st.smallTf.length !== st.smallDocs.length) return false;
    for (let t = 0, prev = 0; t < n; t++) {
      const f = st.termFirst[t]!;
      const small = st.termSmallN[t]!;
      if (st.termEnds[t]! < prev || st.termOrder[t]! < 0 || st.termOrder[t]! >= n) return false;
      if (small > 0 ? small < 2 || small > SMALL_MAX || f < 0 || f + smallRoom(small) > st.smallDocs.length : f < 0 && ~f >= st.listLengths.length) return false;
      prev = st.termEnds[t]!;
    }
    return true;
  }

  // ── internals ────────────────────────────────────────────────────────────────────────────

  private start(t: number): number {
    return t ? this.ends[t - 1]! : 0;
  }

  /** The slot holding `term`, or the empty slot where it would go. */
  private slotOf(term: string): number {
    const mask = this.slots.length - 1;
    let h = 0x811c9dc5;
    for (let i = 0; i < term.length; i++) h = Math.imul(h ^ term.charCodeAt(i), 0x01000193);
    for (let i = mix(h) & mask; ; i = (i + 1) & mask) {
      const v = this.slots[i]!;
      if (v === 0 || this.equals(v - 1, term)) return i;
    }
  }

  private equals(t: number, term: string): boolean {
    const s = this.start(t);
    if (this.ends[t]! - s !== term.length) return false;
    const chars = this.chars;
    for (let i = 0; i < term.length; i++) if (chars[s + i] !== term.charCodeAt(i)) return false;
    return true;
  }

  /** A new slot table of `size` (a power of two) over every term. */
  private rehash(size: number): void {
    const slots = new Int32Array(size);
    const mask = size - 1;
    const { chars, ends } = this;
    for (let t = 0, s = 0; t < this.count; t++) {
      const e = ends[t]!;
      let h = 0x811c9dc5;
      for (let i = s; i < e; i++) h = Math.imul(h ^ chars[i]!, 0x01000193);
      let i = mix(h) & mask;
      while (slots[i] !== 0) i = (i + 1) & mask;
      slots[i] = t + 1;
      s = e;
    }
    this.slots = slots;
  }

  /** A new term (number `count`), its characters from `term`, with its one posting. */
  private append(term: string, d: number, tf: number): void {
    this.reserve(term.length);
    const chars = this.chars;
    for (let i = 0; i < term.length; i++) chars[this.charsUsed++] = term.charCodeAt(i);
    this.close(d, tf);
  }

  /** As append, from another dictionary's characters (no slot: remap rehashes once at the end). */
  private appendChars(src: Uint16Array, d: number, tf: number): void {
    this.reserve(src.length);
    this.chars.set(src, this.charsUsed);
    this.charsUsed += src.length;
    this.close(d, tf);
  }

  private reserve(chars: number): void {
    if (this.charsUsed + chars > this.chars.length) this.chars = grown(this.chars, this.charsUsed + chars);
    if (this.count === this.ends.length) {
      this.ends = grown(this.ends, this.count + 1);
      this.first = grown(this.first, this.count + 1);
      this.firstTf = grown(this.firstTf, this.count + 1);
    }
    if (this.count === this.smallN.length) this.smallN = grown(this.smallN, this.count + 1);
  }

  private close(d: number, tf: number): void {
    const t = this.count++;
    this.ends[t] = this.charsUsed;
    this.first[t] = d;
    this.firstTf[t] = tf;
    this.smallN[t] = 0;
  }

  /**
   * Term t's postings as a list: its own, or one made for the caller (over its single posting, or
   * a view of its stretch of the arena: read before the next add).
   */
  private listOf(t: number): Postings {
    const f = this.first[t]!;
    const n = this.smallN[t]!;
    if (n > 0) return Postings.over(this.smallDocs.subarray(f, f + n), this.smallTf.subarray(f, f + n));
    return f < 0 ? this.lists[~f]! : Postings.over(Int32Array.of(f), Uint16Array.of(this.firstTf[t]!));
  }

  /** Gives term t (one posting, or a small list) a list of its own. */
  private promote(t: number): void {
    const f = this.first[t]!;
    const n = this.smallN[t]!;
    let p: Postings;
    if (n > 0) {
      p = Postings.over(this.smallDocs.slice(f, f + n), this.smallTf.slice(f, f + n));
      this.leaveSmall(t, n);
    } else p = this.listOf(t);
    this.first[t] = ~this.lists.length;
    this.lists.push(p);
  }

  /** Term a against term b, in JavaScript's string order (UTF-16 code units). */
  private compare(a: number, b: number): number {
    const chars = this.chars;
    const sa = this.start(a);
    const sb = this.start(b);
    const la = this.ends[a]! - sa;
    const lb = this.ends[b]! - sb;
    for (let i = 0, n = Math.min(la, lb); i < n; i++) {
      const c = chars[sa + i]! - chars[sb + i]!;
      if (c !== 0) return c;
    }
    return la - lb;
  }

  /** Term t against string s, in JavaScript's string order. */
  private compareTo(t: number, s: string): number {
    const chars = this.chars;
    const st = this.start(t);
    const lt = this.ends[t]! - st;
    for (let i = 0, n = Math.min(lt, s.length); i < n; i++) {
      const c = chars[st + i]! - s.charCodeAt(i);
      if (c !== 0) return c;
    }
    return lt - s.length;
  }

  private startsWith(t: number, prefix: string): boolean {
    const st = this.start(t);
    if (this.ends[t]! - st < prefix.length) return false;
    const chars = this.chars;
    for (let i = 0; i < prefix.length; i++) if (chars[st + i] !== prefix.charCodeAt(i)) return false;
    return true;
  }

  private sort(): void {
    this.order = this.sortedOrder();
    this.sortedCount = this.count;
  }

  /** Every term in sorted order: the terms met since the last sort, sorted, merged into the sorted ones. */
  private sortedOrder(): Int32Array {
    if (this.sortedCount === this.count) return this.order.subarray(0, this.count);
    const recent = new Int32Array(this.count - this.sortedCount);
    for (let i = 0; i < recent.length; i++) recent[i] = this.sortedCount + i;
    recent.sort((a, b) => this.compare(a, b));
    if (this.sortedCount === 0) return recent;
    const out = new Int32Array(this.count);
    let i = 0;
    let j = 0;
    let k = 0;
    const old = this.order;
    while (i < this.sortedCount && j < recent.length) out[k++] = this.compare(old[i]!, recent[j]!) <= 0 ? old[i++]! : recent[j++]!;
    while (i < this.sortedCount) out[k++] = old[i++]!;
    while (j < recent.length) out[k++] = recent[j++]!;
    return out;
  }
}

/** A re-iterable sequence of one view per list. */
function chunks<T>(lists: Postings[], view: (p: Postings) => T): Iterable<T> {
  return {
    *[Symbol.iterator]() {
      for (const p of lists) yield view(p);
    },
  };
}

/** Finishes FNV-1a: the low bits (the slot) depend on every character. */
function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x45d9f3b);
  return h ^ (h >>> 16);
}

/** The slot table size for `terms` terms: a power of two, at most half full. */
function slotsFor(terms: number): number {
  let size = 512;
  while (size < terms * 2 + 2) size *= 2;
  return size;
}

/** The arena entries a small list of n postings has: the next power of two. */
function smallRoom(n: number): number {
  return 1 << (32 - Math.clz32(n - 1));
}

function grown<T extends Int32Array | Uint16Array | Uint8Array>(a: T, size: number): T {
  const b = new (a.constructor as new (n: number) => T)(Math.max(size, a.length * 2));
  b.set(a);
  return b;
}
