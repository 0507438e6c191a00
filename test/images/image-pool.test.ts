/**
 * Untrusted images are decoded under a budget (issue 17, item 1): the decode budget computed from
 * the header per format, the pool of child processes (its cap, its queue, the deadline and the
 * abort that kill a decode), search by image refusing costly references with a 413 and decoding
 * the reference once, and the library indexing a hostile file without renditions.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import zlib from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { decodeCost } from '../../src/images/budget.js';
import { ImageJobError, ImagePool } from '../../src/images/pool.js';
import { ManualClock } from '../../src/clock.js';
import { LibraryIndex } from '../../src/providers/library/index/sqlite.js';
import { Renditions } from '../../src/providers/library/renditions.js';
import { assetIdFor, LibraryScanner } from '../../src/providers/library/scanner.js';
import { assertError, tempDir } from '../helpers/hub.js';
import { startLibraryHub, writeFiles, type LibraryHarness } from '../helpers/library.js';
import { sceneJpeg } from '../helpers/scenes.js';
import { alive } from '../helpers/process.js';

const api = '/api/v1';
const dataUri = (b: Buffer, type = 'image/png') => `data:${type};base64,${b.toString('base64')}`;
const flat = (w: number, h: number) => sharp({ create: { width: w, height: h, channels: 3, background: '#7f8f9f' } });
/** A flat 2000×2000 AVIF: 850 bytes, ~0.2 s of one core to decode (made once). */
let avif2000: Promise<Buffer> | null = null;
const costlyAvif = () => (avif2000 ??= flat(2000, 2000).avif({ effort: 0 }).toBuffer());

