/**
 * Fault injection for remote connectors, through the hub, against a small misbehaving WebDAV
 * server on loopback: it hangs, answers HTML instead of XML, answers 429 with Retry-After,
 * revokes the credentials mid-traversal, and lists 100,000 entries in one folder. Each must end
 * as a clear integration-* error naming the provider, within the configured timeout, without
 * reading an unbounded answer.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { assertError } from '../../helpers/hub.js';
import { startWebdavHub, type WebdavHub } from '../../helpers/webdav.js';

type Mode = 'ok' | 'hang' | 'html' | '429' | 'revoked' | 'huge';
let mode: Mode = 'ok';
let hugeBytesSent = 0;
let hugeClosed: Promise<void> = Promise.resolve();

const entry = (href: string, collection: boolean, size = 10) => `<d:response><d:href>${href}</d:href><d:propstat><d:prop><d:displayname>${decodeURIComponent(href.split('/').filter(Boolean).at(-1) ?? '')}</d:displayname>${collection ? '<d:resourcetype><d:collection/></d:resourcetype>' : `<d:resourcetype/><d:getcontentlength>${size}</d:getcontentlength><d:getcontenttype>image/jpeg</d:getcontenttype><d:getetag>"e${size}"</d:getetag><d:getlastmodified>Mon, 01 Jun 2026 10:00:00 GMT</d:getlastmodified>`}</d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>`;
const multistatus = (body: string) => `<?xml version="1.0"?><d:multistatus xmlns:d="DAV:">${body}</d:multistatus>`;

let searchBody = '';
let propfindDepth1 = 0;

const server = http.createServer((req, res) => {
  const xml = (s: string) => res.writeHead(207, { 'content-type': 'application/xml; charset=utf-8' }).end(s);
  // RFC 5323: the collection advertises basicsearch (section 3.2) and answers SEARCH with a
  // multistatus (section 2.3); the last member does not match and must be dropped by the hub.
  if (req.method === 'OPTIONS') return res.writeHead(200, { dav: '1, 3', dasl: '<DAV:basicsearch>', allow: 'OPTIONS, GET, PROPFIND, SEARCH' }).end();
  if (req.method === 'SEARCH') {
    let body = '';
    req.on('data', (d: Buffer) => { body += d.toString(); });
    req.on('end', () => {
      searchBody = body;
      xml(multistatus(entry('/dav/deep/a/Sunset%20beach.jpg', false, 11) + entry('/dav/deep/sunset.jpg', false, 12) + entry('/dav/deep/other.jpg', false, 13)));
    });
    return;
  }
  req.resume();
  if (req.headers.depth === '1') propfindDepth1++;
  if (req.headers.depth === '0') return xml(multistatus(entry('/dav/', true)));
  if (mode === 'ok') return xml(multistatus(entry('/dav/', true) + Array.from({ length: 20 }, (_, i) => entry(`/dav/f${i}.jpg`, false, 100 + i)).join('')));
  if (mode === 'hang') return; // never answers
  if (mode === 'html') return res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><html><body><h1>Please sign in to the portal</h1></body></html>');
  if (mode === '429') return res.writeHead(429, { 'retry-after': '120', 'content-type': 'text/plain' }).end('Rate limit exceeded for user alice');
  if (mode === 'revoked') {
    return res.writeHead(401, { 'content-type': 'application/xml', 'www-authenticate': 'Basic realm="x"' })
      .end('<?xml version="1.0"?><d:error xmlns:d="DAV:" xmlns:s="http://sabredav.org/ns"><s:exception>NotAuthenticated</s:exception><s:message>App token was revoked</s:message></d:error>');
  }
  // 100,000 entries, streamed as the upstream would; we count what actually left before the client hung up.
  res.writeHead(207, { 'content-type': 'application/xml; charset=utf-8' });
  const head = '<?xml version="1.0"?><d:multistatus xmlns:d="DAV:">' + entry('/dav/', true);
  hugeBytesSent = 0;
  let i = 0;
  const pump = () => {
    while (i < 100_000) {
      const chunk = (i === 0 ? head : '') + Array.from({ length: 500 }, (_, k) => entry(`/dav/file-${i + k}.jpg`, false, i + k)).join('');
      i += 500;
      if (res.destroyed) return;
      hugeBytesSent += Buffer.byteLength(chunk);
      if (!res.write(chunk)) return void res.once('drain', pump);
    }
    res.end('</d:multistatus>');
  };
  hugeClosed = new Promise((r) => res.on('close', () => {
    i = 100_000;
    r();
  }));
  pump();
});

let url = '';
let h: WebdavHub;
before(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/dav/`;
  h = await startWebdavHub({ url }, {
    config: { connectors: { webdav: { allowHosts: ['127.0.0.1'], timeoutMs: 400, retries: 1, retryBaseMs: 1, maxRetryAfterMs: 1000, maxBodyBytes: 2 * 1024 * 1024 } } },
  });
});
after(async () => {
  await h.t.close();
  server.closeAllConnections();
  server.close();
});

const browse = (more?: string) => h.t.app.inject({ method: 'GET', url: `/api/v1/assets/folder/root?size=5${more ? `&more=${encodeURIComponent(more)}` : ''}`, headers: h.headers });

test('an upstream that hangs: integration-unavailable 504 after the configured timeout', async () => {
  mode = 'hang';
  const body = assertError(await browse(), 'integration-unavailable', 504, 'integration');
  assert.equal(body.error.provider, 'webdav');
  assert.match(body.error.details, /PROPFIND \/dav\/: no answer within 400 ms/);
});

test('HTML instead of XML: integration-unavailable 502 quoting what came back', async () => {
  mode = 'html';
  const body = assertError(await browse(), 'integration-unavailable', 502, 'integration');
  assert.match(body.error.details, /PROPFIND \/dav\/: expected 207 Multi-Status, got 200; the answer began: <!doctype html>.*Please sign in to the portal/);
});

test('429 with a Retry-After longer than we wait: 503 with the Retry-After passed on', async () => {
  mode = '429';
  const res = await browse();
  const body = assertError(res, 'integration-unavailable', 503, 'integration');
  assert.equal(res.headers['retry-after'], '120');
  assert.match(body.error.details, /answered 429: Rate limit exceeded for user alice/);
});

test('credentials revoked mid-traversal: the next page is integration-auth-failed with the server\'s words', async () => {
  mode = 'ok';
  const first = await browse();
  assert.equal(first.statusCode, 200);
  assert.ok(first.json().more);
  mode = 'revoked';
  const body = assertError(await browse(first.json().more), 'integration-auth-failed', 401, 'integration');
  assert.match(body.error.details, /answered 401: App token was revoked/);
});

test('100,000 entries in one folder: refused at the read cap instead of held in memory', async () => {
  mode = 'huge';
  const heapBefore = process.memoryUsage().heapUsed;
  const body = assertError(await browse(), 'integration-unavailable', 502, 'integration');
  assert.match(body.error.details, /larger than 2097152 bytes/);
  let full = 0;
  for (let i = 0; i < 100_000; i++) full += Buffer.byteLength(entry(`/dav/file-${i}.jpg`, false, i));
  assert.ok(full > 20 * 1024 * 1024, 'the listing is big');
  // The hub stops reading at the 2 MiB cap and hangs up: the server never gets to send it all.
  await hugeClosed;
  assert.ok(hugeBytesSent < full / 2, `sent ${hugeBytesSent} of ${full} bytes`);
  assert.ok(process.memoryUsage().heapUsed - heapBefore < 64 * 1024 * 1024);
});

test('a server advertising RFC 5323 basicsearch is searched with SEARCH, not walked', async () => {
  mode = 'ok';
  propfindDepth1 = 0;
  const r = await h.t.app.inject({ method: 'GET', url: '/api/v1/assets/search?query=SUNSET', headers: h.headers });
  assert.equal(r.statusCode, 200, r.body);
  assert.deepEqual(r.json().assets.map((a: any) => a.id), ['/deep/a/Sunset beach.jpg', '/deep/sunset.jpg']);
  assert.equal(propfindDepth1, 0, 'no tree walk');
  assert.match(searchBody, /<d:basicsearch>/);
  assert.match(searchBody, /<d:scope><d:href>\/dav\/<\/d:href><d:depth>infinity<\/d:depth><\/d:scope>/);
  assert.match(searchBody, /<d:like caseless="yes"><d:prop><d:displayname\/><\/d:prop><d:literal>%sunset%<\/d:literal><\/d:like>/);
});
