/**
 * The file-system steps of the library's writes (writes.ts): an upload's bytes go to a hidden
 * temp file in the destination folder (the same file system, so the final rename is atomic),
 * are fsynced, and only then take their name; a name is taken without ever replacing what is
 * there (a hard link fails with EEXIST, where rename would overwrite). Disk errors become the
 * hub's codes here, in one place.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { integrationError } from '../../errors.js';
import type { StreamHasher } from './hash-lanes.js';
import type { FileHashes } from './hashes.js';
import { WORK_PREFIX } from './scanner.js';

const LIBRARY_ID = 'library';

/** An open file being written. */
export interface WriteHandle {
  write(chunk: Buffer): Promise<void>;
  sync(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Where an upload's bytes are written: the file system, or (tests) one that fails like a full
 * disk at a chosen byte (LibraryOptions.writeFs).
 */
export interface WriteFs {
  /** Creates `file`, which must not exist yet, for writing. */
  create(file: string): Promise<WriteHandle>;
  /** Bytes an unprivileged writer may still put in `dir`'s file system, or null when unknown. */
  freeBytes(dir: string): Promise<number | null>;
}

export const nodeWriteFs: WriteFs = {
  async create(file) {
    const fh = await fs.promises.open(file, 'wx');
    return {
      async write(chunk) {
        // A write may take fewer bytes than given; the rest follows.
        for (let off = 0; off < chunk.length;) off += (await fh.write(chunk, off, chunk.length - off)).bytesWritten;
      },
      sync: () => fh.sync(),
      close: () => fh.close(),
    };
  },
  async freeBytes(dir) {
    try {
      const s = await fs.promises.statfs(dir);
      return s.bavail * s.bsize;
    } catch {
      return null;
    }
  },
};

/**
 * Refuses (507) a body whose declared length the disk cannot hold, before a byte is read: a 2 GiB
 * upload onto a nearly full disk fails at once rather than after the transfer. A body without a
 * declared length, or a file system that does not say, is written and fails on ENOSPC if it must.
 */
export async function requireRoom(wfs: WriteFs, dir: string, length: number | null): Promise<void> {
  if (length === null) return;
  const free = await wfs.freeBytes(dir);
  if (free !== null && length > free) {
    throw integrationError('integration-storage-full', LIBRARY_ID, `the upload declares ${length} bytes; the library's disk has ${free} free`);
  }
}

/**
 * ENOSPC/EDQUOT → 507 integration-storage-full, EACCES/EPERM/EROFS → 403 integration-forbidden,
 * ENOENT → 404 integration-not-found (in a write, the folder or file was removed meanwhile: a folder
 * deleted while an upload into it ran); anything else unchanged.
 */
export function diskError(e: unknown, what: string): unknown {
  const code = (e as NodeJS.ErrnoException | null)?.code;
  if (code === 'ENOENT') return integrationError('integration-not-found', LIBRARY_ID, `${what}: the folder or file is no longer in the library`, { cause: e });
  if (code === 'ENOSPC' || code === 'EDQUOT') return integrationError('integration-storage-full', LIBRARY_ID, `${what}: the library's disk is full (${code})`, { cause: e });
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') return integrationError('integration-forbidden', LIBRARY_ID, `${what}: the hub may not write there (${code})`, { cause: e });
  return e;
}

/** A hidden work name in `dir` (scanner.ts WORK_PREFIX: never scanned). */
export function workName(dir: string, kind: 'upload' | 'deleting'): string {
  return path.join(dir, `${WORK_PREFIX}${kind}-${randomBytes(9).toString('base64url')}`);
}

/** Bytes gathered before one write (and one hash update): a socket hands over ~64 KiB at a time. */
export const WRITE_BATCH = 1024 * 1024;

/**
 * Streams the body into a new hidden file in `dir` and fsyncs it; answers its path, and, with a
 * `hasher` (hash-lanes.ts), the digests of the bytes written, computed in the same pass so the
 * indexing need not read the file again. If the body stream errors (the client went away, the
 * hub's byte count stopped it) or the disk does, the file is removed and the error thrown:
 * nothing is left behind.
 *
 * Chunks are gathered into WRITE_BATCH batches (fewer syscalls and thread-pool round trips); one
 * batch is on its way to the disk while the next is read and hashed, and the next batch is
 * written only once the one before is: back-pressure on the client (and the hasher's buffer()
 * waits while the hashing lags), so an upload holds a bounded number of batches.
 */
export async function writeBody(wfs: WriteFs, dir: string, stream: AsyncIterable<unknown>, hasher?: StreamHasher): Promise<{ file: string; bytes: number; hashes: FileHashes | null }> {
  const file = workName(dir, 'upload');
  let handle: WriteHandle | null = null;
  let bytes = 0;
  let writing: Promise<void> = Promise.resolve();
  try {
    const h0 = await wfs.create(file);
    handle = h0;
    let batch: Buffer[] = [];
    let batched = 0;
    const flush = async () => {
      // From the hasher: shared memory the hashing lanes read without a copy of their own.
      const out = hasher ? await hasher.buffer(batched) : Buffer.allocUnsafe(batched);
      let at = 0;
      for (const b of batch) at += b.copy(out, at);
      batch = [];
      batched = 0;
      hasher?.update(out); // the lanes start on it while the previous batch is still being written
      await writing;
      writing = h0.write(out).finally(() => hasher?.release(out));
      writing.catch(() => undefined); // awaited below; not an unhandled rejection meanwhile
    };
    for await (const chunk of stream) {
      const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
      batch.push(b);
      batched += b.length;
      bytes += b.length;
      if (batched >= WRITE_BATCH) await flush();
    }
    if (batched > 0) await flush();
    await writing;
    // The lanes finish the last batch while the disk makes the file durable.
    const [hashes] = await Promise.all([hasher ? hasher.result() : null, h0.sync()]);
    handle = null;
    await h0.close();
    return { file, bytes, hashes };
  } catch (e) {
    hasher?.abort();
    await writing.catch(() => undefined);
    await handle?.close().catch(() => undefined);
    await fs.promises.rm(file, { force: true }).catch(() => undefined);
    throw diskError(e, 'writing the upload');
  }
}

/**
 * Gives `from` the name `to` unless `to` exists (false then, `from` untouched): a hard link,
 * atomic and never replacing, then the old name removed. Where the file system has no hard links
 * the check and the rename are two steps.
 */
export async function placeNoClobber(from: string, to: string): Promise<boolean> {
  try {
    await fs.promises.link(from, to);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'EMLINK') throw e;
    if (await exists(to)) return false;
    await fs.promises.rename(from, to);
    return true;
  }
  await fs.promises.unlink(from);
  return true;
}

export async function exists(p: string): Promise<boolean> {
  try {
    await fs.promises.lstat(p);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
}

/** Makes a rename or a new name in `dir` durable (the folder's own entry list); a platform without directory fsync is let be. */
export async function syncDir(dir: string): Promise<void> {
  let fh: fs.promises.FileHandle | null = null;
  try {
    fh = await fs.promises.open(dir, 'r');
    await fh.sync();
  } catch {
    /* EISDIR/EINVAL/EPERM where folders cannot be fsynced: the rename itself is done */
  } finally {
    await fh?.close().catch(() => undefined);
  }
}
