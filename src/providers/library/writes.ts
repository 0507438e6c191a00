/**
 * The library's write operations (Provider.upload … unlockAsset; docs/writes.md). The library
 * folder on disk is the truth and the index follows it in the same request:
 * - bytes go to a hidden temp file in the destination folder, fsynced, then renamed into place
 *   (disk.ts), so a scan never sees a partial file and a failed body leaves nothing;
 * - the written file is indexed as a scan would index it (LibraryScanner.indexFile: the version
 *   store, hashes, metadata, renditions), then its image descriptor is made (similarity), so a
 *   search right after the write finds it, on every node sharing the index;
 * - ids follow paths (scanner.ts assetIdFor): a rename or move gives the asset a new id, and the
 *   index carries its versions, lock and renditions over (LibraryIndexStore.relocate).
 * Rights (write-rights.ts) and locks (locks.ts) are checked here for every write.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Clock } from '../../clock.js';
import { hubError, integrationError, validationError } from '../../errors.js';
import type { ConflictMode, ProviderSession, UploadBody, WriteCondition, WriteDestination } from '../contract.js';
import type { Asset, Folder } from '../model.js';
import { diskError, exists, placeNoClobber, requireRoom, syncDir, workName, writeBody, type WriteFs } from './disk.js';
import type { AccountRow, AssetMove, AssetRow, LibraryIndexStore } from './index/contract.js';
import { KeyedMutex, requireUnlocked } from './locks.js';
import { isWithin } from './paths.js';
import type { HashLanes } from './hash-lanes.js';
import type { FileHashes } from './hashes.js';
import type { Renditions } from './renditions.js';
import { assetIdFor, isSkippedName, parentOf, type IndexIntent, type LibraryScanner } from './scanner.js';
import type { ImageSimilarity } from './similarity/index.js';
import { canSee, requireWrite } from './write-rights.js';
import { alternativeName } from '../names.js';

const LIBRARY_ID = 'library';

/** What the writes need of the provider (provider.ts). */
export interface WriteHost {
  root: string;
  index: LibraryIndexStore;
  scanner: LibraryScanner;
  renditions: Renditions;
  similarity: ImageSimilarity;
  clock: Clock;
  fs: WriteFs;
  lanes: HashLanes;
  warn(message: string): void;
  account(session: ProviderSession): Promise<AccountRow>;
  /** The asset as the session sees it (capabilities, lock, content tag). */
  present(session: ProviderSession, acc: AccountRow, row: AssetRow): Promise<Asset>;
  /** 'root' or '/a/b' → 'a/b' (provider.ts folderPath). */
  folderPath(folderId: string): string;
}

/** The content tag of an asset row (CONTENT_TAG, asset-state.ts): its version and the SHA-256 of its bytes. */
export function contentTag(row: Pick<AssetRow, 'version' | 'hashes' | 'size' | 'mtimeMs'>): string {
  return `${row.version}:${row.hashes?.sha256 ?? `${row.size}-${row.mtimeMs}`}`;
}

/** Where a conflict rename stops looking for a free name. */
const MAX_FREE_NAME = 10_000;

export class LibraryWrites {
  private readonly mutex = new KeyedMutex();

  constructor(private readonly h: WriteHost) {}

