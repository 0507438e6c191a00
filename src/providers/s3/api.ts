/**
 * The S3 calls (path-style, any S3-compatible endpoint): ListObjectsV2, HeadObject, a ranged
 * GetObject, and presigned GET URLs. Requests are signed with AWS Signature V4 (@smithy/signature-v4,
 * the SDK's own signer) and sent through the kit's upstream client, so timeouts, retries, the
 * circuit breaker and the error mapping are the same as every connector's.
 */
import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import { XMLParser } from 'fast-xml-parser';
import { discard, type UpstreamClient, type UpstreamResponse } from '../kit/http.js';
import { malformed } from '../kit/upstream-errors.js';

export const PROVIDER_ID = 's3';
/**
 * The payload hash of every request this connector signs: uploads are streamed (their hash is not
 * known before the last byte), and presigned URLs cannot know one.
 */
export const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';

export interface S3Cred extends Record<string, unknown> {
  /** Endpoint origin, e.g. https://s3.eu-central-1.amazonaws.com or a MinIO URL. */
  endpoint: string;
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
}

export interface S3Object {
  key: string;
  size: number;
  etag?: string;
  modified?: number;
}

export interface ListPage {
  objects: S3Object[];
  prefixes: string[];
  next: string | null;
}

/** node:crypto behind the Checksum interface the signer wants. */
type SourceData = string | ArrayBuffer | ArrayBufferView;
const bytes = (d: SourceData): Buffer | string =>
  typeof d === 'string' ? d : ArrayBuffer.isView(d) ? Buffer.from(d.buffer, d.byteOffset, d.byteLength) : Buffer.from(d);

class NodeSha256 {
  private h: Hash | Hmac;
  private readonly secret?: Buffer | string;
  constructor(secret?: SourceData) {
    this.secret = secret === undefined ? undefined : bytes(secret);
    this.h = this.secret ? createHmac('sha256', this.secret) : createHash('sha256');
  }
  update(data: SourceData): void {
    this.h.update(bytes(data));
  }
  async digest(): Promise<Uint8Array> {
    return this.h.digest();
  }
  reset(): void {
    this.h = this.secret ? createHmac('sha256', this.secret) : createHash('sha256');
  }
}

const parser = new XMLParser({
  ignoreAttributes: true,
  removeNSPrefix: true,
  parseTagValue: false,
  isArray: (name) => name === 'Contents' || name === 'CommonPrefixes' || name === 'Version' || name === 'DeleteMarker',
});

function signer(c: S3Cred): SignatureV4 {
  return new SignatureV4({
    service: 's3', region: c.region, sha256: NodeSha256,
    credentials: { accessKeyId: c.accessKeyId, secretAccessKey: c.secretAccessKey },
    // S3 signs the path as sent (keys are encoded once, not twice).
    uriEscapePath: false, applyChecksum: true,
  });
}

