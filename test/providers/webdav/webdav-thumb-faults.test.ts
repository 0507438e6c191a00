/**
 * Thumbnails through the hub from a misbehaving WebDAV server on loopback: an original the server
 * refuses (403) is a clear integration-forbidden, never a 500; an "image" that is HTML, one that
 * never ends, one over the byte cap each give the generic icon within the budget; a file whose
 * GET answers a different ETag than its listing is served but never cached under the listed one;
 * two accounts of one server never get each other's thumbnail of the same path and ETag.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import sharp from 'sharp';
import { assertError } from '../../helpers/hub.js';
import { signInWebdav, startWebdavHub, type WebdavHub } from '../../helpers/webdav.js';

const NAMES = ['forbidden.jpg', 'html.jpg', 'endless.jpg', 'huge.jpg', 'changed.jpg', 'mine.jpg'];
let jpeg: Buffer;
/** mine.jpg: the same path and ETag for every account, a different picture for bob. */
let bobs: Buffer;
const endless = new Set<http.ServerResponse>();

const entry = (name: string | null) => name === null
  ? '<d:response><d:href>/dav/</d:href><d:propstat><d:prop><d:resourcetype><d:collection/></d:resourcetype></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>'
  : `<d:response><d:href>/dav/${name}</d:href><d:propstat><d:prop><d:displayname>${name}</d:displayname><d:resourcetype/><d:getcontentlength>100</d:getcontentlength><d:getcontenttype>image/jpeg</d:getcontenttype><d:getetag>"listed-${name}"</d:getetag></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>`;

const server = http.createServer((req, res) => {
  req.resume();
  if (req.method === 'PROPFIND') {
    const body = req.headers.depth === '0' ? entry(null) : entry(null) + NAMES.map(entry).join('');
    return res.writeHead(207, { 'content-type': 'application/xml' }).end(`<?xml version="1.0"?><d:multistatus xmlns:d="DAV:">${body}</d:multistatus>`);
  }
  const name = decodeURIComponent(req.url!.split('/').at(-1)!);
  if (name === 'forbidden.jpg') return res.writeHead(403, { 'content-type': 'text/plain' }).end('Forbidden by policy');
  if (name === 'html.jpg') return res.writeHead(200, { 'content-type': 'text/html', etag: '"listed-html.jpg"' }).end('<!doctype html><p>Please sign in</p>'.repeat(10));
  if (name === 'huge.jpg') return res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': String(50 * 1024 * 1024) }).end();
  if (name === 'mine.jpg') {
    const user = Buffer.from((req.headers.authorization ?? '').replace(/^Basic /, ''), 'base64').toString().split(':')[0];
    return res.writeHead(200, { 'content-type': 'image/jpeg', etag: '"listed-mine.jpg"' }).end(user === 'bob' ? bobs : jpeg);
  }
  if (name === 'changed.jpg') return res.writeHead(200, { 'content-type': 'image/jpeg', etag: '"a-newer-version"' }).end(jpeg);
  // endless.jpg: a JPEG start, then a byte now and then, forever.
  res.writeHead(200, { 'content-type': 'image/jpeg' });
  res.write(jpeg.subarray(0, 100));
  endless.add(res);
  const t = setInterval(() => res.write(Buffer.from([0])), 20);
  res.on('close', () => { clearInterval(t); endless.delete(res); });
});

let h: WebdavHub;
let assets: Record<string, any>;
let davUrl: string;

before(async () => {
  jpeg = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#336699' } }).jpeg().toBuffer();
  bobs = await sharp({ create: { width: 30, height: 90, channels: 3, background: '#993366' } }).jpeg().toBuffer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = (davUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/dav/`);
  h = await startWebdavHub({ url }, { config: { thumbnailTimeoutMs: 500, thumbnailMaxBytes: 1024 * 1024 } });
  const r = await h.get('/api/v1/assets/folder/root');
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assets = Object.fromEntries(r.body.assets.map((a: any) => [a.name, a]));
});
after(async () => {
  await h?.t.close();
  for (const r of endless) r.destroy();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const load = (name: string) => {
  const u = new URL(assets[name].thumbnailUrl);
  return h.t.app.inject({ method: 'GET', url: u.pathname + u.search });
};

test('an original the server refuses is integration-forbidden naming the provider, not a 500', async () => {
  const r = await load('forbidden.jpg');
  const body = assertError(r, 'integration-forbidden', 403, 'integration');
  assert.match(JSON.stringify(body), /webdav/i);
});

test('an HTML page, an endless body and an original over the byte cap each give the generic icon', async () => {
  for (const [name, reason] of [['html.jpg', /not a raster image/], ['endless.jpg', /did not end within 500 ms/], ['huge.jpg', /over the thumbnail cap/]] as const) {
    const t0 = Date.now();
    const r = await load(name);
    assert.equal(r.statusCode, 200, r.body);
    assert.equal(r.headers['content-type'], 'image/svg+xml');
    assert.equal(r.headers['x-damhub-thumbnail'], 'icon');
    assert.match(String(r.headers['x-damhub-thumbnail-reason']), reason);
    assert.equal(r.headers['cache-control'], 'private, no-store');
    assert.ok(Date.now() - t0 < 5000, `${name} answered within the budget`);
  }
  const conn = h.t.hub.providers.get('webdav') as unknown as { thumbnailCache: { size: number } };
  assert.equal(conn.thumbnailCache.size, 0, 'no icon is cached');
});

test('a GET answering another ETag than the listing: served, never cached under the listed version', async () => {
  const conn = h.t.hub.providers.get('webdav') as unknown as { thumbnailCache: { size: number } };
  for (let i = 0; i < 2; i++) {
    const r = await load('changed.jpg');
    assert.equal(r.statusCode, 200);
    assert.equal(r.headers['x-damhub-thumbnail'], 'made');
    assert.equal((await sharp(r.rawPayload).metadata()).width, 64);
  }
  assert.equal(conn.thumbnailCache.size, 0);
});

test('two accounts of one server, same path and ETag: each gets its own account\'s thumbnail, never the other\'s', async () => {
  const alice = await load('mine.jpg');
  assert.equal(alice.statusCode, 200);
  assert.equal((await sharp(alice.rawPayload).metadata()).width, 64);
  // bob signs in to the same server on the same hub, after alice's thumbnail is in the cache.
  const { access_token } = await h.t.login({ sub: 'user-bob', email: 'bob@partner.example' });
  const dam = await signInWebdav(h.t, access_token, { serverUrl: davUrl, username: 'bob', password: 'bob-pw' });
  assert.ok(dam.token, dam.page);
  const list = await h.t.app.inject({ method: 'GET', url: '/api/v1/assets/folder/root', headers: { authorization: `Bearer ${access_token}`, 'provider-authorization': `Bearer ${dam.token}` } });
  const mine = list.json().assets.find((a: any) => a.name === 'mine.jpg');
  const u = new URL(mine.thumbnailUrl);
  const bob = await h.t.app.inject({ method: 'GET', url: u.pathname + u.search });
  assert.equal(bob.statusCode, 200);
  assert.equal(bob.headers['x-damhub-thumbnail'], 'made', 'not served from alice\'s cache entry');
  const m = await sharp(bob.rawPayload).metadata();
  assert.deepEqual([m.width, m.height], [30, 90]);
  assert.equal((await load('mine.jpg')).headers['x-damhub-thumbnail'], 'cached', 'alice still has hers');
});