  // ── assets ───────────────────────────────────────────────────────────────────────────────
  async upload(session: ProviderSession, target: { parentId: string; name: string; onConflict: ConflictMode }, body: UploadBody): Promise<{ asset: Asset; created: boolean }> {
    const acc = await this.h.account(session);
    const folder = await this.existingFolder(acc, target.parentId);
    checkName(target.name);
    requireWrite(acc, folder);
    // Refused before the body is read, when it can be (it is checked again once the bytes are in).
    if (target.onConflict === 'fail' && (await exists(this.abs(join(folder, target.name))))) throw hubError('asset-exists', `/${join(folder, target.name)} already exists`);
    const dir = this.abs(folder);
    await requireRoom(this.h.fs, dir, body.length);
    const temp = await writeBody(this.h.fs, dir, body.stream, this.h.lanes.hasher(body.length));
    let written: IndexIntent['written'] | undefined;
    try {
      written = await this.written(temp);
      // The file and its indexing under one hold of the name: a second save onto it waits until
      // the first is a version, so no bytes are lost between a rename and its indexing.
      return await this.mutex.run([join(folder, target.name)], async () => {
        const placed = await this.placeUpload(acc, temp.file, folder, target);
        await syncDir(dir);
        return { asset: await this.indexed(session, acc, placed.rel, { ...placed.intent, written }), created: placed.created };
      });
    } finally {
      await fs.promises.rm(temp.file, { force: true });
      if (written?.snapshot) await fs.promises.rm(written.snapshot, { force: true });
    }
  }

  /** Gives an upload's temp file its name by the conflict mode; says where, and what the indexing should record. */
  private async placeUpload(acc: AccountRow, temp: string, folder: string, target: { name: string; onConflict: ConflictMode }): Promise<{ rel: string; created: boolean; intent: IndexIntent }> {
    const rel = join(folder, target.name);
    const intent: IndexIntent = { comment: `Uploaded by ${acc.name}` };
    if (target.onConflict === 'version') {
      const stat = await fs.promises.lstat(this.abs(rel)).catch(() => null);
      if (stat && !stat.isFile()) throw hubError('asset-exists', `/${rel} exists and is not a file`);
      if (stat) {
        const existing = await this.h.index.asset(assetIdFor(rel));
        if (existing) requireUnlocked(await this.h.index.lock(existing.id), acc, `/${rel}`);
        // Replaced in one step: readers see the old bytes or the new, never a mix.
        await fs.promises.rename(temp, this.abs(rel)).catch((e) => { throw diskError(e, `saving /${rel}`); });
        return existing
          ? { rel, created: false, intent: { comment: `New version uploaded by ${acc.name}`, replaces: existing.version } }
          : { rel, created: true, intent };
      }
    }
    if (await this.place(temp, rel)) return { rel, created: true, intent };
    if (target.onConflict !== 'rename') throw hubError('asset-exists', `/${rel} already exists`);
    for (let n = 2; n <= MAX_FREE_NAME; n++) {
      const candidate = join(folder, alternativeName(target.name, n));
      if (await this.place(temp, candidate)) return { rel: candidate, created: true, intent };
    }
    throw hubError('asset-exists', `no free name like ${target.name} in ${folder === '' ? 'the library root' : `/${folder}`}`);
  }

  async update(session: ProviderSession, assetId: string, body: UploadBody, cond: WriteCondition): Promise<Asset> {
    const acc = await this.h.account(session);
    const row = await this.writableAsset(acc, assetId, cond);
    const dir = this.abs(row.folderPath);
    await requireRoom(this.h.fs, dir, body.length);
    const temp = await writeBody(this.h.fs, dir, body.stream, this.h.lanes.hasher(body.length));
    let written: IndexIntent['written'] | undefined;
    try {
      written = await this.written(temp);
      return await this.mutex.run([row.relPath], async () => {
        await this.unchangedOnDisk(row);
        await fs.promises.rename(temp.file, this.abs(row.relPath)).catch((e) => { throw diskError(e, `saving /${row.relPath}`); });
        await syncDir(dir);
        return this.indexed(session, acc, row.relPath, { comment: `New version uploaded by ${acc.name}`, replaces: row.version, written });
      });
    } finally {
      await fs.promises.rm(temp.file, { force: true });
      if (written?.snapshot) await fs.promises.rm(written.snapshot, { force: true });
    }
  }

  async renameAsset(session: ProviderSession, assetId: string, name: string, cond: WriteCondition): Promise<Asset> {
    const acc = await this.h.account(session);
    const row = await this.visible(acc, assetId);
    return this.moveAsset(session, assetId, { parentId: row.folderPath === '' ? 'root' : `/${row.folderPath}`, name }, cond);
  }

