/**
 * Thumbnail floods (issue 28, item 1), attacked as the reviewer did: a real hub process serving the
 * WebDAV connector, a hub user who points it at a server they control (test/helpers/flood-dav.ts,
 * large originals, answers held open at will), lists the folder, and then asks for many hub-made
 * thumbnails at once, abandons them, or hammers one link. What the upstream server saw (GETs,
 * bytes, answers closed early) and the hub's temp directory are the evidence; nothing is timed.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import { after, test } from 'node:test';
import { startConnectorHub, type ConnectorHub } from '../helpers/connector-process.js';
import { startFloodDav, type FloodDav } from '../helpers/flood-dav.js';

const MiB = 1024 * 1024;
const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

async function setUp(dav: { files: number; size: number; hold?: boolean }, env: NodeJS.ProcessEnv = {}): Promise<{ dav: FloodDav; hub: ConnectorHub }> {
  const d = await startFloodDav(dav);
  cleanups.push(() => d.close());
  const hub = await startConnectorHub(env);
  cleanups.push(() => hub.stop());
  return { dav: d, hub };
}

interface Answer { status: number; headers: http.IncomingHttpHeaders; body: Buffer }

/** A GET the test can abandon: `leave()` destroys the request (the client's socket closes). */
function request(url: string): { done: Promise<Answer | null>; sent: Promise<void>; leave(): void } {
  let req!: http.ClientRequest;
  const done = new Promise<Answer | null>((resolve) => {
    req = http.get(url, { agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', () => resolve(null));
    });
    req.on('error', () => resolve(null));
  });
  const sent = new Promise<void>((r) => req.once('finish', () => r()));
  return { done, sent, leave: () => req.destroy() };
}

/** The damhub-thumb-* production folders in the hub's TMPDIR now. */
function productions(hub: ConnectorHub): number {
  return fs.readdirSync(hub.tmp).filter((n) => n.startsWith('damhub-thumb-')).length;
}

test('thumbnail flood: past the hub-wide bound the answer is 503 + Retry-After before any upstream request; temp files stay within the bound', async () => {
  const { dav, hub } = await setUp({ files: 8, size: 8 * MiB, hold: true }, { DAMHUB_ORIGINAL_READS: '2', DAMHUB_ORIGINAL_READS_QUEUE: '1' });
  const s = await hub.session('mallory', dav.url);
  assert.equal(s.assets.length, 8);
  // Two productions run (their upstream answers held after the first chunk), one waits for a slot.
  const running = [request(s.assets[0]!.thumbnailUrl), request(s.assets[1]!.thumbnailUrl)];
  await dav.whenOpen(2);
  const waiting = request(s.assets[2]!.thumbnailUrl);
  await waiting.sent;
  // Five more at once: refused, or (before the fix) each one more upstream read of 8 MiB.
  const flood = s.assets.slice(3).map((a) => request(a.thumbnailUrl));
  const refused = await Promise.race([Promise.all(flood.map((f) => f.done)), dav.whenOpen(3).then(() => null)]);
  assert.equal(dav.stats.gets, 2, 'no upstream request beyond the bound');
  assert.ok(refused, 'the flood was answered');
  for (const a of refused) {
    assert.equal(a!.status, 503);
    assert.equal(a!.headers['retry-after'], '1');
    assert.equal(JSON.parse(a!.body.toString('utf8')).error.code, 'hub-unavailable');
  }
  assert.ok(productions(hub) <= 2, `at most 2 productions hold temp files (${productions(hub)})`);
  assert.ok(hub.tempUsage().bytes <= 2 * 8 * MiB);
  // The asset detail's metadata head read needs a slot too: with none free it is skipped (the
  // asset as listed), not one more upstream read.
  const detail = await fetch(`${hub.url}/api/v1/assets/asset/${encodeURIComponent(s.assets[7]!.id)}`, { headers: s.headers });
  assert.equal(detail.status, 200);
  assert.equal((await detail.json() as { name: string }).name, s.assets[7]!.name);
  assert.equal(dav.stats.gets, 2, 'no head read beyond the bound');
  // Released: the two running ones end with their thumbnails, then the waiting one gets its turn.
  dav.release();
  for (const r of [...running, waiting]) {
    const a = await r.done;
    assert.equal(a?.status, 200);
    assert.equal(a?.headers['content-type'], 'image/jpeg');
    assert.equal(a?.headers['x-damhub-thumbnail'], 'made');
  }
  assert.equal(dav.stats.gets, 3);
  assert.ok(hub.tempUsage().bytes <= 2 * 8 * MiB);
  // With slots free again the same detail reads the head of the original (its 64 × 48 pixels).
  const again = await fetch(`${hub.url}/api/v1/assets/asset/${encodeURIComponent(s.assets[7]!.id)}`, { headers: s.headers });
  assert.equal((await again.json() as { xSizePx?: number }).xSizePx, 64);
  assert.equal(dav.stats.gets, 4, 'one ranged head read');
});

