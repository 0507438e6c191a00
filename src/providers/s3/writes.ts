/**
 * The S3 connector's write hooks (docs/writes.md). Keys are ids, so a rename or move is a
 * CopyObject then a DeleteObject and answers the asset under its new id. Folders are prefixes: a
 * new one is a zero-byte "prefix/" marker object, renaming one copies then deletes every key under
 * it, and a folder whose last object goes away keeps a marker (a folder does not vanish because it
 * was emptied). No locks: S3 has none, so lockAsset is not given and the `lock` capability is false.
 *
 * Conditional writes: where the server honours If-None-Match / If-Match on PUT (AWS S3 since 2024,
 * MinIO, Ceph), a new name is written only if still free and a new version only over the content
 * the hub read (CONTENT_TAG, the ETag). OpenStack Swift's s3api refuses them (501 "Conditional
 * object PUTs are not supported"), which a probe finds out once per bucket: there the connector
 * checks with HeadObject just before writing, and the hub serialises its own writes to one asset,
 * so what is left is a write made outside the hub between that check and the put, which the put
 * overwrites (with bucket versioning, the overwritten content stays as a version).
 */
import { hubError, integrationError } from '../../errors.js';
import type { Asset, Folder } from '../model.js';
import type { ConflictMode, UploadBody, WriteCondition, WriteDestination } from '../contract.js';
import type { CallContext, ConnectorHooks } from '../kit/define.js';
import { headObject, listObjects, PROVIDER_ID, type S3Cred, type S3Object } from './api.js';
import { copyWhole, writeBody, type BodyLimits } from './body.js';
import { baseName, keyOf, parentOf, prefixOf, toFolder } from './mapping.js';
import { bareEtag, DELETE_BATCH, deleteObject, deleteObjects, headIfAny, probeConditionalWrites, putObject } from './writes-api.js';
import { alternativeName } from '../names.js';

/** Keys a folder rename or move copies at most; above it the folder is refused before anything changes. */
export const MAX_FOLDER_KEYS = 10_000;
/** Copies of a folder rename in flight at once. */
const COPY_CONCURRENCY = 4;
/** Names tried at most for "keep both" (name (2).ext, name (3).ext, …). */
const MAX_FREE_NAME_TRIES = 1000;
/** Content type of folder marker objects. */
const FOLDER_MARKER_TYPE = 'application/x-directory';

export interface WriteDeps {
  limits: BodyLimits;
  /** The asset as the `asset` hook answers it (headers, version number, CONTENT_TAG). */
  readAsset(ctx: CallContext<S3Cred>, key: string): Promise<Asset>;
}


function changedOutside(what: string, read: string | null, now: string | undefined): void {
  if (read && now && bareEtag(read) !== bareEtag(now)) {
    throw hubError('asset-version-conflict', `${what}: the object changed at the bucket since it was read (ETag ${now}, read ${read})`);
  }
}

