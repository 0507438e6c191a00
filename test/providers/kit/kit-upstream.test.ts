/**
 * The connector kit's upstream client against a small misbehaving loopback server: retries with
 * jitter only where repeating is harmless, Retry-After honoured or handed on, a hang ends as a 504
 * within the configured timeout, HTML where JSON was due is a clear integration error, the circuit
 * breaker opens and recovers on the injected clock, and private addresses need an allowlist.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { ManualClock } from '../../../src/clock.js';
import Fastify from 'fastify';
import { HubError, integrationError } from '../../../src/errors.js';
import { registerErrorHandling, rejections } from '../../../src/http/errors.js';
import { UpstreamClient, DEFAULT_UPSTREAM, type UpstreamSettings } from '../../../src/providers/kit/http.js';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;
let handler: Handler = (_q, r) => r.end('ok');
let hits = 0;
const server = http.createServer((req, res) => {
  hits++;
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

function client(over: Partial<UpstreamSettings> = {}, clock = new ManualClock()) {
  const waits: number[] = [];
  const c = new UpstreamClient('testdam', { ...DEFAULT_UPSTREAM, allowHosts: ['127.0.0.1'], retryBaseMs: 100, ...over }, {
    clock, sleep: async (ms) => void waits.push(ms), random: () => 0.5,
  });
  return { c, waits, clock };
}

async function rejects(p: Promise<unknown>): Promise<HubError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof HubError, String(e));
    return e;
  }
  assert.fail('expected a rejection');
}

test('503 then 200: an idempotent GET is retried with jittered exponential back-off', async () => {
  let n = 0;
  handler = (_q, r) => {
    n++;
    if (n < 3) r.writeHead(503).end('busy');
    else r.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  };
  const { c, waits } = client();
  const r = await c.json<{ ok: boolean }>({ method: 'GET', url: `${base}/x` });
  assert.deepEqual(r.data, { ok: true });
  assert.deepEqual(waits, [50, 100], 'random 0.5 × 100·2^attempt');
  await c.close();
});

test('a POST is not retried and the upstream message is kept verbatim in details', async () => {
  hits = 0;
  handler = (_q, r) => r.writeHead(503, { 'content-type': 'text/plain' }).end('maintenance window until 04:00');
  const { c, waits } = client();
  const e = await rejects(c.send({ method: 'POST', url: `${base}/x`, body: '{}' }));
  assert.equal(hits, 1);
  assert.deepEqual(waits, []);
  assert.equal(e.code, 'integration-unavailable');
  assert.equal(e.status, 503);
  assert.equal(e.provider, 'testdam');
  assert.match(e.details!, /POST \/x answered 503: maintenance window until 04:00/);
  await c.close();
});

test('an HTML error page reaches details as its text: no markup, head or script, bounded', async () => {
  // The shape of Apache httpd's own 404 page (what mod_dav answers for a missing path).
  const apache404 = '<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN">\n<html><head>\n<title>404 Not Found</title>\n<style>body{color:red}</style></head><body>\n'
    + '<h1>Not Found</h1>\n<p>The requested URL was not found on this server.</p>\n<script>track()</script><hr>\n<address>Apache/2.4.62 (Debian) Server at 127.0.0.1 Port 8080</address>\n</body></html>\n';
  handler = (_q, r) => r.writeHead(404, { 'content-type': 'text/html; charset=iso-8859-1' }).end(apache404);
  const { c } = client();
  const e = await rejects(c.send({ method: 'GET', url: `${base}/x` }));
  assert.equal(e.code, 'integration-not-found');
  assert.equal(e.details, 'GET /x answered 404: Not Found The requested URL was not found on this server. Apache/2.4.62 (Debian) Server at 127.0.0.1 Port 8080');
  // A long page is cut, and entities are read as text.
  handler = (_q, r) => r.writeHead(502, { 'content-type': 'text/html' }).end(`<html><body><p>Gateway &amp; proxy &lt;down&gt; &#233;</p>${'<p>filler text</p>'.repeat(400)}</body></html>`);
  const big = await rejects(c.send({ method: 'POST', url: `${base}/x`, body: '{}' }));
  assert.match(big.details!, /^POST \/x answered 502: Gateway & proxy <down> é filler text/);
  assert.doesNotMatch(big.details!, /<p>|<\/p>/);
  assert.ok(big.details!.length <= 'POST /x answered 502: '.length + 2001, `bounded: ${big.details!.length}`);
  await c.close();
});

test('429 with a short Retry-After is waited out; a long one is handed to the client', async () => {
  let n = 0;
  handler = (_q, r) => {
    n++;
    if (n === 1) r.writeHead(429, { 'retry-after': '2' }).end('slow down');
    else r.writeHead(200).end('fine');
  };
  const { c, waits } = client();
  const ok = await c.text({ method: 'GET', url: `${base}/x` });
  assert.equal(ok.text, 'fine');
  assert.deepEqual(waits, [2000]);

  handler = (_q, r) => r.writeHead(429, { 'retry-after': '120' }).end('quota exhausted');
  const e = await rejects(c.text({ method: 'GET', url: `${base}/x` }));
  assert.equal(e.code, 'integration-unavailable');
  assert.equal(e.status, 503);
  assert.equal(e.headers?.['retry-after'], '120');
  assert.match(e.details!, /quota exhausted/);
  await c.close();
});

test('an upstream that hangs ends as a 504 integration error after the configured timeout', async () => {
  handler = () => { /* never answers */ };
  const { c } = client({ timeoutMs: 300, retries: 1 });
  const e = await rejects(c.text({ method: 'GET', url: `${base}/hang` }));
  assert.equal(e.code, 'integration-unavailable');
  assert.equal(e.status, 504);
  assert.match(e.details!, /no answer within 300 ms/);
  await c.close();
});

