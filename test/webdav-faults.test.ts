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
import { assertError } from './helpers/hub.js';
import { startWebdavHub, type WebdavHub } from './helpers/webdav.js';

type Mode = 'ok' | 'hang' | 'html' | '429' | 'revoked' | 'huge';
let mode: Mode = 'ok';
let hugeBytesSent = 0;
let hugeClosed: Promise<void> = Promise.resolve();

const entry = (href: string, collection: boolean, size = 10) => `<d:response><d:href>${href}</d:href><d:propstat><d:prop><d:displayname>${decodeURIComponent(href.split('/').filter(Boolean).at(-1) ?? '')}</d:displayname>${collection ? '<d:resourcetype><d:collection/></d:resourcetype>' : `<d:resourcetype/><d:getcontentlength>${size}</d:getcontentlength><d:getcontenttype>image/jpeg</d:getcontenttype><d:getetag>"e${size}"</d:getetag><d:getlastmodified>Mon, 01 Jun 2026 10:00:00 GMT</d:getlastmodified>`}</d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>`;
const multistatus = (body: string) => `<?xml version="1.0"?><d:multistatus xmlns:d="DAV:">${body}</d:multistatus>`;

const server = http.createServer((req, res) => {
  req.resume();
  const xml = (s: string) => res.writeHead(207, { 'content-type': 'application/xml; charset=utf-8' }).end(s);
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
