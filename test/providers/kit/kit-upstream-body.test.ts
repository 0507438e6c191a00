/**
 * The kit's upstream client with a streamed request body (an upload): the bytes arrive whole, a
 * stream that fails is reported as its own error (not as the upstream's failure, no retry, the
 * circuit breaker untouched), and a detached client still sends after the call's signal aborted.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { after, before, test } from 'node:test';
import { ManualClock } from '../../../src/clock.js';
import { DEFAULT_UPSTREAM, UpstreamClient } from '../../../src/providers/kit/http.js';

const received: { method: string; bytes: number; complete: boolean }[] = [];
const server = http.createServer((req, res) => {
  let bytes = 0;
  req.on('data', (d: Buffer) => (bytes += d.length));
  req.on('end', () => {
    received.push({ method: req.method!, bytes, complete: true });
    res.writeHead(req.method === 'PUT' ? 503 : 200).end(String(bytes));
  });
  req.on('aborted', () => received.push({ method: req.method!, bytes, complete: false }));
  req.on('error', () => undefined);
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

const client = () => new UpstreamClient('testdam', { ...DEFAULT_UPSTREAM, allowHosts: ['127.0.0.1'], retries: 2, breaker: { failureThreshold: 1, coolDownMs: 60_000 } }, { clock: new ManualClock(), sleep: async () => undefined, random: () => 0.5 });

test('a stream body is sent whole; a failing answer to it is not repeated (the stream cannot be replayed)', async () => {
  const c = client();
  const body = Readable.from([Buffer.alloc(100_000, 1), Buffer.alloc(50_000, 2)]);
  const r = await c.text({ method: 'POST', url: `${base}/ok`, body, headers: { 'content-length': '150000' } });
  assert.equal(r.text, '150000');
  received.length = 0;
  // 503 is retried for an idempotent call; a PUT with a stream body never is.
  await assert.rejects(c.text({ method: 'PUT', url: `${base}/put`, body: Readable.from([Buffer.alloc(10)]), idempotent: true, headers: { 'content-length': '10' } }), (e: any) => e.code === 'integration-unavailable');
  assert.equal(received.filter((x) => x.method === 'PUT').length, 1);
});

test("the body stream's own error comes out as it is; the breaker does not count it against the upstream", async () => {
  const c = client();
  const cause = new Error('client went away');
  let sent = 0;
  const body = new Readable({
    read() {
      if (sent >= 3) return this.destroy(cause);
      sent++;
      this.push(Buffer.alloc(16_384, 3));
    },
  });
  await assert.rejects(c.send({ method: 'POST', url: `${base}/cut`, body, headers: { 'content-length': '1000000' } }), (e) => e === cause);
  assert.equal(c.breakers.state(`testdam ${new URL(base).host}`), 'closed', 'a threshold of 1 would have opened it');
  // The next call goes through.
  assert.equal((await c.text({ method: 'POST', url: `${base}/after`, body: 'x' })).text, '1');
});

test('detached(): a call view whose signal aborted still sends clean-up requests', async () => {
  const c = client();
  const ac = new AbortController();
  const view = c.during(ac.signal);
  ac.abort();
  await assert.rejects(view.text({ method: 'GET', url: `${base}/x` }), (e: any) => e.code === 'integration-unavailable');
  assert.equal((await view.detached().text({ method: 'POST', url: `${base}/cleanup`, body: 'abc' })).text, '3');
  assert.equal(c.detached(), c);
});
