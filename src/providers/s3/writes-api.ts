/**
 * The S3 write calls: PutObject (streamed or from a buffer), the multipart upload calls, CopyObject,
 * DeleteObject, DeleteObjects, and a probe for conditional writes. Signed as every read of api.ts
 * (@smithy/signature-v4, UNSIGNED-PAYLOAD: a streamed body's hash is not known before its end) and
 * sent through the kit's upstream client. Answers that mean something to the hub's write engine are
 * mapped here: a failed precondition (412) to asset-exists or asset-version-conflict, a full quota
 * to integration-storage-full; the rest go through the kit's one status table.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { hubError, integrationError, type HubError } from '../../errors.js';
import { discard, type UpstreamClient } from '../kit/http.js';
import { statusError } from '../kit/upstream-errors.js';
import { enc, parseXml, PROVIDER_ID, s3ErrorMessage, signed, type S3Cred } from './api.js';

/** What a 412 means for the call that got it: the name was taken (If-None-Match), or the content changed (If-Match). */
export type Precondition = 'exists' | 'changed';

/** Statuses a write call reads itself (precondition, quota, and the 400s S3 gives both). */
const WRITE_ACCEPT = [400, 412, 413, 501, 507];

/** S3 error codes (and Swift's, MinIO's) that mean "no room left", whatever the status they come with. */
const FULL_CODES = new Set(['QuotaExceeded', 'InsufficientStorage', 'XMinioStorageFull', 'XMinioAdminBucketQuotaExceeded', 'XMinioAdminAccountQuotaExceeded']);

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** The S3 <Error> of an answer body: its code and message, or nulls. */
function s3Error(text: string): { code: string | null; message: string } {
  const m = /<Code>([^<]*)<\/Code>/.exec(text);
  return { code: m ? m[1]! : null, message: s3ErrorMessage(text, 'application/xml') };
}

/**
 * Swift answers a container quota with 400 EntityTooLarge "Upload exceeds quota." (its
 * container_quotas/account_quotas middleware says 413, s3api turns it into EntityTooLarge); MinIO
 * with its own codes; a plain 507 is Insufficient Storage. EntityTooLarge without "quota" is the
 * 5 GiB single-PUT limit, not a full store.
 */
export function isStorageFull(status: number, code: string | null, message: string): boolean {
  if (status === 507) return true;
  if (code && FULL_CODES.has(code)) return true;
  return (status === 413 || code === 'EntityTooLarge') && /quota/i.test(message);
}

/** The error for a write answer outside 2xx. */
export function writeFailure(a: Answer, what: string, pre?: Precondition): HubError {
  const { code, message } = s3Error(a.text);
  if (a.status === 412 && pre === 'exists') return hubError('asset-exists', `${what}: the name is taken at the bucket (412 ${message})`);
  if (a.status === 412) return hubError('asset-version-conflict', `${what}: the object changed at the bucket since it was read (412 ${message})`);
  if (isStorageFull(a.status, code, message)) return integrationError('integration-storage-full', PROVIDER_ID, `${what} answered ${a.status}: ${message}`);
  return statusError(PROVIDER_ID, what, a.status, message);
}

async function call(http: UpstreamClient, req: Parameters<UpstreamClient['text']>[0], pre?: Precondition): Promise<Answer> {
  const a = await http.text({ ...req, accept: [...WRITE_ACCEPT, ...(req.accept ?? [])] });
  if (a.status >= 300 && !req.accept?.includes(a.status)) throw writeFailure(a, req.what ?? req.method, pre);
  // CopyObject and CompleteMultipartUpload may fail after their 200 (the body is then an <Error>).
  if (/<Error>/.test(a.text.slice(0, 512)) && !/<(CompleteMultipartUploadResult|CopyObjectResult|CopyPartResult)\b/.test(a.text)) {
    throw writeFailure({ ...a, status: /InternalError|SlowDown/.test(a.text) ? 503 : 400 }, req.what ?? req.method, pre);
  }
  return a;
}

