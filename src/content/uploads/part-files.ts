/**
 * The bytes of unfinished resumable uploads: one part file per upload under the upload directory
 * (DAMHUB_UPLOAD_DIR; in cluster mode a directory every node shares, like the library folder, so
 * any node continues an upload another began). A PATCH's bytes are written at the offset the
 * stores recorded and flushed to disk (fsync) before the offset advances there, so a node that
 * dies mid-request never leaves a record claiming bytes the file lacks.
 */
import type { Hash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';

/** The part file's name of an upload: its id, which the hub made (hex), so no path can escape the directory. */
export function partName(id: string): string {
  if (!/^[0-9a-f]{16,64}$/.test(id)) throw new Error(`not an upload id: ${id}`);
  return `${id}.part`;
}

export class PartFiles {
  #ready: Promise<void> | null = null;

  constructor(readonly dir: string) {}

  pathOf(name: string): string {
    return path.join(this.dir, path.basename(name));
  }

  /** Created 0700 on first use: the parts are users' files in transit. */
  #ensureDir(): Promise<void> {
    this.#ready ??= fs.promises.mkdir(this.dir, { recursive: true, mode: 0o700 }).then(() => undefined, (e) => {
      this.#ready = null;
      throw e;
    });
    return this.#ready;
  }

  async create(name: string): Promise<void> {
    await this.#ensureDir();
    await (await fs.promises.open(this.pathOf(name), 'wx', 0o600)).close();
  }

  /**
   * Writes `source` at `offset` and fsyncs; returns how many bytes arrived. Each chunk also goes
   * into `hash` (the Upload-Checksum of the request).
   */
  async write(name: string, offset: number, source: Readable, hash: Hash | null): Promise<number> {
    const fh = await fs.promises.open(this.pathOf(name), 'r+');
    let written = 0;
    try {
      for await (const chunk of source) {
        const buf = chunk as Buffer;
        hash?.update(buf);
        let done = 0;
        while (done < buf.length) {
          const { bytesWritten } = await fh.write(buf, done, buf.length - done, offset + written + done);
          done += bytesWritten;
        }
        written += buf.length;
      }
      await fh.sync();
      return written;
    } finally {
      await fh.close();
    }
  }

  /** Drops bytes past `size` (a chunk whose checksum failed, or bytes past the recorded offset). */
  async truncate(name: string, size: number): Promise<void> {
    await fs.promises.truncate(this.pathOf(name), size);
  }

  async size(name: string): Promise<number | null> {
    try {
      return (await fs.promises.stat(this.pathOf(name))).size;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
  }

  /** The first `length` bytes, read whole (the upload's head, a few KiB). */
  async head(name: string, length: number): Promise<Buffer> {
    const fh = await fs.promises.open(this.pathOf(name), 'r');
    try {
      const buf = Buffer.alloc(length);
      const { bytesRead } = await fh.read(buf, 0, length, 0);
      return buf.subarray(0, bytesRead);
    } finally {
      await fh.close();
    }
  }

  /** The first `length` bytes (bytes past them, from a write whose offset did not advance, are not the upload's). */
  read(name: string, length: number): Readable {
    return length === 0 ? Readable.from([]) : fs.createReadStream(this.pathOf(name), { start: 0, end: length - 1 });
  }

  async remove(name: string): Promise<void> {
    await fs.promises.rm(this.pathOf(name), { force: true });
  }
}