  async moveAsset(session: ProviderSession, assetId: string, to: WriteDestination, cond: WriteCondition): Promise<Asset> {
    const acc = await this.h.account(session);
    const row = await this.writableAsset(acc, assetId, cond);
    const folder = await this.existingFolder(acc, to.parentId);
    const name = to.name ?? row.name;
    checkName(name);
    requireWrite(acc, folder);
    const rel = join(folder, name);
    if (rel === row.relPath) return this.h.present(session, acc, row);
    const moved = relocated(row, rel, this.h.clock.now());
    await this.mutex.run([row.relPath, rel], async () => {
      // With a condition, a file edited outside the hub since it was read is a conflict; without, it moves as it is.
      if (guarded(cond)) await this.unchangedOnDisk(row);
      if (!(await this.move(this.abs(row.relPath), this.abs(rel)))) throw hubError('asset-exists', `/${rel} already exists`);
      await syncDir(this.abs(row.folderPath));
      if (folder !== row.folderPath) await syncDir(this.abs(folder));
      await this.h.index.relocate([{ from: row, to: moved }], null);
      this.h.renditions.move(row.id, moved.id);
      // A new extension may mean a new type, and an edit outside the hub new content: the file is
      // read again under its new name (the same bytes keep their version).
      const stat = await fs.promises.stat(this.abs(rel)).catch(() => null);
      if (moved.ext !== row.ext || !stat || stat.size !== row.size || Math.floor(stat.mtimeMs) !== row.mtimeMs) {
        await this.h.scanner.indexFile(rel, (w) => this.h.warn(`library file ${rel}: ${w}`));
      }
    });
    const now = await this.h.index.asset(moved.id);
    await this.describe(now ? [now] : []);
    return this.h.present(session, acc, now ?? moved);
  }

  async deleteAsset(session: ProviderSession, assetId: string, cond: WriteCondition): Promise<void> {
    const acc = await this.h.account(session);
    const row = await this.writableAsset(acc, assetId, cond);
    await this.mutex.run([row.relPath], async () => {
      if (guarded(cond)) await this.unchangedOnDisk(row);
      try {
        await fs.promises.unlink(this.abs(row.relPath));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw diskError(e, `deleting /${row.relPath}`);
      }
      await syncDir(this.abs(row.folderPath));
      await this.h.index.dropAssets([row.id], []);
    });
    this.h.renditions.remove(row.id);
    await this.describe([]);
  }

  async lockAsset(session: ProviderSession, assetId: string): Promise<Asset> {
    const acc = await this.h.account(session);
    const row = await this.visible(acc, assetId);
    requireWrite(acc, row.folderPath);
    const lock = await this.h.index.takeLock({ assetId: row.id, accountId: acc.id, lockedBy: acc.name, lockedAt: this.h.clock.now() });
    requireUnlocked(lock, acc, `/${row.relPath}`);
    return this.h.present(session, acc, row);
  }

  async unlockAsset(session: ProviderSession, assetId: string): Promise<Asset> {
    const acc = await this.h.account(session);
    const row = await this.visible(acc, assetId);
    requireWrite(acc, row.folderPath);
    requireUnlocked(await this.h.index.lock(row.id), acc, `/${row.relPath}`);
    await this.h.index.releaseLock(row.id, acc.id);
    return this.h.present(session, acc, row);
  }

  // ── folders ──────────────────────────────────────────────────────────────────────────────
  async createFolder(session: ProviderSession, parentId: string, name: string): Promise<Folder> {
    const acc = await this.h.account(session);
    const parent = await this.existingFolder(acc, parentId);
    checkName(name);
    requireWrite(acc, parent);
    const rel = join(parent, name);
    try {
      await fs.promises.mkdir(this.abs(rel));
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') throw hubError('asset-exists', `/${rel} already exists`);
      if (code === 'ENOENT') throw integrationError('integration-not-found', LIBRARY_ID, `no folder ${parentId}`);
      throw diskError(e, `creating /${rel}`);
    }
    await syncDir(this.abs(parent));
    await this.h.index.ensureFolder(rel);
    return { id: `/${rel}`, name };
  }

