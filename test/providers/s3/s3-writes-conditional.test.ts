/**
 * The S3 writes against a server that honours conditional PUTs (as AWS S3 has since 2024, MinIO
 * and Ceph), which Swift's s3api does not: a small in-memory S3 on loopback that checks If-Match /
 * If-None-Match on PutObject and CompleteMultipartUpload. It shows the probe finding the support
 * without storing anything, the headers the writes then send, a write made by someone else
 * between the connector's check and its put failing as asset-exists / asset-version-conflict
 * instead of being overwritten, and a part the server refuses aborting the multipart upload.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { after, before, beforeEach, test } from 'node:test';
import { KeyRing } from '../../../src/auth/keys.js';
import { ManualClock } from '../../../src/clock.js';
import { contentTagOf } from '../../../src/providers/asset-state.js';
import type { ProviderSession, UploadBody } from '../../../src/providers/contract.js';
import type { DefinedConnector } from '../../../src/providers/kit/define.js';
import { s3ConnectorWith } from '../../../src/providers/s3/provider.js';

interface Seen {
  method: string;
  path: string;
  query: URLSearchParams;
  ifMatch?: string;
  ifNoneMatch?: string;
}

const objects = new Map<string, { body: Buffer; etag: string }>();
const uploads = new Map<string, Buffer[]>();
let seen: Seen[] = [];
/** Someone else writes `key` right after the connector's HeadObject of it. */
let raceOn: string | null = null;
/** UploadPart of this number answers 500. */
let failPart: number | null = null;

const md5 = (b: Buffer) => `"${createHash('md5').update(b).digest('hex')}"`;
const xml = (res: http.ServerResponse, status: number, body: string) => res.writeHead(status, { 'content-type': 'application/xml' }).end(`<?xml version="1.0" encoding="UTF-8"?>${body}`);
const s3Error = (res: http.ServerResponse, status: number, code: string) => xml(res, status, `<Error><Code>${code}</Code><Message>${code}</Message></Error>`);

/** If-Match / If-None-Match as S3 checks them on a write: the failing status, or null. */
function precondition(req: http.IncomingMessage, key: string): number | null {
  const current = objects.get(key);
  const ifMatch = req.headers['if-match'];
  if (typeof ifMatch === 'string') return !current ? 404 : current.etag === ifMatch ? null : 412;
  if (req.headers['if-none-match'] === '*' && current) return 412;
  return null;
}

