/** Microsoft Graph driveItems and versions → the hub's common shape; the connector's opaque ids. */
import { integrationError } from '../../errors.js';
import type { Asset, Exif, Value } from '../model.js';
import { mimeTypeOf } from '../kit/mime.js';
import type { GraphItem, GraphVersion } from './api.js';
import { epochMs, READ_ONLY, withoutUndefined } from '../saas/asset-fields.js';


/**
 * The hub's ids for Graph's objects. Graph ids are only unique within a drive (and contain `!`,
 * `,` and the like), so an item's id names its drive too; each part is base64url, joined by `.`
 * (not in the base64url alphabet):
 *   root                  the connector's top: "My files" and the followed SharePoint sites
 *   me                    the user's OneDrive (GET /me/drive)
 *   s.<site>              a SharePoint site: its document libraries
 *   i.<drive>.<item>      a driveItem (a folder, a file; a library's top is item "root")
 */
export type Ref = { kind: 'root' } | { kind: 'me' } | { kind: 'site'; siteId: string } | { kind: 'item'; driveId: string; itemId: string };

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64url');
/** What Graph's drive, item and site ids are made of; anything else is not one of ours. */
const GRAPH_ID = /^[A-Za-z0-9!_.,:~-]{1,400}$/;
const unb64 = (s: string): string | null => {
  if (!/^[A-Za-z0-9_-]{1,600}$/.test(s)) return null;
  const out = Buffer.from(s, 'base64url').toString('utf8');
  // A canonical encoding only: an altered id does not decode to another item.
  return GRAPH_ID.test(out) && b64(out) === s ? out : null;
};

export const itemId = (driveId: string, id: string) => `i.${b64(driveId)}.${b64(id)}`;
export const siteId = (id: string) => `s.${b64(id)}`;

export function parseRef(providerId: string, id: string): Ref {
  if (id === 'root') return { kind: 'root' };
  if (id === 'me') return { kind: 'me' };
  const parts = id.split('.');
  if (parts[0] === 's' && parts.length === 2) {
    const s = unb64(parts[1]!);
    if (s) return { kind: 'site', siteId: s };
  }
  if (parts[0] === 'i' && parts.length === 3) {
    const d = unb64(parts[1]!);
    const i = unb64(parts[2]!);
    if (d && i) return { kind: 'item', driveId: d, itemId: i };
  }
  throw integrationError('integration-not-found', providerId, `no OneDrive or SharePoint object ${JSON.stringify(id.slice(0, 80))}`);
}

const int = (n: unknown) => (typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : undefined);
/** Graph reports SHA-1/SHA-256 in upper-case hex; the hub's hashes are lower-case. */
const hex = (s: string | undefined, len: number) => (s && s.length === len && /^[0-9a-fA-F]+$/.test(s) ? s.toLowerCase() : undefined);

/** `/drive/root:/Photos/2024` (itemReference.path) → `/Photos/2024`; the root itself → `/`. */
export function parentPathOf(ref: GraphItem['parentReference']): string | undefined {
  const p = ref?.path;
  if (typeof p !== 'string') return undefined;
  const i = p.indexOf('root:');
  if (i < 0) return undefined;
  const rest = p.slice(i + 5);
  try {
    return decodeURIComponent(rest) || '/';
  } catch {
    return rest || '/';
  }
}

export const isFile = (it: GraphItem) => !!it.file && !it.folder && !it.package && !it.remoteItem;
export const isFolder = (it: GraphItem) => !!it.folder && !it.remoteItem;
export const isImage = (it: GraphItem) => !!it.image || mimeTypeOf(it.name, it.file?.mimeType).startsWith('image/');

function text(id: string, name: string, value: string | undefined): Value[] {
  return value ? [{ id, type: 'TEXT', name, value }] : [];
}

/**
 * A file as an asset. `driveId` is the drive the file was listed in (used when the item does not
 * repeat it in parentReference). Hashes: sha1Hash and sha256Hash (OneDrive personal) fill the
 * seed's Sha1/Sha256; quickXorHash has no seed field and is reported as a value; crc32Hash is
 * little-endian per Graph and is left out rather than risk a wrong Crc32.
 */
export function toAsset(it: GraphItem, driveId: string, links: { downloadUrl?: string; thumbnailUrl?: string; version?: number } = {}): Asset {
  const p = it.photo;
  const exif: Exif | undefined = p ? withoutUndefined({
    cameraModel: p.cameraModel,
    orientation: p.orientation !== undefined ? String(p.orientation) : undefined,
    exposureTime: p.exposureNumerator && p.exposureDenominator ? p.exposureNumerator / p.exposureDenominator : undefined,
    apertureValue: p.fNumber !== undefined ? String(p.fNumber) : undefined,
    isoSpeedRatings: p.iso !== undefined ? String(p.iso) : undefined,
    width: int(it.image?.width),
    height: int(it.image?.height),
    dateTimeOriginal: epochMs(p.takenDateTime),
  }) : undefined;
  const values = [
    ...text('quickXorHash', 'QuickXorHash', it.file?.hashes?.quickXorHash),
    ...text('createdBy', 'Created by', it.createdBy?.user?.displayName),
    ...text('lastModifiedBy', 'Modified by', it.lastModifiedBy?.user?.displayName),
  ];
  return withoutUndefined({
    id: itemId(it.parentReference?.driveId ?? driveId, it.id),
    name: it.name,
    parentPath: parentPathOf(it.parentReference),
    fileSize: int(it.size),
    created: epochMs(it.createdDateTime),
    modified: epochMs(it.lastModifiedDateTime),
    mimeType: mimeTypeOf(it.name, it.file?.mimeType),
    xSizePx: int(it.image?.width),
    ySizePx: int(it.image?.height),
    caption: it.description || undefined,
    downloadHashSha1: hex(it.file?.hashes?.sha1Hash, 40),
    downloadHashSha256: hex(it.file?.hashes?.sha256Hash, 64),
    exif: exif && Object.keys(exif).length ? exif : undefined,
    values: values.length ? values : undefined,
    version: links.version,
    displayVersion: links.version,
    thumbnailUrl: links.thumbnailUrl,
    downloadUrl: links.downloadUrl,
    assetDetailsExternalUrl: it.webUrl,
    type: 'file',
    capabilities: READ_ONLY,
  });
}

/** One version as an asset; `n` counts from the oldest (1), as the asset detail's `version` does. */
export function versionToAsset(it: GraphItem, driveId: string, v: GraphVersion, n: number, downloadUrl: string | undefined): Asset {
  return withoutUndefined({
    id: itemId(it.parentReference?.driveId ?? driveId, it.id),
    name: it.name,
    parentPath: parentPathOf(it.parentReference),
    fileSize: int(v.size),
    modified: epochMs(v.lastModifiedDateTime),
    mimeType: mimeTypeOf(it.name, it.file?.mimeType),
    version: n,
    displayVersion: n,
    versionComment: `version ${v.id}${v.lastModifiedBy?.user?.displayName ? ` by ${v.lastModifiedBy.user.displayName}` : ''}`,
    downloadUrl,
    type: 'file',
    capabilities: READ_ONLY,
  });
}
