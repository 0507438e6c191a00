/**
 * The kit's thumbnail parts on their own: the disk cache (LRU by bytes, single-flight, a full disk
 * and an unwritable directory degrading to no caching, a restart keeping its files), the cache key
 * (two accounts never meet on one key), the capped streamed read of an upstream body (over the cap,
 * never ending, not an image, abandoned), the waiters of one production and the decode of untrusted "images" in the image pool (not an image, corrupt, huge).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { after, test } from 'node:test';
import zlib from 'node:zlib';
import sharp from 'sharp';
import { ImageJobError, ImagePool } from '../../../src/images/pool.js';
import { isHubError } from '../../../src/errors.js';
import { ThumbCache } from '../../../src/providers/kit/thumb-cache.js';
import { cachedThumbnail, credentialScope, looksRaster, renderUpstream, spoolCapped, thumbnailKey } from '../../../src/providers/kit/thumbnails.js';
import type { UpstreamResponse } from '../../../src/providers/kit/http.js';
import { tempDir } from '../../helpers/hub.js';

const pool = new ImagePool({ size: 1, queueMax: 4, timeoutMs: 10_000 });
const images = { pool, budget: 64_000_000, timeoutMs: 10_000 };
after(() => pool.close());

const key = (n: string) => thumbnailKey('webdav', 'scope', { p: n });
const bytes = (n: number, fill = 1) => Buffer.alloc(n, fill);
/** A PNG that is all header: IHDR declaring `w`×`h`, then IEND (what a decompression bomb shows first). */
function pngHeader(w: number, h: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(zlib.crc32(body));
    return Buffer.concat([len, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', zlib.deflateSync(Buffer.alloc(64))), chunk('IEND', Buffer.alloc(0))]);
}
const upstream = (body: Readable, headers: Record<string, string> = {}, status = 200): UpstreamResponse => ({ status, headers, body });

test('LRU by bytes: the least recently used goes first, and the total stays within the budget', async () => {
  const dir = tempDir();
  const c = new ThumbCache(dir, 250);
  assert.ok(await c.put(key('a'), bytes(100, 1)));
  assert.ok(await c.put(key('b'), bytes(100, 2)));
  assert.ok(await c.get(key('a')), 'a is now the most recently used');
  assert.ok(await c.put(key('c'), bytes(100, 3)));
  assert.equal(await c.get(key('b')), null, 'b was the least recently used');
  assert.deepEqual((await c.get(key('a')))?.[0], 1);
  assert.deepEqual((await c.get(key('c')))?.[0], 3);
  assert.equal(c.bytes, 200);
  assert.equal(c.stats.evictions, 1);
  // The evicted file is gone from disk too (removal is asynchronous).
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(fs.readdirSync(dir).filter((f) => f.endsWith('.jpg')).length, 2);
  assert.equal(await c.put(key('big'), bytes(300)), false, 'one thumbnail over the whole budget is not kept');
  // A restart finds the files it left and their sizes.
  const again = new ThumbCache(dir, 250);
  assert.equal(again.bytes, 200);
  assert.ok(await again.get(key('c')));
});

test('files are created private', async () => {
  const dir = path.join(tempDir(), 'thumbnails');
  const c = new ThumbCache(dir, 1000);
  await c.put(key('a'), bytes(10));
  assert.equal(fs.statSync(dir).mode & 0o777, 0o700);
  assert.equal(fs.statSync(path.join(dir, `${key('a')}.jpg`)).mode & 0o777, 0o600);
});

test('single-flight: ten concurrent requests for one cold thumbnail make one production', async () => {
  const c = new ThumbCache(tempDir(), 10_000);
  let produced = 0;
  const produce = async () => {
    produced++;
    await new Promise((r) => setTimeout(r, 30));
    return { kind: 'image' as const, bytes: bytes(50, 7), cached: false };
  };
  const all = await Promise.all(Array.from({ length: 10 }, () => cachedThumbnail(c, key('x'), produce)));
  assert.equal(produced, 1);
  assert.ok(all.every((t) => t.kind === 'image' && t.bytes[0] === 7));
  const later = await cachedThumbnail(c, key('x'), produce);
  assert.equal(produced, 1);
  assert.ok(later.kind === 'image' && later.cached);
  // A different key is its own production.
  await cachedThumbnail(c, key('y'), produce);
  assert.equal(produced, 2);
});

test('a full disk serves without caching and leaves no partial file', async () => {
  const dir = tempDir();
  const c = new ThumbCache(dir, 10_000, {
    async writeFile(file, data) {
      fs.writeFileSync(file, data.subarray(0, 3)); // a partial write, then the disk is full
      throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
    },
  });
  const t = await cachedThumbnail(c, key('a'), async () => ({ kind: 'image', bytes: bytes(40), cached: false }));
  assert.ok(t.kind === 'image' && t.bytes.length === 40, 'the thumbnail is still served');
  assert.equal(c.stats.writeFailures, 1);
  assert.equal(c.size, 0);
  assert.deepEqual(fs.readdirSync(dir), []);
});

test('an unwritable cache directory degrades to no cache, never an error', async () => {
  const file = path.join(tempDir(), 'not-a-dir');
  fs.writeFileSync(file, 'x');
  const c = new ThumbCache(path.join(file, 'thumbnails'), 10_000);
  let produced = 0;
  const produce = async () => ({ kind: 'image' as const, bytes: bytes(10, ++produced), cached: false });
  assert.equal((await cachedThumbnail(c, key('a'), produce)).kind, 'image');
  assert.equal((await cachedThumbnail(c, key('a'), produce)).kind, 'image');
  assert.equal(produced, 2, 'nothing cached');
});

test('a stale production (the file changed since listing) is served but not stored', async () => {
  const c = new ThumbCache(tempDir(), 10_000);
  const t = await cachedThumbnail(c, key('a'), async () => ({ kind: 'image', bytes: bytes(10), cached: false, stale: true }));
  assert.equal(t.kind, 'image');
  assert.equal(c.size, 0);
});

test('the key: two accounts of one server, or two versions of one file, never share a key', () => {
  const alice = credentialScope({ url: 'https://dav.example/', user: 'alice', pass: 'a' });
  const bob = credentialScope({ url: 'https://dav.example/', user: 'bob', pass: 'b' });
  assert.notEqual(alice, bob);
  assert.equal(credentialScope({ user: 'alice', url: 'https://dav.example/', pass: 'a' }), alice, 'independent of property order');
  const item = { p: '/a.jpg', '@v': 'e1' };
  assert.notEqual(thumbnailKey('webdav', alice, item), thumbnailKey('webdav', bob, item));
  assert.notEqual(thumbnailKey('webdav', alice, item), thumbnailKey('webdav', alice, { ...item, '@v': 'e2' }));
  assert.notEqual(thumbnailKey('webdav', alice, item), thumbnailKey('s3', alice, item));
  assert.match(thumbnailKey('webdav', alice, item), /^[0-9a-f]{64}$/);
});

test('spoolCapped: the body goes to a file chunk by chunk; over the cap, never ending, not an image, or abandoned: cut', async () => {
  const dir = tempDir();
  let n = 0;
  const file = () => path.join(dir, `f${n++}`);
  const endless = new PassThrough();
  const drip = setInterval(() => endless.write(bytes(10)), 10);
  const head = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0, 0, 0, 0, 0, 0, 0]);
  endless.write(head);
  const t0 = Date.now();
  await assert.rejects(spoolCapped(endless, file(), 1_000_000, 200), /did not end within 200 ms/);
  clearInterval(drip);
  assert.ok(Date.now() - t0 < 2000);
  assert.ok(endless.destroyed, 'the upstream body is released');
  const big = Readable.from((function* () { yield head; for (let i = 0; i < 1000; i++) yield bytes(1024); })());
  await assert.rejects(spoolCapped(big, file(), 10_000, 5000), /over the cap of 10000 bytes/);
  // Sniffed as it arrives: a text body is refused at its first chunk, the rest never pulled.
  let pulled = 0;
  const text = Readable.from((function* () { for (let i = 0; i < 1000; i++) { pulled++; yield Buffer.from('<html>'.repeat(200)); } })());
  await assert.rejects(spoolCapped(text, file(), 10_000_000, 5000), /not a raster image/);
  assert.ok(pulled < 5, `only the first chunks were pulled (${pulled})`);
  // A client that left: the body is destroyed and the signal's reason thrown.
  const gone = new AbortController();
  const slow = new PassThrough();
  slow.write(head);
  const spooling = spoolCapped(slow, file(), 1_000_000, 5000, gone.signal);
  gone.abort(new Error('client left'));
  await assert.rejects(spooling, /client left/);
  assert.ok(slow.destroyed, 'the abandoned body is destroyed (the upstream request with it)');
  const f = file();
  assert.equal(await spoolCapped(Readable.from([head, bytes(5)]), f, 17, 1000), 17);
  assert.equal(fs.statSync(f).size, 17);
  assert.equal(fs.statSync(f).mode & 0o777, 0o600, 'private');
});

