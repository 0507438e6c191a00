/**
 * Writing a body to one key: a streamed PutObject when its declared length is small, else a
 * multipart upload whose parts are read from the stream one at a time (memory: one part), aborted
 * on any failure so no part is left stored and nothing becomes visible. A body of unknown length
 * that ends within its first part goes as one PutObject of that part.
 */
import type { Readable } from 'node:stream';
import { integrationError, type HubError } from '../../errors.js';
import type { UploadBody } from '../contract.js';
import type { UpstreamClient } from '../kit/http.js';
import { PROVIDER_ID, type S3Cred } from './api.js';
import { abortMultipartUpload, bareEtag, completeMultipartUpload, copyObject, createMultipartUpload, headIfAny, putObject, uploadPart, uploadPartCopy } from './writes-api.js';

export interface BodyLimits {
  /** Bodies declared at most this long go in one streamed PutObject; longer or undeclared ones in parts. */
  putMaxBytes: number;
  /** Bytes of each part (S3 and Swift take at least 5 MiB for every part but the last). */
  partBytes: number;
  /** Objects at most this large are copied in one CopyObject (S3's limit: 5 GiB); larger ones part by part. */
  copyMaxBytes: number;
  /** Bytes of each part of a copy part by part. */
  copyPartBytes: number;
}

const MIB = 1024 * 1024;
export const DEFAULT_BODY_LIMITS: BodyLimits = { putMaxBytes: 16 * MIB, partBytes: 8 * MIB, copyMaxBytes: 5 * 1024 * MIB, copyPartBytes: 512 * MIB };

/** Parts of one upload at most: Swift's s3api default (max_upload_part_num), below S3's 10,000. */
export const MAX_PARTS = 1000;

/**
 * Consecutive parts of `size` bytes (the last may be shorter) read from a stream into one buffer,
 * reused: memory is one part whatever the body's length, not as many as the collector has not
 * freed yet. So a part must be done with (uploaded) before the next is asked for.
 */
export class PartReader {
  private readonly it: AsyncIterator<unknown>;
  private rest: Buffer | null = null;
  private ended = false;
  private buf: Buffer | null = null;

  constructor(stream: Readable, readonly size: number) {
    this.it = stream[Symbol.asyncIterator]();
  }

  /** The next part (valid until the next call), or null when the stream has ended and every byte was handed out. */
  async next(): Promise<Buffer | null> {
    const part = (this.buf ??= Buffer.allocUnsafe(this.size));
    let n = 0;
    const take = (b: Buffer) => {
      const k = Math.min(b.length, this.size - n);
      b.copy(part, n, 0, k);
      n += k;
      // The remainder is copied out so the part buffer's slice does not keep the whole chunk alive.
      this.rest = k < b.length ? Buffer.from(b.subarray(k)) : null;
    };
    if (this.rest) take(this.rest);
    while (n < this.size && !this.ended) {
      const r = await this.it.next();
      if (r.done) {
        this.ended = true;
        break;
      }
      take(typeof r.value === 'string' ? Buffer.from(r.value) : (r.value as Buffer));
    }
    if (n === 0 && this.ended) return null;
    return n === this.size ? part : part.subarray(0, n);
  }
}

/** What a copy needs to know of its source: its size, and its type and metadata (a copy part by part does not carry them). */
export interface CopySource {
  key: string;
  size: number;
  etag?: string;
  contentType?: string;
  meta: Record<string, string>;
}

/**
 * Copies an object within the bucket: one CopyObject, or above `copyMaxBytes` a multipart upload
 * of UploadPartCopy ranges (aborted on any failure). Only while the source is still `ifMatch`.
 */
