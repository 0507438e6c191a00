/**
 * The WebDAV connector's writes (docs/writes.md), RFC 4918 only:
 * - a new file or version is PUT to a temp name in its folder, then MOVEd onto its name (Overwrite
 *   F for a new asset: the server refuses a taken name; T for a version), so no partial file is
 *   ever at the asset's name; the temp is DELETEd on any failure, the body's included;
 * - rename and move are a MOVE (ids are paths: the answer carries the new id), delete a DELETE,
 *   folders MKCOL / MOVE / DELETE;
 * - locks are exclusive write LOCKs owned by the account's marker; the token is read back from
 *   DAV:lockdiscovery whenever it is needed, so nothing is kept between calls. While the account
 *   holds a lock its writes carry the token in an `If` header.
 * The hub has checked names, limits, If-Match against its ETag and serialises writes to one asset;
 * here the server's own ETag is checked again (a change made outside the hub fails the write).
 */
import { randomUUID } from 'node:crypto';
import { hubError, integrationError, isHubError, type HubError } from '../../errors.js';
import type { ConflictMode, UploadBody, WriteCondition, WriteDestination } from '../contract.js';
import type { CallContext, ConnectorHooks } from '../kit/define.js';
import type { Asset, Folder } from '../model.js';
import { PROVIDER_ID, propfind, urlOf, type DavEntry, type WebdavCred } from './api.js';
import { cleanPath, joinPath, lockHolder, mapEntry, ownerMarker, ownLock, plainTag, strongTag, TEMP_PREFIX } from './entries.js';
import { parentOf } from './mapping.js';
import { lock, mkcol, move, put, remove, unlock, type DavAnswer, type DavCondition } from './writes-api.js';
import { alternativeName } from '../names.js';

/** How long a lock lasts unless released (servers may grant less); a forgotten lock does not block an asset for ever. */
export const LOCK_TIMEOUT_SEC = 24 * 3600;
/** Free names tried for `onConflict: rename` ("a (2).jpg" ... ) before giving up. */
const RENAME_TRIES = 50;

type Ctx = CallContext<WebdavCred>;

/** The member at `path` (depth-0 PROPFIND), or null when there is none. */
async function stat(ctx: Ctx, path: string): Promise<DavEntry | null> {
  try {
    const [e] = await propfind(ctx.http, ctx.cred, path, 0);
    return e ?? null;
  } catch (err) {
    if (isHubError(err) && err.code === 'integration-not-found') return null;
    throw err;
  }
}

async function statFile(ctx: Ctx, path: string): Promise<DavEntry> {
  const e = await stat(ctx, path);
  if (!e || e.collection) throw integrationError('integration-not-found', PROVIDER_ID, `${path} is not a file`);
  return e;
}

async function statFolder(ctx: Ctx, path: string): Promise<DavEntry> {
  const e = await stat(ctx, path);
  if (!e?.collection) throw integrationError('integration-not-found', PROVIDER_ID, `${path} is not a folder`);
  return e;
}

/** The asset at `path` as it is now, with its folder's privileges when the server reports them. */
async function assetAt(ctx: Ctx, path: string): Promise<Asset> {
  const e = await statFile(ctx, path);
  const parent = e.privileges !== undefined ? (await stat(ctx, parentOf(path)))?.privileges : undefined;
  return mapEntry(ctx, e, parent);
}

/**
 * The error for a write's failing status. 412 and 405 mean different things per call (`taken`:
 * the name exists; `stale`: the content changed); 409 is a missing parent folder (RFC 4918 9.7.1).
 */
function failure(a: DavAnswer, what: string, opts: { taken?: () => HubError; stale?: () => HubError; locked?: DavEntry } = {}): HubError {
  const said = `${what} answered ${a.status}`;
  switch (a.status) {
    case 507: return integrationError('integration-storage-full', PROVIDER_ID, said);
    case 423: return lockedError(said, opts.locked);
    case 403: return integrationError('integration-forbidden', PROVIDER_ID, said);
    case 404:
    case 409: return integrationError('integration-not-found', PROVIDER_ID, `${said}: the item or its folder is not there`);
    case 412: return opts.stale?.() ?? opts.taken?.() ?? hubError('asset-version-conflict', said);
    case 405: return opts.taken?.() ?? integrationError('integration-operation-failed', PROVIDER_ID, said);
    default: return integrationError('integration-operation-failed', PROVIDER_ID, said);
  }
}

function lockedError(said: string, e: DavEntry | undefined): HubError {
  const holder = e?.locks?.[0];
  return hubError('asset-locked', holder ? `${said}: locked by ${lockHolder(holder)}` : said, holder ? { message: `This asset is locked by ${lockHolder(holder)}.` } : {});
}