  async updateFolder(session: ProviderSession, folderId: string, to: { parentId: string | null; name: string | null }): Promise<Folder> {
    const acc = await this.h.account(session);
    const rel = await this.existingFolder(acc, folderId);
    if (rel === '') throw integrationError('integration-forbidden', LIBRARY_ID, 'the library root cannot be renamed or moved');
    requireWrite(acc, parentOf(rel));
    const parent = to.parentId === null ? parentOf(rel) : await this.existingFolder(acc, to.parentId);
    const name = to.name ?? path.posix.basename(rel);
    checkName(name);
    requireWrite(acc, parent);
    const dest = join(parent, name);
    if (dest === rel) return { id: `/${rel}`, name };
    if (isWithin(parent, rel)) throw validationError(`parentId: /${rel} cannot move into itself`);
    const assets = await this.h.index.assetsUnder(rel);
    await this.noForeignLocks(acc, assets, `/${rel}`);
    if (await exists(this.abs(dest))) throw hubError('asset-exists', `/${dest} already exists`);
    try {
      await fs.promises.rename(this.abs(rel), this.abs(dest));
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOTEMPTY' || code === 'EEXIST') throw hubError('asset-exists', `/${dest} already exists`);
      if (code === 'ENOENT') throw integrationError('integration-not-found', LIBRARY_ID, `no folder ${folderId}`);
      throw diskError(e, `moving /${rel}`);
    }
    await syncDir(this.abs(parentOf(rel)));
    if (parent !== parentOf(rel)) await syncDir(this.abs(parent));
    const now = this.h.clock.now();
    const moves: AssetMove[] = assets.map((a) => ({ from: a, to: relocated(a, dest + a.relPath.slice(rel.length), now) }));
    await this.h.index.relocate(moves, { from: rel, to: dest });
    for (const m of moves) this.h.renditions.move(m.from.id, m.to.id);
    await this.describe(moves.map((m) => m.to));
    return { id: `/${dest}`, name };
  }

