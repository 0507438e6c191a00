/**
 * The library's keyword search engine: an in-memory inverted index with columnar facet values,
 * fed from the index's assets table (see LibraryIndex.searchEngine) and answering one query with
 * the page, the exact total and every facet count in a single pass over typed arrays.
 *
 * Why not SQLite FTS5 alone: at a million assets a common word matches half of them, and an exact
 * `count(*)`, a bm25 sort and five GROUP BYs over 500,000 rows cost SQLite hundreds of
 * milliseconds; the same work over typed arrays is a few (docs/benchmarks.md).
 *
 * Semantics (docs/library.md): every query word must match, as a prefix, after Unicode folding
 * (NFKD, marks removed, lower case). Ranking is BM25F over six weighted fields; ties break by the
 * asset's row id. A search without words lists the newest first (modified, descending).
 */
import type { ActiveFilters, FacetKey } from './index-store.js';
import { isWithin } from './paths.js';
import { ComboCounts, DateOrder } from './search-aggregates.js';
import { BLOCK, FrequentList } from './search-frequent.js';
import { TopK, topOptions } from './search-page.js';
import { MergedPrefixes, Postings } from './search-postings.js';

/** Field weights of BM25F: a word in the name or title counts for more than one in the path. */
export const FIELD_WEIGHTS = { name: 10, path: 2, title: 8, caption: 4, keywords: 6, other: 1 } as const;
export type SearchField = keyof typeof FIELD_WEIGHTS;
const FIELDS = Object.keys(FIELD_WEIGHTS) as SearchField[];
const K1 = 1.2;
/** A document's facet row (SearchEngine.facetRows): header, then three keyword slots. */
export const ROW_STRIDE = 4;
const INLINE_KEYWORDS = ROW_STRIDE - 1;
const COMBO_BITS = 21;
const COMBO_MASK = (1 << COMBO_BITS) - 1;
/** Keywords a document contributes to the keyword facet (fits the row header's count bits). */
const MAX_KEYWORDS = 1000;
/** Entries of the per-combination keyword table (ComboCounts) before it is given up: 64 MiB. */
const COMBO_COUNTS_BUDGET = 16 << 20;
/** Terms with at least this many live documents keep facet counts, a bitmap and block bounds (FrequentList)... */
const TERM_COUNTS_MIN_DOCS = 50_000;
/** ...the most frequent first, within this many 4-byte entries in all: 64 MiB. */
const TERM_COUNTS_BUDGET = 16 << 20;
/** A query prefix matching at least two terms with this many postings in all gets a merged list (MergedPrefixes)... */
const MERGE_MIN_POSTINGS = 20_000;
/** ...within this many 4-byte entries per live document in all (MergedPrefixes.set)... */
const MERGED_ENTRIES_PER_DOC = 8;
/** ...and with a FrequentList from this many documents. */
const MERGED_COUNTS_MIN_DOCS = 10_000;
const B = 0.75;
const FACET_OPTIONS = 30;
/** The largest weighted term frequency a posting holds (16 bits). */
const MAX_TF = 65_535;

export interface SearchDoc {
  rowid: number;
  folderPath: string;
  kind: string;
  ext: string;
  year: number | null;
  orientation: string | null;
  mtimeMs: number;
  fields: Record<SearchField, string>;
  /** Facet values of the keyword facet (lower case). */
  keywords: string[];
}

/** Scoring parameters of a result list, carried in its cursor so that later pages rank alike. */
export interface RankParams {
  idf: number[];
  avgdl: number;
}

export interface EngineQuery {
  /** Query words (already folded by `tokenize`), each matched as a prefix; empty = all. */
  words: string[];
  /** Folder to scope to, including sub-folders ('' = the whole library). */
  folderPath: string;
  /** Folders an account is limited to; null = unrestricted. */
  allowedRoots: string[] | null;
  filters: ActiveFilters;
  limit: number;
  /** Keyset position: the sort key and row id of the last row of the previous page. */
  after: { key: number; rowid: number } | null;
  /** The first page's parameters (from the cursor), so that a changing index keeps paging stable. */
  params: RankParams | null;
}

export interface EngineResult {
  rowids: number[];
  keys: number[];
  total: number;
  facets: Record<FacetKey, { value: string; count: number }[]>;
  params: RankParams | null;
}

const ASCII = /^[\x00-\x7f]*$/;
const ASCII_WORD = /[a-z0-9]+/g;