const exists = (path: string) => () => hubError('asset-exists', `${path} exists`);
const stale = (path: string) => () => hubError('asset-version-conflict', `${path} changed on the server since it was read`);

/** The server's ETag differs from the one the hub read: someone wrote outside the hub. */
function checkTag(e: DavEntry, cond: WriteCondition): void {
  if (cond.upstreamTag && e.etag && plainTag(e.etag) !== plainTag(cond.upstreamTag)) throw stale(e.path)();
}

/** The server-side condition of a write checked by `checkTag`: the file's current strong ETag (none: the read check stands alone). */
function serverTag(e: DavEntry, cond: WriteCondition): string | undefined {
  return cond.upstreamTag ? strongTag(e.etag) : undefined;
}

/**
 * Refuses at once a write onto a file locked by someone else, before any byte is sent (the server
 * would answer the final MOVE 423 after the whole body). The server stays the judge: a lock it
 * does not report is met by its 423.
 */
function notLockedByOther(ctx: Ctx, e: DavEntry | null): void {
  if (e?.locks?.length && !ownLock(e, ctx.cred)) throw lockedError(`${e.path} is locked`, e);
}

/** The `If` list for `path` with this account's lock on `e` (none: no lock of ours). */
function lockCond(ctx: Ctx, e: DavEntry | null, path: string, etag?: string): DavCondition['tagged'] {
  const token = e ? ownLock(e, ctx.cred)?.token : undefined;
  return token || etag ? [{ url: urlOf(ctx.cred, path, e?.collection ?? false), token, etag }] : [];
}

/** Waits between attempts to remove a temp the server still holds (ms). */
const DROP_BACKOFF_MS = [50, 100, 200, 400, 800];

/**
 * Removes a temp upload. A server may still be writing it when the body failed on our side
 * (rclone refuses the DELETE until it has noticed, then keeps the partial file), so a refusal is
 * retried a few times; gone (404) is done. Its failure is not the call's: the temp name is hidden
 * in listings.
 */
async function dropTemp(ctx: Ctx, temp: string): Promise<void> {
  const http = ctx.http.detached();
  for (let i = 0; ; i++) {
    const status = await remove(http, ctx.cred, temp, false).then((a) => a.status, () => 0);
    if ((status >= 200 && status < 300) || status === 404 || i >= DROP_BACKOFF_MS.length) return;
    await new Promise((r) => setTimeout(r, DROP_BACKOFF_MS[i]));
  }
}

/** PUTs the body to a fresh temp name in `folder`; on any failure the temp is removed and the error thrown. */
async function putTemp(ctx: Ctx, folder: string, body: UploadBody): Promise<string> {
  const temp = joinPath(folder, `${TEMP_PREFIX}${randomUUID()}`);
  let a: DavAnswer;
  try {
    a = await put(ctx.http, ctx.cred, temp, body);
  } catch (e) {
    await dropTemp(ctx, temp);
    throw await folderGone(ctx, folder, e);
  }
  if (a.status >= 300) {
    await dropTemp(ctx, temp);
    throw await folderGone(ctx, folder, failure(a, `PUT into ${folder}`));
  }
  return temp;
}

/**
 * The error of an upload that failed on the server's side: integration-not-found when its folder
 * is gone (deleted during the upload, Apache then answers 500), else `e` as it was. A failure of
 * the body itself (not a HubError) or a full disk is passed on without asking.
 */
async function folderGone(ctx: Ctx, folder: string, e: unknown): Promise<unknown> {
  if (!isHubError(e) || e.source !== 'integration' || e.code === 'integration-storage-full' || e.code === 'integration-not-found') return e;
  const there = await stat({ ...ctx, http: ctx.http.detached() }, folder).catch(() => undefined);
  return there === null ? integrationError('integration-not-found', PROVIDER_ID, `${folder} was deleted during the upload`) : e;
}

/** Runs `step` with the temp in place; any failure removes the temp. */
async function finishing<T>(ctx: Ctx, temp: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (e) {
    await dropTemp(ctx, temp);
    throw e;
  }
}

/**
 * Moves the temp onto `final` replacing what is there (a new version), under this account's lock
 * and, when `etag` is given, only if the file still has it. A server that does not evaluate entity
 * tags in `If` (rclone answers every such list 412) is detected by reading the ETag back: unchanged
 * means the condition held, and the MOVE is made with the lock alone.
 */
async function replace(ctx: Ctx, temp: string, final: string, current: DavEntry | null, etag: string | undefined): Promise<DavAnswer> {
  const what = `MOVE onto ${final}`;
  let a = await move(ctx.http, ctx.cred, temp, final, { collection: false, overwrite: true, cond: { tagged: lockCond(ctx, current, final, etag) } });
  if (a.status === 412 && etag) {
    const now = await stat(ctx, final);
    if (plainTag(now?.etag) !== plainTag(etag)) throw stale(final)();
    a = await move(ctx.http, ctx.cred, temp, final, { collection: false, overwrite: true, cond: { tagged: lockCond(ctx, now, final) } });
  }
  if (a.status >= 300) throw failure(a, what, { stale: stale(final), locked: current ?? undefined });
  return a;
}