// Before the fix the abandoned production kept its upstream answer open (held here) until the
// thumbnail time budget or the connector's idle body timeout, both set out of reach here: this
// test then ends at its own timeout.
test('an abandoned thumbnail aborts its upstream read; a second waiter for the same thumbnail keeps it alive', { timeout: 60_000 }, async () => {
  const size = 32 * MiB;
  const { dav, hub } = await setUp({ files: 3, size, hold: true }, { DAMHUB_THUMBNAIL_TIMEOUT: '600000', DAMHUB_CONNECTOR_TIMEOUT_MS: '600000' });
  const s = await hub.session('mallory', dav.url);
  const [lone, shared, file] = s.assets;

  // One client, gone after the production started: the upstream answer is closed, not read on.
  const a = request(lone!.thumbnailUrl);
  await dav.whenOpen(1);
  a.leave();
  await dav.whenIdle();
  assert.equal(dav.stats.closedEarly, 1, 'the upstream read was aborted');
  assert.equal(dav.stats.finished, 0);
  assert.ok(dav.sentOf(dav.files[0]!) < size / 4, `the upstream sent ${dav.sentOf(dav.files[0]!)} of ${size} bytes`);

  // Two clients for one thumbnail: one production; the one that leaves does not end it.
  const stay = request(shared!.thumbnailUrl);
  await dav.whenOpen(1);
  const leaver = request(shared!.thumbnailUrl);
  await leaver.sent;
  await fetch(`${hub.url}/healthz`).catch(() => undefined);
  leaver.leave();
  assert.equal(await leaver.done, null);
  dav.release();
  const made = await stay.done;
  assert.equal(made?.status, 200);
  assert.equal(made?.headers['x-damhub-thumbnail'], 'made');
  assert.equal(dav.stats.gets, 2, 'one upstream read for both waiters');
  assert.equal(dav.stats.finished, 1, 'the shared production read its original to the end');

  // A relayed download the client abandons: the upstream answer is closed with it.
  const d = request(file!.downloadUrl);
  const before = dav.stats.closedEarly;
  await dav.whenOpen(1);
  d.leave();
  await dav.whenIdle();
  assert.equal(dav.stats.closedEarly, before + 1, 'the relayed upstream download was aborted');
});

test('media links are rate-limited per link and per partner+user: 429 with Retry-After and RateLimit-*', async () => {
  const { dav, hub } = await setUp({ files: 6, size: 4096 }, { DAMHUB_MEDIA_RATE_LIMIT_PER_LINK: '3', DAMHUB_MEDIA_RATE_LIMIT_PER_USER: '5' });
  const s = await hub.session('mallory', dav.url);
  const get = async (url: string) => {
    const r = await fetch(url);
    await r.arrayBuffer();
    return r;
  };
  // One link, again and again: three pass, the fourth is refused.
  for (let i = 0; i < 3; i++) {
    const r = await get(s.assets[0]!.thumbnailUrl);
    assert.equal(r.status, 200);
    assert.ok(r.headers.get('ratelimit-limit'), 'RateLimit-* on an allowed answer');
  }
  const perLink = await get(s.assets[0]!.thumbnailUrl);
  assert.equal(perLink.status, 429);
  assert.ok(Number(perLink.headers.get('retry-after')) >= 1);
  assert.equal(perLink.headers.get('ratelimit-limit'), '3');
  assert.equal(perLink.headers.get('ratelimit-remaining'), '0');
  // Other links of the same user (a download among them) share the user's budget of five.
  assert.equal((await get(s.assets[1]!.thumbnailUrl)).status, 200);
  assert.equal((await get(s.assets[2]!.downloadUrl)).status, 200);
  const perUser = await get(s.assets[3]!.thumbnailUrl);
  assert.equal(perUser.status, 429);
  assert.equal(perUser.headers.get('ratelimit-limit'), '5');
  const refused = await fetch(s.assets[4]!.downloadUrl);
  assert.equal(refused.status, 429, 'downloads count too');
  assert.equal((await refused.json() as { error: { code: string } }).error.code, 'hub-rate-limited');
  // Another hub user of the same partner has budgets of their own.
  const other = await hub.session('trent', dav.url);
  assert.equal((await get(other.assets[3]!.thumbnailUrl)).status, 200);
});
