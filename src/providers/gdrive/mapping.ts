/** Google Drive files and revisions → the hub's common shape. */
import type { Asset, Folder } from '../model.js';
import type { DriveFile, DriveRevision } from './api.js';
import { epochMs, READ_ONLY, withoutUndefined } from '../saas/asset-fields.js';


const int = (s: string | number | undefined) => {
  const n = typeof s === 'number' ? s : s !== undefined && /^\d{1,15}$/.test(s) ? Number(s) : NaN;
  return Number.isSafeInteger(n) ? n : undefined;
};
const hex = (s: string | undefined, len: number) => (s && s.length === len && /^[0-9a-f]+$/.test(s) ? s : undefined);

/**
 * `downloadUrl`: the hub's grant link (webContentLink needs the user's Google session in a browser);
 * `thumbnailUrl`: the hub's thumbnail link (thumbnailLink needs the user's token).
 */
export function toAsset(f: DriveFile, links: { downloadUrl?: string; thumbnailUrl?: string } = {}): Asset {
  return withoutUndefined({
    id: f.id,
    name: f.name,
    fileSize: int(f.size),
    created: epochMs(f.createdTime),
    modified: epochMs(f.modifiedTime),
    mimeType: f.mimeType,
    // Not Drive's `version`: that counts every change to the file, metadata included, and
    // contradicts the revision numbers `assetversions` gives (1 = the oldest revision).
    xSizePx: f.imageMediaMetadata?.width,
    ySizePx: f.imageMediaMetadata?.height,
    downloadHashMd5: hex(f.md5Checksum, 32),
    downloadHashSha1: hex(f.sha1Checksum, 40),
    downloadHashSha256: hex(f.sha256Checksum, 64),
    // A hub link: Drive's thumbnailLink is short-lived and, for a file not shared publicly, must be
    // fetched with the user's token (files#File reference), which a browser tile cannot send.
    thumbnailUrl: links.thumbnailUrl,
    downloadUrl: links.downloadUrl,
    assetDetailsExternalUrl: f.webViewLink,
    type: 'file',
    capabilities: READ_ONLY,
  });
}

/** One revision as an asset version; `n` counts from the oldest (1). */
export function revisionToAsset(file: DriveFile, r: DriveRevision, n: number, downloadUrl?: string): Asset {
  return withoutUndefined({
    id: file.id,
    name: r.originalFilename ?? file.name,
    fileSize: int(r.size),
    modified: epochMs(r.modifiedTime),
    mimeType: r.mimeType ?? file.mimeType,
    version: n,
    displayVersion: n,
    versionComment: `revision ${r.id}${r.keepForever ? ' (kept forever)' : ''}`,
    downloadHashMd5: hex(r.md5Checksum, 32),
    downloadUrl,
    type: 'file',
    capabilities: READ_ONLY,
  });
}

export function toFolder(f: DriveFile): Folder {
  return { id: f.id, name: f.name };
}
