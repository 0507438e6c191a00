/**
 * S3 fault injection against a small misbehaving S3-protocol server on loopback: the upstream
 * changes its continuation-token format mid-traversal, truncates without a token, answers HTML,
 * revokes the access key mid-traversal, and holds 100,000 keys in one folder (counted with
 * bounded memory: only the count survives each 1000-key page). It also replays a versioned
 * bucket's ListObjectVersions answer (s3rver has no versioning).
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { assertError } from '../../helpers/hub.js';
import { startS3Hub, type S3Hub } from '../../helpers/s3.js';

type Mode = 'ok' | 'new-token-format' | 'truncated-no-token' | 'html' | 'revoked';
let mode: Mode = 'ok';
let listCalls = 0;
const FOLDER_KEYS = 100_000;

const xmlError = (code: string, message: string) => `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message></Error>`;

function listing(prefix: string, start: number, max: number, total: number, truncatedWithoutToken = false): string {
  const end = Math.min(total, start + max);
  const contents: string[] = [];
  for (let i = start; i < end; i++) contents.push(`<Contents><Key>${prefix}k${String(i).padStart(6, '0')}.jpg</Key><LastModified>2026-06-01T10:00:00.000Z</LastModified><ETag>"d41d8cd98f00b204e9800998ecf8427e"</ETag><Size>${i}</Size></Contents>`);
  const truncated = end < total;
  const token = truncated && !truncatedWithoutToken ? `<NextContinuationToken>v1:${end}</NextContinuationToken>` : '';
  return `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>media</Name><Prefix>${prefix}</Prefix><KeyCount>${end - start}</KeyCount><MaxKeys>${max}</MaxKeys><IsTruncated>${truncated}</IsTruncated>${contents.join('')}${token}</ListBucketResult>`;
}

/**
 * A versioned bucket's ListObjectVersions answer, shaped after the sample response of the
 * ListObjectVersions page of the Amazon S3 API Reference (docs.aws.amazon.com/AmazonS3/latest/API/API_ListObjectVersions.html):
 * the same key twice (one IsLatest), a delete marker and another key that must be ignored.
 */
const VERSIONS_SAMPLE = `<?xml version="1.0" encoding="UTF-8"?>
<ListVersionsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01">
  <Name>bucket</Name><Prefix>my-image.jpg</Prefix><KeyMarker></KeyMarker><VersionIdMarker></VersionIdMarker><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>
  <Version><Key>my-image.jpg</Key><VersionId>3/L4kqtJl40Nr8X8gdRQBpUMLUo</VersionId><IsLatest>true</IsLatest><LastModified>2009-10-12T17:50:30.000Z</LastModified><ETag>"fba9dede5f27731c9771645a39863328"</ETag><Size>434234</Size><StorageClass>STANDARD</StorageClass></Version>
  <Version><Key>my-image.jpg</Key><VersionId>QUpfdndhfd8438MNFDN93jdnJFkdmqnh893</VersionId><IsLatest>false</IsLatest><LastModified>2009-10-10T17:50:30.000Z</LastModified><ETag>"9b2cf535f27731c974343645a3985328"</ETag><Size>166434</Size><StorageClass>STANDARD</StorageClass></Version>
  <DeleteMarker><Key>my-image.jpg.bak</Key><VersionId>03jpff543dhffds434rfdsFDN943fdsFkdmqnh892</VersionId><IsLatest>true</IsLatest><LastModified>2009-11-12T17:50:30.000Z</LastModified></DeleteMarker>
  <Version><Key>my-image.jpg.bak</Key><VersionId>UIORUnfndfhnw89493jJFJ</VersionId><IsLatest>false</IsLatest><LastModified>2009-10-11T12:50:30.000Z</LastModified><ETag>"772cf535f27731c974343645a3985328"</ETag><Size>64</Size><StorageClass>STANDARD</StorageClass></Version>
</ListVersionsResult>`;

const server = http.createServer((req, res) => {
  req.resume();
  const u = new URL(req.url!, 'http://x');
  if (req.method === 'HEAD') return res.writeHead(200, { 'content-length': '434234', 'content-type': 'image/jpeg', etag: '"fba9dede5f27731c9771645a39863328"', 'last-modified': 'Mon, 12 Oct 2009 17:50:30 GMT' }).end();
  if (u.searchParams.has('versions')) return res.writeHead(200, { 'content-type': 'application/xml' }).end(VERSIONS_SAMPLE);
  const prefix = u.searchParams.get('prefix') ?? '';
  const max = Number(u.searchParams.get('max-keys') ?? 1000);
  const token = u.searchParams.get('continuation-token');
  const xml = (status: number, body: string) => res.writeHead(status, { 'content-type': 'application/xml' }).end(body);
  listCalls++;
  if (max === 1 && prefix === '') return xml(200, listing('', 0, 1, 1)); // the sign-in probe
  if (mode === 'html') return res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>Bucket portal maintenance</body></html>');
  if (mode === 'revoked' && token) return xml(403, xmlError('InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.'));
  if (token && mode === 'new-token-format' && !token.startsWith('v2:')) return xml(400, xmlError('InvalidArgument', 'The continuation token provided is incorrect'));
  const start = token ? Number(token.split(':')[1]) : 0;
  const total = prefix === 'big/' ? FOLDER_KEYS : 30;
  return xml(200, listing(prefix, start, max, total, mode === 'truncated-no-token'));
});