const server = http.createServer(async (req, res) => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const body = Buffer.concat(chunks);
  const u = new URL(req.url!, 'http://x');
  const key = decodeURIComponent(u.pathname.replace(/^\/media\/?/, ''));
  seen.push({ method: req.method!, path: key, query: u.searchParams, ifMatch: req.headers['if-match'] as string | undefined, ifNoneMatch: req.headers['if-none-match'] as string | undefined });
  const q = u.searchParams;
  if (req.method === 'GET' && q.has('versions')) return s3Error(res, 501, 'NotImplemented');
  if (req.method === 'GET' && !key && (q.get('prefix') ?? '').startsWith('locked/') && !(q.get('prefix') ?? '').startsWith('locked/x')) {
    return xml(res, 200, `<ListBucketResult><Name>media</Name><IsTruncated>false</IsTruncated><Contents><Key>locked/</Key><Size>0</Size><ETag>"d41d8cd98f00b204e9800998ecf8427e"</ETag></Contents></ListBucketResult>`);
  }
  if (req.method === 'GET' && !key) {
    const prefix = q.get('prefix') ?? '';
    const keys = [...objects.keys()].filter((k) => k.startsWith(prefix)).sort();
    const direct = q.get('delimiter') ? keys.filter((k) => !k.slice(prefix.length).includes('/')) : keys;
    const prefixes = q.get('delimiter') ? [...new Set(keys.filter((k) => k.slice(prefix.length).includes('/')).map((k) => prefix + k.slice(prefix.length).split('/')[0] + '/'))] : [];
    return xml(res, 200, `<ListBucketResult><Name>media</Name><IsTruncated>false</IsTruncated>${direct.map((k) => `<Contents><Key>${k}</Key><Size>${objects.get(k)!.body.length}</Size><ETag>${objects.get(k)!.etag}</ETag></Contents>`).join('')}${prefixes.map((p) => `<CommonPrefixes><Prefix>${p}</Prefix></CommonPrefixes>`).join('')}</ListBucketResult>`);
  }
  if (req.method === 'HEAD') {
    const o = objects.get(key);
    if (key === raceOn) {
      raceOn = null;
      objects.set(key, { body: Buffer.from('written by someone else'), etag: md5(Buffer.from('written by someone else')) });
    }
    if (!o) return res.writeHead(404).end();
    return res.writeHead(200, { 'content-length': String(o.body.length), etag: o.etag, 'content-type': 'text/plain' }).end();
  }
  if (req.method === 'POST' && q.has('uploads')) {
    const id = `up${uploads.size + 1}`;
    uploads.set(id, []);
    return xml(res, 200, `<InitiateMultipartUploadResult><Bucket>media</Bucket><Key>${key}</Key><UploadId>${id}</UploadId></InitiateMultipartUploadResult>`);
  }
  if (req.method === 'PUT' && q.has('partNumber')) {
    const n = Number(q.get('partNumber'));
    if (n === failPart) return s3Error(res, 500, 'InternalError');
    uploads.get(q.get('uploadId')!)![n - 1] = body;
    return res.writeHead(200, { etag: md5(body) }).end();
  }
  if (req.method === 'POST' && q.has('uploadId')) {
    const failed = precondition(req, key);
    if (failed) return s3Error(res, failed, failed === 412 ? 'PreconditionFailed' : 'NoSuchKey');
    const parts = uploads.get(q.get('uploadId')!)!;
    uploads.delete(q.get('uploadId')!);
    const all = Buffer.concat(parts);
    objects.set(key, { body: all, etag: `"${createHash('md5').update(all).digest('hex')}-${parts.length}"` });
    return xml(res, 200, `<CompleteMultipartUploadResult><Key>${key}</Key><ETag>${objects.get(key)!.etag}</ETag></CompleteMultipartUploadResult>`);
  }
  if (req.method === 'DELETE' && q.has('uploadId')) {
    uploads.delete(q.get('uploadId')!);
    return res.writeHead(204).end();
  }
  if (req.method === 'PUT' && key.startsWith('locked/')) return s3Error(res, 403, 'AccessDenied');
  if (req.method === 'PUT') {
    const failed = precondition(req, key);
    if (failed) return s3Error(res, failed, failed === 412 ? 'PreconditionFailed' : 'NoSuchKey');
    objects.set(key, { body, etag: md5(body) });
    return res.writeHead(200, { etag: md5(body) }).end();
  }
  if (req.method === 'DELETE') {
    objects.delete(key);
    return res.writeHead(204).end();
  }
  return s3Error(res, 400, 'Unexpected');
});

let p: DefinedConnector;
let session: ProviderSession;
before(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  p = s3ConnectorWith({ limits: { putMaxBytes: 32 * 1024, partBytes: 16 * 1024 } })({ clock: new ManualClock(Date.now()), keys: KeyRing.generate(0), publicUrl: 'http://hub.test', upstream: { allowHosts: ['127.0.0.1'], timeoutMs: 5000, retries: 0 } });
  session = { providerId: 's3', userId: 'u1', partnerId: 'p1', credentials: { endpoint, region: 'us-east-1', bucket: 'media', accessKeyId: 'k', secretAccessKey: 's' } };
});
beforeEach(() => {
  seen = [];
  raceOn = null;
  failPart = null;
});
after(async () => {
  await p.close();
  server.closeAllConnections();
  server.close();
});

