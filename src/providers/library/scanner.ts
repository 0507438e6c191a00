/**
 * Keeps the index in step with the library folder. A scan walks the tree, skips files whose size
 * and mtime match the index (the cheap rescan after a restart), and indexes the rest with a
 * bounded number of files in flight. Every file is indexed from a private snapshot (a copy in
 * the version store), so its hashes, metadata and renditions describe the same bytes even if the
 * original changes meanwhile, and the snapshot is what older versions are served from later.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Clock } from '../../clock.js';
import { hashBytes, hashFile, type FileHashes } from './hashes.js';
import type { AssetRow, LibraryIndexStore, VersionRow } from './index/contract.js';
import { extractMetadata, typeByName } from '../metadata/index.js';
import type { Renditions } from './renditions.js';

export interface ScanReport {
  added: number;
  updated: number;
  unchanged: number;
  removed: number;
  failed: { path: string; error: string }[];
  /**
   * Files indexed without renditions (and so without a descriptor) because their decode was
   * refused or stopped: over the per-file decode budget, past the deadline, or undecodable.
   */
  warnings: { path: string; warning: string }[];
  files: number;
}

export interface ScanProgress {
  done: number;
  total: number;
  path: string;
}

/** Stable asset id from the path relative to the root: the same file keeps its id across rescans, restarts and re-indexing. */
export function assetIdFor(relPath: string): string {
  return createHash('sha256').update(relPath).digest('base64url').slice(0, 22);
}

/**
 * Files indexed at once by default. The heavy step, sharp's decode and resize, runs on libuv's
 * thread pool (4 threads unless UV_THREADPOOL_SIZE says otherwise); twice that many files in
 * flight keeps every pool thread fed with image work while the other files are being read,
 * hashed, parsed or written (measured in docs/benchmarks.md, "Indexing 5,000 JPEGs").
 */
export const DEFAULT_SCAN_CONCURRENCY = 8;

/**
 * Names the library writes its own work under, inside the library folder (writes.ts: an upload's
 * bytes before they are renamed into place, a folder being deleted). Hidden names, which a scan
 * never lists, so no partial file is ever indexed (isSkippedName).
 */
export const WORK_PREFIX = '.damhub-';

/** Whether a scan skips this name: hidden files and folders, the library's own work names among them. */
export function isSkippedName(name: string): boolean {
  return name.startsWith('.') || name.startsWith(WORK_PREFIX);
}

/** What a write through the hub tells the indexing of the file it wrote (indexFile). */
export interface IndexIntent {
  /** The version comment of the version this write makes. */
  comment: string;
  /**
   * The version the write replaced: a new version follows it even when the bytes are the same
   * (an explicit save is a version). Absent: a new asset, or the version is decided by content.
   */
  replaces?: number;
  /**
   * The bytes as the write streamed them (writes.ts): their digests, computed while they were
   * written, and a private copy of them made from the hidden temp file (snapshotWritten; null when
   * the version store holds these bytes already). The file is then not read again to be indexed.
   */
  written?: { hashes: FileHashes; snapshot: string | null; file: { ino: number; mtimeMs: number } };
}

/** Files up to this size are read into memory once, hashed and snapshotted from that buffer. */
const IN_MEMORY_LIMIT = 32 * 1024 * 1024;

export class LibraryScanner {
  private readonly blobDir: string;
  private running: Promise<ScanReport> | null = null;
  private queued: Promise<ScanReport> | null = null;

  constructor(
    readonly root: string,
    private readonly index: LibraryIndexStore,
    private readonly renditions: Renditions,
    dataDir: string,
    private readonly clock: Clock,
  ) {
    this.blobDir = path.join(dataDir, 'blobs');
    fs.mkdirSync(this.blobDir, { recursive: true });
  }

  blobPath(blob: string): string {
    return path.join(this.blobDir, blob.slice(0, 2), blob);
  }

  /**
   * One scan at a time. A scan requested while one runs waits for it and then runs once more (all
   * requests made meanwhile share that one), so what changed before the call is always seen.
   */
  scan(opts: { concurrency?: number; onProgress?: (p: ScanProgress) => void } = {}): Promise<ScanReport> {
    if (!this.running) {
      this.running = this.doScan(opts).finally(() => {
        this.running = null;
      });
      return this.running;
    }
    this.queued ??= this.running.catch(() => undefined).then(() => {
      this.queued = null;
      return this.scan(opts);
    });
    return this.queued;
  }