/** A PNG whose header declares width × height at a bit depth, with one tiny IDAT: cheap to send. */
function pngDeclaring(width: number, height: number, depth = 8): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(zlib.crc32(td));
    return Buffer.concat([len, td, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = depth;
  ihdr[9] = 2; // RGB
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', zlib.deflateSync(Buffer.alloc(1024))), chunk('IEND', Buffer.alloc(0))]);
}

/** A GIF whose screen and first frame declare width × height, with a token of image data. */
function gifDeclaring(width: number, height: number): Buffer {
  const u16 = (n: number) => [n & 0xff, n >> 8];
  return Buffer.from([
    ...Buffer.from('GIF89a'), ...u16(width), ...u16(height), 0x80, 0, 0, // 2-colour global table
    0, 0, 0, 255, 255, 255,
    0x2c, ...u16(0), ...u16(0), ...u16(width), ...u16(height), 0,
    2, 2, 0x44, 0x01, 0, // LZW: clear, 0, end
    0x3b,
  ]);
}

/** A TIFF of `n` 1×1 pages: every header read walks all n directories (~12 µs each). */
function tiffWithDirectories(n: number): Buffer {
  const entries = 8, size = 2 + entries * 12 + 4;
  const buf = Buffer.alloc(8 + n * size + 4);
  buf.write('II', 0);
  buf.writeUInt16LE(42, 2);
  buf.writeUInt32LE(8, 4);
  const pixel = 8 + n * size;
  for (let i = 0; i < n; i++) {
    let o = 8 + i * size;
    buf.writeUInt16LE(entries, o);
    o += 2;
    for (const [tag, type, value] of [[256, 3, 1], [257, 3, 1], [258, 3, 8], [259, 3, 1], [262, 3, 1], [273, 4, pixel], [278, 3, 1], [279, 4, 1]] as const) {
      buf.writeUInt16LE(tag, o);
      buf.writeUInt16LE(type, o + 2);
      buf.writeUInt32LE(1, o + 4);
      if (type === 3) buf.writeUInt16LE(value, o + 8);
      else buf.writeUInt32LE(value, o + 8);
      o += 12;
    }
    buf.writeUInt32LE(i + 1 < n ? 8 + (i + 1) * size : 0, o);
  }
  return buf;
}

describe('the decode budget, from the header', () => {
  test('JPEG counts what shrink-on-load decodes; PNG, GIF and AVIF count every pixel, weighted by format', () => {
    // 8000×8000 JPEG for a 40 px output: decoded at 1/8 per axis.
    assert.equal(decodeCost({ format: 'jpeg', width: 8000, height: 8000 }, 40).decodedPixels, 1000 * 1000);
    // Shrink-on-load never goes below the target: a 1024 px preview of a 4000 px JPEG is decoded at 1/2.
    assert.equal(decodeCost({ format: 'jpeg', width: 4000, height: 3000 }, 1024).decodedPixels, 2000 * 1500);
    assert.equal(decodeCost({ format: 'png', width: 8000, height: 8000 }, 40).cost, 64e6);
    assert.equal(decodeCost({ format: 'png', width: 4000, height: 4000, depth: 'ushort' }, 40).cost, 32e6);
    assert.equal(decodeCost({ format: 'gif', width: 4000, height: 4000 }, 40).cost, 32e6);
    assert.equal(decodeCost({ format: 'heif', width: 4000, height: 4000 }, 40).cost, 64e6);
    // An animated image: only the first page is decoded, so only it counts.
    assert.equal(decodeCost({ format: 'gif', width: 100, height: 10_000, pageHeight: 100, pages: 100 }, 40).decodedPixels, 100 * 100);
  });
});

describe('the image pool', () => {
  let avif: Buffer;
  before(async () => {
    avif = await costlyAvif();
  });
  const job = (input: Buffer) => ({ input, outputs: [{ width: 40, height: 40, fit: 'fill' as const }], budget: 1e12, maxPixels: 1e12, failOn: 'error' as const });

  test('decodes run in child processes, at most `size` at once; N+1 concurrent jobs all finish', async () => {
    const pool = new ImagePool({ size: 2, queueMax: 8, timeoutMs: 60_000 });
    try {
      const results = await Promise.all([1, 2, 3].map(() => pool.analyse(job(avif))));
      assert.ok(results.every((r) => r.outputs[0]!.length === 40 * 40 * 3 && r.format === 'heif'));
      assert.equal(pool.peakRunning, 2, 'never more than 2 decodes at once');
      assert.equal(pool.jobs, 3);
      assert.ok(pool.pids().length <= 2 && !pool.pids().includes(process.pid));
    } finally {
      await pool.close();
    }
  });

  test('an animated image: only its first frame is decoded (and counted)', async () => {
    // 25 frames of 200×200, the first black, the others increasingly red.
    const frames = await Promise.all(Array.from({ length: 25 }, (_, i) => flat(200, 200).linear([0, 0, 0], [i * 10, 0, 0]).png().toBuffer()));
    const gif = await sharp(frames, { join: { animated: true } }).gif().toBuffer();
    assert.equal((await sharp(gif).metadata()).pages, 25);
    const pool = new ImagePool({ size: 1, queueMax: 1, timeoutMs: 60_000 });
    try {
      // A budget of one 200×200 GIF frame (×2 for GIF): the 25 frames together would be far over it.
      const r = await pool.analyse({ ...job(gif), budget: 200 * 200 * 2 });
      assert.deepEqual([r.width, r.height], [200, 200]);
      assert.ok(r.outputs[0]!.every((v, i) => i % 3 !== 0 || v < 8), 'every pixel is the first (black) frame');
    } finally {
      await pool.close();
    }
  });

  test('a full queue refuses at once (busy) instead of piling up', async () => {
    const pool = new ImagePool({ size: 1, queueMax: 1, timeoutMs: 60_000 });
    try {
      const running = pool.analyse(job(avif));
      const waiting = pool.analyse(job(avif));
      await assert.rejects(pool.analyse(job(avif)), (e: ImageJobError) => e.kind === 'busy');
      await Promise.all([running, waiting]);
    } finally {
      await pool.close();
    }
  });

  test('a decode past its deadline is killed: its process is gone and the slot serves the next job', async () => {
    const pool = new ImagePool({ size: 1, queueMax: 1, timeoutMs: 60_000 });
    try {
      await pool.analyse(job(await flat(8, 8).png().toBuffer())); // warm: the deadline counts decoding only
      const [pid] = pool.pids();
      await assert.rejects(pool.analyse(job(avif), { timeoutMs: 5 }), (e: ImageJobError) => e.kind === 'timeout' && /within 5 ms/.test(e.message));
      assert.equal(alive(pid!), false, 'the decoder process was killed');
      assert.equal(pool.running, 0);
      const r = await pool.analyse(job(await flat(8, 8).png().toBuffer()));
      assert.equal(r.width, 8);
      assert.notEqual(pool.pids()[0], pid, 'a fresh process');
    } finally {
      await pool.close();
    }
  });

  test('an aborted job (the client went away) kills its decode; a waiting one leaves the queue', async () => {
    const pool = new ImagePool({ size: 1, queueMax: 4, timeoutMs: 60_000 });
    try {
      await pool.analyse(job(await flat(8, 8).png().toBuffer()));
      const [pid] = pool.pids();
      const a = new AbortController(), b = new AbortController();
      const running = pool.analyse(job(avif), { signal: a.signal });
      const waiting = pool.analyse(job(avif), { signal: b.signal });
      b.abort();
      await assert.rejects(waiting, (e: ImageJobError) => e.kind === 'aborted');
      assert.equal(pool.queued, 0);
      a.abort();
      await assert.rejects(running, (e: ImageJobError) => e.kind === 'aborted');
      assert.equal(alive(pid!), false);
      assert.equal(pool.running, 0);
    } finally {
      await pool.close();
    }
  });
});

describe('search by image under the decode budget', () => {
  let lib: LibraryHarness;
  before(async () => {
    // A budget of 4 M pixel-equivalents makes small test images "costly" (the default is 64 M).
    lib = await startLibraryHub({ 'a/scene.jpg': await sceneJpeg(1) }, { config: { imageDecodeBudget: 4_000_000, imagePoolQueue: 2 } });
  });
  after(() => lib.t.close());
  const search = (ref: string) => lib.t.app.inject({ method: 'POST', url: `${api}/assets/search`, headers: lib.headers, payload: { dataBase64: ref } });

  test('costly AVIF, 16-bit PNG and GIF references are 413 with the reason, before decoding; the same sizes in cheap formats pass', async () => {
    const avif = await flat(1100, 1100).avif({ effort: 0 }).toBuffer(); // 1.21 MP × 4 (AVIF) = 4.84 M
    const body = assertError(await search(dataUri(avif, 'image/avif')), 'hub-payload-too-large', 413);
    assert.match(body.error.details, /HEIF image declares 1100×1100 pixels.*decode budget of 4 M/);
    assert.doesNotMatch(JSON.stringify(body), /at .*\.js:\d+/, 'no stack trace');
    // Same size as an 8-bit PNG (1.21 M): within the budget.
    assert.equal((await search(dataUri(await flat(1100, 1100).png().toBuffer()))).statusCode, 200);
    // Header-only files: refused from what they declare (their few bytes would not even decode).
    assert.match(assertError(await search(dataUri(pngDeclaring(1500, 1500, 16))), 'hub-payload-too-large', 413).error.details, /PNG image declares 1500×1500/);
    assert.match(assertError(await search(dataUri(gifDeclaring(1500, 1500), 'image/gif')), 'hub-payload-too-large', 413).error.details, /GIF image declares 1500×1500/);
    // A 16 MP JPEG is decoded at 1/8 per axis for the descriptor: 0.25 M, within the budget.
    const jpeg = await flat(4000, 4000).jpeg().toBuffer();
    assert.equal((await search(dataUri(jpeg, 'image/jpeg'))).statusCode, 200);
  });

  test('the reference is decoded once per search', async () => {
    const pool = lib.t.hub.imagePool;
    const before = pool.jobs;
    const res = await search(dataUri(await sceneJpeg(1), 'image/jpeg'));
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().assets[0]?.id, assetIdFor('a/scene.jpg'));
    assert.equal(pool.jobs - before, 1);
  });

  test('image decoding at capacity is 503 hub-unavailable with Retry-After, not a pile-up', async () => {
    const pool = lib.t.hub.imagePool;
    const avif = await costlyAvif();
    const big = { input: avif, outputs: [{ width: 40, height: 40, fit: 'fill' as const }], budget: 1e12, maxPixels: 1e12, failOn: 'error' as const };
    // Fill both processes and the whole queue (2 here) directly, then ask for one more decode.
    const held = Array.from({ length: pool.opts.size + pool.opts.queueMax }, () => pool.analyse(big).catch(() => undefined));
    const res = await search(dataUri(await flat(16, 16).png().toBuffer()));
    const body = assertError(res, 'hub-unavailable', 503);
    assert.equal(res.headers['retry-after'], '1');
    assert.match(body.error.details, /image decoding is at capacity/);
    await Promise.all(held);
  });
});

