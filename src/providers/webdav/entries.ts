/**
 * A WebDAV member as the hub's asset, with what only the server knows about it: its ETag (the
 * hub's ETag follows it), its locks (whose, and whether this account holds one) and what the user
 * may do with it (RFC 3744 privileges, where the server reports them). Shared by reads and writes.
 */
import { integrationError } from '../../errors.js';
import { tagAsset } from '../asset-state.js';
import type { CallContext } from '../kit/define.js';
import type { Asset, FolderCapabilities } from '../model.js';
import { PROVIDER_ID, type DavEntry, type DavLock, type WebdavCred } from './api.js';
import { hasThumbnail, toAsset } from './mapping.js';

/** Uploads go to a temp name of this prefix in the target folder first; listings never show them. */
export const TEMP_PREFIX = '.damhub-upload-';

export const isTemp = (e: DavEntry) => e.name.startsWith(TEMP_PREFIX) || (e.path.split('/').at(-1) ?? '').startsWith(TEMP_PREFIX);

/** A client-given id as a clean path under the root, or not-found (no '..', no NUL, no backslash tricks). */
export function cleanPath(id: string): string {
  if (id === 'root' || id === '/' || id === '') return '/';
  const segs = id.split('/').filter(Boolean);
  if (segs.some((s) => s === '.' || s === '..' || s.includes('\\') || s.includes('\0'))) throw integrationError('integration-not-found', PROVIDER_ID, `no item ${JSON.stringify(id)}`);
  return `/${segs.join('/')}`;
}

export function joinPath(parent: string, name: string): string {
  return parent === '/' ? `/${name}` : `${parent}/${name}`;
}

/**
 * The DAV:owner this connector puts on the locks it takes: the account's marker. The server binds a
 * lock to its token, not to a user (Apache and rclone alike), so "this account holds the lock" is
 * read back from the owner; the connector keeps no state of its own.
 */
export function ownerMarker(cred: WebdavCred): string {
  return `damhub:${encodeURIComponent(cred.user)}`;
}

/** The lock on `e` this account holds, if any. */
export function ownLock(e: DavEntry, cred: WebdavCred): DavLock | undefined {
  return e.locks?.find((l) => l.owner === ownerMarker(cred));
}

/** Who holds `l`, for `lockedBy`: the account of a damhub lock, else the owner the other client gave. */
export function lockHolder(l: DavLock): string {
  const m = /^damhub:(.*)$/.exec(l.owner);
  if (m) {
    try {
      return decodeURIComponent(m[1]!);
    } catch {
      return m[1]!;
    }
  }
  return l.owner || 'another WebDAV client';
}

/**
 * An ETag without its weak marker. Apache marks a file's ETag weak during the second it was
 * modified in (W/"3-5f2…", then "3-5f2…"): the same content, so the same content tag.
 */
export function plainTag(etag: string | undefined | null): string | undefined {
  return etag ? etag.replace(/^W\//, '') : undefined;
}

/** The ETag to send in a condition: a strong one only (If-Match compares strongly; a weak tag never matches). */
export function strongTag(etag: string | undefined): string | undefined {
  return etag && !etag.startsWith('W/') ? etag : undefined;
}

const allows = (privileges: Set<string> | undefined, p: string) => privileges === undefined || privileges.has(p);

/**
 * What the account may do with a file, as the server says: write-content on it (update, lock),
 * unbind (and bind, for a rename) on its folder. A server that reports no privileges allows all;
 * one that does not report locks cannot have them taken through the hub.
 */
export function assetPermissions(e: DavEntry, parent: Set<string> | undefined): NonNullable<Asset['capabilities']> {
  const write = allows(e.privileges, 'write-content');
  return {
    canUpdateAsset: write,
    canDeleteAsset: allows(parent, 'unbind'),
    canRenameAsset: allows(parent, 'unbind') && allows(parent, 'bind'),
    canLockAsset: e.locks !== undefined && write,
    canUnlockAsset: e.locks !== undefined && write,
    uploadExtensions: [],
  };
}

/** What the account may do in a folder: bind in it (add), unbind in its parent (delete, rename); never the root itself. */
export function folderPermissions(self: DavEntry, parent: Set<string> | undefined): Partial<FolderCapabilities> {
  const root = self.path === '/';
  return {
    canAddAsset: allows(self.privileges, 'bind'),
    canAddFolder: allows(self.privileges, 'bind'),
    canDeleteFolder: !root && allows(parent, 'unbind'),
    canRenameFolder: !root && allows(parent, 'unbind') && allows(parent, 'bind'),
  };
}

/**
 * One file as an asset: its download link and, for a raster image, its thumbnail link; its ETag as
 * the content tag; its lock (lockedBy, and whether another holds it); its permissions. `parent`:
 * the privileges on its folder when known (undefined: not reported).
 */
export async function mapEntry(ctx: CallContext<WebdavCred>, e: DavEntry, parent?: Set<string>): Promise<Asset> {
  const item = { p: e.path };
  // The ETag names the content (else size and date): a changed file gets a new thumbnail key.
  const version = e.etag ? { etag: e.etag } : { version: `${e.size ?? ''}-${e.modified ?? ''}` };
  const a = toAsset(e, {
    downloadUrl: await ctx.downloadUrl(item, e.name),
    thumbnailUrl: hasThumbnail(e) ? await ctx.thumbnailUrl(item, `${e.name}.jpg`, version) : undefined,
  });
  a.capabilities = assetPermissions(e, parent);
  const held = e.locks?.[0];
  if (held) a.lockedBy = lockHolder(ownLock(e, ctx.cred) ?? held);
  return tagAsset(a, { contentTag: plainTag(e.etag) ?? null, lockedByOther: !!held && !ownLock(e, ctx.cred) });
}
