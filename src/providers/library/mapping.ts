/** Index rows → the common asset shape (the seed's Asset), with signed URLs and localised values. */
import type { MediaBinding, MediaUrls } from '../contract.js';
import type { Asset, Value } from '../model.js';
import { fileAttributesHash } from './hashes.js';
import type { AssetRow, VersionRow } from './index/contract.js';
import { i18n, label, type LabelKey } from './labels.js';
import { RENDITIONS } from './renditions.js';

export interface MappingContext {
  urls: MediaUrls;
  /** The partner and library account the signed URLs are made for. */
  bind: MediaBinding;
  uiLocale: string;
  timeZone: string | null;
}

const READ_ONLY = { canDeleteAsset: false, canUpdateAsset: false, canLockAsset: false, canUnlockAsset: false, canRenameAsset: false, uploadExtensions: [] as string[] };

export function toAsset(row: AssetRow, ctx: MappingContext): Asset {
  return build(row, { version: row.version, size: row.size, mtimeMs: row.mtimeMs, mimeType: row.mimeType, width: row.width, height: row.height, hashes: row.hashes, meta: row.meta, comment: row.versionComment ?? undefined }, ctx);
}

export function versionToAsset(row: AssetRow, v: VersionRow, ctx: MappingContext): Asset {
  return build(row, { version: v.version, size: v.size, mtimeMs: v.mtimeMs, mimeType: v.mimeType, width: v.width, height: v.height, hashes: v.hashes, meta: v.meta, comment: v.comment }, ctx);
}

/** What differs between versions of one asset. */
type VersionView = Pick<VersionRow, 'version' | 'size' | 'mtimeMs' | 'mimeType' | 'width' | 'height' | 'hashes' | 'meta'> & { comment: string | undefined };

function build(row: AssetRow, v: VersionView, ctx: MappingContext): Asset {
  const urls: Record<string, string> = {};
  const url = (rendition: string) => (urls[rendition] ??= ctx.urls.url('library', { assetId: row.id, version: v.version, rendition }, ctx.bind));
  const m = v.meta;
  const a: Asset = {
    id: row.id,
    name: row.name,
    parentPath: `/${row.folderPath}`,
    fileSize: v.size,
    created: row.createdMs,
    modified: v.mtimeMs,
    mimeType: v.mimeType,
    version: v.version,
    displayVersion: v.version,
    thumbnailUrl: url('thumbnail'),
    downloadUrl: url('original'),
    capabilities: READ_ONLY,
    type: m.kind,
    conversions: [
      ...Object.keys(RENDITIONS).map((r) => ({ id: r, name: label(r as LabelKey, ctx.uiLocale), url: url(r), extension: 'jpg' })),
      { id: 'original', name: label('original', ctx.uiLocale), url: url('original'), extension: row.ext || undefined },
    ],
    keywords: m.keywords,
    categories: m.categories,
    exif: m.exif,
    iptc: m.iptc,
    xmp: m.xmp,
    values: values(row, v, ctx),
    relatedFolderId: row.folderPath ? `/${row.folderPath}` : 'root',
  };
  if (v.comment) a.versionComment = v.comment;
  if (v.width) a.xSizePx = v.width;
  if (v.height) a.ySizePx = v.height;
  if (m.title) a.title = m.title;
  if (m.caption) a.caption = m.caption;
  if (m.copyright) a.copyright = m.copyright;
  if (m.iptc?.instructions) a.instructions = m.iptc.instructions;
  if (m.colorSpace) a.colorSpace = m.colorSpace;
  const h = v.hashes;
  if (h) {
    a.downloadHashMd5 = h.md5;
    a.downloadHashSha1 = h.sha1;
    a.downloadHashSha256 = h.sha256;
    a.downloadHashSha512 = h.sha512;
    a.downloadHashCrc32 = h.crc32;
    a.downloadHashSha256Split4MB = h.sha256Split4MB;
    a.downloadHashSha256First16MB = h.sha256First16MB;
  }
  a.downloadHashFileAttributes = fileAttributesHash(v.size, v.mtimeMs);
  return a;
}

function values(row: AssetRow, v: VersionView, ctx: MappingContext): Value[] {
  const out: Value[] = [];
  const add = (id: LabelKey, type: Value['type'], value: string | undefined) => {
    if (value) out.push({ id, type, value, name: label(id, ctx.uiLocale), i18nName: i18n(id) });
  };
  add('path', 'TEXT', `/${row.relPath}`);
  if (v.width && v.height) add('dimensions', 'TEXT', `${v.width} × ${v.height}`);
  add('cameraModel', 'TEXT', v.meta.exif?.cameraModel);
  const dto = v.meta.exif?.dateTimeOriginal;
  if (dto !== undefined) add('dateTimeOriginal', 'DATETIME', formatDateTime(dto, ctx.timeZone));
  return out;
}

/** ISO 8601 with the offset of the requested IANA zone (UTC when none is given). */
export function formatDateTime(ms: number, timeZone: string | null): string {
  if (!timeZone) return new Date(ms).toISOString();
  const parts = Object.fromEntries(new Intl.DateTimeFormat('en-US', {
    timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', timeZoneName: 'longOffset',
  }).formatToParts(new Date(ms)).map((p) => [p.type, p.value]));
  const offset = parts.timeZoneName === 'GMT' ? '+00:00' : String(parts.timeZoneName).replace('GMT', '');
  return `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}${offset}`;
}
