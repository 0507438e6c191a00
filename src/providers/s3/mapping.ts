/** S3 objects and prefixes → the hub's common shape; image metadata from the first bytes. */
import path from 'node:path';
import exifr from 'exifr';
import sharp from 'sharp';
import type { Asset, Folder } from '../model.js';
import { parseExifDateTime } from '../metadata/index.js';
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

export function toAsset(o: S3Object & { contentType?: string }, downloadUrl: string): Asset {
  const mimeType = mimeOf(o.key, o.contentType);
  const a: Asset = {
    id: o.key, name: baseName(o.key), parentPath: `/${o.key.split('/').slice(0, -1).join('/')}`,
    mimeType, type: mimeType.split('/')[0], fileSize: o.size, downloadUrl,
  };
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

/** Width, height and EXIF of an image from its first bytes (headers come first in JPEG/PNG/TIFF). */
export async function withImageHeader(a: Asset, head: Buffer): Promise<Asset> {
  const out: Asset = { ...a };
  try {
    const m = await sharp(head, { failOn: 'none' }).metadata();
    if (m.width && m.height) {
      out.xSizePx = m.width;
      out.ySizePx = m.height;
    }
  } catch { /* not enough of the image to read; the asset goes without dimensions */ }
  try {
    const e = await exifr.parse(head, { tiff: true, exif: true, xmp: true, iptc: true, mergeOutput: true });
    if (e) {
      const exif: NonNullable<Asset['exif']> = {};
      if (typeof e.Model === 'string') exif.cameraModel = e.Model;
      const dto = parseExifDateTime(e.DateTimeOriginal, e.OffsetTimeOriginal);
      if (dto !== undefined) exif.dateTimeOriginal = dto;
      if (out.xSizePx) exif.width = out.xSizePx;
      if (out.ySizePx) exif.height = out.ySizePx;
      if (Object.keys(exif).length) out.exif = exif;
      if (typeof e.Copyright === 'string' && !out.copyright) out.copyright = e.Copyright;
    }
  } catch { /* no readable metadata in the first bytes */ }
  return out;
}
