/** WebDAV members → the hub's common shape. */
import path from 'node:path';
import type { Asset, Folder } from '../model.js';
import type { DavEntry } from './api.js';

const BY_EXT: Record<string, string> = {
  '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.png': 'image/png', '.gif': 'image/gif', '.webp': 'image/webp', '.tif': 'image/tiff',
  '.tiff': 'image/tiff', '.svg': 'image/svg+xml', '.pdf': 'application/pdf', '.txt': 'text/plain', '.mp4': 'video/mp4', '.mov': 'video/quicktime',
};

export function toFolder(e: DavEntry): Folder {
  return { id: e.path, name: e.name };
}

export function parentOf(p: string): string {
  const i = p.lastIndexOf('/');
  return i <= 0 ? '/' : p.slice(0, i);
}

/** Raster types the hub makes thumbnails of (SVG from a server is not rasterised: untrusted content). */
const THUMBNAILED = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp', 'image/tiff', 'image/avif', 'image/heic', 'image/heif']);

export function mimeTypeOf(e: DavEntry): string {
  return e.contentType && e.contentType !== 'application/octet-stream' ? e.contentType.split(';')[0]!.trim() : BY_EXT[path.extname(e.name).toLowerCase()] ?? 'application/octet-stream';
}

export function hasThumbnail(e: DavEntry): boolean {
  return THUMBNAILED.has(mimeTypeOf(e));
}

export function toAsset(e: DavEntry, urls: { downloadUrl: string; thumbnailUrl?: string }): Asset {
  const mimeType = mimeTypeOf(e);
  const a: Asset = {
    id: e.path,
    name: e.name,
    parentPath: parentOf(e.path),
    mimeType,
    type: mimeType.split('/')[0],
    version: 1,
    downloadUrl: urls.downloadUrl,
  };
  if (urls.thumbnailUrl) {
    a.thumbnailUrl = urls.thumbnailUrl;
    a.conversions = [
      { id: 'thumbnail', name: 'Thumbnail', url: urls.thumbnailUrl, extension: 'jpg' },
      { id: 'original', name: 'Original', url: urls.downloadUrl, extension: path.extname(e.name).slice(1).toLowerCase() || undefined },
    ];
  }
  if (e.size !== undefined) a.fileSize = e.size;
  if (e.modified !== undefined) a.modified = e.modified;
  if (e.created !== undefined) a.created = e.created;
  if (e.size !== undefined && e.modified !== undefined) a.downloadHashFileAttributes = `${e.size}-${e.modified}`;
  if (e.etag) a.values = [{ id: 'etag', type: 'TEXT', name: 'ETag', value: e.etag }];
  return a;
}

/** Name order, folders and files alike, so pages are stable between calls. */
export function byName(a: DavEntry, b: DavEntry): number {
  return a.name.localeCompare(b.name, 'en', { numeric: true }) || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
}
