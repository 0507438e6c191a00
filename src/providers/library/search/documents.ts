/**
 * The search engine's document table: one dense number per indexed asset (0..n-1; a changed asset
 * gets a new number, the old one dies), its columns as typed arrays, its facet values as small
 * integer codes and per-folder statistics. The engine's passes (scoring.ts, collect.ts) read the
 * columns directly, destructured once per pass; only this class writes them.
 */
import { isWithin } from '../paths.js';
import type { ComboCounts } from './aggregates.js';
import type { Postings } from './postings.js';
import type { FacetKey, SearchDoc } from './types.js';
import { LargeMap } from '../large-map.js';
import { RowIndex } from './row-index.js';

/** A document's facet row (DocumentTable.facetRows): header, then three keyword slots. */
export const ROW_STRIDE = 4;
export const INLINE_KEYWORDS = ROW_STRIDE - 1;
export const COMBO_BITS = 21;
export const COMBO_MASK = (1 << COMBO_BITS) - 1;
/** Keywords a document contributes to the keyword facet (fits the row header's count bits). */
const MAX_KEYWORDS = 1000;

/** Facet values ↔ small integer codes; code 0 is "no value". */
class Dictionary {
  readonly codes = new LargeMap<string, number>();
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

/** The document table's part of a snapshot (engine.ts's EngineState). */
export interface DocumentState {
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
}

export class DocumentTable {
  n = 0;
  rowid: Int32Array = new Int32Array(1024);
  alive: Uint8Array = new Uint8Array(1024);
  dl: Float32Array = new Float32Array(1024);
  mtime: Float64Array = new Float64Array(1024);
  folder: Int32Array = new Int32Array(1024);
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
  facetRows: Int32Array = new Int32Array(1024 * ROW_STRIDE);
  private readonly combos = new Map<string, number>();
  comboValues: number[][] = []; // combo → [type, ext, year, orientation] codes
  kwData: Int32Array = new Int32Array(1024);
  kwUsed = 0;
  /** The keyword codes of the document add() numbered last. */
  readonly added: number[] = [];
  /** Scratch for one document's keyword codes (readKeywords). */
  readonly kwOut = new Int32Array(MAX_KEYWORDS);
  /** Row id → live document (row-index.ts). */
  private docOf = new RowIndex();
  live = 0;
  dlSum = 0;
  /**
   * Per folder code: live documents and the sum of their lengths. A limited account's ranking
   * statistics are those of its folders alone (SearchEngine.visibleParams); these make its N and
   * average length a sum over folders rather than a pass over documents. Lengths are integer
   * weights, so the sums are exact whatever the order of additions.
   */
  private folderLive: number[] = [];
  private folderDl: number[] = [];
  /** Counts removals, so that cached per-list live counts know when they are stale. */
  private removals = 0;

  readonly dicts: Record<FacetKey | 'folder', Dictionary> = {
    folder: new Dictionary(), type: new Dictionary(), ext: new Dictionary(), keyword: new Dictionary(), year: new Dictionary(), orientation: new Dictionary(),
  };

  /**
   * Numbers a new live document of weighted length `dl` and fills its columns and facet row; its
   * keyword codes are left in `added`.
   */
  add(doc: SearchDoc, dl: number): number {
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
    const kws = this.added;
    kws.length = 0;
    for (const k of doc.keywords) {
      const code = this.dicts.keyword.code(k.toLowerCase());
      if (code !== 0 && kws.length < MAX_KEYWORDS && !kws.includes(code)) kws.push(code);
    }
    this.writeRow(d, combo, kws);
    this.dl[d] = dl;
    this.docOf.add(d, this.rowid);
    this.live++;
    this.dlSum += dl;
    this.countFolder(d, 1);
    return d;
  }

  /** The live document of an asset row, if any. */
  find(rowid: number): number | undefined {
    return this.docOf.get(rowid, this.rowid);
  }