/** An ETag compared as S3 means it (quotes and a weak prefix aside). */
export const bareEtag = (etag: string | undefined | null) => (etag ?? '').replace(/^W\//, '').replace(/"/g, '');

const header = (a: Answer, name: string): string | undefined => {
  const v = a.headers[name];
  return typeof v === 'string' ? v : undefined;
};

export interface PutOptions {
  contentType: string;
  /** The exact length of the body. */
  length: number;
  /** User metadata (x-amz-meta-*), kept across a new version. */
  meta?: Record<string, string>;
  /** Only if no object has the key (If-None-Match: *); the server must support conditional writes. */
  ifNoneMatch?: boolean;
  /** Only if the object's ETag is still this one (If-Match). */
  ifMatch?: string;
}

function putHeaders(o: { contentType: string; meta?: Record<string, string> }): Record<string, string> {
  const h: Record<string, string> = { 'content-type': o.contentType };
  for (const [k, v] of Object.entries(o.meta ?? {})) h[`x-amz-meta-${k}`] = v;
  return h;
}

function conditions(o: { ifNoneMatch?: boolean; ifMatch?: string }): { headers: Record<string, string>; pre?: Precondition } {
  if (o.ifMatch) return { headers: { 'if-match': o.ifMatch }, pre: 'changed' };
  if (o.ifNoneMatch) return { headers: { 'if-none-match': '*' }, pre: 'exists' };
  return { headers: {} };
}

/** PutObject; a stream body is sent as it is read (never repeated), a buffer may be. */
export async function putObject(http: UpstreamClient, c: S3Cred, key: string, body: Readable | Buffer, o: PutOptions): Promise<{ etag?: string }> {
  const cond = conditions(o);
  const { url, headers } = await signed(c, 'PUT', key, {}, { ...putHeaders(o), 'content-length': String(o.length), ...cond.headers });
  const a = await call(http, { method: 'PUT', url, headers, body, idempotent: Buffer.isBuffer(body), what: `PutObject ${c.bucket}/${key}` }, cond.pre);
  return { etag: header(a, 'etag') };
}

export async function createMultipartUpload(http: UpstreamClient, c: S3Cred, key: string, o: { contentType: string; meta?: Record<string, string> }): Promise<string> {
  const what = `CreateMultipartUpload ${c.bucket}/${key}`;
  const { url, headers } = await signed(c, 'POST', key, { uploads: '' }, putHeaders(o));
  const a = await call(http, { method: 'POST', url, headers, what });
  const id = parseXml(a.text, String(a.headers['content-type'] ?? ''), what).InitiateMultipartUploadResult?.UploadId;
  if (typeof id !== 'string' || !id) throw statusError(PROVIDER_ID, what, 502, 'the answer carries no UploadId');
  return id;
}

/** One part (a buffer: a failed attempt is repeated by the kit, the part is the same bytes). */
export async function uploadPart(http: UpstreamClient, c: S3Cred, key: string, uploadId: string, n: number, part: Buffer): Promise<string> {
  const { url, headers } = await signed(c, 'PUT', key, { partNumber: String(n), uploadId }, { 'content-length': String(part.length) });
  const a = await call(http, { method: 'PUT', url, headers, body: part, idempotent: true, what: `UploadPart ${n} of ${c.bucket}/${key}` });
  const etag = header(a, 'etag');
  if (!etag) throw statusError(PROVIDER_ID, `UploadPart ${n} of ${c.bucket}/${key}`, 502, 'the answer carries no ETag');
  return etag;
}

const xmlText = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

export async function completeMultipartUpload(http: UpstreamClient, c: S3Cred, key: string, uploadId: string, parts: string[], o: { ifNoneMatch?: boolean; ifMatch?: string }): Promise<{ etag?: string }> {
  const cond = conditions(o);
  const xml = `<CompleteMultipartUpload>${parts.map((etag, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${xmlText(etag)}</ETag></Part>`).join('')}</CompleteMultipartUpload>`;
  const body = Buffer.from(xml);
  const { url, headers } = await signed(c, 'POST', key, { uploadId }, { 'content-type': 'application/xml', 'content-length': String(body.length), ...cond.headers });
  const a = await call(http, { method: 'POST', url, headers, body, what: `CompleteMultipartUpload ${c.bucket}/${key}` }, cond.pre);
  const etag = /<ETag>([^<]*)<\/ETag>/.exec(a.text)?.[1]?.replace(/&quot;/g, '"');
  return { etag };
}

/** Ends an unfinished multipart upload and frees its parts; an upload already gone (404) is fine. */
export async function abortMultipartUpload(http: UpstreamClient, c: S3Cred, key: string, uploadId: string): Promise<void> {
  const { url, headers } = await signed(c, 'DELETE', key, { uploadId });
  await call(http, { method: 'DELETE', url, headers, idempotent: true, accept: [404], what: `AbortMultipartUpload ${c.bucket}/${key}` });
}

/** CopyObject within the bucket, metadata and type kept; `ifMatch`: only if the source is still that content. */
export async function copyObject(http: UpstreamClient, c: S3Cred, from: string, to: string, o: { ifMatch?: string } = {}): Promise<void> {
  const extra: Record<string, string> = { 'x-amz-copy-source': copySource(c, from), 'x-amz-metadata-directive': 'COPY' };
  if (o.ifMatch) extra['x-amz-copy-source-if-match'] = o.ifMatch;
  const { url, headers } = await signed(c, 'PUT', to, {}, extra);
  await call(http, { method: 'PUT', url, headers, idempotent: true, what: `CopyObject ${c.bucket}/${from} to ${to}` }, 'changed');
}

const copySource = (c: S3Cred, from: string) => `/${enc(c.bucket)}/${from.split('/').map(enc).join('/')}`;

/**
 * UploadPartCopy: bytes `range` ([first, last]) of `from` as part `n`, only if `from` is still
 * the content `ifMatch` names. The part's ETag.
 */
export async function uploadPartCopy(http: UpstreamClient, c: S3Cred, key: string, uploadId: string, n: number, from: string, range: [number, number], ifMatch: string | undefined): Promise<string> {
  const extra: Record<string, string> = { 'x-amz-copy-source': copySource(c, from), 'x-amz-copy-source-range': `bytes=${range[0]}-${range[1]}` };
  if (ifMatch) extra['x-amz-copy-source-if-match'] = ifMatch;
  const what = `UploadPartCopy ${n} of ${c.bucket}/${key} from ${from}`;
  const { url, headers } = await signed(c, 'PUT', key, { partNumber: String(n), uploadId }, extra);
  const a = await call(http, { method: 'PUT', url, headers, idempotent: true, what }, 'changed');
  const etag = /<ETag>([^<]*)<\/ETag>/.exec(a.text)?.[1]?.replace(/&quot;/g, '"');
  if (!etag) throw statusError(PROVIDER_ID, what, 502, 'the answer carries no ETag');
  return etag;
}

export async function deleteObject(http: UpstreamClient, c: S3Cred, key: string): Promise<void> {
  const { url, headers } = await signed(c, 'DELETE', key, {});
  await call(http, { method: 'DELETE', url, headers, idempotent: true, what: `DeleteObject ${c.bucket}/${key}` });
}

/** Most keys one DeleteObjects request takes (S3's limit, and Swift's max_multi_delete_objects default). */
export const DELETE_BATCH = 1000;

/** DeleteObjects (quiet): the keys the server could not delete, with its reason. */
export async function deleteObjects(http: UpstreamClient, c: S3Cred, keys: string[]): Promise<{ key: string; reason: string }[]> {
  if (keys.length === 0) return [];
  if (keys.length > DELETE_BATCH) throw new Error(`deleteObjects: at most ${DELETE_BATCH} keys at once`);
  const what = `DeleteObjects ${c.bucket} (${keys.length} keys)`;
  const body = Buffer.from(`<Delete><Quiet>true</Quiet>${keys.map((k) => `<Object><Key>${xmlText(k)}</Key></Object>`).join('')}</Delete>`);
  // S3 (and Swift) refuse DeleteObjects without a checksum of the body.
  const { url, headers } = await signed(c, 'POST', null, { delete: '' }, {
    'content-type': 'application/xml', 'content-length': String(body.length), 'content-md5': createHash('md5').update(body).digest('base64'),
  });
  const a = await call(http, { method: 'POST', url, headers, body, idempotent: true, what });
  const res = parseXml(a.text, String(a.headers['content-type'] ?? ''), what).DeleteResult ?? {};
  const errors = res.Error === undefined ? [] : Array.isArray(res.Error) ? res.Error : [res.Error];
  return errors.map((e: any) => ({ key: String(e?.Key ?? ''), reason: [e?.Code, e?.Message].filter(Boolean).join(': ') }));
}

/**
 * Whether the server honours conditional PUTs (If-Match / If-None-Match), asked once without a
 * body that could be lost: a PUT of nothing to a fresh random key, only if it matches an ETag no
 * object has. A server that checks answers 404 or 412 and writes nothing (AWS S3, MinIO, Ceph);
 * one that refuses the header says 501 NotImplemented (OpenStack Swift's s3api: "Conditional
 * object PUTs are not supported"); one that ignores it stores the empty probe, which is deleted
 * again. Null: the answer says neither (no right to write there, a failure), ask another time.
 */
export async function probeConditionalWrites(http: UpstreamClient, c: S3Cred, dir: string): Promise<boolean | null> {
  // In the folder about to be written: an account whose rights end at a prefix may write there.
  const key = `${dir}.damhub-conditional-probe-${randomUUID()}`;
  const { url, headers } = await signed(c, 'PUT', key, {}, { 'content-length': '0', 'if-match': '"00000000000000000000000000000000"' });
  let r;
  try {
    r = await http.send({ method: 'PUT', url, headers, body: Buffer.alloc(0), accept: [400, 403, 404, 412, 501], what: `PutObject ${c.bucket}/${key} (conditional write probe)` });
  } catch {
    return null;
  }
  discard(r.body);
  if (r.status === 404 || r.status === 412) return true;
  if (r.status === 501 || r.status === 400) return false;
  if (r.status >= 200 && r.status < 300) {
    await deleteObject(http, c, key).catch(() => undefined);
    return false;
  }
  return null;
}

/** The object's head when it exists, null when not (404): for the name checks of the writes. */
export async function headIfAny(http: UpstreamClient, c: S3Cred, key: string): Promise<{ etag?: string; size: number } | null> {
  const { url, headers } = await signed(c, 'HEAD', key, {});
  const r = await http.send({ method: 'HEAD', url, headers, accept: [404], what: `HeadObject ${c.bucket}/${key}` });
  discard(r.body);
  if (r.status === 404) return null;
  const etag = r.headers.etag;
  return { etag: typeof etag === 'string' ? etag : undefined, size: Number(r.headers['content-length'] ?? 0) };
}