export const enc = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`);

export function objectPath(c: S3Cred, key: string | null): string {
  const base = new URL(c.endpoint).pathname.replace(/\/+$/, '');
  return `${base}/${enc(c.bucket)}${key === null ? '' : `/${key.split('/').map(enc).join('/')}`}`;
}

export async function signed(c: S3Cred, method: string, key: string | null, query: Record<string, string>, headers: Record<string, string> = {}): Promise<{ url: URL; headers: Record<string, string> }> {
  const ep = new URL(c.endpoint);
  const path = objectPath(c, key);
  const req = await signer(c).sign({
    method, protocol: ep.protocol, hostname: ep.hostname, port: ep.port ? Number(ep.port) : undefined, path, query,
    headers: { host: ep.host, 'x-amz-content-sha256': UNSIGNED_PAYLOAD, ...headers },
  });
  const qs = Object.entries(query).map(([k, v]) => `${enc(k)}=${enc(v)}`).join('&');
  return { url: new URL(`${ep.origin}${path}${qs ? `?${qs}` : ''}`), headers: req.headers as Record<string, string> };
}

export async function listObjects(http: UpstreamClient, c: S3Cred, o: { prefix: string; delimiter: boolean; maxKeys: number; token: string | null; startAfter?: string }): Promise<ListPage> {
  const query: Record<string, string> = { 'list-type': '2', 'max-keys': String(o.maxKeys), prefix: o.prefix };
  if (o.delimiter) query.delimiter = '/';
  if (o.startAfter) query['start-after'] = o.startAfter;
  if (o.token) query['continuation-token'] = o.token;
  const { url, headers } = await signed(c, 'GET', null, query);
  const what = `ListObjectsV2 ${c.bucket}/${o.prefix}`;
  const r = await http.text({ method: 'GET', url, headers, what });
  const doc = parseXml(r.text, String(r.headers['content-type'] ?? ''), what);
  const res = doc.ListBucketResult;
  if (!res || typeof res !== 'object') throw malformed(PROVIDER_ID, what, 'the answer has no ListBucketResult', r.text);
  const truncated = res.IsTruncated === 'true';
  const next = typeof res.NextContinuationToken === 'string' && res.NextContinuationToken ? res.NextContinuationToken : null;
  if (truncated && !next) throw malformed(PROVIDER_ID, what, 'the listing is truncated but carries no NextContinuationToken', r.text);
  return {
    objects: (res.Contents ?? []).filter((x: any) => typeof x?.Key === 'string').map((x: any) => ({
      key: x.Key, size: Number(x.Size ?? 0), etag: typeof x.ETag === 'string' ? x.ETag : undefined, modified: dateOf(x.LastModified),
    })),
    prefixes: (res.CommonPrefixes ?? []).map((p: any) => p?.Prefix).filter((p: unknown): p is string => typeof p === 'string'),
    next: truncated ? next : null,
  };
}

export interface Head {
  size: number;
  contentType?: string;
  etag?: string;
  modified?: number;
  meta: Record<string, string>;
}

export async function headObject(http: UpstreamClient, c: S3Cred, key: string): Promise<Head> {
  const { url, headers } = await signed(c, 'HEAD', key, {});
  const r = await http.send({ method: 'HEAD', url, headers, what: `HeadObject ${c.bucket}/${key}` });
  discard(r.body);
  const h = r.headers;
  const meta: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (k.startsWith('x-amz-meta-') && typeof v === 'string') meta[k.slice(11)] = v;
  return {
    size: Number(h['content-length'] ?? 0),
    contentType: typeof h['content-type'] === 'string' ? h['content-type'] : undefined,
    etag: typeof h.etag === 'string' ? h.etag : undefined,
    modified: dateOf(h['last-modified']),
    meta,
  };
}

/** GetObject as a stream (the thumbnail and head reads of the kit), Range and If-None-Match passed on. */
export async function getObject(http: UpstreamClient, c: S3Cred, key: string, range: string | undefined, ifNoneMatch: string | undefined): Promise<UpstreamResponse> {
  const extra: Record<string, string> = {};
  if (range) extra.range = range;
  if (ifNoneMatch) extra['if-none-match'] = ifNoneMatch;
  const { url, headers } = await signed(c, 'GET', key, {}, extra);
  return http.send({ method: 'GET', url, headers, accept: [206, 304], what: `GetObject ${c.bucket}/${key}` });
}

export interface S3Version extends S3Object {
  versionId: string;
  latest: boolean;
}

/**
 * The versions of one key (ListObjectVersions), or null when the server does not implement
 * versioning at all (501 NotImplemented, or 405 MethodNotAllowed as s3rver answers).
 */
export async function listVersions(http: UpstreamClient, c: S3Cred, key: string): Promise<S3Version[] | null> {
  const out: S3Version[] = [];
  let marker: { key: string; version: string } | null = null;
  for (let i = 0; i < 100; i++) {
    const query: Record<string, string> = { versions: '', prefix: key, 'max-keys': '1000' };
    if (marker) Object.assign(query, { 'key-marker': marker.key, 'version-id-marker': marker.version });
    const { url, headers } = await signed(c, 'GET', null, query);
    const what = `ListObjectVersions ${c.bucket}/${key}`;
    const r = await http.text({ method: 'GET', url, headers, what, accept: [405, 501] });
    if (r.status === 405 || r.status === 501) return null;
    const res = parseXml(r.text, String(r.headers['content-type'] ?? ''), what).ListVersionsResult;
    if (!res || typeof res !== 'object') throw malformed(PROVIDER_ID, what, 'the answer has no ListVersionsResult', r.text);
    for (const v of res.Version ?? []) {
      if (v?.Key !== key || typeof v.VersionId !== 'string') continue;
      out.push({ key, versionId: v.VersionId, latest: v.IsLatest === 'true', size: Number(v.Size ?? 0), etag: typeof v.ETag === 'string' ? v.ETag : undefined, modified: dateOf(v.LastModified) });
    }
    if (res.IsTruncated !== 'true') return out;
    if (typeof res.NextKeyMarker !== 'string' || res.NextKeyMarker !== key || typeof res.NextVersionIdMarker !== 'string') return out;
    marker = { key: res.NextKeyMarker, version: res.NextVersionIdMarker };
  }
  return out;
}

/** A presigned GET URL, valid `expiresIn` seconds, straight to the bucket. */
export async function presignGet(c: S3Cred, key: string, fileName: string, expiresIn: number, now: number, versionId?: string): Promise<string> {
  const ep = new URL(c.endpoint);
  const path = objectPath(c, key);
  const query: Record<string, string> = { 'response-content-disposition': `attachment; filename*=UTF-8''${enc(fileName)}` };
  if (versionId) query.versionId = versionId;
  // A presigned URL is signed before any body exists, so its canonical request must carry the
  // payload hash UNSIGNED-PAYLOAD (as the AWS SDK's presigner does). Without this header the
  // signer hashes an empty body, which S3 and Swift's s3api refuse (403 SignatureDoesNotMatch);
  // s3rver never noticed because it does not check V4 signatures. The signer hoists the header
  // into the query as X-Amz-Content-Sha256.
  const req = await signer(c).presign(
    { method: 'GET', protocol: ep.protocol, hostname: ep.hostname, port: ep.port ? Number(ep.port) : undefined, path, query, headers: { host: ep.host, 'x-amz-content-sha256': UNSIGNED_PAYLOAD } },
    { expiresIn, signingDate: new Date(now) },
  );
  const qs = Object.entries(req.query ?? {}).map(([k, v]) => `${enc(k)}=${enc(String(v))}`).join('&');
  return `${ep.origin}${path}?${qs}`;
}

export function s3ErrorMessage(body: string, contentType: string): string {
  if (/xml/i.test(contentType) || body.startsWith('<?xml')) {
    try {
      const e = parser.parse(body)?.Error;
      if (e && (e.Code || e.Message)) return [e.Code, e.Message].filter(Boolean).join(': ');
    } catch { /* not XML */ }
  }
  return body;
}

export function parseXml(text: string, contentType: string, what: string): any {
  if (!/xml/i.test(contentType) && !text.trimStart().startsWith('<?xml')) throw malformed(PROVIDER_ID, what, `expected XML but the answer is ${contentType || 'untyped'}`, text);
  try {
    return parser.parse(text, true);
  } catch (e) {
    throw malformed(PROVIDER_ID, what, `the answer is not well-formed XML (${(e as Error).message})`, text);
  }
}

function dateOf(v: unknown): number | undefined {
  const t = typeof v === 'string' ? Date.parse(v) : NaN;
  return Number.isNaN(t) ? undefined : t;
}
