/**
 * The counting pass and the page: a query's filters decided once per combination (Tally), one pass
 * over the candidates that applies scope and filters, counts every facet and the exact total and
 * keeps the top `limit` after the keyset position; or, where counts are known in advance
 * (aggregates.ts, frequent.ts), the page alone. Hot loops as in scoring.ts: one per method.
 */
import { COMBO_BITS, COMBO_MASK, INLINE_KEYWORDS, ROW_STRIDE, type DocumentTable } from './documents.js';
import type { ComboCounts, DateOrder } from './aggregates.js';
import { BLOCK } from './frequent.js';
import { TopK, topOptions } from './page.js';
import type { Postings } from './postings.js';
import { saturation } from './scoring.js';
import { FACETS, type EngineQuery, type EngineResult, type FacetKey } from './types.js';

const FACET_OPTIONS = 30;

export class Collector {
  /** Scratch: the facet rows of a sparse result, one after another (gatherRows). */
  private gathered = new Int32Array(0);

  constructor(private readonly table: DocumentTable) {}

  /**
   * One pass over the candidates (the first `count` of cand/candScore): scope, filters, facet counts (each facet counted under every
   * other active filter, so options of one facet stay selectable), the exact total and the top
   * `limit` after the keyset position (key descending, row id ascending).
   */
  collect(count: number, cand: Int32Array, candScore: Float64Array, folderMask: Uint8Array | null, q: EngineQuery): Omit<EngineResult, 'params'> {
    const t = this.tally(q, folderMask);
    return this.finish(t, this.scan(count, t, { docs: cand, scores: candScore, tfs: null, idf: 1, c0: 0, c1: 0, checkAlive: false }));
  }

  /** A query's filters decided per combination, and empty counts. */
  tally(q: EngineQuery, folderMask: Uint8Array | null): Tally {
    const { dicts, comboValues } = this.table;
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
  finish(t: Tally, total: number): Omit<EngineResult, 'params'> {
    const { dicts, comboValues } = this.table;
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
    for (const f of FACETS) facets[f] = topOptions(counts[f], dicts[f].values, FACET_OPTIONS);
    const { keys, rowids } = t.heap.sorted();
    return { rowids, keys, total, facets };
  }

  /** The facet rows of docs[0..count), one after another (in `gathered`). */
  private gatherRows(count: number, docs: Int32Array): Int32Array {
    if (this.gathered.length < count * ROW_STRIDE) this.gathered = new Int32Array(Math.max(count * ROW_STRIDE, this.gathered.length * 2));
    const { gathered: g } = this;
    const { facetRows: rows } = this.table;
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
  rank(p: Postings, t: Tally, src: Candidates): void {
    const { rowid, alive, dl } = this.table;
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
    const rows = this.table.facetRows;
    const o = d * ROW_STRIDE;
    const head = rows[o]!;
    if (t.comboFail[head & COMBO_MASK] !== 0) return false;
    const mKw = t.keywordMask;
    if (mKw === null) return true;
    const nKw = head >>> COMBO_BITS;
    if (nKw <= INLINE_KEYWORDS) return (mKw[rows[o + 1]!]! | mKw[rows[o + 2]!]! | mKw[rows[o + 3]!]!) === 1;
    for (let i = rows[o + 1]!, e = i + nKw; i < e; i++) if (mKw[this.table.kwData[i]!] === 1) return true;
    return false;
  }

  /** collect()'s pass over the candidates (see the note above allByDate); returns the total. */
  scan(count: number, t: Tally, src: Candidates): number {
    const { folder, facetRows: rows, kwData, rowid, alive, dl } = this.table;
    const { folderMask, comboFail, keywordMask: mKw, full, partial, keywords: cKw, heap, afterKey, afterRow } = t;
    const { docs: cand, scores, tfs, idf, c0, c1, checkAlive } = src;
    // A sparse result's rows lie far apart: copied first in a loop without branches, whose cache
    // misses the processor overlaps, then read in order (44,000 rows: ≈ 6 → 4.5 ms for the pass).
    const sparse = count * 8 < this.table.n;
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

  /**
   * Per combination, the documents counted that have the one filtered keyword (all of them without
   * a keyword filter); null for several keywords (a document with two would count twice) or when
   * the counts per combination and keyword were given up.
   */
  perCombo(counts: ComboCounts, keywords: string[] | undefined): Int32Array | null {
    if (!keywords?.length) return counts.live;
    const byCombo = counts.byCombo;
    if (keywords.length > 1 || byCombo === null) return null;
    const code = this.table.dicts.keyword.codes.get(keywords[0]!) ?? 0;
    const out = new Int32Array(this.table.comboValues.length);
    for (let c = 0; c < out.length; c++) out[c] = code === 0 ? 0 : (byCombo[c]?.[code] ?? 0);
    return out;
  }

  /**
   * Adds the keyword counts of the combinations passing the column filters to the tally's keyword
   * facet (without column filters, the counts of all of them).
   */
  sumKeywords(t: Tally, counts: ComboCounts): void {
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

  /** A tally's per-combination counts from known counts of the matches; returns the total. */
  fillCombos(t: Tally, perCombo: Int32Array): number {
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
  walkDates(order: DateOrder, t: Tally): void {
    const { alive, mtime, rowid } = this.table;
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
    const { alive } = this.table;
    const comboFail = t.comboFail;
    for (let d = from, n = this.table.n; d < n; d++) if (alive[d] !== 0 && comboFail[this.table.comboOf(d)] === 0) this.offerAfter(d, t);
  }

  /** Offers document d, keyed by date, if it comes after the keyset position. */
  private offerAfter(d: number, t: Tally): boolean {
    const key = this.table.mtime[d]!;
    const r = this.table.rowid[d]!;
    if (key > t.afterKey || (key === t.afterKey && r <= t.afterRow)) return false;
    t.heap.offer(key, r);
    return true;
  }
}

/**
 * What scan() passes over: documents in increasing order with their keys, or a posting list whose
 * BM25 keys it computes itself (for the documents that pass the filters only).
 */
export interface Candidates {
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
export interface Tally {
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
export const COMBO_FACETS: Exclude<FacetKey, 'keyword'>[] = ['type', 'ext', 'year', 'orientation'];
