/**
 * The kit's upstream client sending a stream body (an upload's bytes) to a loopback server: sent
 * as read and whole, never retried (a stream cannot be read twice), a failing body ends the call
 * with the body's own error without counting against the upstream's circuit breaker, and the
 * deadline runs from the last chunk sent (a long upload is not cut; a stalled one is), then covers the answer.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough, Readable } from 'node:stream';
import { after, before, test } from 'node:test';
import { ManualClock } from '../../../src/clock.js';
import { HubError } from '../../../src/errors.js';
import { DEFAULT_UPSTREAM, discard, UpstreamClient, type UpstreamSettings } from '../../../src/providers/kit/http.js';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;
let handler: Handler = (_q, r) => r.end('ok');
let hits = 0;
/** Resolves when the server has received the first bytes of a body. */
let firstBytes: () => void = () => undefined;
const server = http.createServer((req, res) => {
  hits++;
  req.once('data', () => firstBytes());
  handler(req, res);
});
let base = '';
before(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => {
  server.closeAllConnections();
  server.close();
});

function client(over: Partial<UpstreamSettings> = {}) {
  return new UpstreamClient('testdam', { ...DEFAULT_UPSTREAM, allowHosts: ['127.0.0.1'], retryBaseMs: 1, ...over }, { clock: new ManualClock(), sleep: async () => undefined, random: () => 0.5 });
}

/** Reads the request body and answers its size and SHA-256. */
const digest: Handler = (req, res) => {
  const h = createHash('sha256');
  let n = 0;
  req.on('data', (d: Buffer) => {
    n += d.length;
    h.update(d);
  });
  req.on('end', () => res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ n, sha: h.digest('hex') })));
};

test('a stream body is sent as read and arrives whole', async () => {
  handler = digest;
  const chunks = Array.from({ length: 64 }, (_, i) => Buffer.alloc(64 * 1024, i));
  const r = await client().json<{ n: number; sha: string }>({ method: 'PUT', url: `${base}/f`, body: Readable.from(chunks) });
  assert.equal(r.status, 201);
  assert.equal(r.data.n, 64 * 64 * 1024);
  assert.equal(r.data.sha, createHash('sha256').update(Buffer.concat(chunks)).digest('hex'));
});

test('a stream body is never retried, even on a call marked idempotent', async () => {
  handler = (req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(503).end('busy'));
  };
  hits = 0;
  const e = await client({ retries: 3 }).send({ method: 'PUT', url: `${base}/f`, idempotent: true, body: Readable.from([Buffer.from('once')]) }).then(() => assert.fail('expected 503'), (x: unknown) => x);
  assert.ok(e instanceof HubError);
  assert.equal(e.code, 'integration-unavailable');
  assert.equal(hits, 1);
});

test('a body that fails: the call ends with the body\'s own error, and the upstream is not blamed', async () => {
  handler = (req) => void req.resume(); // reads and never answers
  const c = client({ breaker: { failureThreshold: 1, coolDownMs: 60_000 } });
  const body = new PassThrough();
  body.write(Buffer.alloc(32 * 1024, 1));
  const got = new Promise<void>((r) => {
    firstBytes = r;
  });
  const call = c.send({ method: 'PUT', url: `${base}/f`, body });
  await got;
  const cause = new Error('the client went away');
  body.destroy(cause);
  await assert.rejects(call, (e) => e === cause);
  // One failure would open the breaker (threshold 1); the host is still admitted.
  handler = (_q, r) => r.end('ok');
  const ok = await c.send({ method: 'GET', url: `${base}/after` });
  discard(ok.body);
  assert.equal(ok.status, 200);
});

test('the deadline runs from the last chunk sent: a slow but moving body completes, a silent answer times out', async () => {
  handler = digest;
  const c = client({ timeoutMs: 100, retries: 0 });
  const body = new PassThrough();
  body.write(Buffer.alloc(1024, 2));
  const got = new Promise<void>((r) => {
    firstBytes = r;
  });
  const call = c.json<{ n: number }>({ method: 'PUT', url: `${base}/slow`, body });
  await got;
  // Real time on purpose: the deadline under test is the kit's real timer. The body takes three
  // times the deadline, in chunks closer together than it (each chunk renews it).
  for (let i = 0; i < 6; i++) {
    await new Promise((r) => setTimeout(r, 50));
    body.write(Buffer.alloc(1024, 3));
  }
  body.end();
  assert.equal((await call).data.n, 7 * 1024);

  handler = (req) => void req.resume(); // takes the whole body, never answers
  const started = Date.now();
  const e = await c.send({ method: 'PUT', url: `${base}/silent`, body: Readable.from([Buffer.from('x')]) }).then(() => assert.fail('expected a timeout'), (x: unknown) => x);
  assert.ok(e instanceof HubError);
  assert.equal(e.status, 504);
  assert.ok(Date.now() - started < 5000);
});
