/**
 * Rows as both index stores keep them (sqlite.ts, postgres.ts): the same columns, mapped to and
 * from the contract's rows here, and the searchable text each asset carries for the search engine.
 */
import type { ExtractedMetadata } from '../../metadata/index.js';
import type { SearchDoc, SearchField } from '../search/types.js';
import type { AccountRow, AssetRow, FacetKey, LockRow, VersionRow } from './contract.js';

export const FACET_COLUMN: Record<Exclude<FacetKey, 'keyword'>, string> = { type: 'kind', ext: 'ext', year: 'year', orientation: 'orientation' };

const SEP = '\u001f';
const KW_SEP = '\u001e';
const TEXT_FIELDS: SearchField[] = ['name', 'path', 'title', 'caption', 'keywords', 'other'];

/** An asset's searchable text: the engine's six fields, then its facet keywords. */
export function searchText(name: string, folderPath: string, m: Omit<ExtractedMetadata, 'warnings'>): string {
  const clean = (v: string) => v.replace(/[\u001e\u001f]/g, ' ');
  const fields = [
    name,
    folderPath,
    m.title ?? '',
    m.caption ?? '',
    [...m.keywords, ...m.categories].join(' '),
    [m.copyright, ...Object.values(m.iptc ?? {}), ...Object.values(m.xmp ?? {}), m.exif?.cameraModel].filter((v) => typeof v === 'string').join(' '),
  ];
  return [...fields.map(clean), m.keywords.map((k) => clean(k.toLowerCase())).join(KW_SEP)].join(SEP);
}

export function searchDoc(r: Record<string, unknown>): SearchDoc {
  const parts = String(r.search_text).split(SEP);
  const fields = {} as Record<SearchField, string>;
  TEXT_FIELDS.forEach((f, i) => (fields[f] = parts[i] ?? ''));
  return {
    rowid: r.rowid as number,
    folderPath: r.folder_path as string,
    kind: r.kind as string,
    ext: r.ext as string,
    year: (r.year as number | null) ?? null,
    orientation: (r.orientation as string | null) ?? null,
    mtimeMs: r.mtime_ms as number,
    fields,
    keywords: parts[6] ? parts[6].split(KW_SEP) : [],
  };
}

export function orientationOf(a: AssetRow): string | null {
  return a.width && a.height ? (a.width > a.height ? 'landscape' : a.width < a.height ? 'portrait' : 'square') : null;
}

export function yearOf(a: AssetRow): number | null {
  const t = a.meta.exif?.dateTimeOriginal ?? a.mtimeMs;
  return t ? new Date(t).getUTCFullYear() : null;
}

/**
 * The columns toAsset reads (and the facet columns beside them), in both index stores. Asset reads
 * select these rather than `*`, which would also read each row's search text (the largest column,
 * needed only to build the engine).
 */
export const ASSET_COLUMNS = 'rowid, id, rel_path, folder_path, name, ext, size, mtime_ms, created_ms, mime, kind, width, height, year, orientation, version, version_comment, meta, hashes, blob, indexed_at';
/** ASSET_COLUMNS of the assets table under the alias `a`. */
export const ASSET_COLUMNS_OF_A = ASSET_COLUMNS.split(', ').map((c) => `a.${c}`).join(', ');

/** Rows fetched by key (`IN`/`ANY`, any order) as assets in the order of `keys`; keys without a row are skipped. */
export function inOrder<K>(keys: readonly K[], rows: Record<string, unknown>[], keyOf: (r: Record<string, unknown>) => K): AssetRow[] {
  const byKey = new Map(rows.map((r) => [keyOf(r), r]));
  return keys.flatMap((k) => {
    const r = byKey.get(k);
    return r ? [toAsset(r)] : [];
  });
}

export function toAsset(r: Record<string, unknown>): AssetRow {
  return {
    id: r.id as string,
    relPath: r.rel_path as string,
    folderPath: r.folder_path as string,
    name: r.name as string,
    ext: r.ext as string,
    size: r.size as number,
    mtimeMs: r.mtime_ms as number,
    createdMs: r.created_ms as number,
    mimeType: r.mime as string,
    kind: r.kind as string,
    width: (r.width as number | null) ?? null,
    height: (r.height as number | null) ?? null,
    version: r.version as number,
    versionComment: (r.version_comment as string | null) ?? null,
    meta: JSON.parse(r.meta as string),
    hashes: r.hashes ? JSON.parse(r.hashes as string) : null,
    blob: (r.blob as string | null) ?? null,
    indexedAt: r.indexed_at as number,
  };
}

export function toVersion(r: Record<string, unknown>): VersionRow {
  return {
    assetId: r.asset_id as string,
    version: r.version as number,
    size: r.size as number,
    mtimeMs: r.mtime_ms as number,
    mimeType: r.mime as string,
    width: (r.width as number | null) ?? null,
    height: (r.height as number | null) ?? null,
    hashes: r.hashes ? JSON.parse(r.hashes as string) : null,
    meta: JSON.parse(r.meta as string),
    blob: (r.blob as string | null) ?? null,
    comment: r.comment as string,
    createdAt: r.created_at as number,
  };
}

export function toAccount(r: Record<string, unknown>): AccountRow {
  return {
    id: r.id as string, name: r.name as string, passwordHash: r.password_hash as string, folders: JSON.parse(r.folders as string),
    writeFolders: JSON.parse((r.write_folders as string | undefined) ?? '[]'), createdAt: Number(r.created_at),
  };
}

export function toLock(r: Record<string, unknown>): LockRow {
  return { assetId: r.asset_id as string, accountId: r.account_id as string, lockedBy: r.locked_by as string, lockedAt: Number(r.locked_at) };
}

/**
 * The paths strictly below a folder as a range [lo, hi): '/' and '0' are neighbours in byte order,
 * which both stores sort these columns by (SQLite's BINARY, PostgreSQL's "C"); unlike LIKE, no
 * character of a name needs escaping and case is never folded.
 */
export function belowRange(folderPath: string): [string, string] {
  return [`${folderPath}/`, `${folderPath}0`];
}
