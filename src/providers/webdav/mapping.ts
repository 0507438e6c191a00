/** WebDAV members → the hub's common shape. */
import path from 'node:path';
import type { Asset, Folder } from '../model.js';
import { mimeTypeOf } from '../kit/mime.js';
import { HUB_THUMBNAIL_TYPES } from '../kit/thumbnails.js';
import type { DavEntry } from './api.js';

export function toFolder(e: DavEntry): Folder {
  return { id: e.path, name: e.name };
}

export function parentOf(p: string): string {
  const i = p.lastIndexOf('/');
  return i <= 0 ? '/' : p.slice(0, i);
}

/** The server's getcontenttype when it says something (Apache sends none for an extension it does not know), else the name's. */
export function mimeTypeOfEntry(e: DavEntry): string {
  return mimeTypeOf(e.name, e.contentType);
}

export function hasThumbnail(e: DavEntry): boolean {
  return HUB_THUMBNAIL_TYPES.has(mimeTypeOfEntry(e));
}

export function toAsset(e: DavEntry, urls: { downloadUrl: string; thumbnailUrl?: string }): Asset {
  const mimeType = mimeTypeOfEntry(e);
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
