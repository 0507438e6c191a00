/** S3 objects and prefixes → the hub's common shape. */
import path from 'node:path';
import { integrationError } from '../../errors.js';
import type { Asset, Folder } from '../model.js';
import { mimeTypeOf } from '../kit/mime.js';
import { HUB_THUMBNAIL_TYPES } from '../kit/thumbnails.js';
import { PROVIDER_ID, type Head, type S3Object } from './api.js';

export const baseName = (key: string) => key.split('/').filter(Boolean).at(-1) ?? key;

/** Folder id → key prefix ('' for the bucket root; otherwise ending in '/'). */
export function prefixOf(folderId: string): string {
  if (folderId === 'root' || folderId === '' || folderId === '/') return '';
  return folderId.replace(/^\/+/, '').replace(/\/*$/, '/');
}

export function keyOf(assetId: string): string {
  const key = assetId.replace(/^\/+/, '');
  if (!key || key.endsWith('/')) throw integrationError('integration-not-found', PROVIDER_ID, `no object ${JSON.stringify(assetId)}`);
  return key;
}

/** The prefix of the folder holding a key or a prefix ('' at the root). */
export function parentOf(keyOrPrefix: string): string {
  const parts = keyOrPrefix.split('/');
  if (keyOrPrefix.endsWith('/')) parts.pop();
  parts.pop();
  return parts.length ? `${parts.join('/')}/` : '';
}

export function toFolder(prefix: string): Folder {
  return { id: prefix, name: baseName(prefix) };
}

/** The object's Content-Type when it says something (a listing has none), else the key's name's. */
export function mimeOf(key: string, declared?: string): string {
  return mimeTypeOf(baseName(key), declared);
}

export function hasThumbnail(key: string, declared?: string): boolean {
  return HUB_THUMBNAIL_TYPES.has(mimeOf(key, declared));
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