describe('a reference decode past its deadline', () => {
  let lib: LibraryHarness;
  before(async () => {
    lib = await startLibraryHub({ 'a/scene.jpg': await sceneJpeg(1) }, { config: { imageDecodeTimeoutMs: 5, imagePoolSize: 1 } });
  });
  after(() => lib.t.close());

  test('is killed: 413 naming the deadline, the decoder process is gone', async () => {
    const pool = lib.t.hub.imagePool;
    await pool.analyse({ input: await flat(8, 8).png().toBuffer(), outputs: [{ width: 8, height: 8, fit: 'fill' }], budget: 1e9, maxPixels: 1e9, failOn: 'error' }, { timeoutMs: 60_000 });
    const [pid] = pool.pids();
    const avif = await costlyAvif(); // within the 64 M budget
    const res = await lib.t.app.inject({ method: 'POST', url: `${api}/assets/search`, headers: lib.headers, payload: { dataBase64: dataUri(avif, 'image/avif') } });
    const body = assertError(res, 'hub-payload-too-large', 413);
    assert.match(body.error.details, /not decoded within 5 ms/);
    assert.equal(alive(pid!), false);
    assert.equal(pool.running, 0);
  });
});

describe('a client that goes away', () => {
  let lib: LibraryHarness;
  before(async () => {
    lib = await startLibraryHub({ 'a/scene.jpg': await sceneJpeg(1) }, { config: { imagePoolSize: 1 } });
  });
  after(() => lib.t.close());

  test('stops the decode of its reference: the decoder process is killed, the slot is free', async () => {
    const pool = lib.t.hub.imagePool;
    await pool.analyse({ input: await flat(8, 8).png().toBuffer(), outputs: [{ width: 8, height: 8, fit: 'fill' }], budget: 1e9, maxPixels: 1e9, failOn: 'error' });
    const [pid] = pool.pids();
    const address = await lib.t.app.listen({ host: '127.0.0.1', port: 0 });
    // Within the default budget (9 MP × 4 = 36 M) and well over a second of decoding.
    const avif = await flat(3000, 3000).avif({ effort: 0 }).toBuffer();
    const body = JSON.stringify({ dataBase64: dataUri(avif, 'image/avif') });
    const req = http.request(`${address}${api}/assets/search`, { method: 'POST', headers: { ...lib.headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } });
    req.on('error', () => undefined);
    req.end(body);
    await until(() => pool.running === 1);
    req.destroy();
    await until(() => pool.running === 0);
    assert.equal(alive(pid!), false, 'the decoder process was killed');
  });
});