  private async doScan(opts: { concurrency?: number; onProgress?: (p: ScanProgress) => void }): Promise<ScanReport> {
    const report: ScanReport = { added: 0, updated: 0, unchanged: 0, removed: 0, failed: [], warnings: [], files: 0 };
    const known = await this.index.fileStates();
    const { files: found, dirs } = await this.walk();
    report.files = found.length;
    // Every folder on disk is kept, an empty one too (a folder made through the hub, before its first upload).
    const folders = new Set<string>(['', ...dirs]);
    const todo: { rel: string; stat: fs.Stats }[] = [];
    for (const f of found) {
      const folder = parentOf(f.rel);
      for (let p = folder; p !== ''; p = parentOf(p)) folders.add(p);
      const k = known.get(f.rel);
      known.delete(f.rel);
      // An untyped file whose name now gives it a type is read again (indexes of earlier versions).
      if (k && k.size === f.stat.size && k.mtimeMs === Math.floor(f.stat.mtimeMs) && !(k.untyped && typeByName(f.rel))) report.unchanged++;
      else todo.push(f);
    }
    // Whatever is left in `known` is gone from disk.
    for (const rel of known.keys()) {
      await this.index.removeAsset(rel);
      report.removed++;
    }
    let done = 0;
    const concurrency = Math.max(1, opts.concurrency ?? DEFAULT_SCAN_CONCURRENCY);
    let next = 0;
    const worker = async () => {
      while (next < todo.length) {
        const item = todo[next++]!;
        try {
          const r = await this.indexFile(item.rel, (warning) => report.warnings.push({ path: item.rel, warning }));
          if (r === 'added') report.added++;
          else if (r === 'updated') report.updated++;
          else if (r === 'removed') report.removed++;
          else report.unchanged++;
        } catch (e) {
          report.failed.push({ path: item.rel, error: (e as Error).message });
        }
        done++;
        opts.onProgress?.({ done, total: todo.length, path: item.rel });
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    await this.index.ensureFolder('');
    for (const f of folders) await this.index.ensureFolder(f);
    await this.index.pruneFolders(folders);
    await this.index.pruneRemovalLog();
    return report;
  }

  /** Lists regular files and folders under the root; symlinks are followed only to files inside the root. */
  private async walk(): Promise<{ files: { rel: string; stat: fs.Stats }[]; dirs: string[] }> {
    const out: { rel: string; stat: fs.Stats }[] = [];
    const dirs: string[] = [];
    const realRoot = await fs.promises.realpath(this.root);
    const visit = async (relDir: string) => {
      let entries: fs.Dirent[];
      try {
        entries = await fs.promises.readdir(path.join(this.root, relDir), { withFileTypes: true });
      } catch {
        return; // vanished or unreadable folder: skip it, the scan goes on
      }
      for (const e of entries) {
        if (isSkippedName(e.name)) continue; // hidden files and folders (.DS_Store, .git, editors' and our own temp files)
        const rel = relDir ? `${relDir}/${e.name}` : e.name;
        const abs = path.join(this.root, rel);
        if (e.isDirectory()) {
          dirs.push(rel);
          await visit(rel);
        } else if (e.isFile() || e.isSymbolicLink()) {
          try {
            if (e.isSymbolicLink()) {
              const target = await fs.promises.realpath(abs);
              if (!isInside(realRoot, target)) continue;
            }
            const stat = await fs.promises.stat(abs);
            if (stat.isFile()) out.push({ rel, stat });
          } catch {
            /* dangling link or vanished file */
          }
        }
      }
    };
    await visit('');
    return { files: out, dirs };
  }

  /**
   * Indexes one file (relative path); a vanished file is removed from the index. A write through
   * the hub (writes.ts) indexes the file it wrote here too, with its `intent`.
   */
  async indexFile(rel: string, onWarning?: (warning: string) => void, intent?: IndexIntent): Promise<'added' | 'updated' | 'unchanged' | 'removed'> {
    const abs = path.join(this.root, rel);
    const snapshot = path.join(this.blobDir, `.tmp-${randomBytes(8).toString('hex')}`);
    try {
      const before = await fs.promises.stat(abs);
      // A write's own bytes, unless the file is no longer the one written (replaced or changed
      // outside the hub since: the same inode, size and mtime, or it is read like any other).
      const w = intent?.written;
      const written = w && w.hashes.size === before.size && w.file.ino === before.ino && w.file.mtimeMs === before.mtimeMs ? w : null;
      const hashes = written ? written.hashes : await this.snapshotAndHash(abs, before.size, snapshot);
      if (hashes.size !== before.size) throw new Error('the file changed while it was read; it will be indexed on the next scan');
      const source = written ? (written.snapshot ?? this.blobPath(hashes.sha256)) : snapshot;
      const { warnings: _w, ...meta } = await extractMetadata(source, this.renditions.images, path.posix.basename(rel));
      const id = assetIdFor(rel);
      const existing = await this.index.asset(id);
      const blob = hashes.sha256;
      // An explicit save of the same bytes is still a version; a scan's same bytes are not.
      const saved = intent?.replaces !== undefined && existing?.version === intent.replaces;
      const sameContent = existing?.hashes?.sha256 === hashes.sha256 && !saved;
      const version = existing ? (sameContent ? existing.version : existing.version + 1) : 1;
      if (!written) await this.keepBlob(snapshot, blob);
      else if (written.snapshot) await this.keepBlob(written.snapshot, blob);
      if (!sameContent || !this.renditions.has(id, version, 'thumbnail')) {
        // A file whose decode is refused or stopped (a hostile one: a few KB declaring 20000×20000)
        // is still indexed, without renditions; the scan goes on with the next file.
        const r = await this.renditions.generate(id, version, this.blobPath(blob), meta.mimeType);
        if (r.warning) onWarning?.(r.warning);
      }
      const now = this.clock.now();
      const row: AssetRow = {
        id,
        relPath: rel,
        folderPath: parentOf(rel),
        name: path.posix.basename(rel),
        ext: path.extname(rel).slice(1).toLowerCase(),
        size: hashes.size,
        mtimeMs: Math.floor(before.mtimeMs),
        createdMs: Math.floor(before.birthtimeMs || before.ctimeMs),
        mimeType: meta.mimeType,
        kind: meta.kind,
        width: meta.width ?? null,
        height: meta.height ?? null,
        version,
        versionComment: intent && !sameContent ? intent.comment
          : existing && !sameContent ? `Content changed on disk (${new Date(before.mtimeMs).toISOString()})` : (existing?.versionComment ?? 'Original'),
        meta,
        hashes,
        blob,
        indexedAt: now,
      };
      const previous: VersionRow | null = existing && !sameContent
        ? {
          assetId: id, version: existing.version, size: existing.size, mtimeMs: existing.mtimeMs, mimeType: existing.mimeType,
          width: existing.width, height: existing.height, hashes: existing.hashes, meta: existing.meta, blob: existing.blob,
          comment: existing.versionComment ?? 'Original', createdAt: existing.indexedAt,
        }
        : null;
      await this.index.upsertAsset(row, previous);
      return existing ? (sameContent ? 'unchanged' : 'updated') : 'added';
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
        await this.index.removeAsset(rel);
        return 'removed';
      }
      throw e;
    } finally {
      await fs.promises.rm(snapshot, { force: true });
    }
  }

  /**
   * Makes the private snapshot and hashes it. Files up to IN_MEMORY_LIMIT are read ONCE: the
   * buffer is hashed and written out as the snapshot (one read and one write, instead of a copy
   * plus a second full read to hash it). Larger files are copied (a reflink where the file system
   * can) and the copy is hashed in one streaming pass, so memory stays bounded.
   */
  private async snapshotAndHash(abs: string, size: number, snapshot: string): Promise<FileHashes> {
    if (size > IN_MEMORY_LIMIT) {
      await fs.promises.copyFile(abs, snapshot, fs.constants.COPYFILE_FICLONE);
      return hashFile(snapshot);
    }
    const bytes = await fs.promises.readFile(abs);
    const [hashes] = await Promise.all([hashBytes(bytes), fs.promises.writeFile(snapshot, bytes)]);
    return hashes;
  }

  /**
   * The private copy of a write's bytes for the version store, made from its hidden temp file
   * before the file takes its name (nobody else writes the temp file, so the copy is exactly the
   * bytes hashed); null when the store holds these bytes already. A kernel copy (copyFile; a
   * reflink where the file system can), never a pass through JS. Not a hard link: the library's
   * file and the kept version would be one inode, and an editor saving in place outside the hub
   * would change the kept version too (docs/library.md, "Kept versions"). The caller removes the
   * copy if it is not kept.
   */
  async snapshotWritten(temp: string, sha256: string): Promise<string | null> {
    if (fs.existsSync(this.blobPath(sha256))) return null;
    const snapshot = path.join(this.blobDir, `.tmp-${randomBytes(8).toString('hex')}`);
    try {
      await fs.promises.copyFile(temp, snapshot, fs.constants.COPYFILE_FICLONE);
    } catch (e) {
      await fs.promises.rm(snapshot, { force: true });
      throw e;
    }
    return snapshot;
  }

  /** Moves a snapshot into the content-addressed version store (deduplicated by SHA-256). */
  private async keepBlob(snapshot: string, sha256: string): Promise<void> {
    const dest = this.blobPath(sha256);
    if (fs.existsSync(dest)) return;
    await fs.promises.mkdir(path.dirname(dest), { recursive: true });
    await fs.promises.rename(snapshot, dest);
  }
}

export function parentOf(rel: string): string {
  const i = rel.lastIndexOf('/');
  return i < 0 ? '' : rel.slice(0, i);
}

export function isInside(root: string, p: string): boolean {
  const r = path.relative(root, p);
  return r === '' || (!r.startsWith('..') && !path.isAbsolute(r));
}
