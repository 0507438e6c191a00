/**
 * The data store @tus/server drives (its DataStore): the upload's state lives in the hub's stores
 * (UploadStore: SQLite, or PostgreSQL in cluster mode, so any node continues an upload) and its
 * bytes in a part file (./part-files.ts). What a tus call needs to know about the request that
 * @tus/server does not pass to a data store (who asks, the Upload-Checksum) comes from the call's
 * context (./context.ts).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Readable } from 'node:stream';
import { DataStore, ERRORS, Upload } from '@tus/server';
import type { Clock } from '../../clock.js';
import { hubError } from '../../errors.js';
import { SNIFF_BYTES } from '../upload-body.js';
import type { UploadRecord, UploadStore } from '../../stores/types.js';
import { currentCall } from './context.js';
import { partName, type PartFiles } from './part-files.js';

/** tus's Tus-Extension list. */
export const TUS_EXTENSIONS = ['creation', 'creation-with-upload', 'termination', 'expiration', 'checksum'];

/** Upload-Checksum algorithms (tus names → node:crypto names). */
export const CHECKSUM_ALGORITHMS: Record<string, string> = { sha1: 'sha1', sha256: 'sha256' };

/** tus's status for a chunk whose checksum does not match (checksum extension). */
export const CHECKSUM_MISMATCH = 460;

export interface TusStoreDeps {
  records: UploadStore;
  parts: PartFiles;
  clock: Clock;
  expiryMs: number;
  /**
   * Called once the upload's head is in (its first SNIFF_BYTES, or all of a shorter upload), before
   * the offset moves past it: throws when those bytes cannot be what the upload becomes, so a
   * large upload of the wrong type is refused at its first chunk rather than after its last.
   */
  checkHead(record: UploadRecord, head: Buffer): Promise<void>;
}

export class HubTusStore extends DataStore {
  constructor(private readonly deps: TusStoreDeps) {
    super();
    this.extensions = TUS_EXTENSIONS;
  }

  /**
   * Expiry is the hub's, on the hub's clock (checked before @tus/server runs, see ./uploads.ts):
   * @tus/server's own check reads Date.now(), which a test's clock and a node's skew do not move.
   * Tus-Extension still lists `expiration` (from `extensions`).
   */
  override hasExtension(extension: string): boolean {
    return extension !== 'expiration' && super.hasExtension(extension);
  }

  override async create(upload: Upload): Promise<Upload> {
    const call = currentCall();
    const now = this.deps.clock.now();
    const location = partName(upload.id);
    await this.deps.parts.create(location);
    const metadata: Record<string, string> = {};
    for (const [k, v] of Object.entries(upload.metadata ?? {})) metadata[k] = v ?? '';
    const record: UploadRecord = {
      id: upload.id, partnerId: call.dam.partnerId, userId: call.dam.userId, providerId: call.dam.providerId,
      length: upload.size ?? null, offset: 0, metadata, location, createdAt: now, expiresAt: now + this.deps.expiryMs, result: null,
    };
    try {
      await this.deps.records.create(record);
    } catch (e) {
      await this.deps.parts.remove(location);
      throw e;
    }
    call.record = record;
    upload.creation_date = new Date(now).toISOString();
    return upload;
  }

  override async getUpload(id: string): Promise<Upload> {
    const r = await this.deps.records.get(id);
    if (!r) throw ERRORS.FILE_NOT_FOUND;
    return new Upload({
      id, size: r.length ?? undefined, offset: r.offset, creation_date: new Date(r.createdAt).toISOString(),
      metadata: Object.keys(r.metadata).length ? r.metadata : undefined,
    });
  }

  /**
   * One PATCH (or the body of a creation-with-upload): written at the recorded offset, flushed,
   * checked against Upload-Checksum, and only then the offset advances (compare-and-set, so of
   * two requests racing from the same offset on different nodes one wins; the lock of ./locker.ts
   * normally keeps them apart). A chunk whose checksum fails is cut off again: 460.
   */
  override async write(stream: Readable, id: string, offset: number): Promise<number> {
    const r = await this.deps.records.get(id);
    if (!r) throw ERRORS.FILE_NOT_FOUND;
    if (r.offset !== offset) throw ERRORS.INVALID_OFFSET;
    // Finished (its part file gone): a repeated final PATCH, empty, which gets the kept answer.
    if (r.result) return offset;
    const checksum = currentCall().checksum;
    const hash = checksum ? createHash(CHECKSUM_ALGORITHMS[checksum.algorithm]!) : null;
    let n: number;
    try {
      n = await this.deps.parts.write(r.location, offset, stream, hash);
    } catch (e) {
      // The part file is gone (a data dir restored from a backup, which leaves parts out): the
      // upload cannot go on; it is removed and answered as expired.
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
        await this.deps.records.remove(id);
        throw hubError('upload-expired', 'the upload\'s parts are gone (was the data directory restored?); start it again');
      }
      // A client that disconnects ends the stream without an error (@tus/server ends it when the
      // request aborts), so its bytes count and tus resumes after them; an error here (more bytes
      // than the upload's length, a failing disk) leaves the upload where it was.
      await this.deps.parts.truncate(r.location, offset).catch(() => undefined);
      throw e;
    }
    if (checksum) {
      const digest = hash!.digest();
      if (digest.length !== checksum.digest.length || !timingSafeEqual(digest, checksum.digest)) {
        await this.deps.parts.truncate(r.location, offset);
        throw hubError('hub-validation-error', `Upload-Checksum: the ${checksum.algorithm} of the ${n} bytes received does not match; the chunk was discarded`, { status: CHECKSUM_MISMATCH, message: 'The uploaded chunk was damaged in transit; send it again.' });
      }
    }
    if (n === 0) return offset;
    const headEnd = Math.min(SNIFF_BYTES, r.length ?? SNIFF_BYTES);
    if (offset < headEnd && offset + n >= headEnd) {
      try {
        await this.deps.checkHead(r, await this.deps.parts.head(r.location, headEnd));
      } catch (e) {
        await this.deps.parts.truncate(r.location, offset);
        throw e;
      }
    }
    if (!(await this.deps.records.advance(id, offset, offset + n))) throw ERRORS.INVALID_OFFSET;
    return offset + n;
  }

  /** Termination: the part file, then the record (a record without its part is what the sweep would clean). */
  override async remove(id: string): Promise<void> {
    const r = await this.deps.records.get(id);
    if (!r) throw ERRORS.FILE_NOT_FOUND;
    await this.deps.parts.remove(r.location);
    await this.deps.records.remove(id);
  }

  override getExpiration(): number {
    return this.deps.expiryMs;
  }
}
