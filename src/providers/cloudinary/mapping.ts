/**
 * Cloudinary resources → the hub's common shape, and hub folder ids and queries → Search API
 * expressions.
 */
import { integrationError, validationError } from '../../errors.js';
import type { Asset, Conversion, Filter, Folder, Value } from '../model.js';
import { mimeTypeOfName } from '../kit/mime.js';
import { PROVIDER_ID, type CldFolder, type CldResource, type FolderMode } from './api.js';
import { epochMs, READ_ONLY, withoutUndefined } from '../saas/asset-fields.js';


/** Cloudinary's asset_id: 32 lower-case hex digits, immutable across moves and renames. */
export const ASSET_ID = /^[0-9a-f]{32}$/;

export function assetIdOf(id: string): string {
  if (!ASSET_ID.test(id)) throw integrationError('integration-not-found', PROVIDER_ID, `no asset ${JSON.stringify(id.slice(0, 80))}`);
  return id;
}

/**
 * Hub folder ids are 'root' or the folder's path as Cloudinary names it ("brand/logos"); a path
 * with empty segments, a leading or trailing slash, or control characters cannot be a folder.
 */
export function folderPathOf(folderId: string): string {
  if (folderId === 'root') return '';
  // eslint-disable-next-line no-control-regex
  if (folderId.length > 1024 || /[\u0000-\u001f]/.test(folderId) || folderId.split('/').some((s) => s === '' || s === '.' || s === '..')) {
    throw integrationError('integration-not-found', PROVIDER_ID, `no folder ${JSON.stringify(folderId.slice(0, 80))}`);
  }
  return folderId;
}

/** A value inside double quotes of a Search API expression: backslash and quote escaped. */
const quoted = (v: string) => `"${v.replace(/[\\"]/g, (c) => `\\${c}`)}"`;

/**
 * A free-text word: every character outside letters and digits backslash-escaped, so none of the
 * expression language's operators and reserved characters (search_expressions: ! ( ) { } [ ] * ^
 * ~ ? : \ = & > < / " and white space) can change the query's meaning.
 */
export function escapeTerm(w: string): string {
  return w.replace(/[^\p{L}\p{N}_]/gu, (c) => `\\${c}`);
}

/** The field a folder is named by: `asset_folder` in dynamic folder mode, `folder` (the public-id path) in fixed. */
const folderField = (mode: FolderMode) => (mode === 'dynamic' ? 'asset_folder' : 'folder');

/** Assets directly in a folder ('' is the root). */
export function inFolder(mode: FolderMode, path: string): string {
  return `${folderField(mode)}=${quoted(path)}`;
}

/** Assets in a folder or any folder below it. */
export function underFolder(mode: FolderMode, path: string): string {
  const f = folderField(mode);
  return `(${f}=${quoted(path)} OR ${f}:${escapeTerm(path).replace(/\\\//g, '/')}/*)`;
}

/**
 * The user's words, each a term, all required. The operator words (AND, OR, NOT, TO: upper case
 * only) are lower-cased, which keeps them words: the Search API's text matching ignores case.
 */
export function keywordExpression(query: string): string | null {
  const words = query.split(/\s+/).filter(Boolean).slice(0, 32);
  return words.length ? words.map((w) => escapeTerm(/^(AND|OR|NOT|TO)$/.test(w) ? w.toLowerCase() : w)).join(' AND ') : null;
}

/** Facets asked of the Search API's `aggregate` (Tier 2), as filters of the hub. */
export const FACETS = ['resource_type', 'format', 'type'] as const;
type Facet = (typeof FACETS)[number];
const LABELS: Record<Facet, string> = { resource_type: 'Asset type', format: 'Format', type: 'Delivery type' };

/** Active filter ids (`format:jpg`) → one clause per facet (OR inside a facet, AND across). */
export function filterExpression(ids: string[]): { clauses: string[]; active: Map<Facet, string[]> } {
  const active = new Map<Facet, string[]>();
  for (const id of ids) {
    const i = id.indexOf(':');
    const facet = id.slice(0, i) as Facet;
    const value = id.slice(i + 1);
    if (i < 1 || !FACETS.includes(facet) || !value || value.length > 100) throw validationError(`filters: unknown option id ${JSON.stringify(id.slice(0, 80))}; use ids from a previous response's filters`);
    const list = active.get(facet) ?? [];
    if (!list.includes(value)) list.push(value);
    active.set(facet, list);
  }
  const clauses = [...active].map(([f, vs]) => `(${vs.map((v) => `${f}=${quoted(v)}`).join(' OR ')})`);
  return { clauses, active };
}

/**
 * One facet's counts. The Search API reference shows `{"format": {"jpg": 3, "png": 7}}`; Cloudinary's
 * generated asset-management SDK models `{"values": [{"value": "jpg", "count": 3}]}`: both are read.
 */
