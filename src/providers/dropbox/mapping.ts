/** Dropbox metadata → the hub's common shape. */
import type { Asset, Folder } from '../model.js';
import { mimeTypeOfName } from '../kit/mime.js';
import type { DbxFile, DbxFolder } from './api.js';
import { epochMs, READ_ONLY, withoutUndefined } from '../saas/asset-fields.js';



function parentOf(pathDisplay: string | undefined): string | undefined {
  if (!pathDisplay) return undefined;
  const i = pathDisplay.lastIndexOf('/');
  return i <= 0 ? '/' : pathDisplay.slice(0, i);
}

/** Extensions files/get_thumbnail_v2 renders (its documentation: jpg, jpeg, png, tiff, tif, gif, webp, ppm, bmp). */
const THUMBNAILED = /\.(jpe?g|png|tiff?|gif|webp|ppm|bmp)$/i;

export function hasThumbnail(f: DbxFile): boolean {
  return THUMBNAILED.test(f.name);
}

export function toAsset(f: DbxFile, extra: { downloadUrl?: string; version?: number; thumbnailUrl?: string } = {}): Asset {
  const a: Asset = {
    id: f.id,
    name: f.name,
    parentPath: parentOf(f.path_display),
    fileSize: f.size,
    modified: epochMs(f.server_modified),
    // client_modified is the file's own date as the uploading client saw it: the nearest to "created".
    created: epochMs(f.client_modified),
    mimeType: mimeTypeOfName(f.name),
    type: 'file',
    capabilities: READ_ONLY,
  };
  // Dropbox's content_hash is SHA-256 over the SHA-256 digests of 4 MiB blocks: the hub's Sha256Split4MB.
  if (f.content_hash && /^[0-9a-f]{64}$/.test(f.content_hash)) a.downloadHashSha256Split4MB = f.content_hash;
  if (extra.downloadUrl) a.downloadUrl = extra.downloadUrl;
  if (extra.thumbnailUrl) a.thumbnailUrl = extra.thumbnailUrl;
  if (extra.version !== undefined) {
    a.version = extra.version;
    a.displayVersion = extra.version;
    a.versionComment = `revision ${f.rev}`;
  }
  withoutUndefined(a);
  return a;
}

export function toFolder(f: DbxFolder): Folder {
  return { id: f.id, name: f.name };
}