/** Unicode folding shared by documents and queries: NFKD, marks dropped, lower case, letter/digit runs. */
export function tokenize(s: string): string[] {
  if (!s) return [];
  // Plain ASCII (most file names and much metadata) needs no Unicode folding.
  if (ASCII.test(s)) return s.toLowerCase().match(ASCII_WORD) ?? [];
  return s.normalize('NFKD').replace(/\p{M}+/gu, '').toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** Facet values ↔ small integer codes; code 0 is "no value". */
class Dictionary {
  readonly codes = new Map<string, number>();
  readonly values: string[] = [''];

  code(v: string | null): number {
    if (v === null || v === '') return 0;
    let c = this.codes.get(v);
    if (c === undefined) {
      c = this.values.length;
      this.values.push(v);
      this.codes.set(v, c);
    }
    return c;
  }
}

function grow<T extends Int32Array | Uint8Array | Float32Array | Float64Array | Uint16Array>(a: T, size: number): T {
  if (a.length >= size) return a;
  const b = new (a.constructor as new (n: number) => T)(Math.max(size, a.length * 2));
  b.set(a);
  return b;
}

/** Everything an engine holds, as plain arrays: what a snapshot file stores (search-snapshot.ts). */
export interface EngineState {
  n: number;
  live: number;
  dlSum: number;
  kwUsed: number;
  rowid: Int32Array;
  alive: Uint8Array;
  dl: Float32Array;
  mtime: Float64Array;
  folder: Int32Array;
  facetRows: Int32Array;
  kwData: Int32Array;
  comboValues: number[][];
  dicts: Record<FacetKey | 'folder', string[]>;
  terms: string[];
  postingLengths: Int32Array;
  postingDocs: Int32Array;
  postingTf: Uint16Array;
}

export class SearchEngine {
  // Per document (dense numbers 0..n-1; a changed asset gets a new number, the old one dies).
  private n = 0;
  private rowid: Int32Array = new Int32Array(1024);
  private alive: Uint8Array = new Uint8Array(1024);
  private dl: Float32Array = new Float32Array(1024);
  private mtime: Float64Array = new Float64Array(1024);
  private folder: Int32Array = new Int32Array(1024);
  /**
   * Everything collect() reads of a document, in one 16-byte row (ROW_STRIDE), so that a sparse
   * result costs one cache line per document rather than one per column (≈ 5× faster at a million):
   *
   * - `[0]`: the combination code (low COMBO_BITS) and the number of keywords (above them). The
   *   combination is the document's (type, extension, year, orientation): a library has few, so a
   *   query decides each filter once per combination, and the pass counts one combination per
   *   document instead of four facet values.
   * - `[1..3]`: up to three keyword codes, 0 in unused slots (code 0 is "no value" and its count
   *   is never read), so counting them needs no branch; with more, `[1]` is where they start in
   *   `kwData`.
   */
  private facetRows: Int32Array = new Int32Array(1024 * ROW_STRIDE);
  private readonly combos = new Map<string, number>();
  private comboValues: number[][] = []; // combo → [type, ext, year, orientation] codes
  private kwData: Int32Array = new Int32Array(1024);
  private kwUsed = 0;
  private readonly kwScratch: number[] = [];
  /** Whole-library counts and date order for searches without words (search-aggregates.ts). */
  private counts: ComboCounts;
  private dateOrder: DateOrder | null = null;
  /** The posting lists that keep TermCounts. */
  private counted: Postings[] = [];
  private readonly termCountsMinDocs: number;
  private readonly merged = new MergedPrefixes();
  private readonly mergeMinPostings: number;
  private readonly mergeScratch = new Map<string, { tf: number; terms: number }>();
  /** Scratch for one document's keyword codes. */
  private readonly kwOut = new Int32Array(MAX_KEYWORDS);
  private readonly docOf = new Map<number, number>();
  private live = 0;
  private dlSum = 0;
  /**
   * Per folder code: live documents and the sum of their lengths. A limited account's ranking
   * statistics are those of its folders alone (visibleParams); these make its N and average
   * length a sum over folders rather than a pass over documents. Lengths are integer weights, so
   * the sums are exact whatever the order of additions.
   */
  private folderLive: number[] = [];
  private folderDl: number[] = [];
  /** Counts removals, so that cached per-list live counts know when they are stale. */
  private removals = 0;

  private readonly terms = new Map<string, Postings>();
  private readonly termScratch = new Map<string, number>();
  /** Terms in sorted order for prefix ranges, plus terms added since the last sort. */
  private sorted: string[] = [];
  private recent: string[] = [];

  private readonly dicts: Record<FacetKey | 'folder', Dictionary> = {
    folder: new Dictionary(), type: new Dictionary(), ext: new Dictionary(), keyword: new Dictionary(), year: new Dictionary(), orientation: new Dictionary(),
  };

  // Scratch space reused by queries (the engine is synchronous: one query at a time).
  private tfDense = new Float32Array(0);
  /** One bit per document, all clear between queries. */
  private seen = new Int32Array(0);
  /** Per word of `seen`: how many bits are set in the words before it (intersectList). */
  private before = new Int32Array(0);
  private cand = new Int32Array(0);
  private candScore = new Float64Array(0);
  private gathered = new Int32Array(0);

  /**
   * `comboCountsBudget`: see ComboCounts; `termCountsMinDocs`: see indexFrequentTerms;
   * `mergeMinPostings`: see wordLists (tests lower them to exercise both the engine's pass and the
   * counted and merged paths on small libraries).
   */
  constructor(opts: { comboCountsBudget?: number; termCountsMinDocs?: number; mergeMinPostings?: number } = {}) {
    this.counts = new ComboCounts(opts.comboCountsBudget ?? COMBO_COUNTS_BUDGET);
    this.termCountsMinDocs = opts.termCountsMinDocs ?? TERM_COUNTS_MIN_DOCS;
    this.mergeMinPostings = opts.mergeMinPostings ?? MERGE_MIN_POSTINGS;
  }

  get size(): number {
    return this.live;
  }

  get deadDocuments(): number {
    return this.n - this.live;
  }

  /** Adds or replaces the document of an asset row. */
  upsert(doc: SearchDoc): void {
    this.remove(doc.rowid);
    const d = this.n++;
    if (d >= this.rowid.length) this.growDocs(d + 1);
    this.rowid[d] = doc.rowid;
    this.alive[d] = 1;
    this.mtime[d] = doc.mtimeMs;
    this.folder[d] = this.dicts.folder.code(doc.folderPath === '' ? '/' : doc.folderPath);
    const t = this.dicts.type.code(doc.kind);
    const e = this.dicts.ext.code(doc.ext || null);
    const y = this.dicts.year.code(doc.year === null ? null : String(doc.year));
    const o = this.dicts.orientation.code(doc.orientation);
    const key = `${t},${e},${y},${o}`;
    let combo = this.combos.get(key);
    if (combo === undefined) {
      combo = this.comboValues.length;
      this.comboValues.push([t, e, y, o]);
      this.combos.set(key, combo);
    }
    const kws = this.kwScratch;
    kws.length = 0;
    for (const k of doc.keywords) {
      const code = this.dicts.keyword.code(k.toLowerCase());
      if (code !== 0 && kws.length < MAX_KEYWORDS && !kws.includes(code)) kws.push(code);
    }
    this.writeRow(d, combo, kws);
    this.counts.add(combo, kws, kws.length, 1);

    const tf = this.termScratch;
    tf.clear();
    let dl = 0;
    for (const f of FIELDS) {
      const w = FIELD_WEIGHTS[f];
      for (const t of tokenize(doc.fields[f])) {
        tf.set(t, (tf.get(t) ?? 0) + w);
        dl += w;
      }
    }
    this.dl[d] = dl;
    for (const [t, weighted] of tf) {
      const w = Math.min(weighted, MAX_TF);
      const p = this.terms.get(t);
      if (!p) {
        this.terms.set(t, new Postings(d, w));
        this.recent.push(t);
      } else this.append(p, d, w, combo, kws);
    }
    if (this.merged.size) this.addToMerged(d, tf, combo, kws);
    this.docOf.set(doc.rowid, d);
    this.live++;
    this.dlSum += dl;
    this.countFolder(d, 1);
  }

  /** Appends new document d (its length and row id set) to list p, and to p's FrequentList. */
  private append(p: Postings, d: number, tf: number, combo: number, kws: number[]): void {
    p.push(d, tf);
    if (!p.frequent) return;
    p.frequent.add(p.n - 1, d, tf, this.dl[d]!, this.rowid[d]!);
    p.frequent.counts.add(combo, kws, kws.length, 1);
  }

  /** Document d, with its terms' weighted frequencies, into the merged lists of their cached prefixes. */
  private addToMerged(d: number, tf: Map<string, number>, combo: number, kws: number[]): void {
    const sums = this.mergeScratch;
    sums.clear();
    for (const [t, weighted] of tf) this.merged.prefixesOf(t, Math.min(weighted, MAX_TF), sums);
    for (const [prefix, sum] of sums) {
      const m = this.merged.peek(prefix)!;
      // Beyond MAX_TF the merged list would score differently from its terms.
      if (sum.tf > MAX_TF) {
        this.merged.delete(prefix);
        continue;
      }
      m.postings += sum.terms;
      this.append(m.list, d, sum.tf, combo, kws);
    }
  }

  /** Fills document d's facet row (see facetRows). */
  private writeRow(d: number, combo: number, kws: ArrayLike<number>): void {
    const o = d * ROW_STRIDE;
    const rows = this.facetRows;
    rows[o] = combo | (kws.length << COMBO_BITS);
    rows[o + 1] = rows[o + 2] = rows[o + 3] = 0;
    if (kws.length <= INLINE_KEYWORDS) {
      for (let i = 0; i < kws.length; i++) rows[o + 1 + i] = kws[i]!;
      return;
    }
    this.kwData = grow(this.kwData, this.kwUsed + kws.length);
    rows[o + 1] = this.kwUsed;
    for (let i = 0; i < kws.length; i++) this.kwData[this.kwUsed++] = kws[i]!;
  }

  /** Document d's combination code. */
  private comboOf(d: number): number {
    return this.facetRows[d * ROW_STRIDE]! & COMBO_MASK;
  }

  /** Copies document d's keyword codes into kwOut (spilled ones from `spill`); returns how many. */
  private readKeywords(d: number, spill = this.kwData): number {
    const o = d * ROW_STRIDE;
    const len = this.facetRows[o]! >>> COMBO_BITS;
    const from = len <= INLINE_KEYWORDS ? this.facetRows : spill;
    const s = len <= INLINE_KEYWORDS ? o + 1 : this.facetRows[o + 1]!;
    for (let i = 0; i < len; i++) this.kwOut[i] = from[s + i]!;
    return len;
  }

  /** Document d counted into (sign 1) or out of (sign −1) the whole-library or a term's counts. */
  private countDoc(c: ComboCounts, d: number, sign: 1 | -1): void {
    c.add(this.comboOf(d), this.kwOut, this.readKeywords(d), sign);
  }

  /**
   * Gives the most frequent terms (at least termCountsMinDocs live documents, within
   * TERM_COUNTS_BUDGET) their FrequentList, from then on kept current by upsert and remove. Run
   * when the engine is built or loaded: a term that becomes frequent later gets counts at the
   * next start.
   */
  private indexFrequentTerms(): void {
    for (const p of this.counted) p.frequent = null;
    this.counted = [];
    this.merged.clear();
    const min = Math.max(1, this.termCountsMinDocs);
    const frequent = [...this.terms.values()].filter((p) => p.n >= min && this.liveCount(p) >= min).sort((a, b) => b.live - a.live);
    let budget = TERM_COUNTS_BUDGET;
    for (const p of frequent) {
      this.makeFrequent(p.view());
      budget -= p.frequent!.size;
      if (budget < 0) {
        p.frequent = null;
        break;
      }
      this.counted.push(p);
    }
  }

  private makeFrequent(p: Postings): void {
    const f = FrequentList.build(p, this.dl, this.rowid);
    for (let i = 0; i < p.n; i++) if (this.alive[p.docs[i]!]) this.countDoc(f.counts, p.docs[i]!, 1);
    p.frequent = f;
  }

  remove(rowid: number): void {
    const d = this.docOf.get(rowid);
    if (d === undefined) return;
    this.docOf.delete(rowid);
    this.countDoc(this.counts, d, -1);
    // The document's frequent terms: few lists, each searched (their documents are in order).
    for (const p of this.counted) if (p.find(d) >= 0) this.countDoc(p.frequent!.counts, d, -1);
    for (const p of this.merged.values()) if (p.frequent && p.find(d) >= 0) this.countDoc(p.frequent.counts, d, -1);
    this.removals++;
    this.alive[d] = 0;
    this.live--;
    this.dlSum -= this.dl[d]!;
    this.countFolder(d, -1);
  }

  exportState(): EngineState {
    const n = this.n;
    const terms = [...this.terms.keys()];
    const postingLengths = new Int32Array(terms.length);
    let total = 0;
    terms.forEach((t, i) => (total += postingLengths[i] = this.terms.get(t)!.n));
    const postingDocs = new Int32Array(total);
    const postingTf = new Uint16Array(total);
    let at = 0;
    for (const t of terms) {
      const p = this.terms.get(t)!;
      p.copyTo(postingDocs, postingTf, at);
      at += p.n;
    }
    const dicts = {} as EngineState['dicts'];
    for (const [k, d] of Object.entries(this.dicts)) dicts[k as FacetKey | 'folder'] = d.values.slice(1);
    return {
      n, live: this.live, dlSum: this.dlSum, kwUsed: this.kwUsed,
      rowid: this.rowid.subarray(0, n), alive: this.alive.subarray(0, n), dl: this.dl.subarray(0, n), mtime: this.mtime.subarray(0, n),
      folder: this.folder.subarray(0, n), facetRows: this.facetRows.subarray(0, n * ROW_STRIDE),
      kwData: this.kwData.subarray(0, this.kwUsed), comboValues: this.comboValues, dicts, terms, postingLengths, postingDocs, postingTf,
    };
  }

  /** An engine over a snapshot's arrays (they are used in place, not copied). */
  static fromState(st: EngineState): SearchEngine {
    const e = new SearchEngine();
    e.n = st.n;
    e.live = st.live;
    e.dlSum = st.dlSum;
    e.kwUsed = st.kwUsed;
    e.rowid = st.rowid;
    e.alive = st.alive;
    e.dl = st.dl;
    e.mtime = st.mtime;
    e.folder = st.folder;
    e.facetRows = st.facetRows;
    e.kwData = st.kwData;
    e.comboValues = st.comboValues;
    st.comboValues.forEach((v, i) => e.combos.set(v.join(','), i));
    for (const [k, values] of Object.entries(st.dicts)) for (const v of values) e.dicts[k as FacetKey | 'folder'].code(v);
    for (let d = 0; d < st.n; d++) {
      if (!st.alive[d]) continue;
      e.docOf.set(st.rowid[d]!, d);
      e.countFolder(d, 1);
    }
    let at = 0;
    st.terms.forEach((t, i) => {
      const len = st.postingLengths[i]!;
      // A term with one posting (most of them: file numbers, rare names) stays two numbers until
      // a query reads it: two typed-array views each for a million of them cost ≈ 150 MB of heap,
      // and every minor GC pays for a large old generation.
      if (len === 1) e.terms.set(t, new Postings(st.postingDocs[at]!, st.postingTf[at]!));
      else if (len > 1) e.terms.set(t, Postings.over(st.postingDocs.subarray(at, at + len), st.postingTf.subarray(at, at + len)));
      at += len;
    });
    e.sorted = [...e.terms.keys()].sort();
    for (let d = 0; d < e.n; d++) if (e.alive[d]) e.countDoc(e.counts, d, 1);
    e.indexFrequentTerms();
    e.orderByDate();
    return e;
  }

  /**
   * (Re)builds the date order (DateOrder): when the engine is built or loaded, so that the first
   * search without words does not wait for it (0.1–0.3 s at a million), and once it is stale.
   */
  private orderByDate(): DateOrder {
    return (this.dateOrder = DateOrder.build(this.n, this.alive, this.mtime, this.rowid, (d) => this.comboOf(d), this.comboValues.length));
  }

  /** Releases the slack of growable arrays; worth it after building from a whole index. */
  trim(): void {
    for (const p of this.terms.values()) p.trim();
    this.kwData = this.kwData.slice(0, Math.max(16, this.kwUsed));
    if (this.recent.length) {
      this.sorted = [...this.terms.keys()].sort();
      this.recent = [];
    }
    this.indexFrequentTerms();
    this.orderByDate();
  }

  /**
   * Renumbers the live documents and drops dead postings. Worth it once dead documents are a
   * large share (the library calls it when they outnumber the live ones).
   */
  compact(): void {
    const map = new Int32Array(this.n).fill(-1);
    let m = 0;
    for (let d = 0; d < this.n; d++) if (this.alive[d]) map[d] = m++;
    const cols = ['rowid', 'dl', 'mtime', 'folder'] as const;
    const oldKwData = this.kwData;
    this.kwData = new Int32Array(Math.max(16, this.kwUsed));
    this.kwUsed = 0;
    for (let d = 0; d < this.n; d++) {
      const to = map[d]!;
      if (to < 0) continue;
      for (const c of cols) (this[c] as Int32Array)[to] = (this[c] as Int32Array)[d]!;
      // Row `to` is at or before row d, whose keywords are copied out first.
      this.writeRow(to, this.comboOf(d), this.kwOut.subarray(0, this.readKeywords(d, oldKwData)));
      this.alive[to] = 1;
      this.docOf.set(this.rowid[to]!, to);
    }
    this.alive.fill(0, m, this.n);
    this.n = m;
    for (const [t, p] of this.terms) {
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
      if (k === 0) this.terms.delete(t);
    }
    this.sorted = [...this.terms.keys()].sort();
    this.recent = [];
    // Both are by document number (and the merged lists go).
    this.indexFrequentTerms();
    this.orderByDate();
  }

  private growDocs(size: number): void {
    this.rowid = grow(this.rowid, size);
    this.alive = grow(this.alive, size);
    this.dl = grow(this.dl, size);
    this.mtime = grow(this.mtime, size);
    this.folder = grow(this.folder, size);
    this.facetRows = grow(this.facetRows, size * ROW_STRIDE);
  }

  /** The posting lists of every term starting with `prefix`. */
  private expand(prefix: string): Postings[] {
    if (this.recent.length > 4096 || (this.recent.length && !this.sorted.length)) {
      this.sorted = [...this.terms.keys()].sort();
      this.recent = [];
    }
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
      const p = this.terms.get(s[i]!);
      if (p?.n) out.push(p.view());
    }
    for (const t of this.recent) {
      if (!t.startsWith(prefix)) continue;
      const p = this.terms.get(t);
      if (p?.n) out.push(p.view());
    }
    return out;
  }

  /**
   * Query word i's posting lists: the terms it is a prefix of, or their merged list when they are
   * several with at least mergeMinPostings postings (MergedPrefixes). `size` is their postings in
   * all either way, so that the order of the words, and so the sums of their scores, do not depend
   * on the cache.
   */
  private wordLists(word: string, i: number): { i: number; size: number; lists: Postings[] } {
    const cached = this.merged.get(word);
    if (cached) return { i, size: cached.postings, lists: [cached.list] };
    const lists = this.expand(word);
    const size = sum(lists);
    if (lists.length < 2 || size < this.mergeMinPostings) return { i, size, lists };
    const k = this.mergeLists(lists);
    if (k < 0) return { i, size, lists };
    const p = Postings.over(this.cand.slice(0, k), Uint16Array.from(this.candScore.subarray(0, k)));
    // A merged list exists because searches ask for it: it gets counts from fewer documents than a term.
    if (k >= Math.min(this.termCountsMinDocs, MERGED_COUNTS_MIN_DOCS)) this.makeFrequent(p);
    this.merged.set(word, p, size, Math.max(1 << 16, MERGED_ENTRIES_PER_DOC * this.live));
    return { i, size, lists: [p] };
  }

  /**
   * The live documents of several lists with their summed frequencies, in order, in cand and
   * candScore; −1 when a sum exceeds MAX_TF.
   */
  private mergeLists(lists: Postings[]): number {
    for (const p of lists) this.spreadAndMark(p);
    const k = this.drainMarked(0, 0, false);
    for (let i = 0; i < k; i++) if (this.candScore[i]! > MAX_TF) return -1;
    return k;
  }

  private scratch(size: number): void {
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

  search(query: EngineQuery): EngineResult {
    this.scratch(this.n);
    let q = query;
    const folderMask = this.folderMask(q.folderPath, q.allowedRoots);
    let count = 0;
    let params: RankParams | null = null;

    if (q.words.length) {
      const words = q.words.map((w, i) => this.wordLists(w, i));
      // A limited account is ranked by the statistics of its own folders, fixed from its first
      // page on as a cursor's are: nothing it sees depends on documents it may not see.
      const limited = q.allowedRoots !== null;
      if (limited && !q.params) q = { ...q, params: this.visibleParams(words, q.folderPath === '' ? folderMask! : this.folderMask('', q.allowedRoots)!) };
      const avgdl = q.params?.avgdl ?? (this.live ? this.dlSum / this.live : 1);
      const idf: number[] = new Array(words.length).fill(0);
      // One word, one term: the pass reads the posting list itself and scores only what passes.
      if (words.length === 1 && words[0]!.lists.length === 1) return this.oneTerm(words[0]!.lists[0]!, q, folderMask, avgdl);
      // Rarest word first: it bounds the candidates every later word is checked against, and its
      // score is added first. For a limited account "rarest" is by its own statistics (idf
      // descending, word order on ties), so that even the order of the additions, and with it the
      // last bit of every key, is independent of other folders.
      const fixed = q.params;
      const order = limited ? [...words].sort((a, b) => fixed!.idf[b.i]! - fixed!.idf[a.i]!) : [...words].sort((a, b) => a.size - b.size);
      if (order[0]!.lists.length > 0) {
        let wi = 0;
        const [a, b] = order.map((w) => (w.lists.length === 1 ? w.lists[0]! : null));
        if (a?.frequent && b?.frequent) {
          // Two frequent words: their bitmaps.
          const idfOf = (word: { i: number }, p: Postings) => (idf[word.i] = q.params?.idf[word.i] ?? this.idf(this.liveCount(p)));
          count = this.andLists(a, b, idfOf(order[0]!, a), idfOf(order[1]!, b), K1 * (1 - B), (K1 * B) / avgdl);
          wi = 2;
        }
        for (; wi < order.length && (wi === 0 || count > 0); wi++) {
          const { i, lists } = order[wi]!;
          count = this.applyWord(lists, wi === 0, count, avgdl, i, idf, q.params);
        }
      }
      params = { idf, avgdl };
    } else if (folderMask === null && this.countsAnswer(q.filters)) {
      return { ...this.newestFirst(q), params: null };
    } else count = this.allByDate();
    return { ...this.collect(count, folderMask, q), params };
  }

  /**
   * Whether the whole-library counts answer a search without words under these filters: not a
   * keyword filter (a document's keywords are not a combination), nor a column filter once the
   * per-combination keyword counts were given up.
   */
  private countsAnswer(filters: ActiveFilters): boolean {
    return !filters.keyword?.length && (this.counts.byCombo !== null || !COMBO_FACETS.some((f) => filters[f]?.length));
  }

  /** A search for one word matching one term (see search()). */
  private oneTerm(p: Postings, q: EngineQuery, folderMask: Uint8Array | null, avgdl: number): EngineResult {
    const df = this.liveCount(p);
    const idf = q.params?.idf[0] ?? this.idf(df);
    const t = this.tally(q, folderMask);
    const src: Candidates = { docs: p.docs, scores: null, tfs: p.tf, idf, c0: K1 * (1 - B), c1: (K1 * B) / avgdl, checkAlive: this.live !== this.n };
    // A frequent list's counts stand in for the counting pass (ComboCounts): the keyword facet is
    // the sum over the combinations passing the column filters, the column facets and total are
    // those of the combinations (of the filtered keyword's documents, for one keyword). The pass
    // then only ranks.
    const counts = folderMask === null ? p.frequent?.counts : undefined;
    const perCombo = counts && this.perCombo(counts, q.filters.keyword);
    if (!counts || !perCombo || (t.comboFiltered && counts.byCombo === null)) return { ...this.finish(t, this.scan(p.n, t, src)), params: { idf: [idf], avgdl } };
    this.sumKeywords(t, counts);
    const total = this.fillCombos(t, perCombo);
    this.rank(p, t, src);
    return { ...this.finish(t, total), params: { idf: [idf], avgdl } };
  }

  /**
   * Per combination, the documents counted that have the one filtered keyword (all of them without
   * a keyword filter); null for several keywords (a document with two would count twice) or when
   * the counts per combination and keyword were given up.
   */
  private perCombo(counts: ComboCounts, keywords: string[] | undefined): Int32Array | null {
    if (!keywords?.length) return counts.live;
    const byCombo = counts.byCombo;
    if (keywords.length > 1 || byCombo === null) return null;
    const code = this.dicts.keyword.codes.get(keywords[0]!) ?? 0;
    const out = new Int32Array(this.comboValues.length);
    for (let c = 0; c < out.length; c++) out[c] = code === 0 ? 0 : (byCombo[c]?.[code] ?? 0);
    return out;
  }

  /**
   * Adds the keyword counts of the combinations passing the column filters to the tally's keyword
   * facet (without column filters, the counts of all of them).
   */
  private sumKeywords(t: Tally, counts: ComboCounts): void {
    const { comboFail, keywords } = t;
    if (!t.comboFiltered) {
      keywords.set(counts.all.subarray(0, Math.min(counts.all.length, keywords.length)));
      return;
    }
    for (let c = 0; c < comboFail.length; c++) {
      const kc = counts.byCombo![c];
      if (comboFail[c] !== 0 || !kc) continue;
      for (let k = 1, n = Math.min(kc.length, keywords.length); k < n; k++) keywords[k]! += kc[k]!;
    }
  }

  /**
   * A search without words over the whole library and no keyword filter: facets and total from
   * the per-combination counts, the page from the date order (search-aggregates.ts).
   */
  private newestFirst(q: EngineQuery): Omit<EngineResult, 'params'> {
    const t = this.tally(q, null);
    const total = this.fillCombos(t, this.counts.live);
    this.sumKeywords(t, this.counts);
    if (total > 0 && q.limit > 0) {
      this.walkDates(!this.dateOrder || this.dateOrder.stale(this.n) ? this.orderByDate() : this.dateOrder, t);
    }
    return this.finish(t, total);
  }

  /*
   * The query's hot loops (allByDate and below) each live in a small method of their own. V8
   * compiles a long-running loop on the stack (OSR) and caches that code; code after the loop that
   * had not yet run when it was compiled then deoptimised on every call ("insufficient type
   * feedback", 25 deopts in 30 searches when the loops shared `collect`), and the loop ran
   * unoptimised. One loop per method with nothing cold after it keeps them compiled. Per-call
   * closures are avoided in them for the same reason (a new closure is a "wrong call target").
   */

  /** Every live document, keyed by modification time (a search without words, in collect's pass). */
  private allByDate(): number {
    const { cand, candScore, alive, mtime } = this;
    let k = 0;
    for (let d = 0, n = this.n; d < n; d++) {
      if (alive[d] === 0) continue;
      cand[k] = d;
      candScore[k++] = mtime[d]!;
    }
    return k;
  }

  /** A tally's per-combination counts from known counts of the matches; returns the total. */
  private fillCombos(t: Tally, perCombo: Int32Array): number {
    const { comboFail, full, partial } = t;
    let total = 0;
    for (let c = 0; c < comboFail.length; c++) {
      const n = perCombo[c] ?? 0;
      const fail = comboFail[c]!;
      if (n === 0) continue;
      if (fail === 0) {
        full[c] = n;
        total += n;
      } else if ((fail & (fail - 1)) === 0) partial[c] = n;
    }
    return total;
  }

  /** The newest `limit` documents passing the column filters, after the keyset position. */
  private walkDates(order: DateOrder, t: Tally): void {
    const { alive, mtime, rowid } = this;
    const { comboFail, heap } = t;
    const { docs, starts } = order;
    // Combinations that came after the order have only late documents (offered below).
    for (let c = 0; c < comboFail.length && c + 1 < starts.length; c++) {
      if (comboFail[c] !== 0) continue;
      const end = starts[c + 1]!;
      for (let i = t.afterKey === Infinity ? starts[c]! : order.after(c, t.afterKey, t.afterRow, mtime, rowid); i < end; i++) {
        const d = docs[i]!;
        if (alive[d] === 0) continue;
        const key = mtime[d]!;
        // Newest first within the group: once the page is full, an older document ends it.
        if (key < heap.threshold) break;
        heap.offer(key, rowid[d]!);
      }
    }
    // Documents numbered after the order was built: few (see DateOrder.stale).
    this.offerPassing(order.builtN, t);
  }

  /** Offers every live document from number `from` on that passes the column filters. */
  private offerPassing(from: number, t: Tally): void {
    const { alive } = this;
    const comboFail = t.comboFail;
    for (let d = from, n = this.n; d < n; d++) if (alive[d] !== 0 && comboFail[this.comboOf(d)] === 0) this.offerAfter(d, t);
  }

  /** Offers document d, keyed by date, if it comes after the keyset position. */
  private offerAfter(d: number, t: Tally): boolean {
    const key = this.mtime[d]!;
    const r = this.rowid[d]!;
    if (key > t.afterKey || (key === t.afterKey && r <= t.afterRow)) return false;
    t.heap.offer(key, r);
    return true;
  }

  /**
   * Scores one query word into the candidates: the first word makes them, a later word keeps
   * those it also matches. A later word's single posting list is probed or intersected as a
   * bitmap; several (a prefix) have their frequencies spread into a dense array.
   */
  private applyWord(lists: Postings[], first: boolean, count: number, avgdl: number, word: number, idf: number[], fixed: RankParams | null): number {
    // The constants of saturation().
    const c0 = K1 * (1 - B);
    const c1 = (K1 * B) / avgdl;
    const idfOf = (df: number) => (idf[word] = fixed?.idf[word] ?? this.idf(df));
    if (!first && lists.length === 1) {
      // Few candidates against a long list: a binary search each; otherwise a bitmap of the list
      // (a frequent list has one).
      const p = lists[0]!;
      const idf = idfOf(this.liveCount(p));
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
    const { cand, candScore, dl } = this;
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
    const words = (this.n + 31) >>> 5;
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
    const { cand, candScore, dl } = this;
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
  private andLists(a: Postings, b: Postings, ia: number, ib: number, c0: number, c1: number): number {
    const { cand, candScore, dl, alive } = this;
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
    const { cand, candScore, dl, alive } = this;
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
    const { cand, candScore, tfDense, seen, dl, alive } = this;
    let k = 0;
    for (let w = 0, words = (this.n + 31) >>> 5; w < words; w++) {
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
    const { tfDense, alive } = this;
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
    const { cand, candScore, tfDense, dl } = this;
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
  private idf(df: number): number {
    return bm25Idf(this.live, df);
  }

  /**
   * Ranking parameters over the documents in the visible folders only: their number, average
   * length and each word's document frequency among them. The counts and lengths are per folder
   * (O(folders)); a word's frequency is a pass over its posting lists (O(postings)), the same
   * order of work as the search's own pass over the candidates.
   */
  private visibleParams(words: { lists: Postings[] }[], visible: Uint8Array): RankParams {
    let n = 0;
    let dlSum = 0;
    for (let c = 1; c < visible.length; c++) {
      if (visible[c] === 0) continue;
      n += this.folderLive[c] ?? 0;
      dlSum += this.folderDl[c] ?? 0;
    }
    return { idf: words.map((w) => bm25Idf(n, this.visibleDf(w.lists, visible))), avgdl: n ? dlSum / n : 1 };
  }

  /** Live documents in the visible folders that are in any of the lists (each counted once). */
  private visibleDf(lists: Postings[], visible: Uint8Array): number {
    const { alive, folder, seen } = this;
    let df = 0;
    if (lists.length === 1) {
      const { docs, n } = lists[0]!.view();
      for (let i = 0; i < n; i++) {
        const d = docs[i]!;
        df += alive[d]! & visible[folder[d]!]!;
      }
      return df;
    }
    // A prefix's terms share documents: a bit per document counts each once (cleared after).
    for (const p of lists) {
      const { docs, n } = p.view();
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
  }

  private countFolder(d: number, sign: 1 | -1): void {
    const c = this.folder[d]!;
    this.folderLive[c] = (this.folderLive[c] ?? 0) + sign;
    this.folderDl[c] = (this.folderDl[c] ?? 0) + sign * this.dl[d]!;
  }

  /** Live entries of a list (its document frequency), recounted only after removals. */
  private liveCount(p: Postings): number {
    if (p.liveAt === this.removals && p.liveN === p.n) return p.live;
    let live = 0;
    for (let i = 0; i < p.n; i++) live += this.alive[p.docs[i]!]!;
    p.live = live;
    p.liveAt = this.removals;
    p.liveN = p.n;
    return live;
  }

  /** Which folders (by code) are in scope; null when every folder is. */
  private folderMask(folderPath: string, roots: string[] | null): Uint8Array | null {
    if (folderPath === '' && roots === null) return null;
    const values = this.dicts.folder.values;
    const mask = new Uint8Array(values.length);
    for (let c = 1; c < values.length; c++) {
      const p = values[c] === '/' ? '' : values[c]!;
      mask[c] = isWithin(p, folderPath) && (roots === null || roots.some((r) => isWithin(p, r))) ? 1 : 0;
    }
    return mask;
  }

  /**
   * One pass over the candidates: scope, filters, facet counts (each facet counted under every
   * other active filter, so options of one facet stay selectable), the exact total and the top
   * `limit` after the keyset position (key descending, row id ascending).
   */
  private collect(count: number, folderMask: Uint8Array | null, q: EngineQuery): Omit<EngineResult, 'params'> {
    const t = this.tally(q, folderMask);
    return this.finish(t, this.scan(count, t, { docs: this.cand, scores: this.candScore, tfs: null, idf: 1, c0: 0, c1: 0, checkAlive: false }));
  }

  /** A query's filters decided per combination, and empty counts. */
  private tally(q: EngineQuery, folderMask: Uint8Array | null): Tally {
    const { dicts, comboValues } = this;
    const mask = (f: FacetKey): Uint8Array | null => {
      const vals = q.filters[f];
      if (!vals?.length) return null;
      const m = new Uint8Array(dicts[f].values.length);
      for (const v of vals) {
        const c = dicts[f].codes.get(v);
        if (c !== undefined) m[c] = 1;
      }
      return m;
    };
    const comboMasks = COMBO_FACETS.map(mask);
    const nCombos = comboValues.length;
    const comboFail = new Uint8Array(nCombos);
    for (let c = 0; c < nCombos; c++) {
      let bits = 0;
      for (let i = 0; i < 4; i++) if (comboMasks[i] && !comboMasks[i]![comboValues[c]![i]!]) bits |= 1 << i;
      comboFail[c] = bits;
    }
    return {
      folderMask, comboFail, comboFiltered: comboMasks.some((m) => m !== null), keywordMask: mask('keyword'),
      full: new Int32Array(nCombos), partial: new Int32Array(nCombos),
      keywords: new Int32Array(dicts.keyword.values.length), heap: new TopK(q.limit),
      afterKey: q.after?.key ?? Infinity, afterRow: q.after?.rowid ?? -1,
    };
  }

  /** Facet options from a tally's counts, and the page. */
  private finish(t: Tally, total: number): Omit<EngineResult, 'params'> {
    const { dicts, comboValues } = this;
    const { comboFail, full, partial } = t;
    const counts: Record<FacetKey, Int32Array> = {
      type: new Int32Array(dicts.type.values.length), ext: new Int32Array(dicts.ext.values.length), keyword: t.keywords,
      year: new Int32Array(dicts.year.values.length), orientation: new Int32Array(dicts.orientation.values.length),
    };
    for (let c = 0; c < comboFail.length; c++) {
      const v = comboValues[c]!;
      const fail = comboFail[c]!;
      for (let i = 0; i < 4; i++) {
        // A facet counts the matches passing all other filters: full ones, and those failing only it.
        const n = full[c]! + (fail === 1 << i ? partial[c]! : 0);
        if (n) counts[COMBO_FACETS[i]!][v[i]!]! += n;
      }
    }
    const facets = {} as EngineResult['facets'];
    for (const f of ['type', 'ext', 'keyword', 'year', 'orientation'] as FacetKey[]) facets[f] = topOptions(counts[f], dicts[f].values, FACET_OPTIONS);
    const { keys, rowids } = t.heap.sorted();
    return { rowids, keys, total, facets };
  }

  /** The facet rows of docs[0..count), one after another (in `gathered`). */
  private gatherRows(count: number, docs: Int32Array): Int32Array {
    if (this.gathered.length < count * ROW_STRIDE) this.gathered = new Int32Array(Math.max(count * ROW_STRIDE, this.gathered.length * 2));
    const { gathered: g, facetRows: rows } = this;
    for (let c = 0, o = 0; c < count; c++, o += ROW_STRIDE) {
      const r = docs[c]! * ROW_STRIDE;
      g[o] = rows[r]!;
      g[o + 1] = rows[r + 1]!;
      g[o + 2] = rows[r + 2]!;
      g[o + 3] = rows[r + 3]!;
    }
    return g;
  }

  /**
   * The top `limit` of a frequent list by BM25 after the keyset position, nothing counted: a block
   * of entries is scored only when its bound (FrequentList) can reach the page. For a word in half
   * the library, ≈ 6 ms scoring every entry against ≈ 0.x ms.
   */
  private rank(p: Postings, t: Tally, src: Candidates): void {
    const { rowid, alive, dl } = this;
    const { heap, afterKey, afterRow } = t;
    const filtered = t.comboFiltered || t.keywordMask !== null;
    const { docs, tfs, idf, c0, c1, checkAlive } = src;
    const { maxTf, minDl, minRow } = p.frequent!;
    for (let start = 0, b = 0, n = p.n; start < n; start += BLOCK, b++) {
      // No entry of the block can reach the page (keys as below; a tie loses on the row id).
      const bound = saturation(maxTf[b]!, minDl[b]!, c0, c1) * idf;
      if (bound < heap.threshold || (bound === heap.threshold && minRow[b]! > heap.worstId)) continue;
      for (let c = start, end = Math.min(n, start + BLOCK); c < end; c++) {
        const d = docs[c]!;
        if (checkAlive && alive[d] === 0) continue;
        const key = saturation(tfs![c]!, dl[d]!, c0, c1) * idf; // as scan
        if (key > afterKey || key < heap.threshold || (filtered && !this.passes(d, t))) continue;
        const r = rowid[d]!;
        if (key !== afterKey || r > afterRow) heap.offer(key, r);
      }
    }
  }

  /** Whether document d passes the column and keyword filters (as scan decides it). */
  private passes(d: number, t: Tally): boolean {
    const rows = this.facetRows;
    const o = d * ROW_STRIDE;
    const head = rows[o]!;
    if (t.comboFail[head & COMBO_MASK] !== 0) return false;
    const mKw = t.keywordMask;
    if (mKw === null) return true;
    const nKw = head >>> COMBO_BITS;
    if (nKw <= INLINE_KEYWORDS) return (mKw[rows[o + 1]!]! | mKw[rows[o + 2]!]! | mKw[rows[o + 3]!]!) === 1;
    for (let i = rows[o + 1]!, e = i + nKw; i < e; i++) if (mKw[this.kwData[i]!] === 1) return true;
    return false;
  }

  /** collect()'s pass over the candidates (see the note above allByDate); returns the total. */
  private scan(count: number, t: Tally, src: Candidates): number {
    const { folder, facetRows: rows, kwData, rowid, alive, dl } = this;
    const { folderMask, comboFail, keywordMask: mKw, full, partial, keywords: cKw, heap, afterKey, afterRow } = t;
    const { docs: cand, scores, tfs, idf, c0, c1, checkAlive } = src;
    // A sparse result's rows lie far apart: copied first in a loop without branches, whose cache
    // misses the processor overlaps, then read in order (44,000 rows: ≈ 6 → 4.5 ms for the pass).
    const sparse = count * 8 < this.n;
    const rowAt = sparse ? this.gatherRows(count, cand) : rows;
    let total = 0;
    for (let c = 0; c < count; c++) {
      const d = cand[c]!;
      if (checkAlive && alive[d] === 0) continue;
      if (folderMask !== null && folderMask[folder[d]!] === 0) continue;
      const o = (sparse ? c : d) * ROW_STRIDE;
      const head = rowAt[o]!;
      const cb = head & COMBO_MASK;
      const fail = comboFail[cb]!;
      if (fail !== 0 && (fail & (fail - 1)) !== 0) continue; // fails two or more filters
      const nKw = head >>> COMBO_BITS;
      const inline = nKw <= INLINE_KEYWORDS;
      let kwPass = true;
      if (mKw !== null) {
        if (inline) kwPass = (mKw[rowAt[o + 1]!]! | mKw[rowAt[o + 2]!]! | mKw[rowAt[o + 3]!]!) === 1;
        else {
          kwPass = false;
          for (let i = rowAt[o + 1]!, e = i + nKw; i < e; i++) if (mKw[kwData[i]!] === 1) { kwPass = true; break; }
        }
      }
      if (fail !== 0) {
        if (kwPass) partial[cb]!++;
        continue;
      }
      // Passes every column filter: its keywords count for the keyword facet (empty slots count
      // for code 0, which is never read).
      if (inline) {
        cKw[rowAt[o + 1]!]!++;
        cKw[rowAt[o + 2]!]!++;
        cKw[rowAt[o + 3]!]!++;
      } else for (let i = rowAt[o + 1]!, e = i + nKw; i < e; i++) cKw[kwData[i]!]!++;
      if (!kwPass) continue;
      full[cb]!++;
      total++;
      // The row id (another cache line) only for a key that can make the page.
      const key = scores !== null ? scores[c]! : saturation(tfs![c]!, dl[d]!, c0, c1) * idf; // as firstList, then scale
      if (key > afterKey || key < heap.threshold) continue;
      const r = rowid[d]!;
      if (key !== afterKey || r > afterRow) heap.offer(key, r);
    }
    return total;
  }
}

/**
 * What scan() passes over: documents in increasing order with their keys, or a posting list whose
 * BM25 keys it computes itself (for the documents that pass the filters only).
 */
interface Candidates {
  docs: Int32Array;
  scores: Float64Array | null;
  tfs: Uint16Array | null;
  idf: number;
  c0: number;
  c1: number;
  /** Whether dead documents may be among them (a posting list keeps entries of dead ones). */
  checkAlive: boolean;
}

/** One query's filters, decided per combination, and its running counts (collect → scan). */
interface Tally {
  folderMask: Uint8Array | null;
  /** Per combination: which of the four column filters it fails (bit i = COMBO_FACETS[i]). */
  comboFail: Uint8Array;
  /** Whether any of the four column filters is set. */
  comboFiltered: boolean;
  keywordMask: Uint8Array | null;
  /** Per combination: matches passing every filter. */
  full: Int32Array;
  /** Per combination: matches failing only the one column filter the combination fails. */
  partial: Int32Array;
  /** Per keyword code: matches passing every column filter. */
  keywords: Int32Array;
  heap: TopK;
  /** The keyset position (Infinity and −1 on a first page). */
  afterKey: number;
  afterRow: number;
}

/** The facets held in a document's combination code, in bit order. */
const COMBO_FACETS: Exclude<FacetKey, 'keyword'>[] = ['type', 'ext', 'year', 'orientation'];

/**
 * BM25's term-frequency saturation tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl)), with c0 = k1·(1 − b)
 * and c1 = k1·b / avgdl hoisted out of the loops. Every path computes a document's key with it,
 * so that keys (and the keyset cursors made of them) agree to the last bit.
 */
function saturation(tf: number, dlen: number, c0: number, c1: number): number {
  return (tf * (K1 + 1)) / (tf + c0 + c1 * dlen);
}

/** Set bits of a 32-bit word. */
function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  x = (x + (x >>> 4)) & 0x0f0f0f0f;
  return Math.imul(x, 0x01010101) >>> 24;
}

function sum(lists: Postings[]): number {
  let s = 0;
  for (const p of lists) s += p.n;
  return s;
}

/** BM25's inverse document frequency of a word in df of n documents. */
function bm25Idf(n: number, df: number): number {
  return Math.log(1 + (n - df + 0.5) / (df + 0.5));
}