  async deleteFolder(session: ProviderSession, folderId: string, opts: { recursive: boolean }): Promise<void> {
    const acc = await this.h.account(session);
    const rel = await this.existingFolder(acc, folderId);
    if (rel === '') throw integrationError('integration-forbidden', LIBRARY_ID, 'the library root cannot be deleted');
    requireWrite(acc, parentOf(rel));
    const abs = this.abs(rel);
    let entries: fs.Dirent[] = [];
    try {
      entries = await fs.promises.readdir(abs, { withFileTypes: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw diskError(e, `reading /${rel}`);
    }
    // Hidden files (.DS_Store) are no content the library shows; anything else is.
    if (!opts.recursive && entries.some((e) => !isSkippedName(e.name) || !e.isFile())) {
      throw hubError('folder-not-empty', `/${rel} is not empty: delete it with recursive=true, or empty it first`);
    }
    const assets = await this.h.index.assetsUnder(rel);
    await this.noForeignLocks(acc, assets, `/${rel}`);
    if (entries.length || (await exists(abs))) {
      // Out of sight in one step (a hidden name the scan skips), then removed at leisure.
      const trash = workName(this.abs(parentOf(rel)), 'deleting');
      try {
        await fs.promises.rename(abs, trash);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw diskError(e, `deleting /${rel}`);
      }
      // Something put there between the look and the rename makes the folder not empty after all: it goes back.
      if (!opts.recursive && (await fs.promises.readdir(trash, { withFileTypes: true }).catch(() => [])).some((e) => !isSkippedName(e.name) || !e.isFile())) {
        await fs.promises.rename(trash, abs).catch(() => undefined);
        throw hubError('folder-not-empty', `/${rel} is not empty: delete it with recursive=true, or empty it first`);
      }
      await syncDir(this.abs(parentOf(rel)));
      await this.h.index.dropAssets(assets.map((a) => a.id), [rel]);
      await fs.promises.rm(trash, { recursive: true, force: true });
    } else {
      await this.h.index.dropAssets(assets.map((a) => a.id), [rel]);
    }
    for (const a of assets) this.h.renditions.remove(a.id);
    await this.describe([]);
  }

  // ── helpers ──────────────────────────────────────────────────────────────────────────────
  private abs(rel: string): string {
    return rel === '' ? this.h.root : path.join(this.h.root, ...rel.split('/'));
  }

  /** The folder id's path, when the folder exists and the account sees it (404 otherwise, as a browse answers). */
  private async existingFolder(acc: AccountRow, folderId: string): Promise<string> {
    const rel = this.h.folderPath(folderId);
    if (!(await this.h.index.folder(rel)) || !canSee(acc, rel)) throw integrationError('integration-not-found', LIBRARY_ID, `no folder ${folderId}`);
    return rel;
  }

  /** The asset, when the account sees it (its existence is not disclosed otherwise). */
  private async visible(acc: AccountRow, assetId: string): Promise<AssetRow> {
    const row = /^[A-Za-z0-9_-]{22}$/.test(assetId) ? await this.h.index.asset(assetId) : null;
    if (!row || !canSee(acc, row.folderPath)) throw integrationError('integration-not-found', LIBRARY_ID, `no asset ${assetId}`);
    return row;
  }

  /** An asset the account may change now: its folder writable, no one else's lock, and (with a tag) unchanged since read. */
  private async writableAsset(acc: AccountRow, assetId: string, cond: WriteCondition): Promise<AssetRow> {
    const row = await this.visible(acc, assetId);
    requireWrite(acc, row.folderPath);
    requireUnlocked(await this.h.index.lock(row.id), acc, `/${row.relPath}`);
    if (cond.upstreamTag !== null && cond.upstreamTag !== contentTag(row)) {
      throw hubError('asset-version-conflict', `/${row.relPath} changed since it was read`);
    }
    return row;
  }

  /**
   * Refuses a write over a file changed on disk since it was indexed (an edit outside the hub):
   * the change is indexed first, so the conflict's current ETag is the new one.
   */
  private async unchangedOnDisk(row: AssetRow): Promise<void> {
    let stat: fs.Stats;
    try {
      stat = await fs.promises.stat(this.abs(row.relPath));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw diskError(e, `reading /${row.relPath}`);
      await this.h.index.removeAsset(row.relPath);
      throw integrationError('integration-not-found', LIBRARY_ID, `/${row.relPath} is no longer in the library`);
    }
    if (stat.size === row.size && Math.floor(stat.mtimeMs) === row.mtimeMs) return;
    await this.h.scanner.indexFile(row.relPath, (w) => this.h.warn(`library file ${row.relPath}: ${w}`));
    throw hubError('asset-version-conflict', `/${row.relPath} changed on disk since it was read`);
  }

  private async noForeignLocks(acc: AccountRow, assets: AssetRow[], what: string): Promise<void> {
    const locks = await this.h.index.locks(assets.map((a) => a.id));
    for (const l of locks.values()) requireUnlocked(l, acc, `${what} holds an asset that`);
  }

  /** Gives the temp file its name unless taken. */
  private async place(temp: string, rel: string): Promise<boolean> {
    try {
      return await placeNoClobber(temp, this.abs(rel));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENAMETOOLONG') throw hubError('asset-name-invalid', `${path.posix.basename(rel)} is longer than the library's file system allows`);
      throw diskError(e, `saving /${rel}`);
    }
  }

  /**
   * Moves a file without replacing anything; across file systems (a sub-folder that is a mount)
   * the bytes are copied to a temp name there first, so the destination never shows a partial file.
   */
  private async move(from: string, to: string): Promise<boolean> {
    try {
      return await placeNoClobber(from, to);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENAMETOOLONG') throw hubError('asset-name-invalid', `${path.basename(to)} is longer than the library's file system allows`);
      if (code !== 'EXDEV') throw diskError(e, 'moving the file');
    }
    const temp = workName(path.dirname(to), 'upload');
    try {
      await fs.promises.copyFile(from, temp, fs.constants.COPYFILE_EXCL);
      if (!(await placeNoClobber(temp, to))) return false;
      await fs.promises.unlink(from);
      return true;
    } catch (e) {
      throw diskError(e, 'moving the file');
    } finally {
      await fs.promises.rm(temp, { force: true });
    }
  }

  /** Indexes what a write left at `rel` (as a scan would), describes its image, and answers it as the session sees it. */
  /**
   * What the indexing of an upload is told of its bytes: the digests computed while they were
   * written, and their copy for the version store, made from the temp file before it takes its
   * name (scanner.ts snapshotWritten).
   */
  private async written(temp: { file: string; hashes: FileHashes | null }): Promise<IndexIntent['written']> {
    if (!temp.hashes) return undefined;
    // A name or a rename keeps the inode and mtime: how the indexing knows the file is still this one.
    try {
      const st = await fs.promises.stat(temp.file);
      const snapshot = await this.h.scanner.snapshotWritten(temp.file, temp.hashes.sha256);
      return { hashes: temp.hashes, snapshot, file: { ino: st.ino, mtimeMs: st.mtimeMs } };
    } catch (e) {
      // The folder deleted meanwhile (404), a full disk (507)…
      throw diskError(e, 'keeping the version');
    }
  }

  private async indexed(session: ProviderSession, acc: AccountRow, rel: string, intent: IndexIntent): Promise<Asset> {
    await this.h.scanner.indexFile(rel, (w) => this.h.warn(`library file ${rel} is indexed without renditions: ${w}`), intent);
    const row = await this.h.index.asset(assetIdFor(rel));
    if (!row) throw integrationError('integration-not-found', LIBRARY_ID, `/${rel} is no longer in the library`);
    await this.describe([row]);
    return this.h.present(session, acc, row);
  }

  /**
   * The image descriptors of what a write changed (search by image): the images among `rows` are
   * described, and removals (dropped with their rows) are applied, on this node at once.
   */
  private async describe(rows: AssetRow[]): Promise<void> {
    await this.h.similarity.describeWritten(rows.filter((r) => r.kind === 'image').map((r) => ({ id: r.id, folderPath: r.folderPath, version: r.version, blob: r.blob })));
  }
}

/**
 * What the library itself cannot take, beyond the hub's name rules: a name starting with "." is
 * hidden (a scan skips it, so the asset would never appear).
 */
function checkName(name: string): void {
  if (isSkippedName(name)) throw hubError('asset-name-invalid', `${JSON.stringify(name)}: names starting with "." are hidden files, which the library does not show`);
  if (name.includes('/') || name.includes('\\') || name.includes('\0') || name === '' || name === '..') throw hubError('asset-name-invalid', `${JSON.stringify(name)} is not a file name`);
}

/** Whether the client made the write conditional (If-Match): then an edit outside the hub since the read is a conflict. */
function guarded(cond: WriteCondition): boolean {
  return cond.ifMatch !== null || cond.upstreamTag !== null;
}

function join(folder: string, name: string): string {
  return folder === '' ? name : `${folder}/${name}`;
}

/** The row of an asset at its new path: a new id (ids follow paths), the same content and history. */
function relocated(row: AssetRow, rel: string, now: number): AssetRow {
  const name = path.posix.basename(rel);
  return { ...row, id: assetIdFor(rel), relPath: rel, folderPath: parentOf(rel), name, ext: path.posix.extname(name).slice(1).toLowerCase(), indexedAt: now };
}