  /** Document d (find()) dies. */
  kill(d: number): void {
    this.docOf.delete(this.rowid[d]!, this.rowid);
    this.removals++;
    this.alive[d] = 0;
    this.live--;
    this.dlSum -= this.dl[d]!;
    this.countFolder(d, -1);
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
  comboOf(d: number): number {
    return this.facetRows[d * ROW_STRIDE]! & COMBO_MASK;
  }

  /** Copies document d's keyword codes into kwOut (spilled ones from `spill`); returns how many. */
  readKeywords(d: number, spill = this.kwData): number {
    const o = d * ROW_STRIDE;
    const len = this.facetRows[o]! >>> COMBO_BITS;
    const from = len <= INLINE_KEYWORDS ? this.facetRows : spill;
    const s = len <= INLINE_KEYWORDS ? o + 1 : this.facetRows[o + 1]!;
    for (let i = 0; i < len; i++) this.kwOut[i] = from[s + i]!;
    return len;
  }

  /** Document d counted into (sign 1) or out of (sign −1) the whole-library or a term's counts. */
  countDoc(c: ComboCounts, d: number, sign: 1 | -1): void {
    c.add(this.comboOf(d), this.kwOut, this.readKeywords(d), sign);
  }

  private growDocs(size: number): void {
    this.rowid = grow(this.rowid, size);
    this.alive = grow(this.alive, size);
    this.dl = grow(this.dl, size);
    this.mtime = grow(this.mtime, size);
    this.folder = grow(this.folder, size);
    this.facetRows = grow(this.facetRows, size * ROW_STRIDE);
  }

  private countFolder(d: number, sign: 1 | -1): void {
    const c = this.folder[d]!;
    this.folderLive[c] = (this.folderLive[c] ?? 0) + sign;
    this.folderDl[c] = (this.folderDl[c] ?? 0) + sign * this.dl[d]!;
  }

  /** Live documents and the sum of their lengths in the folders set in `visible` (by code). */
  visibleStats(visible: Uint8Array): { n: number; dlSum: number } {
    let n = 0;
    let dlSum = 0;
    for (let c = 1; c < visible.length; c++) {
      if (visible[c] === 0) continue;
      n += this.folderLive[c] ?? 0;
      dlSum += this.folderDl[c] ?? 0;
    }
    return { n, dlSum };
  }

  /** Live entries of a list (its document frequency), recounted only after removals. */
  liveCount(p: Postings): number {
    if (p.liveAt === this.removals && p.liveN === p.n) return p.live;
    let live = 0;
    for (let i = 0; i < p.n; i++) live += this.alive[p.docs[i]!]!;
    p.live = live;
    p.liveAt = this.removals;
    p.liveN = p.n;
    return live;
  }

  /** Which folders (by code) are in scope; null when every folder is. */
  folderMask(folderPath: string, roots: string[] | null): Uint8Array | null {
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
   * Drops the growth slack of the columns and the keyword spill (after a bulk build): they grow
   * by doubling, so up to half of each is unused (10 million documents in columns for 16.8).
   */
  trim(): void {
    const n = Math.max(16, this.n);
    this.rowid = this.rowid.slice(0, n);
    this.alive = this.alive.slice(0, n);
    this.dl = this.dl.slice(0, n);
    this.mtime = this.mtime.slice(0, n);
    this.folder = this.folder.slice(0, n);
    this.facetRows = this.facetRows.slice(0, n * ROW_STRIDE);
    this.kwData = this.kwData.slice(0, Math.max(16, this.kwUsed));
  }

  /**
   * Renumbers the live documents in order, dropping the dead ones; returns each old number's new
   * one (−1: dead), for the posting lists to follow.
   */
  compact(): Int32Array {
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
    }
    this.alive.fill(0, m, this.n);
    this.n = m;
    this.docOf = new RowIndex(m);
    for (let d = 0; d < m; d++) this.docOf.add(d, this.rowid);
    return map;
  }

  exportState(): DocumentState {
    const n = this.n;
    const dicts = {} as DocumentState['dicts'];
    for (const [k, d] of Object.entries(this.dicts)) dicts[k as FacetKey | 'folder'] = d.values.slice(1);
    return {
      n, live: this.live, dlSum: this.dlSum, kwUsed: this.kwUsed,
      rowid: this.rowid.subarray(0, n), alive: this.alive.subarray(0, n), dl: this.dl.subarray(0, n), mtime: this.mtime.subarray(0, n),
      folder: this.folder.subarray(0, n), facetRows: this.facetRows.subarray(0, n * ROW_STRIDE),
      kwData: this.kwData.subarray(0, this.kwUsed), comboValues: this.comboValues, dicts,
    };
  }

  /** A table over a snapshot's arrays (they are used in place, not copied). */
  static fromState(st: DocumentState): DocumentTable {
    const t = new DocumentTable();
    t.n = st.n;
    t.live = st.live;
    t.dlSum = st.dlSum;
    t.kwUsed = st.kwUsed;
    t.rowid = st.rowid;
    t.alive = st.alive;
    t.dl = st.dl;
    t.mtime = st.mtime;
    t.folder = st.folder;
    t.facetRows = st.facetRows;
    t.kwData = st.kwData;
    t.comboValues = st.comboValues;
    st.comboValues.forEach((v, i) => t.combos.set(v.join(','), i));
    for (const [k, values] of Object.entries(st.dicts)) for (const v of values) t.dicts[k as FacetKey | 'folder'].code(v);
    t.docOf = new RowIndex(st.live);
    for (let d = 0; d < st.n; d++) {
      if (!st.alive[d]) continue;
      t.docOf.add(d, st.rowid);
      t.countFolder(d, 1);
    }
    return t;
  }
}