async function upload(ctx: Ctx, target: { parentId: string; name: string; onConflict: ConflictMode }, body: UploadBody): Promise<{ asset: Asset; created: boolean }> {
  const folder = cleanPath(target.parentId);
  let final = joinPath(folder, target.name);
  // A version goes onto an existing file only: a folder of that name is a conflict, never replaced.
  const current = target.onConflict === 'version' ? await stat(ctx, final) : null;
  if (current?.collection) throw exists(final)();
  notLockedByOther(ctx, current);
  const temp = await putTemp(ctx, folder, body);
  const created = await finishing(ctx, temp, async () => {
    if (target.onConflict === 'version') return (await replace(ctx, temp, final, current, undefined)).status === 201;
    let a = await move(ctx.http, ctx.cred, temp, final, { collection: false, overwrite: false });
    if (a.status === 412 && target.onConflict === 'rename') {
      const taken = new Set((await propfind(ctx.http, ctx.cred, folder, 1)).map((e) => e.path));
      for (let n = 2, tries = 0; a.status === 412 && tries < RENAME_TRIES; n++) {
        const candidate = joinPath(folder, alternativeName(target.name, n));
        if (taken.has(candidate)) continue;
        tries++;
        final = candidate;
        a = await move(ctx.http, ctx.cred, temp, final, { collection: false, overwrite: false });
      }
    }
    if (a.status >= 300) throw failure(a, `MOVE onto ${final}`, { taken: exists(final) });
    return true;
  });
  return { asset: await assetAt(ctx, final), created };
}

async function update(ctx: Ctx, assetId: string, body: UploadBody, cond: WriteCondition): Promise<Asset> {
  const p = cleanPath(assetId);
  const current = await statFile(ctx, p);
  checkTag(current, cond);
  notLockedByOther(ctx, current);
  const temp = await putTemp(ctx, parentOf(p), body);
  await finishing(ctx, temp, () => replace(ctx, temp, p, current, serverTag(current, cond)));
  return assetAt(ctx, p);
}

/** MOVE of a file to `dest` (no overwrite); 412 is a taken name or, with If-Match, a changed file. */
async function moveFile(ctx: Ctx, assetId: string, folder: string | null, name: string | null, cond: WriteCondition): Promise<Asset> {
  const p = cleanPath(assetId);
  const e = await statFile(ctx, p);
  checkTag(e, cond);
  const into = folder === null ? parentOf(p) : cleanPath(folder);
  const dest = joinPath(into, name ?? p.split('/').at(-1)!);
  if (dest === p) return assetAt(ctx, p);
  // Servers answer a MOVE into a missing folder diversely (Apache 500, rclone 403; RFC 4918 says 409): asked first.
  if (into !== parentOf(p)) await statFolder(ctx, into);
  const ifMatch = serverTag(e, cond);
  const a = await move(ctx.http, ctx.cred, p, dest, { collection: false, overwrite: false, cond: { tagged: lockCond(ctx, e, p), ifMatch } });
  if (a.status >= 300) {
    throw failure(a, `MOVE ${p} to ${dest}`, { locked: e, taken: exists(dest), stale: a.status === 412 && !(await stat(ctx, dest)) ? stale(p) : undefined });
  }
  return assetAt(ctx, dest);
}

async function deleteAsset(ctx: Ctx, assetId: string, cond: WriteCondition): Promise<void> {
  const p = cleanPath(assetId);
  const e = await statFile(ctx, p);
  checkTag(e, cond);
  const ifMatch = serverTag(e, cond);
  const a = await remove(ctx.http, ctx.cred, p, false, { tagged: lockCond(ctx, e, p), ifMatch });
  if (a.status >= 300) throw failure(a, `DELETE ${p}`, { locked: e, stale: stale(p) });
}

async function createFolder(ctx: Ctx, parentId: string, name: string): Promise<Folder> {
  const p = joinPath(cleanPath(parentId), name);
  // rclone answers MKCOL on an existing folder 201 (RFC 4918 9.3.1 says 405): asked first.
  if (await stat(ctx, p)) throw exists(p)();
  const a = await mkcol(ctx.http, ctx.cred, p);
  if (a.status >= 300) throw failure(a, `MKCOL ${p}`, { taken: exists(p) });
  return { id: p, name };
}