let h: S3Hub;
before(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  h = await startS3Hub({ endpoint, bucket: 'media' }, { config: { connectors: { s3: { allowHosts: ['127.0.0.1'], timeoutMs: 2000, retries: 0 } } } });
});
after(async () => {
  await h.t.close();
  server.closeAllConnections();
  server.close();
});

const page = (prefix: string, more?: string) => h.t.app.inject({ method: 'GET', url: `/api/v1/assets/folder/${encodeURIComponent(prefix)}?size=10${more ? `&more=${encodeURIComponent(more)}` : ''}`, headers: h.headers });

test('the upstream changes its continuation-token format mid-traversal: integration-operation-failed with its words', async () => {
  mode = 'ok';
  const first = await page('small/');
  assert.equal(first.statusCode, 200, first.body);
  mode = 'new-token-format';
  const body = assertError(await page('small/', first.json().more), 'integration-operation-failed', 400, 'integration');
  assert.equal(body.error.provider, 's3');
  assert.match(body.error.details, /answered 400: InvalidArgument: The continuation token provided is incorrect/);
});

test('a truncated listing without a continuation token is a clear 502, not a silent short folder', async () => {
  mode = 'truncated-no-token';
  const body = assertError(await page('small/'), 'integration-unavailable', 502, 'integration');
  assert.match(body.error.details, /truncated but carries no NextContinuationToken/);
});

test('HTML instead of XML is a clear 502', async () => {
  mode = 'html';
  const body = assertError(await page('small/'), 'integration-unavailable', 502, 'integration');
  assert.match(body.error.details, /expected XML but the answer is text\/html.*Bucket portal maintenance/);
});

test('the access key is revoked mid-traversal: integration-forbidden with the upstream message', async () => {
  mode = 'ok';
  const first = await page('small/');
  mode = 'revoked';
  const body = assertError(await page('small/', first.json().more), 'integration-forbidden', 403, 'integration');
  assert.match(body.error.details, /InvalidAccessKeyId: The AWS Access Key Id you provided does not exist/);
});

test('100,000 keys in one folder: exact count and a page of 10, one 1000-key request at a time', async () => {
  mode = 'ok';
  listCalls = 0;
  // Retained heap, not garbage awaiting collection (the in-process fake server's 100 XML pages are
  // garbage; when the collector runs differs between Node versions): collected before each reading.
  const gc = collector();
  gc();
  const heapBefore = process.memoryUsage().heapUsed;
  const r = await page('big/');
  assert.equal(r.statusCode, 200, r.body.slice(0, 300));
  const b = r.json();
  assert.equal(b.totalAssetsCount, FOLDER_KEYS);
  assert.equal(b.assets.length, 10);
  assert.equal(b.assets[0].id, 'big/k000000.jpg');
  assert.equal(listCalls, FOLDER_KEYS / 1000 + 1, 'a count pass of 1000-key pages, then the page itself');
  // The count pass keeps a number, not the keys: the heap does not grow with the folder.
  gc();
  assert.ok(process.memoryUsage().heapUsed - heapBefore < 48 * 1024 * 1024);
  const next = await page('big/', b.more);
  assert.equal(next.json().assets[0].id, 'big/k000010.jpg');
  assert.equal(next.json().totalAssetsCount, FOLDER_KEYS);
});

test('a versioned bucket: versions newest first, the latest only with withMaster, each with its own presigned URL', async () => {
  const get = (q: string) => h.t.app.inject({ method: 'GET', url: `/api/v1/assets/assetversions/my-image.jpg${q}`, headers: h.headers });
  const older = await get('');
  assert.equal(older.statusCode, 200, older.body);
  assert.deepEqual(older.json().versions.map((v: any) => [v.version, v.fileSize]), [[1, 166434]]);
  const all = (await get('?withMaster=true')).json();
  assert.equal(all.name, 'my-image.jpg');
  assert.deepEqual(all.versions.map((v: any) => [v.version, v.fileSize, v.downloadHashMd5]), [[2, 434234, 'fba9dede5f27731c9771645a39863328'], [1, 166434, '9b2cf535f27731c974343645a3985328']]);
  assert.equal(new URL(all.versions[1].downloadUrl).searchParams.get('versionId'), 'QUpfdndhfd8438MNFDN93jdnJFkdmqnh893');
  assert.match(all.versions[1].versionComment, /QUpfdndhfd8438MNFDN93jdnJFkdmqnh893/);
});

/** The V8 collector, callable without starting node with --expose-gc. */
function collector(): () => void {
  v8.setFlagsFromString('--expose-gc');
  return vm.runInNewContext('gc') as () => void;
}