test('HTML where JSON was due is a 502 integration error quoting the start of the answer', async () => {
  handler = (_q, r) => r.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>Login required</body></html>');
  const { c } = client();
  const e = await rejects(c.json({ method: 'GET', url: `${base}/api` }));
  assert.equal(e.code, 'integration-unavailable');
  assert.equal(e.status, 502);
  assert.match(e.details!, /expected JSON but the answer is text\/html.*Login required/);
  await c.close();
});

test('upstream statuses map to the integration codes of SPEC section 5', async () => {
  const { c } = client({ retries: 0 });
  for (const [status, code, hubStatus] of [[400, 'integration-operation-failed', 400], [401, 'integration-auth-failed', 401], [403, 'integration-forbidden', 403],
    [404, 'integration-not-found', 404], [501, 'integration-not-supported', 501], [500, 'integration-unavailable', 502]] as const) {
    handler = (_q, r) => r.writeHead(status).end(`said ${status}`);
    const e = await rejects(c.text({ method: 'GET', url: `${base}/s` }));
    assert.equal(e.code, code);
    assert.equal(e.status, hubStatus);
    assert.match(e.details!, new RegExp(`said ${status}`));
  }
  await c.close();
});

test('the circuit opens after repeated failures, refuses without calling, and recovers after the cool-down', async () => {
  handler = (_q, r) => r.writeHead(500).end('boom');
  const { c, clock } = client({ retries: 0, breaker: { failureThreshold: 3, coolDownMs: 10_000 } });
  for (let i = 0; i < 3; i++) await rejects(c.text({ method: 'GET', url: `${base}/b` }));
  hits = 0;
  const open = await rejects(c.text({ method: 'GET', url: `${base}/b` }));
  assert.equal(hits, 0, 'an open circuit does not call the upstream');
  assert.equal(open.status, 503);
  assert.equal(open.headers?.['retry-after'], '10');
  clock.advance(10_000);
  handler = (_q, r) => r.writeHead(200).end('back');
  assert.equal((await c.text({ method: 'GET', url: `${base}/b` })).text, 'back');
  assert.equal(c.breakers.state(`testdam ${new URL(base).host}`), 'closed');
  await c.close();
});