function countsOf(agg: unknown): Record<string, number> {
  if (typeof agg !== 'object' || agg === null) return {};
  const values = (agg as { values?: unknown }).values;
  const pairs: [string, unknown][] = Array.isArray(values)
    ? values.map((v) => [String((v as { value?: unknown }).value), (v as { count?: unknown }).count])
    : Object.entries(agg);
  return Object.fromEntries(pairs.filter(([, n]) => Number.isInteger(n) && (n as number) >= 0).slice(0, 200)) as Record<string, number>;
}

export function toFilters(aggs: Record<string, unknown> | undefined, active: Map<Facet, string[]>): Filter[] {
  if (!aggs && active.size === 0) return [];
  return FACETS.map((f) => {
    const counts = countsOf(aggs?.[f]);
    const on = active.get(f) ?? [];
    const options = Object.entries(counts).map(([v, n]) => ({ id: `${f}:${v}`, isActive: on.includes(v), name: f === 'format' ? v.toUpperCase() : v, count: n }));
    for (const v of on) if (!options.some((o) => o.id === `${f}:${v}`)) options.push({ id: `${f}:${v}`, isActive: true, name: f === 'format' ? v.toUpperCase() : v, count: 0 });
    return { id: f, name: LABELS[f], options };
  }).filter((f) => f.options.length > 0);
}


const str = (v: unknown) => (typeof v === 'string' && v.trim() ? v.trim() : undefined);

/** The file name an asset is known by: its display name (dynamic mode), else the last public-id segment, with the format. */
export function nameOf(r: CldResource): string {
  const base = r.display_name || r.public_id.split('/').at(-1)!;
  // Raw files keep their extension in the public id and have no format.
  return r.format && !base.toLowerCase().endsWith(`.${r.format.toLowerCase()}`) ? `${base}.${r.format}` : base;
}

export function folderOf(r: CldResource, mode: FolderMode): string {
  if (mode === 'dynamic') return r.asset_folder ?? '';
  if (typeof r.folder === 'string') return r.folder;
  const i = r.public_id.lastIndexOf('/');
  return i < 0 ? '' : r.public_id.slice(0, i);
}

/** context.custom (the documented shape) or a flat context: caption, alt, title. */
function contextOf(r: CldResource): Record<string, unknown> {
  const c = r.context ?? {};
  return (typeof c.custom === 'object' && c.custom !== null ? c.custom : c) as Record<string, unknown>;
}

function values(metadata: Record<string, unknown> | undefined): Value[] | undefined {
  if (!metadata) return undefined;
  const out: Value[] = [];
  for (const [id, v] of Object.entries(metadata)) {
    if (v === null || v === undefined) continue;
    const value = Array.isArray(v) ? v.map(String).join(', ') : typeof v === 'object' ? JSON.stringify(v) : String(v);
    const type = typeof v === 'number' ? 'NUMBER' : /^\d{4}-\d{2}-\d{2}$/.test(value) ? 'DATE' : 'TEXT';
    out.push({ id, name: id, type, value });
  }
  return out.length ? out : undefined;
}

export interface Links {
  downloadUrl?: string;
  thumbnailUrl?: string;
  externalUrl?: string;
}

export function toAsset(r: CldResource, mode: FolderMode, links: Links, detail = false): Asset {
  const name = nameOf(r);
  const ctx = contextOf(r);
  const meta = r.image_metadata ?? {};
  const a: Asset = {
    id: r.asset_id,
    name,
    parentPath: `/${folderOf(r, mode)}`,
    fileSize: r.bytes,
    xSizePx: r.width || undefined,
    ySizePx: r.height || undefined,
    created: epochMs(r.created_at),
    modified: epochMs(r.last_updated?.updated_at) ?? epochMs(r.uploaded_at) ?? epochMs(r.created_at),
    mimeType: mimeTypeOfName(name),
    type: 'file',
    capabilities: READ_ONLY,
    title: str(ctx.title) ?? str(ctx.caption),
    caption: str(ctx.caption) ?? str(ctx.alt),
    copyright: str(meta.Copyright) ?? str(meta.Rights),
    keywords: r.tags?.length ? [...r.tags] : undefined,
    values: values(r.metadata),
    downloadUrl: links.downloadUrl,
    thumbnailUrl: links.thumbnailUrl,
    assetDetailsExternalUrl: links.externalUrl,
  };
  // The resource's ETag is the MD5 of the stored file (returned with image_metadata=true).
  if (r.etag && /^[0-9a-f]{32}$/.test(r.etag)) a.downloadHashMd5 = r.etag;
  if (detail && str(meta.Model)) a.exif = { cameraModel: str(meta.Model), width: r.width, height: r.height };
  if (detail && r.type === 'upload' && r.derived?.length) {
    a.conversions = r.derived.filter((d) => typeof d.secure_url === 'string').map((d): Conversion => ({
      id: d.id, name: d.transformation, url: d.secure_url!, ...(d.format ? { extension: d.format } : {}),
    }));
  }
  withoutUndefined(a);
  return a;
}

export function toFolder(f: CldFolder): Folder {
  return { id: f.path, name: f.name };
}
