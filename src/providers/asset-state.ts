/**
 * What the hub knows about an asset beyond its JSON fields, carried on the Asset object under
 * symbols (never serialised, kept by object spread): the DAM's own tag of the content, and whether
 * a lock on it is held by someone else than the session that read it. The ETag of an asset (GET
 * /assets/asset/{id}'s header, If-Match's value) is derived here, in one place, for every provider.
 */
import { createHash } from 'node:crypto';
import type { Asset } from './model.js';

/** The DAM's own tag of the content: a server ETag, a version id, a content hash. */
export const CONTENT_TAG = Symbol('damhub.contentTag');
/** True when `lockedBy` names a lock this session does not hold (writes get 423 asset-locked). */
export const LOCKED_BY_OTHER = Symbol('damhub.lockedByOther');

export type TaggedAsset = Asset & { [CONTENT_TAG]?: string; [LOCKED_BY_OTHER]?: boolean };

/** Marks `asset` (in place) with the DAM's tag of its content and its lock state; returns it. */
export function tagAsset<T extends Asset>(asset: T, state: { contentTag?: string | null; lockedByOther?: boolean }): T {
  const a = asset as T & TaggedAsset;
  if (state.contentTag) a[CONTENT_TAG] = state.contentTag;
  if (state.lockedByOther !== undefined) a[LOCKED_BY_OTHER] = state.lockedByOther;
  return asset;
}

export function contentTagOf(asset: Asset): string | null {
  return (asset as TaggedAsset)[CONTENT_TAG] ?? null;
}

export function lockedByOther(asset: Asset): boolean {
  return (asset as TaggedAsset)[LOCKED_BY_OTHER] === true;
}

/**
 * The asset's strong ETag (RFC 9110, quoted). It changes with every new content: from the DAM's
 * tag when the provider gave one, else from the version, size, modification time and hashes the
 * asset carries. Opaque to clients: a hash, so it says nothing of the DAM behind it.
 */
export function etagOf(asset: Asset): string {
  const tag = contentTagOf(asset);
  const parts = tag !== null
    ? ['t', asset.id, tag]
    : ['d', asset.id, asset.version ?? '', asset.fileSize ?? '', asset.modified ?? '', asset.downloadHashSha256 ?? asset.downloadHashSha1 ?? asset.downloadHashMd5 ?? '', asset.downloadHashFileAttributes ?? ''];
  return `"${createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 32)}"`;
}

/**
 * Whether an If-Match header value matches `etag` (RFC 9110 13.1.1: strong comparison; `*` matches
 * any current representation). A weak tag never matches.
 */
export function ifMatchHolds(header: string, etag: string): boolean {
  return header.split(',').map((t) => t.trim()).some((t) => t === '*' || t === etag);
}