test('a loopback or private address is refused unless allowed', async () => {
  hits = 0;
  const c = new UpstreamClient('testdam', { ...DEFAULT_UPSTREAM, allowHosts: [] }, { clock: new ManualClock() });
  const e = await rejects(c.text({ method: 'GET', url: `${base}/x` }));
  assert.equal(e.code, 'integration-unavailable');
  assert.match(e.details!, /refused to connect to 127\.0\.0\.1: 127\.0\.0\.1 is a loopback address/);
  const byName = await rejects(c.text({ method: 'GET', url: base.replace('127.0.0.1', 'localhost') + '/x' }));
  assert.match(byName.details!, /refused to connect to localhost/);
  assert.equal(hits, 0);
  await c.close();
});

test('a host name resolving to a refused address: the message names the rule, no retry, the breaker does not count it', async () => {
  hits = 0;
  const slept: number[] = [];
  const c = new UpstreamClient('testdam', { ...DEFAULT_UPSTREAM, allowHosts: [], retries: 3 }, { clock: new ManualClock(), sleep: async (ms) => { slept.push(ms); } });
  const url = base.replace('127.0.0.1', 'localhost') + '/x';
  for (let i = 0; i < 6; i++) {
    const e = await rejects(c.text({ method: 'GET', url }));
    assert.equal(e.code, 'integration-unavailable');
    assert.match(e.message, /The server address is not allowed: (127\.0\.0\.1 is a loopback address \(127\.0\.0\.0\/8\)|::1 is a loopback address \(::1\/128\))/);
  }
  assert.deepEqual(slept, [], 'a refusal is not retried');
  assert.equal(c.breakers.state(`testdam ${new URL(url).host}`), 'closed', 'nor counted against the host');
  assert.equal(hits, 0);
  await c.close();
});

test('an answer above maxBodyBytes is refused without reading it all', async () => {
  handler = (_q, r) => {
    r.writeHead(200, { 'content-type': 'application/json' });
    r.end(Buffer.alloc(4096, 0x20));
  };
  const { c } = client({ maxBodyBytes: 1024 });
  const e = await rejects(c.json({ method: 'GET', url: `${base}/big` }));
  assert.equal(e.status, 502);
  assert.match(e.details!, /larger than 1024 bytes/);
  await c.close();
});

test('a buffered answer dripping slower than the deadline ends as a 504; a streamed one may take longer', async () => {
  const drip = (ticks: number) => (_q: http.IncomingMessage, r: http.ServerResponse) => {
    r.writeHead(200, { 'content-type': 'text/plain' });
    let n = 0;
    const t = setInterval(() => {
      r.write('x');
      if (++n === ticks) {
        clearInterval(t);
        r.end();
      }
    }, 100);
    r.on('close', () => clearInterval(t));
  };
  handler = drip(6);
  const { c } = client({ timeoutMs: 300, retries: 0 });
  const e = await rejects(c.text({ method: 'GET', url: `${base}/drip` }));
  assert.equal(e.status, 504);
  assert.match(e.details!, /no answer within 300 ms/);
  const res = await c.send({ method: 'GET', url: `${base}/drip` });
  let body = '';
  for await (const ch of res.body) body += String(ch);
  assert.equal(body, 'xxxxxx', 'a download is not cut at the deadline while bytes keep coming');
  await c.close();
});