test('ThumbCache.once: a production runs while one caller still waits, and is aborted when the last one leaves', async () => {
  const c = new ThumbCache(null, 0);
  let aborted: unknown = null;
  let finish: (v: string) => void = () => undefined;
  const produce = (signal: AbortSignal) => new Promise<string>((resolve, reject) => {
    finish = resolve;
    const stop = () => {
      aborted = signal.reason;
      reject(signal.reason);
    };
    if (signal.aborted) stop();
    else signal.addEventListener('abort', stop);
  });
  const a = new AbortController();
  const b = new AbortController();
  const first = c.once(key('k'), produce, a.signal);
  const second = c.once(key('k'), produce, b.signal);
  a.abort(new Error('a left'));
  await assert.rejects(first, /a left/);
  assert.equal(aborted, null, 'the second waiter keeps the production alive');
  finish('made');
  assert.equal(await second, 'made', 'the waiter that stayed gets the result');
  const x = new AbortController();
  const y = new AbortController();
  const p1 = c.once(key('m'), produce, x.signal);
  const p2 = c.once(key('m'), produce, y.signal);
  x.abort(new Error('x left'));
  y.abort(new Error('y left'));
  await assert.rejects(p1, /x left/);
  await assert.rejects(p2, /y left/);
  assert.match(String(aborted), /y left/, 'the last waiter leaving aborts the production');
  assert.equal(c.producing, 0);
});