/** Waits for a condition the code under test brings about (a state, not a duration). */
async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 2000 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(cond(), 'the condition was never met');
}

describe('library indexing under the per-file budget', () => {
  test('a hostile file is indexed without renditions, with a warning, and the scan goes on', async () => {
    const root = tempDir('damhub-hostile-');
    const data = tempDir('damhub-hostile-data-');
    writeFiles(root, {
      'a/before.jpg': await sceneJpeg(2),
      'a/bomb.png': pngDeclaring(20_000, 20_000), // a few hundred bytes declaring 400 MP
      'a/costly.avif': await flat(1100, 1100).avif({ effort: 0 }).toBuffer(), // 4.84 M over a 4 M budget
      'a/zafter.jpg': await sceneJpeg(3),
    });
    const index = new LibraryIndex(path.join(data, 'library.sqlite'));
    const pool = new ImagePool({ size: 1, queueMax: 4, timeoutMs: 60_000 });
    try {
      const renditions = new Renditions(path.join(data, 'renditions'), { pool, budget: 4_000_000, timeoutMs: 30_000 });
      const scanner = new LibraryScanner(root, index, renditions, data, new ManualClock());
      const report = await scanner.scan();
      assert.deepEqual([report.added, report.failed.length], [4, 0]);
      assert.deepEqual(report.warnings.map((w) => w.path).sort(), ['a/bomb.png', 'a/costly.avif']);
      assert.ok(report.warnings.every((w) => /decode budget/.test(w.warning)), JSON.stringify(report.warnings));
      for (const rel of ['a/bomb.png', 'a/costly.avif']) {
        assert.ok(await index.asset(assetIdFor(rel)), `${rel} is indexed`);
        assert.equal(renditions.has(assetIdFor(rel), 1, 'thumbnail'), false);
      }
      for (const rel of ['a/before.jpg', 'a/zafter.jpg']) assert.equal(renditions.has(assetIdFor(rel), 1, 'thumbnail'), true, `${rel} has renditions`);
    } finally {
      await pool.close();
      index.close();
      fs.rmSync(root, { recursive: true, force: true });
      fs.rmSync(data, { recursive: true, force: true });
    }
  });

  test('a file whose header alone takes too long is stopped at the per-file deadline; the scan goes on', async () => {
    const root = tempDir('damhub-slow-');
    const data = tempDir('damhub-slow-data-');
    // 150,000 directories (15 MB): reading its header takes well over a second on one core.
    writeFiles(root, { 'a/before.jpg': await sceneJpeg(2), 'a/pages.tif': tiffWithDirectories(150_000), 'a/zafter.jpg': await sceneJpeg(3) });
    const index = new LibraryIndex(path.join(data, 'library.sqlite'));
    const pool = new ImagePool({ size: 1, queueMax: 4, timeoutMs: 60_000 });
    try {
      const renditions = new Renditions(path.join(data, 'renditions'), { pool, budget: 268_402_689, timeoutMs: 500 });
      const report = await new LibraryScanner(root, index, renditions, data, new ManualClock()).scan({ concurrency: 1 });
      assert.deepEqual([report.added, report.failed.length], [3, 0]);
      assert.deepEqual(report.warnings.map((w) => w.path), ['a/pages.tif']);
      assert.match(report.warnings[0]!.warning, /not decoded within 500 ms/);
      assert.ok(await index.asset(assetIdFor('a/pages.tif')));
      for (const rel of ['a/before.jpg', 'a/zafter.jpg']) assert.equal(renditions.has(assetIdFor(rel), 1, 'thumbnail'), true, `${rel} has renditions`);
    } finally {
      await pool.close();
      index.close();
      fs.rmSync(root, { recursive: true, force: true });
      fs.rmSync(data, { recursive: true, force: true });
    }
  });
});
