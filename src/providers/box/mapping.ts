/** Box files, folders and file versions → the hub's common shape. */
import type { Asset, Folder } from '../model.js';
import { mimeTypeOfName } from '../kit/mime.js';
import type { BoxFile, BoxFileVersion, BoxFolder } from './api.js';
import { epochMs, READ_ONLY, withoutUndefined } from '../saas/asset-fields.js';



/**
 * Image types Box makes thumbnails of ("Supported file types" of the thumbnail guide: ai, bmp,
 * dcm, eps, gif, jpeg, jpg, png, ps, psd, svg, tif, tiff, tga, ...), plus the ones the hub can
 * make itself from the original (webp, heic, avif).
 */
const IMAGE = /^(jpe?g|png|gif|bmp|tiff?|svg|psd|ai|eps|ps|tga|dcm|dicm|webp|heic|heif|avif)$/i;

export function extensionOf(f: { name: string; extension?: string }): string {
  if (f.extension) return f.extension.toLowerCase();
  const dot = f.name.lastIndexOf('.');
  return dot > 0 ? f.name.slice(dot + 1).toLowerCase() : '';
}

export function isImage(f: { name: string; extension?: string }): boolean {
  return IMAGE.test(extensionOf(f));
}

/** "/Photos/2024" from the path_collection (its first entry is "All Files", folder 0). */
function parentPath(f: BoxFile): string | undefined {
  const entries = f.path_collection?.entries;
  if (!Array.isArray(entries)) return undefined;
  const names = entries.filter((e) => e.id !== '0').map((e) => e.name ?? e.id);
  return `/${names.join('/')}`;
}

/** Box's SHA-1 as the seed's downloadHashSha1 (lower-case hex). */
function sha1(v: string | undefined): string | undefined {
  return v && /^[0-9a-fA-F]{40}$/.test(v) ? v.toLowerCase() : undefined;
}

export interface FileExtra {
  downloadUrl?: string;
  thumbnailUrl?: string;
  externalUrl?: string;
  version?: number;
}

export function versionNumber(f: { version_number?: string }): number | undefined {
  const n = f.version_number && /^\d{1,9}$/.test(f.version_number) ? Number(f.version_number) : undefined;
  return n && n > 0 ? n : undefined;
}

export function toAsset(f: BoxFile, extra: FileExtra = {}): Asset {
  const a: Asset = {
    id: f.id,
    name: f.name,
    parentPath: parentPath(f),
    fileSize: typeof f.size === 'number' ? f.size : undefined,
    // created_at/modified_at are Box's (upload, last change in Box); content_*_at the file's own
    // dates as the uploading client reported them, preferred where given.
    created: epochMs(f.content_created_at) ?? epochMs(f.created_at),
    modified: epochMs(f.content_modified_at) ?? epochMs(f.modified_at),
    mimeType: mimeTypeOfName(f.name),
    type: 'file',
    capabilities: READ_ONLY,
    downloadHashSha1: sha1(f.sha1 ?? f.file_version?.sha1),
    caption: f.description || undefined,
    keywords: f.tags?.length ? [...f.tags] : undefined,
    downloadUrl: extra.downloadUrl,
    thumbnailUrl: extra.thumbnailUrl,
    assetDetailsExternalUrl: extra.externalUrl,
  };
  const v = extra.version ?? versionNumber(f);
  if (v !== undefined) {
    a.version = v;
    a.displayVersion = v;
    if (f.file_version?.id) a.versionComment = `file version ${f.file_version.id}`;
  }
  return withoutUndefined(a);
}

/** An older version of `file` (FileVersionFull) with its number. */
export function versionToAsset(file: BoxFile, v: BoxFileVersion, n: number, extra: FileExtra = {}): Asset {
  const name = v.name ?? file.name;
  return withoutUndefined({
    id: file.id,
    name,
    parentPath: parentPath(file),
    fileSize: typeof v.size === 'number' ? v.size : undefined,
    created: epochMs(v.created_at),
    modified: epochMs(v.modified_at) ?? epochMs(v.created_at),
    mimeType: mimeTypeOfName(name),
    type: 'file',
    capabilities: READ_ONLY,
    downloadHashSha1: sha1(v.sha1),
    version: n,
    displayVersion: n,
    versionComment: `file version ${v.id}`,
    downloadUrl: extra.downloadUrl,
    thumbnailUrl: extra.thumbnailUrl,
    assetDetailsExternalUrl: extra.externalUrl,
  });
}

export function toFolder(f: BoxFolder): Folder {
  return { id: f.id, name: f.name };
}
