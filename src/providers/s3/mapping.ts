/** S3 objects and prefixes → the hub's common shape. */
import path from 'node:path';
import type { Asset, Folder } from '../model.js';
import type { Head, S3Object } from './api.js';

const BY_EXT: Record<string, string> = {
  '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.png': 'image/png', '.gif': 'image/gif', '.webp': 'image/webp', '.tif': 'image/tiff',
  '.tiff': 'image/tiff', '.svg': 'image/svg+xml', '.pdf': 'application/pdf', '.txt': 'text/plain', '.mp4': 'video/mp4', '.mov': 'video/quicktime',
};

export const baseName = (key: string) => key.split('/').filter(Boolean).at(-1) ?? key;

export function toFolder(prefix: string): Folder {
  return { id: prefix, name: baseName(prefix) };
}

export function mimeOf(key: string, declared?: string): string {
  const d = declared?.split(';')[0]!.trim();
  return d && d !== 'application/octet-stream' && d !== 'binary/octet-stream' ? d : BY_EXT[path.extname(key).toLowerCase()] ?? 'application/octet-stream';
}

/** Raster types the hub makes thumbnails of (an SVG object is untrusted content: not rasterised). */
const THUMBNAILED = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp', 'image/tiff', 'image/avif', 'image/heic', 'image/heif']);

export function hasThumbnail(key: string, declared?: string): boolean {
  return THUMBNAILED.has(mimeOf(key, declared));
}

export function toAsset(o: S3Object & { contentType?: string }, downloadUrl: string, thumbnailUrl?: string): Asset {
  const mimeType = mimeOf(o.key, o.contentType);
  const a: Asset = {
    id: o.key, name: baseName(o.key), parentPath: `/${o.key.split('/').slice(0, -1).join('/')}`,
    mimeType, type: mimeType.split('/')[0], fileSize: o.size, downloadUrl,
  };
  if (thumbnailUrl) {
    a.thumbnailUrl = thumbnailUrl;
    a.conversions = [
      { id: 'thumbnail', name: 'Thumbnail', url: thumbnailUrl, extension: 'jpg' },
      { id: 'original', name: 'Original', url: downloadUrl, extension: path.extname(o.key).slice(1).toLowerCase() || undefined },
    ];
  }
  // No version number here: a listing does not say which version of a versioned key this is,
  // and a guessed 1 contradicts `assetversions`. The asset and versions hooks number it.
  if (o.modified !== undefined) {
    a.modified = o.modified;
    a.downloadHashFileAttributes = `${o.size}-${o.modified}`;
  }
  // A single-part upload's ETag is the MD5 of the object; a multipart one has a "-N" suffix and is not.
  const md5 = o.etag?.replace(/"/g, '');
  if (md5 && /^[0-9a-f]{32}$/.test(md5)) a.downloadHashMd5 = md5;
  return a;
}

/** User metadata (x-amz-meta-*) as TEXT values; title/caption/copyright from the usual names. */
export function withHeaders(a: Asset, h: Head): Asset {
  const out: Asset = { ...a };
  const values = Object.entries(h.meta).map(([k, v]) => ({ id: `meta.${k}`, type: 'TEXT' as const, name: k, value: v }));
  if (values.length) out.values = values;
  if (h.meta.title) out.title = h.meta.title;
  if (h.meta.caption ?? h.meta.description) out.caption = h.meta.caption ?? h.meta.description;
  if (h.meta.copyright) out.copyright = h.meta.copyright;
  return out;
}