async function updateFolder(ctx: Ctx, folderId: string, to: { parentId: string | null; name: string | null }): Promise<Folder> {
  const p = cleanPath(folderId);
  if (p === '/') throw integrationError('integration-forbidden', PROVIDER_ID, 'the connection\'s root folder cannot be renamed or moved');
  await statFolder(ctx, p);
  const name = to.name ?? p.split('/').at(-1)!;
  const dest = joinPath(to.parentId === null ? parentOf(p) : cleanPath(to.parentId), name);
  if (dest === p) return { id: p, name };
  if (dest.startsWith(`${p}/`)) throw hubError('hub-validation-error', `${p} cannot be moved into itself`);
  if (parentOf(dest) !== parentOf(p)) await statFolder(ctx, parentOf(dest));
  const a = await move(ctx.http, ctx.cred, p, dest, { collection: true, overwrite: false });
  if (a.status >= 300) throw failure(a, `MOVE ${p} to ${dest}`, { taken: exists(dest) });
  return { id: dest, name };
}

async function deleteFolder(ctx: Ctx, folderId: string, opts: { recursive: boolean }): Promise<void> {
  const p = cleanPath(folderId);
  if (p === '/') throw integrationError('integration-forbidden', PROVIDER_ID, 'the connection\'s root folder cannot be deleted');
  await statFolder(ctx, p); // a file asked for as a folder is a 400 on Apache: asked as what it is first
  const entries = await propfind(ctx.http, ctx.cred, p, 1);
  if (!opts.recursive && entries.some((e) => e.path !== p)) throw hubError('folder-not-empty', `${p} has content`);
  const a = await remove(ctx.http, ctx.cred, p, true);
  // 207 (RFC 4918 9.6.1), or Apache's 424: some members could not be deleted, typically one locked by someone.
  if (a.status === 207 || a.status === 424) {
    if (/\s423\s/.test(a.text ?? '')) throw hubError('asset-locked', `DELETE ${p}: some of its content is locked`);
    throw integrationError('integration-operation-failed', PROVIDER_ID, `DELETE ${p} answered ${a.status}: some of its content could not be deleted`);
  }
  if (a.status >= 300) throw failure(a, `DELETE ${p}`);
}

/** A server that does not report locks (rclone): a lock taken here could never be found to release. */
function locksUnsupported(e: DavEntry): HubError | null {
  return e.locks === undefined ? integrationError('integration-not-supported', PROVIDER_ID, 'this WebDAV server does not report locks (DAV:lockdiscovery), so a lock taken could not be released') : null;
}

async function lockAsset(ctx: Ctx, assetId: string): Promise<Asset> {
  const p = cleanPath(assetId);
  const e = await statFile(ctx, p);
  const unsupported = locksUnsupported(e);
  if (unsupported) throw unsupported;
  if (ownLock(e, ctx.cred)) return assetAt(ctx, p); // already ours
  if (e.locks?.length) throw lockedError(`${p} is locked`, e);
  const r = await lock(ctx.http, ctx.cred, p, ownerMarker(ctx.cred), LOCK_TIMEOUT_SEC);
  if (!r.lock) throw failure({ status: r.status, headers: {} }, `LOCK ${p}`, { locked: (await stat(ctx, p)) ?? undefined });
  return assetAt(ctx, p);
}

async function unlockAsset(ctx: Ctx, assetId: string): Promise<Asset> {
  const p = cleanPath(assetId);
  const e = await statFile(ctx, p);
  const unsupported = locksUnsupported(e);
  if (unsupported) throw unsupported;
  const mine = ownLock(e, ctx.cred);
  if (!mine) {
    if (e.locks?.length) throw lockedError(`${p} is locked`, e);
    return assetAt(ctx, p); // not locked: nothing to release
  }
  const a = await unlock(ctx.http, ctx.cred, p, mine.token);
  if (a.status >= 300) throw failure(a, `UNLOCK ${p}`, { locked: e });
  return assetAt(ctx, p);
}

export const writeHooks: Pick<ConnectorHooks<WebdavCred>, 'upload' | 'update' | 'renameAsset' | 'moveAsset' | 'deleteAsset' | 'createFolder' | 'updateFolder' | 'deleteFolder' | 'lockAsset' | 'unlockAsset' | 'uploadExtensions'> = {
  upload,
  update,
  renameAsset: (ctx, assetId, name, cond) => moveFile(ctx, assetId, null, name, cond),
  moveAsset: (ctx, assetId, to: WriteDestination, cond) => moveFile(ctx, assetId, to.parentId, to.name, cond),
  deleteAsset,
  createFolder,
  updateFolder,
  deleteFolder,
  lockAsset,
  unlockAsset,
  /** WebDAV takes any file type; the operator narrows them (DAMHUB_UPLOAD_EXTENSIONS). */
  uploadExtensions: () => null,
};