test('a call the hub stopped waiting for: the request in flight ends, no retry starts, the breaker does not count it', async () => {
  hits = 0;
  let closed!: () => void;
  const serverSawClose = new Promise<void>((r) => (closed = r));
  handler = (req) => req.on('close', closed); // never answers
  const { c } = client({ timeoutMs: 60_000, retries: 2, breaker: { failureThreshold: 1, coolDownMs: 60_000 } });
  const call = new AbortController();
  const pending = rejects(c.during(call.signal).text({ method: 'GET', url: `${base}/hang` }));
  while (hits === 0) await new Promise((r) => setImmediate(r));
  call.abort(new Error('deadline'));
  const e = await pending;
  await serverSawClose; // the socket was let go, long before the client's own 60 s timeout
  assert.equal(e.status, 504);
  assert.match(e.details!, /abandoned, the hub stopped waiting/);
  assert.equal(hits, 1, 'not retried');
  assert.equal(c.breakers.state(`testdam ${new URL(base).host}`), 'closed', 'not the upstream failing: one failure would have opened it');

  // A 503 would be retried, but the call is abandoned during the back-off: the retry does not start.
  hits = 0;
  handler = (_q, r) => r.writeHead(503).end('busy');
  const later = new AbortController();
  const c2 = new UpstreamClient('testdam', { ...DEFAULT_UPSTREAM, allowHosts: ['127.0.0.1'], retries: 3 }, { clock: new ManualClock(), sleep: async () => later.abort(), random: () => 0.5 });
  const busy = await rejects(c2.during(later.signal).text({ method: 'GET', url: `${base}/busy` }));
  assert.equal(busy.status, 503);
  assert.equal(hits, 1);

  // The client itself, and views of other calls, are unaffected.
  handler = (_q, r) => r.writeHead(200).end('fine');
  assert.equal((await c.text({ method: 'GET', url: `${base}/ok` })).text, 'fine');
  assert.equal((await c.during(new AbortController().signal).text({ method: 'GET', url: `${base}/ok` })).text, 'fine');
  await c.close();
  await c2.close();
});

test('expected answers (a DAM\'s 404, 501) are not logged as errors; a recognised outage is a warning without stack; only a crash logs its stack', async () => {
  const lines: any[] = [];
  const app = Fastify({ logger: { level: 'info', stream: { write: (l: string) => void lines.push(JSON.parse(l)) } } });
  registerErrorHandling(app);
  const rejected: unknown[] = [];
  app.addHook('onResponse', async (req) => void rejected.push(rejections.get(req)));
  const throws: Record<string, () => never> = {
    '/not-supported': () => { throw integrationError('integration-not-supported', 'testdam', 'PROPPATCH /x answered 501: Not Implemented'); },
    '/not-found': () => { throw integrationError('integration-not-found', 'testdam', 'PROPFIND /x answered 404: Not Found'); },
    '/down': () => { throw integrationError('integration-unavailable', 'testdam', 'GET /x answered 502: Bad Gateway', { status: 502 }); },
    '/crash': () => { throw new TypeError('cannot read x of undefined'); },
  };
  for (const [url, f] of Object.entries(throws)) app.get(url, async () => f());
  const levelOf = async (url: string) => {
    lines.length = 0;
    await app.inject({ method: 'GET', url });
    return lines.filter((l) => /request (failed|rejected)/.test(l.msg));
  };
  // Expected answers get no line of their own: their code rides on the request's one line at info
  // (src/app.ts reads it from `rejections`).
  for (const url of ['/not-supported', '/not-found']) {
    rejected.length = 0;
    assert.deepEqual(await levelOf(url), [], `${url} is not logged as a failure`);
    assert.equal((rejected[0] as { code: string }).code, url === '/not-found' ? 'integration-not-found' : 'integration-not-supported');
  }
  const [down] = await levelOf('/down');
  assert.equal(down.level, 40, 'a DAM outage is a warning');
  assert.equal(down.details, 'GET /x answered 502: Bad Gateway');
  assert.doesNotMatch(JSON.stringify(down), /"stack"|\n\s+at /, 'no stack trace');
  const [crash] = await levelOf('/crash');
  assert.equal(crash.level, 50);
  assert.match(crash.err.stack, /TypeError: cannot read x of undefined/);
  await app.close();
});
