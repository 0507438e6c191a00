/**
 * The library's keyword search engine: an in-memory inverted index with columnar facet values,
 * fed from the index's assets table (see catch-up.ts) and answering one query with the page, the
 * exact total and every facet count in a single pass over typed arrays.
 *
 * Why not SQLite FTS5 alone: at a million assets a common word matches half of them, and an exact
 * `count(*)`, a bm25 sort and five GROUP BYs over 500,000 rows cost SQLite hundreds of
 * milliseconds; the same work over typed arrays is a few (docs/benchmarks.md).
 *
 * Semantics (docs/library.md): every query word must match, as a prefix, after Unicode folding
 * (NFKD, marks removed, lower case). Ranking is BM25F over six weighted fields; ties break by the
 * asset's row id. A search without words lists the newest first (modified, descending).
 *
 * This class is the engine's mutation API (upsert, remove, trim, compact, snapshots) and the plan
 * of a query; the parts live beside it: the document table (documents.ts), the terms
 * (terms.ts, postings.ts, frequent.ts), the candidates and their scores (scoring.ts), the
 * counting pass and the page (collect.ts), the whole-library aggregates (aggregates.ts).
 */
import { ComboCounts, DateOrder } from './aggregates.js';
import { COMBO_FACETS, Collector, type Candidates } from './collect.js';
import { DocumentTable, type DocumentState } from './documents.js';
import { FrequentList } from './frequent.js';
import { MAX_TF, MergedPrefixes, Postings } from './postings.js';
import { B, bm25Idf, K1, Scorer } from './scoring.js';
import { TermDictionary, type TermExport, type TermState } from './terms.js';
import { tokenize } from './tokenize.js';
import { FIELD_WEIGHTS, type ActiveFilters, type EngineQuery, type EngineResult, type RankParams, type SearchDoc, type SearchField } from './types.js';

const FIELDS = Object.keys(FIELD_WEIGHTS) as SearchField[];
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

/** Everything an engine holds, as plain arrays: what a snapshot file stores (snapshot.ts). */
export type EngineState = DocumentState & TermState;
/** EngineState as exported: the posting lists as one chunk each (TermExport). */
export type EngineExport = DocumentState & TermExport;