export async function copyWhole(http: UpstreamClient, c: S3Cred, from: CopySource, to: string, ifMatch: string | undefined, limits: BodyLimits): Promise<void> {
  /**
   * Swift's s3api compares x-amz-copy-source-if-match with the stored ETag, which for a multipart
   * upload (an SLO) is not the "…-N" one S3 reports: it refuses a copy of unchanged content. On
   * such a refusal the source's head says whether it really changed; if not, the copy goes
   * without the condition (the head was the check).
   */
  let condition = ifMatch;
  const guarded = async <T>(copy: (cond: string | undefined) => Promise<T>): Promise<T> => {
    try {
      return await copy(condition);
    } catch (e) {
      if (!condition || (e as HubError).code !== 'asset-version-conflict') throw e;
      const now = await headIfAny(http, c, from.key);
      if (!now || bareEtag(now.etag) !== bareEtag(condition)) throw e;
      condition = undefined;
      return copy(undefined);
    }
  };
  if (from.size <= limits.copyMaxBytes) return guarded((cond) => copyObject(http, c, from.key, to, { ifMatch: cond }));
  const size = Math.max(limits.copyPartBytes, Math.ceil(from.size / MAX_PARTS));
  const uploadId = await createMultipartUpload(http, c, to, { contentType: from.contentType ?? 'application/octet-stream', meta: from.meta });
  try {
    const etags: string[] = [];
    for (let at = 0; at < from.size; at += size) {
      const range: [number, number] = [at, Math.min(from.size, at + size) - 1];
      etags.push(await guarded((cond) => uploadPartCopy(http, c, to, uploadId, etags.length + 1, from.key, range, cond)));
    }
    await completeMultipartUpload(http, c, to, uploadId, etags, {});
  } catch (e) {
    await abortMultipartUpload(http.detached(), c, to, uploadId).catch(() => undefined);
    throw e;
  }
}

export interface WriteTarget {
  contentType: string;
  meta?: Record<string, string>;
  ifNoneMatch?: boolean;
  ifMatch?: string;
}

/** The part size for a body: the configured one, larger when the declared length needs more than MAX_PARTS parts. */
export function partSizeFor(length: number | null, limits: BodyLimits): number {
  return length === null ? limits.partBytes : Math.max(limits.partBytes, Math.ceil(length / MAX_PARTS));
}

/** Writes `body` to `key`; the answer's ETag when the server gave one. */
export async function writeBody(http: UpstreamClient, c: S3Cred, key: string, body: UploadBody, t: WriteTarget, limits: BodyLimits): Promise<{ etag?: string }> {
  // An empty body goes as a buffer: undici refuses an empty iterable body on a busy connection.
  if (body.length === 0) return putObject(http, c, key, Buffer.alloc(0), { ...t, length: 0 });
  if (body.length !== null && body.length <= limits.putMaxBytes) return putObject(http, c, key, body.stream, { ...t, length: body.length });
  const reader = new PartReader(body.stream, partSizeFor(body.length, limits));
  const first = (await reader.next()) ?? Buffer.alloc(0);
  if (body.length === null && first.length < reader.size) return putObject(http, c, key, first, { ...t, length: first.length });
  const uploadId = await createMultipartUpload(http, c, key, t);
  try {
    const etags: string[] = [];
    for (let part: Buffer | null = first; part; part = await reader.next()) {
      if (etags.length >= MAX_PARTS) throw integrationError('integration-operation-failed', PROVIDER_ID, `the body needs more than ${MAX_PARTS} parts of ${reader.size} bytes; declare its length`);
      etags.push(await uploadPart(http, c, key, uploadId, etags.length + 1, part));
    }
    return await completeMultipartUpload(http, c, key, uploadId, etags, t);
  } catch (e) {
    // Whatever failed (the body stream, a part, the completion), the parts stored so far are
    // freed; if the abort fails too, the bucket's lifecycle rule for incomplete uploads is the
    // last resort (docs/writes.md), and the original error is the one reported.
    // It goes out even when the hub stopped waiting for the call (the client went away).
    await abortMultipartUpload(http.detached(), c, key, uploadId).catch(() => undefined);
    throw e;
  }
}
