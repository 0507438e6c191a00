/** Frontify assets, libraries and folders → the hub's common shape. */
import type { Asset, Folder, Value } from '../model.js';
import { mimeTypeOfName } from '../kit/mime.js';
import type { FyAsset, FyCustomMetadata, FyRevision, Named } from './api.js';
import { epochMs, READ_ONLY, withoutUndefined } from '../saas/asset-fields.js';


/**
 * Hub folder ids name what they stand for, so a browse knows which query to send and a search
 * scoped to a folder knows its library (Frontify's search is a library's `assets(query:)`):
 * `b:<brand>`, `l:<library>`, `f:<library>:<folder>`. Frontify ids are opaque base64 strings
 * (no colon); an id of any other form cannot exist there.
 */
export type Place = { kind: 'root' } | { kind: 'brand'; id: string } | { kind: 'library'; id: string } | { kind: 'folder'; library: string; id: string };

const FY_ID = '[A-Za-z0-9+/=_-]{1,200}';
const PLACE = new RegExp(`^(?:b:(${FY_ID})|l:(${FY_ID})|f:(${FY_ID}):(${FY_ID}))$`);
export const ASSET_ID = new RegExp(`^${FY_ID}$`);

export function parsePlace(id: string): Place | null {
  if (id === 'root') return { kind: 'root' };
  const m = PLACE.exec(id);
  if (!m) return null;
  if (m[1]) return { kind: 'brand', id: m[1] };
  if (m[2]) return { kind: 'library', id: m[2] };
  return { kind: 'folder', library: m[3]!, id: m[4]! };
}

export const brandFolder = (b: Named): Folder => ({ id: `b:${b.id}`, name: b.name });
export const libraryFolder = (l: Named): Folder => ({ id: `l:${l.id}`, name: l.name });
export const subFolder = (library: string, f: Named): Folder => ({ id: `f:${library}:${f.id}`, name: f.name });


const int = (v: unknown) => {
  const n = typeof v === 'string' && /^\d{1,16}$/.test(v) ? Number(v) : v;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
};

/** The file name: Frontify's original filename, else the title with the extension (embedded content has neither file nor extension). */
export function fileName(a: FyAsset): string {
  if (a.filename) return a.filename;
  const ext = a.extension ? `.${a.extension}` : '';
  return ext && !a.title.toLowerCase().endsWith(ext.toLowerCase()) ? `${a.title}${ext}` : a.title;
}

/** Image and Document assets have a preview image (Frontify's `previewUrl(width, height)`); others only a thumbnailUrl when Frontify made or was given one. */
export function hasThumbnail(a: FyAsset): boolean {
  return a.__typename === 'Image' || a.__typename === 'Document' || typeof a.thumbnailUrl === 'string';
}

/** A custom metadata value as text: SELECT values are `{optionId, text}`, MULTISELECT a list of them. */
function metadataText(v: unknown): string | undefined {
  if (v === null || v === undefined) return undefined;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) {
    const parts = v.map(metadataText).filter((x): x is string => !!x);
    return parts.length ? parts.join(', ') : undefined;
  }
  if (typeof v === 'object' && typeof (v as { text?: unknown }).text === 'string') return (v as { text: string }).text;
  return undefined;
}

function toValue(m: FyCustomMetadata): Value | null {
  const text = metadataText(m.values ?? m.value);
  if (text === undefined || !m.property?.id) return null;
  const kind = String(m.property.type?.name ?? '').toUpperCase();
  const type: Value['type'] = kind === 'DATE' ? 'DATE' : kind === 'NUMBER' ? 'NUMBER' : 'TEXT';
  return { id: m.property.id, type, value: text, name: m.property.name };
}

function parentPath(a: FyAsset): string | undefined {
  const loc = a.location;
  if (!loc) return undefined;
  const parts = [loc.brand?.name, loc.library?.name, ...(loc.folder?.breadcrumbs ?? []).map((b) => b.name), loc.folder?.name]
    .filter((x): x is string => typeof x === 'string' && x.length > 0);
  return parts.length ? `/${parts.join('/')}` : undefined;
}

export interface AssetExtras {
  thumbnailUrl?: string;
  version?: number;
  versionComment?: string;
  created?: number;
}

export function toAsset(a: FyAsset, extra: AssetExtras = {}): Asset {
  const name = fileName(a);
  const keywords = [...new Set((a.tags ?? []).map((t) => t?.value).filter((v): v is string => typeof v === 'string' && v.length > 0))];
  const values = (a.customMetadata ?? []).map(toValue).filter((v): v is Value => v !== null);
  if (a.author) values.push({ id: 'author', type: 'TEXT', value: a.author, name: 'Author' });
  const out: Asset = {
    id: a.id,
    name,
    parentPath: parentPath(a),
    fileSize: int(a.size),
    xSizePx: int(a.width),
    ySizePx: int(a.height),
    created: extra.created ?? epochMs(a.createdAt),
    modified: epochMs(a.modifiedAt) ?? epochMs(a.createdAt),
    mimeType: a.extension ? mimeTypeOfName(`x.${a.extension}`) : undefined,
    type: a.__typename.toLowerCase(),
    title: a.title || undefined,
    caption: a.description || undefined,
    copyright: a.copyright?.notice || undefined,
    keywords: keywords.length ? keywords : undefined,
    values: values.length ? values : undefined,
    capabilities: READ_ONLY,
    thumbnailUrl: extra.thumbnailUrl,
    // Frontify's signed URL: fetchable without a session or an Authorization header.
    downloadUrl: a.downloadUrl || undefined,
    // The preview Frontify renders (an image of an image or document, an mp4 of a video, an mp3 of audio).
    conversions: a.previewUrl ? [{ id: 'preview', name: 'Preview', url: a.previewUrl, description: `Frontify's preview of this ${a.__typename.toLowerCase()}` }] : undefined,
  };
  if (extra.version !== undefined) {
    out.version = extra.version;
    out.displayVersion = extra.version;
    if (extra.versionComment) out.versionComment = extra.versionComment;
  }
  withoutUndefined(out);
  return out;
}

/** An older revision: Frontify reports when and by whom it was made, not its file (AssetRevision has id, createdAt, creator). */
export function revisionAsset(a: FyAsset, r: FyRevision, version: number): Asset {
  const base = toAsset({ ...a, downloadUrl: null, previewUrl: null, size: null, width: null, height: null, modifiedAt: r.createdAt }, {
    version, created: epochMs(r.createdAt),
    versionComment: `revision ${r.id}${r.creator?.name ? ` by ${r.creator.name}` : ''}`,
  });
  return base;
}