export class SearchEngine {
  private table = new DocumentTable();
  private terms = new TermDictionary();
  private scorer = new Scorer(this.table);
  private collector = new Collector(this.table);
  /** Whole-library counts and date order for searches without words (aggregates.ts). */
  private counts: ComboCounts;
  private dateOrder: DateOrder | null = null;
  /** The posting lists that keep TermCounts. */
  private counted: Postings[] = [];
  private readonly termCountsMinDocs: number;
  private readonly merged = new MergedPrefixes();
  private readonly mergeMinPostings: number;
  private readonly mergeScratch = new Map<string, { tf: number; terms: number }>();
  private readonly termScratch = new Map<string, number>();

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
    return this.table.live;
  }

  get deadDocuments(): number {
    return this.table.n - this.table.live;
  }

  // ── mutation ─────────────────────────────────────────────────────────────────────────────

  /** Adds or replaces the document of an asset row. */
  upsert(doc: SearchDoc): void {
    this.remove(doc.rowid);
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
    const d = this.table.add(doc, dl);
    const combo = this.table.comboOf(d);
    const kws = this.table.added;
    this.counts.add(combo, kws, kws.length, 1);
    for (const [t, weighted] of tf) {
      const w = Math.min(weighted, MAX_TF);
      const p = this.terms.add(t, d, w);
      if (p?.frequent) this.countFrequent(p, d, w, combo, kws);
    }
    if (this.merged.size) this.addToMerged(d, tf, combo, kws);
  }

  /** Appends new document d (its length and row id set) to list p, and to p's FrequentList. */
  private append(p: Postings, d: number, tf: number, combo: number, kws: number[]): void {
    p.push(d, tf);
    if (p.frequent) this.countFrequent(p, d, tf, combo, kws);
  }

  /** Records list p's new last entry, document d, in p's FrequentList. */
  private countFrequent(p: Postings, d: number, tf: number, combo: number, kws: number[]): void {
    p.frequent!.add(p.n - 1, d, tf, this.table.dl[d]!, this.table.rowid[d]!);
    p.frequent!.counts.add(combo, kws, kws.length, 1);
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
    const frequent = this.terms.listsFrom(min).filter((p) => this.table.liveCount(p) >= min).sort((a, b) => b.live - a.live);
    let budget = TERM_COUNTS_BUDGET;
    for (const p of frequent) {
      this.makeFrequent(p);
      budget -= p.frequent!.size;
      if (budget < 0) {
        p.frequent = null;
        break;
      }
      this.counted.push(p);
    }
  }

  private makeFrequent(p: Postings): void {
    const f = FrequentList.build(p, this.table.dl, this.table.rowid);
    for (let i = 0; i < p.n; i++) if (this.table.alive[p.docs[i]!]) this.table.countDoc(f.counts, p.docs[i]!, 1);
    p.frequent = f;
  }

  remove(rowid: number): void {
    const d = this.table.find(rowid);
    if (d === undefined) return;
    this.table.countDoc(this.counts, d, -1);
    // The document's frequent terms: few lists, each searched (their documents are in order).
    for (const p of this.counted) if (p.find(d) >= 0) this.table.countDoc(p.frequent!.counts, d, -1);
    for (const p of this.merged.values()) if (p.frequent && p.find(d) >= 0) this.table.countDoc(p.frequent.counts, d, -1);
    this.table.kill(d);
  }

  exportState(): EngineExport {
    return { ...this.table.exportState(), ...this.terms.exportState() };
  }

  /** An engine over a snapshot's arrays (they are used in place, not copied). */
  static fromState(st: EngineState): SearchEngine {
    const e = new SearchEngine();
    e.table = DocumentTable.fromState(st);
    e.scorer = new Scorer(e.table);
    e.collector = new Collector(e.table);
    e.terms = TermDictionary.fromState(st);
    for (let d = 0; d < e.table.n; d++) if (e.table.alive[d]) e.table.countDoc(e.counts, d, 1);
    e.indexFrequentTerms();
    e.orderByDate();
    return e;
  }

  /**
   * (Re)builds the date order (DateOrder): when the engine is built or loaded, so that the first
   * search without words does not wait for it (0.1–0.3 s at a million), and once it is stale.
   */
  private orderByDate(): DateOrder {
    const t = this.table;
    return (this.dateOrder = DateOrder.build(t.n, t.alive, t.mtime, t.rowid, (d) => t.comboOf(d), t.comboValues.length));
  }

  /** Releases the slack of growable arrays; worth it after building from a whole index. */
  trim(): void {
    this.terms.trim();
    this.table.trim();
    this.indexFrequentTerms();
    this.orderByDate();
  }

  /**
   * Renumbers the live documents and drops dead postings. Worth it once dead documents are a
   * large share (the library calls it when they outnumber the live ones).
   */
  compact(): void {
    this.terms = this.terms.remap(this.table.compact());
    // Both are by document number (and the merged lists go).
    this.indexFrequentTerms();
    this.orderByDate();
  }

  // ── queries ──────────────────────────────────────────────────────────────────────────────

  /**
   * Query word i's posting lists: the terms it is a prefix of, or their merged list when they are
   * several with at least mergeMinPostings postings (MergedPrefixes). `size` is their postings in
   * all either way, so that the order of the words, and so the sums of their scores, do not depend
   * on the cache.
   */
  private wordLists(word: string, i: number): { i: number; size: number; lists: Postings[] } {
    const cached = this.merged.get(word);
    if (cached) return { i, size: cached.postings, lists: [cached.list] };
    const lists = this.terms.expand(word);
    const size = sum(lists);
    if (lists.length < 2 || size < this.mergeMinPostings) return { i, size, lists };
    const k = this.scorer.mergeLists(lists);
    if (k < 0) return { i, size, lists };
    const p = Postings.over(this.scorer.cand.slice(0, k), Uint16Array.from(this.scorer.candScore.subarray(0, k)));
    // A merged list exists because searches ask for it: it gets counts from fewer documents than a term.
    if (k >= Math.min(this.termCountsMinDocs, MERGED_COUNTS_MIN_DOCS)) this.makeFrequent(p);
    this.merged.set(word, p, size, Math.max(1 << 16, MERGED_ENTRIES_PER_DOC * this.table.live));
    return { i, size, lists: [p] };
  }

  search(query: EngineQuery): EngineResult {
    this.scorer.scratch(this.table.n);
    let q = query;
    const folderMask = this.table.folderMask(q.folderPath, q.allowedRoots);
    let count = 0;
    let params: RankParams | null = null;

    if (q.words.length) {
      const words = q.words.map((w, i) => this.wordLists(w, i));
      // A limited account is ranked by the statistics of its own folders, fixed from its first
      // page on as a cursor's are: nothing it sees depends on documents it may not see.
      const limited = q.allowedRoots !== null;
      if (limited && !q.params) q = { ...q, params: this.visibleParams(words, q.folderPath === '' ? folderMask! : this.table.folderMask('', q.allowedRoots)!) };
      const avgdl = q.params?.avgdl ?? (this.table.live ? this.table.dlSum / this.table.live : 1);
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
          const idfOf = (word: { i: number }, p: Postings) => (idf[word.i] = q.params?.idf[word.i] ?? this.scorer.idf(this.table.liveCount(p)));
          count = this.scorer.andLists(a, b, idfOf(order[0]!, a), idfOf(order[1]!, b), K1 * (1 - B), (K1 * B) / avgdl);
          wi = 2;
        }
        for (; wi < order.length && (wi === 0 || count > 0); wi++) {
          const { i, lists } = order[wi]!;
          count = this.scorer.applyWord(lists, wi === 0, count, avgdl, i, idf, q.params);
        }
      }
      params = { idf, avgdl };
    } else if (folderMask === null && this.countsAnswer(q.filters)) {
      return { ...this.newestFirst(q), params: null };
    } else count = this.scorer.allByDate();
    return { ...this.collector.collect(count, this.scorer.cand, this.scorer.candScore, folderMask, q), params };
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
    const df = this.table.liveCount(p);
    const idf = q.params?.idf[0] ?? this.scorer.idf(df);
    const t = this.collector.tally(q, folderMask);
    const src: Candidates = { docs: p.docs, scores: null, tfs: p.tf, idf, c0: K1 * (1 - B), c1: (K1 * B) / avgdl, checkAlive: this.table.live !== this.table.n };
    // A frequent list's counts stand in for the counting pass (ComboCounts): the keyword facet is
    // the sum over the combinations passing the column filters, the column facets and total are
    // those of the combinations (of the filtered keyword's documents, for one keyword). The pass
    // then only ranks.
    const counts = folderMask === null ? p.frequent?.counts : undefined;
    const perCombo = counts && this.collector.perCombo(counts, q.filters.keyword);
    if (!counts || !perCombo || (t.comboFiltered && counts.byCombo === null)) return { ...this.collector.finish(t, this.collector.scan(p.n, t, src)), params: { idf: [idf], avgdl } };
    this.collector.sumKeywords(t, counts);
    const total = this.collector.fillCombos(t, perCombo);
    this.collector.rank(p, t, src);
    return { ...this.collector.finish(t, total), params: { idf: [idf], avgdl } };
  }

  /**
   * A search without words over the whole library and no keyword filter: facets and total from
   * the per-combination counts, the page from the date order (aggregates.ts).
   */
  private newestFirst(q: EngineQuery): Omit<EngineResult, 'params'> {
    const c = this.collector;
    const t = c.tally(q, null);
    const total = c.fillCombos(t, this.counts.live);
    c.sumKeywords(t, this.counts);
    if (total > 0 && q.limit > 0) {
      c.walkDates(!this.dateOrder || this.dateOrder.stale(this.table.n) ? this.orderByDate() : this.dateOrder, t);
    }
    return c.finish(t, total);
  }

  /**
   * Ranking parameters over the documents in the visible folders only: their number, average
   * length and each word's document frequency among them. The counts and lengths are per folder
   * (O(folders)); a word's frequency is a pass over its posting lists (O(postings)), the same
   * order of work as the search's own pass over the candidates.
   */
  private visibleParams(words: { lists: Postings[] }[], visible: Uint8Array): RankParams {
    const { n, dlSum } = this.table.visibleStats(visible);
    return { idf: words.map((w) => bm25Idf(n, this.scorer.visibleDf(w.lists, visible))), avgdl: n ? dlSum / n : 1 };
  }
}

function sum(lists: Postings[]): number {
  let s = 0;
  for (const p of lists) s += p.n;
  return s;
}