export function writeHooks(deps: WriteDeps): Pick<Required<ConnectorHooks<S3Cred>>, 'upload' | 'update' | 'renameAsset' | 'moveAsset' | 'deleteAsset' | 'createFolder' | 'updateFolder' | 'deleteFolder' | 'uploadExtensions'> {
  /** Whether each bucket's server honours conditional PUTs, as probed (per endpoint and bucket). */
  const conditional = new Map<string, boolean>();

  async function conditionalWrites(ctx: CallContext<S3Cred>, dir: string): Promise<boolean> {
    const id = `${ctx.cred.endpoint}\n${ctx.cred.bucket}`;
    const known = conditional.get(id);
    if (known !== undefined) return known;
    const found = await probeConditionalWrites(ctx.http, ctx.cred, dir);
    if (found === null) return false;
    if (conditional.size >= 1000) conditional.clear();
    conditional.set(id, found);
    return found;
  }

  /** A folder exists when its prefix holds anything (its marker, an object, a sub-folder); the root always. */
  async function requireFolder(ctx: CallContext<S3Cred>, prefix: string): Promise<void> {
    if (!prefix) return;
    const p = await listObjects(ctx.http, ctx.cred, { prefix, delimiter: true, maxKeys: 1, token: null });
    if (p.objects.length === 0 && p.prefixes.length === 0) throw integrationError('integration-not-found', PROVIDER_ID, `no folder ${JSON.stringify(prefix)} in bucket ${ctx.cred.bucket}`);
  }

  /** Whether a sub-folder has this key's name (its prefix holds anything). */
  async function isFolder(ctx: CallContext<S3Cred>, key: string): Promise<boolean> {
    const p = await listObjects(ctx.http, ctx.cred, { prefix: `${key}/`, delimiter: true, maxKeys: 1, token: null });
    return p.objects.length > 0 || p.prefixes.length > 0;
  }

  /** Whether a name is taken in a folder: by an object, or by a sub-folder of that name. */
  async function taken(ctx: CallContext<S3Cred>, key: string): Promise<boolean> {
    return (await headIfAny(ctx.http, ctx.cred, key)) !== null || isFolder(ctx, key);
  }

  /** Keeps an emptied folder: a marker where its prefix no longer holds anything. */
  async function keepFolder(ctx: CallContext<S3Cred>, prefix: string): Promise<void> {
    if (!prefix) return;
    const p = await listObjects(ctx.http, ctx.cred, { prefix, delimiter: true, maxKeys: 1, token: null });
    if (p.objects.length === 0 && p.prefixes.length === 0) await putObject(ctx.http, ctx.cred, prefix, Buffer.alloc(0), { contentType: FOLDER_MARKER_TYPE, length: 0 });
  }

  /** Every object under a prefix (marker included), at most MAX_FOLDER_KEYS. */
  async function keysUnder(ctx: CallContext<S3Cred>, prefix: string): Promise<S3Object[]> {
    const keys: S3Object[] = [];
    let token: string | null = null;
    do {
      const p = await listObjects(ctx.http, ctx.cred, { prefix, delimiter: false, maxKeys: 1000, token });
      keys.push(...p.objects);
      if (keys.length > MAX_FOLDER_KEYS) throw integrationError('integration-operation-failed', PROVIDER_ID, `more than ${MAX_FOLDER_KEYS} objects under ${JSON.stringify(prefix)}: too many to rename or move one by one`);
      token = p.next;
    } while (token);
    return keys;
  }

  async function removeKeys(ctx: CallContext<S3Cred>, keys: string[]): Promise<{ key: string; reason: string }[]> {
    const failed: { key: string; reason: string }[] = [];
    for (let i = 0; i < keys.length; i += DELETE_BATCH) failed.push(...await deleteObjects(ctx.http, ctx.cred, keys.slice(i, i + DELETE_BATCH)));
    return failed;
  }

  /** Copy then delete of one object to a key that must be free; the answer under the new id. */
  async function relocate(ctx: CallContext<S3Cred>, assetId: string, toDir: string, name: string, cond: WriteCondition): Promise<Asset> {
    const key = keyOf(assetId);
    const to = toDir + name;
    const what = `moving ${key} to ${to}`;
    const head = await headObject(ctx.http, ctx.cred, key);
    if (to === key) return deps.readAsset(ctx, key);
    changedOutside(what, cond.upstreamTag, head.etag);
    await requireFolder(ctx, toDir);
    if (await taken(ctx, to)) throw hubError('asset-exists', `${what}: ${JSON.stringify(to)} is taken`);
    // The copy is only of the content the hub read (x-amz-copy-source-if-match, which Swift's
    // s3api honours too): changed in between, it fails with 412 → asset-version-conflict.
    await copyWhole(ctx.http, ctx.cred, { key, ...head }, to, cond.upstreamTag ?? head.etag, deps.limits);
    try {
      await deleteObject(ctx.http, ctx.cred, key);
    } catch (e) {
      // The original could not be removed (no delete right): undo the copy, so there are not two.
      await deleteObject(ctx.http.detached(), ctx.cred, to).catch(() => undefined);
      throw e;
    }
    if (parentOf(key) !== toDir) await keepFolder(ctx, parentOf(key));
    return deps.readAsset(ctx, to);
  }

  return {
    async upload(ctx, target: { parentId: string; name: string; onConflict: ConflictMode }, body: UploadBody) {
      const dir = prefixOf(target.parentId);
      await requireFolder(ctx, dir);
      let key = dir + target.name;
      const existing = await headIfAny(ctx.http, ctx.cred, key);
      const folderThere = !existing && (await isFolder(ctx, key));
      if ((existing || folderThere) && target.onConflict === 'fail') throw hubError('asset-exists', `${JSON.stringify(key)} already exists in bucket ${ctx.cred.bucket}`);
      if (existing || folderThere) {
        if (target.onConflict === 'rename' || folderThere) key = dir + (await freeName(ctx, dir, target.name));
      }
      const created = key !== dir + target.name || !existing;
      const cond = await conditionalWrites(ctx, dir);
      // onConflict 'version' overwrites: with bucket versioning the old content becomes a version.
      await writeBody(ctx.http, ctx.cred, key, body, { contentType: body.mimeType, ifNoneMatch: created && cond }, deps.limits);
      return { asset: await deps.readAsset(ctx, key), created };
    },

    async update(ctx, assetId, body, cond) {
      const key = keyOf(assetId);
      const head = await headObject(ctx.http, ctx.cred, key);
      changedOutside(`updating ${key}`, cond.upstreamTag, head.etag);
      const conditionalPut = await conditionalWrites(ctx, parentOf(key));
      // A new version keeps the object's user metadata (title, caption…): a PUT would drop it.
      await writeBody(ctx.http, ctx.cred, key, body, { contentType: body.mimeType, meta: head.meta, ifMatch: conditionalPut ? (cond.upstreamTag ?? head.etag) : undefined }, deps.limits);
      return deps.readAsset(ctx, key);
    },

    async renameAsset(ctx, assetId, name, cond) {
      const key = keyOf(assetId);
      return relocate(ctx, key, parentOf(key), name, cond);
    },

    async moveAsset(ctx, assetId, to: WriteDestination, cond) {
      const key = keyOf(assetId);
      return relocate(ctx, key, prefixOf(to.parentId), to.name ?? baseName(key), cond);
    },

    async deleteAsset(ctx, assetId, cond) {
      const key = keyOf(assetId);
      // DeleteObject answers 204 for a key that is not there: the head tells the client it was gone.
      const head = await headIfAny(ctx.http, ctx.cred, key);
      if (!head) throw integrationError('integration-not-found', PROVIDER_ID, `no object ${JSON.stringify(key)} in bucket ${ctx.cred.bucket}`);
      changedOutside(`deleting ${key}`, cond.upstreamTag, head.etag);
      await deleteObject(ctx.http, ctx.cred, key);
      await keepFolder(ctx, parentOf(key));
    },

    async createFolder(ctx, parentId, name): Promise<Folder> {
      const dir = prefixOf(parentId);
      await requireFolder(ctx, dir);
      const key = dir + name;
      if (await taken(ctx, key)) throw hubError('asset-exists', `${JSON.stringify(key)} already exists in bucket ${ctx.cred.bucket}`);
      await putObject(ctx.http, ctx.cred, `${key}/`, Buffer.alloc(0), { contentType: FOLDER_MARKER_TYPE, length: 0, ifNoneMatch: await conditionalWrites(ctx, dir) });
      return toFolder(`${key}/`);
    },

    /**
     * Copies every key under the prefix to the new one, then deletes the originals. A copy that
     * fails undoes the copies made (the folder stays where it was); a delete that fails after
     * every copy succeeded leaves the folder complete at its new place and the keys named in the
     * error still at the old one.
     */
    async updateFolder(ctx, folderId, to) {
      const src = prefixOf(folderId);
      if (!src) throw integrationError('integration-operation-failed', PROVIDER_ID, 'the bucket root cannot be renamed or moved');
      const dir = to.parentId === null ? parentOf(src) : prefixOf(to.parentId);
      const dst = `${dir}${to.name ?? baseName(src)}/`;
      if (dst === src) {
        await requireFolder(ctx, src);
        return toFolder(src);
      }
      if (dst.startsWith(src)) throw integrationError('integration-operation-failed', PROVIDER_ID, `a folder cannot move into itself (${src} → ${dst})`);
      await requireFolder(ctx, dir);
      const keys = await keysUnder(ctx, src);
      if (keys.length === 0) throw integrationError('integration-not-found', PROVIDER_ID, `no folder ${JSON.stringify(src)} in bucket ${ctx.cred.bucket}`);
      if (await taken(ctx, dst.slice(0, -1))) throw hubError('asset-exists', `${JSON.stringify(dst)} already exists in bucket ${ctx.cred.bucket}`);
      const copied: string[] = [];
      try {
        await inPool(keys, COPY_CONCURRENCY, async (o) => {
          await copyWhole(ctx.http, ctx.cred, o.size > deps.limits.copyMaxBytes ? { ...(await headObject(ctx.http, ctx.cred, o.key)), key: o.key } : { key: o.key, size: o.size, meta: {} }, dst + o.key.slice(src.length), undefined, deps.limits);
          copied.push(dst + o.key.slice(src.length));
        });
      } catch (e) {
        await removeKeys({ ...ctx, http: ctx.http.detached() }, copied).catch(() => undefined);
        throw e;
      }
      const failed = await removeKeys(ctx, keys.map((o) => o.key));
      if (failed.length) {
        throw integrationError('integration-operation-failed', PROVIDER_ID,
          `the folder was copied to ${JSON.stringify(dst)}, but ${failed.length} of its ${keys.length} objects could not be removed from ${JSON.stringify(src)} (first: ${failed[0]!.key}: ${failed[0]!.reason})`);
      }
      if (parentOf(src) !== dir) await keepFolder(ctx, parentOf(src));
      return toFolder(dst);
    },

    async deleteFolder(ctx, folderId, opts) {
      const prefix = prefixOf(folderId);
      if (!prefix) throw integrationError('integration-operation-failed', PROVIDER_ID, 'the bucket root cannot be deleted');
      const first = await listObjects(ctx.http, ctx.cred, { prefix, delimiter: false, maxKeys: 2, token: null });
      if (first.objects.length === 0) throw integrationError('integration-not-found', PROVIDER_ID, `no folder ${JSON.stringify(prefix)} in bucket ${ctx.cred.bucket}`);
      if (!opts.recursive && first.objects.some((o: S3Object) => o.key !== prefix)) throw hubError('folder-not-empty', `${JSON.stringify(prefix)} holds objects; delete them first or ask for a recursive delete`);
      // Page by page: a page's keys are deleted (one DeleteObjects of up to 1000) before the next
      // is listed from the continuation token, so memory is one page however large the folder.
      let token: string | null = null;
      let pages = 0;
      do {
        const p = await listObjects(ctx.http, ctx.cred, { prefix, delimiter: false, maxKeys: DELETE_BATCH, token });
        const failed = await deleteObjects(ctx.http, ctx.cred, p.objects.map((o) => o.key));
        if (failed.length) throw integrationError('integration-operation-failed', PROVIDER_ID, `${failed.length} objects under ${JSON.stringify(prefix)} could not be deleted (first: ${failed[0]!.key}: ${failed[0]!.reason}); the others of this batch and earlier ones are gone`);
        token = p.next;
      } while (token && ++pages < 1_000_000);
      await keepFolder(ctx, parentOf(prefix));
    },

    /** Any type: S3 stores bytes whatever they are (the operator narrows it with DAMHUB_UPLOAD_EXTENSIONS). */
    uploadExtensions() {
      return null;
    },
  };

  /** The first "name (n).ext" free in the folder. */
  async function freeName(ctx: CallContext<S3Cred>, dir: string, name: string): Promise<string> {
    for (let n = 2; n < MAX_FREE_NAME_TRIES + 2; n++) {
      const candidate = alternativeName(name, n);
      if (!(await taken(ctx, dir + candidate))) return candidate;
    }
    throw integrationError('integration-operation-failed', PROVIDER_ID, `no free name like ${JSON.stringify(alternativeName(name, 2))} in ${JSON.stringify(dir || '/')} after ${MAX_FREE_NAME_TRIES} tries`);
  }
}

/** Runs `work` over `items` with at most `n` at once; the first failure stops new work and is thrown once the running ones end. */
async function inPool<T>(items: T[], n: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { e: unknown } | null = null;
  const lane = async () => {
    while (!failure && next < items.length) {
      const item = items[next++]!;
      try {
        await work(item);
      } catch (e) {
        failure ??= { e };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, lane));
  if (failure) throw (failure as { e: unknown }).e;
}