const bodyOf = (s: Buffer | string): UploadBody => ({ stream: Readable.from([Buffer.from(s)]), length: Buffer.from(s).length, mimeType: 'text/plain' });
const fails = (code: string) => (e: unknown) => {
  assert.equal((e as { code?: string }).code, code, String((e as { details?: string }).details));
  return true;
};

test('the probe finds conditional writes once, storing nothing; a new name is put with If-None-Match: *', async () => {
  const r = await p.upload!(session, { parentId: 'root', name: 'a.txt', onConflict: 'fail' }, bodyOf('first'));
  assert.equal(r.created, true);
  const probe = seen.filter((s) => s.path.includes('.damhub-conditional-probe-'));
  assert.equal(probe.length, 1);
  assert.equal(probe[0]!.ifMatch, '"00000000000000000000000000000000"');
  assert.deepEqual([...objects.keys()], ['a.txt'], 'the probe stored nothing');
  const put = seen.find((s) => s.method === 'PUT' && s.path === 'a.txt')!;
  assert.equal(put.ifNoneMatch, '*');
  seen = [];
  await p.upload!(session, { parentId: 'root', name: 'b.txt', onConflict: 'fail' }, bodyOf('second'));
  assert.equal(seen.filter((s) => s.path.includes('probe')).length, 0, 'asked once per bucket');
});

test('someone creates the name between the check and the put: asset-exists, their object kept', async () => {
  raceOn = 'race.txt';
  await assert.rejects(p.upload!(session, { parentId: 'root', name: 'race.txt', onConflict: 'fail' }, bodyOf('mine')), fails('asset-exists'));
  assert.equal(seen.filter((s) => s.method === 'PUT' && s.path === 'race.txt').length, 1, 'refused by the put, not by the check before it');
  assert.equal(objects.get('race.txt')!.body.toString(), 'written by someone else');
});

test('update sends If-Match with the ETag read; a change between the check and the put is asset-version-conflict', async () => {
  const a = await p.asset!(session, 'a.txt', { uiLocale: 'en', timeZone: null });
  const tag = contentTagOf(a);
  assert.equal(tag, md5(Buffer.from('first')));
  const u = await p.update!(session, 'a.txt', bodyOf('first, edited'), { ifMatch: null, upstreamTag: tag });
  assert.equal(seen.find((s) => s.method === 'PUT' && s.path === 'a.txt')!.ifMatch, tag);
  assert.equal(contentTagOf(u), md5(Buffer.from('first, edited')));
  raceOn = 'a.txt';
  await assert.rejects(p.update!(session, 'a.txt', bodyOf('lost?'), { ifMatch: null, upstreamTag: contentTagOf(u) }), fails('asset-version-conflict'));
  assert.equal(objects.get('a.txt')!.body.toString(), 'written by someone else');
});

test('multipart: the completion carries the condition; a part the server refuses aborts the upload', async () => {
  const big = Buffer.alloc(40 * 1024, 1);
  const r = await p.upload!(session, { parentId: 'root', name: 'big.bin', onConflict: 'fail' }, bodyOf(big));
  assert.match(contentTagOf(r.asset)!, /-3"$/);
  assert.equal(seen.find((s) => s.method === 'POST' && s.query.has('uploadId'))!.ifNoneMatch, '*');
  seen = [];
  failPart = 2;
  await assert.rejects(p.upload!(session, { parentId: 'root', name: 'broken.bin', onConflict: 'fail' }, bodyOf(big)), fails('integration-unavailable'));
  assert.ok(seen.some((s) => s.method === 'DELETE' && s.path === 'broken.bin' && s.query.has('uploadId')), 'AbortMultipartUpload sent');
  assert.equal(uploads.size, 0, 'no upload left');
  assert.equal(objects.has('broken.bin'), false);
});

test('AccessDenied on a put is integration-forbidden', async () => {
  await assert.rejects(p.upload!(session, { parentId: 'locked/', name: 'x.txt', onConflict: 'fail' }, bodyOf('x')), fails('integration-forbidden'));
});