test('untrusted upstream bytes: not an image, corrupt, huge, declared too long: a generic icon; a good one: a JPEG', async () => {
  const budget = { maxBytes: 1_000_000, timeoutMs: 2000 };
  const icon = async (body: Buffer, headers: Record<string, string> = {}) => {
    const t = await renderUpstream(upstream(Readable.from([body]), headers), images, budget);
    assert.equal(t.kind, 'icon');
    return t.kind === 'icon' ? t.reason : '';
  };
  assert.match(await icon(Buffer.from('<html>sign in</html>'.repeat(5))), /not a raster image/);
  const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>');
  assert.equal(looksRaster(svg), false, 'SVG from upstream is never rasterised');
  const jpeg = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#123456' } }).jpeg().toBuffer();
  assert.match(await icon(Buffer.concat([jpeg.subarray(0, 20), bytes(500, 0x42)])), /decoded|image/);
  // A few hundred bytes declaring 30000×30000 pixels: refused from its header, never decoded.
  assert.match(await icon(pngHeader(30000, 30000)), /over the decode budget/);
  assert.match(await icon(jpeg, { 'content-length': '5000000' }), /over the thumbnail cap/);
  const good = await renderUpstream(upstream(Readable.from([jpeg])), images, budget);
  assert.equal(good.kind, 'image');
  if (good.kind === 'image') assert.deepEqual(await sharp(good.bytes).metadata().then((m) => [m.format, m.width]), ['jpeg', 64]);
});

test('a saturated image pool: 503 hub-unavailable with Retry-After, nothing cached; the next request makes and stores the thumbnail', async () => {
  const cache = new ThumbCache(tempDir(), 1_000_000);
  const jpeg = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#654321' } }).jpeg().toBuffer();
  const budget = { maxBytes: 1_000_000, timeoutMs: 2000 };
  // The pool's own refusal (its queue full: test/images/image-pool.test.ts) as the thumbnail path meets it.
  let runs = 0;
  const busy = { ...images, pool: { run: async () => { runs++; throw new ImageJobError('busy', '1 images are being decoded and 0 are waiting'); } } as unknown as ImagePool };
  const k = key('busy.jpg');
  await assert.rejects(cachedThumbnail(cache, k, () => renderUpstream(upstream(Readable.from([jpeg])), busy, budget)),
    (e: unknown) => isHubError(e) && e.code === 'hub-unavailable' && e.status === 503 && e.headers?.['retry-after'] === '1' && /being decoded/.test(e.message + String(e.details)));
  assert.equal(runs, 1);
  assert.equal(await cache.get(k), null, 'a refusal is never cached');
  const made = await cachedThumbnail(cache, k, () => renderUpstream(upstream(Readable.from([jpeg])), images, budget));
  assert.equal(made.kind, 'image');
  assert.ok(await cache.get(k), 'the next production is stored');
});
