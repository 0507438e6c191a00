/**
 * Progressive-JPEG bombs (issue 28, item 3), and the image pool's defences against them:
 *
 * - memory: a progressive JPEG is decoded into a buffer of all its DCT coefficients at full size
 *   whatever the shrink-on-load; it is charged by that buffer, every decode has a declared-pixel
 *   limit (library files and connector thumbnails too), and each decoder process runs under a
 *   memory limit, so a bomb that gets past the budget fails in its own process only;
 * - time: each scan walks every block; the scan count is in the budget (charged, and refused over
 *   a hard limit), and waiting decodes are served fairly across partner + hub user.
 *
 * The attacks run against a real `damhub serve` process over HTTP (search by image, library
 * thumbnails) and against the pool itself (memory limit, fair share).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { decodeCost, MAX_JPEG_SCANS } from '../../src/images/budget.js';
import { coefficientBytes, jpegStructure, scanSamples } from '../../src/images/jpeg.js';
import { ImageJobError, ImagePool, runtimeDataBaselineKb } from '../../src/images/pool.js';
import { tempDir } from '../helpers/hub.js';
import { coefficientBomb, jpegDeclaring, scanBomb, segments } from '../helpers/jpeg-bombs.js';
import { libraryLoginOverHttp, solidJpeg, writeFiles } from '../helpers/library.js';
import { makeKey, signPartnerJwt, type TestKey } from '../helpers/partner.js';
import { alive, assertDataLimit, runCli, startServer, type ServerProcess } from '../helpers/process.js';

const out40 = [{ width: 40, height: 40, fit: 'fill' as const }];

describe('the JPEG marker stream', () => {
  test('scans are counted through stuffed 0xFF bytes, restart markers and fill bytes; the frame gives size and sampling', async () => {
    const bomb = scanBomb(2048, 1200, 40); // 38,400 blocks: runs of 32767, whose extra bits are all ones
    // The end-of-band runs' extra bits are all ones: the data really holds stuffed 0xFF 0x00 pairs.
    assert.ok(bomb.includes(Buffer.from([0xff, 0x00])), 'stuffed bytes present');
    const s = jpegStructure(bomb)!;
    assert.deepEqual([s.width, s.height, s.progressive, s.scans.length], [2048, 1200, true, 40]);
    assert.deepEqual(s.components, [{ id: 1, h: 1, v: 1 }]);
    // Restart markers inside entropy data and fill bytes before a marker change nothing.
    const segs = segments(bomb);
    const i = segs.findIndex((x) => x.marker === 0xda);
    const withRst = Buffer.concat([
      ...segs.slice(0, i + 1).map((x) => x.bytes),
      Buffer.from([0xff, 0xd0, 0x12, 0xff, 0x00, 0x34, 0xff, 0xd7, 0x56, 0xff, 0xff, 0xff]),
      ...segs.slice(i + 1).map((x) => x.bytes),
    ]);
    assert.equal(jpegStructure(withRst)!.scans.length, 40);
    // Read from a file, in chunks, the same.
    const dir = tempDir('damhub-jpeg-');
    try {
      fs.writeFileSync(path.join(dir, 'b.jpg'), withRst);
      assert.equal(jpegStructure(path.join(dir, 'b.jpg'))!.scans.length, 40);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
    // A sequential 4:2:0 JPEG: one interleaved scan, no coefficient buffer.
    const seq = jpegStructure(await sharp({ create: { width: 300, height: 200, channels: 3, background: '#456' } }).jpeg().toBuffer())!;
    assert.deepEqual([seq.progressive, seq.scans.length, seq.components.map((c) => `${c.h}x${c.v}`).join()], [false, 1, '2x2,1x1,1x1']);
    assert.equal(coefficientBytes(seq), 0);
    // Not a JPEG, or truncated in a segment: no structure, never a throw.
    assert.equal(jpegStructure(Buffer.from('not a jpeg')), null);
    assert.equal(jpegStructure(bomb.subarray(0, 30)), null);
  });

  test('the budget charges a progressive JPEG by its coefficient buffer and every JPEG by the scans it walks', async () => {
    const meta = async (b: Buffer) => ({ ...(await sharp(b, { limitInputPixels: false }).metadata()), jpeg: jpegStructure(b) });
    // The memory bomb: 32768² grayscale progressive, 2 bytes per sample = 2 GiB of coefficients.
    const big = await meta(await coefficientBomb(32768, 32768));
    assert.equal(coefficientBytes(big.jpeg!), 32768 * 32768 * 2);
    const c1 = decodeCost(big, 1024, big.jpeg);
    assert.ok(c1.cost >= coefficientBytes(big.jpeg!) / 3 && c1.cost > 268_402_689, `${c1.cost}`);
    // The same in three 4:4:4 components at 7000² (within the reference pixel limit): 280 MiB.
    const colour = await meta(await coefficientBomb(7000, 7000, 3));
    const c3 = decodeCost(colour, 40, colour.jpeg);
    assert.deepEqual([c3.bound, c3.coefficientBytes], ['coefficients', 875 * 875 * 3 * 128]);
    assert.ok(c3.cost > 64_000_000, `${c3.cost}`);
    // Without the marker stream it was 16.8 M (shrink-on-load): the finding.
    assert.equal(decodeCost(big, 1024).cost, 4096 * 4096);
    // The time bomb: 7000² in 600 scans, 0.77 M before; now over the reference budget.
    const slow = await meta(scanBomb(7000, 7000, 600));
    const c2 = decodeCost(slow, 40, slow.jpeg);
    assert.equal(c2.bound, 'scans');
    assert.ok(c2.cost > 64_000_000, `${c2.cost}`);
    assert.equal(scanSamples(slow.jpeg!), 600 * 875 * 875 * 64);
    // Ordinary files stay within the reference budget: a 24 MP progressive photo, a baseline one.
    for (const progressive of [true, false]) {
      const photo = await meta(await sharp({ create: { width: 6000, height: 4000, channels: 3, background: '#456' } }).jpeg({ progressive }).toBuffer());
      const c = decodeCost(photo, 40, photo.jpeg);
      assert.ok(c.cost < 64_000_000, `${progressive}: ${c.cost}`);
    }
  });
});

describe('the image pool against JPEG bombs', () => {
  test('over the scan limit, or charged past the budget: refused from the header, before any decode', async () => {
    const pool = new ImagePool({ size: 1, queueMax: 4, timeoutMs: 60_000 });
    try {
      await assert.rejects(pool.analyse({ input: scanBomb(64, 64, MAX_JPEG_SCANS + 1), outputs: out40, budget: 1e12, maxPixels: 1e12, failOn: 'error' }),
        (e: ImageJobError) => e.kind === 'over-budget' && /1001 scans, over the limit of 1000/.test(e.message));
      await assert.rejects(pool.analyse({ input: scanBomb(7000, 7000, 600), outputs: out40, budget: 64_000_000, maxPixels: 50_000_000, failOn: 'error' }),
        (e: ImageJobError) => e.kind === 'over-budget' && /7000×7000 pixels in 600 scans/.test(e.message));
      // A normal progressive file of the same size decodes.
      const ok = await pool.analyse({ input: await sharp({ create: { width: 3000, height: 3000, channels: 3, background: '#456' } }).jpeg({ progressive: true }).toBuffer(), outputs: out40, budget: 64_000_000, maxPixels: 50_000_000, failOn: 'error' });
      assert.equal(ok.width, 3000);
    } finally {
      await pool.close();
    }
  });

  test('a decoder that blows its memory limit fails alone: out-of-memory, its process gone, the next job gets a fresh one', async () => {
    const pool = new ImagePool({ size: 1, queueMax: 4, timeoutMs: 60_000, memoryMb: 256 });
    try {
      await pool.run({ op: 'ping' });
      const [pid] = pool.pids();
      // 16000² grayscale progressive: 512 MB of coefficients, over 256 MiB (budget off to reach the decoder).
      const bomb = await coefficientBomb(16000, 16000);
      await assert.rejects(pool.analyse({ input: bomb, outputs: out40, budget: 1e12, maxPixels: 1e12, failOn: 'error' }),
        (e: ImageJobError) => e instanceof ImageJobError && e.kind === 'out-of-memory' && /memory limit/.test(e.message));
      assert.equal(alive(pid!), false, 'the decoder process is gone');
      // A process that dies outright under its limit (here: a job too large even to be received;
      // Node then dies by SIGSEGV without a word) fails that job alone, as a clean error.
      const [pid2] = pool.pids();
      await assert.rejects(pool.analyse({ input: Buffer.alloc(400 * 2 ** 20), outputs: out40, budget: 1e12, maxPixels: 1e12, failOn: 'error' }),
        (e: ImageJobError) => e instanceof ImageJobError && ['out-of-memory', 'crashed'].includes(e.kind) && /decoder process/.test(e.message));
      if (pid2) assert.equal(alive(pid2), false);
      const next = await pool.analyse({ input: await solidJpeg(64, 48, [10, 200, 30]), outputs: out40, budget: 1e9, maxPixels: 1e9, failOn: 'error' });
      assert.equal(next.width, 64);
      assert.equal(pool.forks, 3, 'one fresh process after each death');
      const limits = fs.readFileSync(`/proc/${pool.pids()[0]}/limits`, 'utf8');
      assert.match(limits, new RegExp(`Max data size\\s+${(256 * 1024 + runtimeDataBaselineKb()) * 1024}\\s`), 'its limit: 256 MiB above the runtime\'s own');
    } finally {
      await pool.close();
    }
  });

  test('the declared-pixel limit binds every decode, whatever its caller asked (a connector thumbnail\'s render job names none)', async () => {
    const pool = new ImagePool({ size: 1, queueMax: 4, timeoutMs: 60_000, maxPixels: 268_402_689 });
    const dir = tempDir('damhub-thumb-bomb-');
    try {
      // A baseline JPEG declaring 20000² (400 MP): cheap after shrink-on-load, over the limit.
      const source = path.join(dir, 'source');
      fs.writeFileSync(source, await jpegDeclaring(20_000, 20_000, { progressive: false }));
      // The render job as src/providers/kit/thumbnails.ts sends it: a budget, no pixel limit.
      const render = { op: 'render' as const, source, budget: 268_402_689, preview: { file: path.join(dir, 'p.jpg'), size: 512, quality: 80 }, thumbnail: { file: path.join(dir, 't.jpg'), size: 256, quality: 80 } };
      await assert.rejects(pool.run(render), (e: ImageJobError) => e.kind === 'over-budget' && /20000×20000 pixels, over the limit of 268402689/.test(e.message));
      assert.equal(fs.existsSync(path.join(dir, 't.jpg')), false);
    } finally {
      await pool.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('fair share: with one owner\'s jobs filling the queue, the next job served is another owner\'s', async () => {
    const pool = new ImagePool({ size: 1, queueMax: 16, timeoutMs: 60_000, ownerQueueMax: 3 });
    try {
      const order: string[] = [];
      const job = (name: string, owner?: string) => pool.run({ op: 'ping' }, { owner }).then(() => void order.push(name));
      // All enqueued in one turn of the event loop while a0 holds the only process: the order
      // in which they are served depends on the pool's choice alone.
      const jobs = [job('a0', 'A'), job('a1', 'A'), job('a2', 'A'), job('a3', 'A'), job('b1', 'B'), job('c1', 'C'), job('b2', 'B'), job('n1'), job('n2')];
      // One owner holds at most ownerQueueMax waiting places: a fourth is refused at once.
      await assert.rejects(pool.run({ op: 'ping' }, { owner: 'A' }), (e: ImageJobError) => e.kind === 'busy' && /3 images of this account/.test(e.message));
      await Promise.all(jobs);
      assert.deepEqual(order, ['a0', 'b1', 'c1', 'n1', 'a1', 'b2', 'n2', 'a2', 'a3']);
    } finally {
      await pool.close();
    }
  });
});

describe('JPEG bombs against a real hub over HTTP', () => {
  let server: ServerProcess;
  let key: TestKey;
  let data: string;
  let lib: string;
  let h: Record<string, string>;
  const issuer = 'https://partner.bombs.example';

  before(async () => {
    key = await makeKey();
    data = tempDir();
    lib = tempDir('damhub-bombs-lib-');
    writeFiles(lib, {
      'Shots/good.jpg': await solidJpeg(64, 48, [200, 60, 20]),
      // 400 MP declared in 300 bytes, cheap once shrunk: only the declared-pixel limit refuses it.
      'Shots/huge.jpg': await jpegDeclaring(20_000, 20_000, { progressive: false }),
    });
    const jwksFile = path.join(data, 'jwks.json');
    fs.writeFileSync(jwksFile, JSON.stringify({ keys: [key.publicJwk] }));
    assert.equal((await runCli(['partners', 'add', '--issuer', issuer, '--jwks-file', jwksFile, '--data', data])).code, 0);
    assert.equal((await runCli(['users', 'add', 'eve', '--password-stdin', '--data', data], {}, 'eve-secret-pw\n')).code, 0);
    // An operator who raised the reference pixel limit: only the coefficient charge stands
    // between the 32768² bomb and a 2 GiB decoder.
    server = await startServer(['--data', data, '--library', lib], { DAMHUB_IMAGE_MAX_PIXELS: '2000000000', DAMHUB_IMAGE_DECODER_MEMORY_MB: '512' });
    const jwt = await signPartnerJwt(Date.now(), { key, issuer, sub: 'eve-at-partner', email: 'eve@example.com' });
    const tokens = (await (await fetch(`${server.url}/api/v1/auth/exchangeToken`, { method: 'POST', headers: { authorization: `Bearer ${jwt}` } })).json()) as { access_token: string };
    const dam = await libraryLoginOverHttp(server.url, tokens.access_token, 'eve', 'eve-secret-pw');
    h = { authorization: `Bearer ${tokens.access_token}`, 'provider-authorization': `Bearer ${dam}`, 'content-type': 'application/json' };
  });
  after(async () => {
    await server?.stop();
    for (const d of [data, lib]) if (d) fs.rmSync(d, { recursive: true, force: true });
  });

  const search = (jpeg: Buffer) => fetch(`${server.url}/api/v1/assets/search`, { method: 'POST', headers: h, body: JSON.stringify({ dataBase64: `data:image/jpeg;base64,${jpeg.toString('base64')}` }) });

  test('search by image: the 32768² progressive bomb, a 7000² 4:4:4 one and the 600-scan file are 413 from their headers; a good reference is 200', async () => {
    for (const [bomb, reason] of [
      // Over the hub-wide declared-pixel limit (and over the budget by its 2 GiB of coefficients).
      [await coefficientBomb(32768, 32768), /32768×32768 pixels(, over the limit of 268402689|; its decoder keeps every DCT coefficient)/],
      [await coefficientBomb(7000, 7000, 3), /progressive JPEG image declares 7000×7000 pixels; its decoder keeps every DCT coefficient at full size.*\(280 MiB\)/],
      [scanBomb(7000, 7000, 600), /7000×7000 pixels in 600 scans/],
    ] as const) {
      const res = await search(bomb);
      const body = (await res.json()) as { error: { code: string; details: string } };
      assert.equal(res.status, 413, JSON.stringify(body));
      assert.equal(body.error.code, 'hub-payload-too-large');
      assert.match(body.error.details, reason);
    }
    const ok = await search(await solidJpeg(64, 48, [200, 60, 20]));
    assert.equal(ok.status, 200, await ok.text());
  });

  test('each decoder process runs under DAMHUB_IMAGE_DECODER_MEMORY_MB; a limit too small to run a decoder is refused at start', async () => {
    const pid = server.child.pid!;
    const children = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
    assert.ok(children.length >= 1, 'the decoders were forked by the searches');
    // 512 MiB for the work, on top of what this Node binary reserves by itself (the same binary runs the hub).
    for (const c of children) assertDataLimit(Number(c), 512, runtimeDataBaselineKb());
    const refused = await runCli(['serve', '--data', data, '--port', '0'], { DAMHUB_IMAGE_DECODER_MEMORY_MB: '100' });
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /DAMHUB_IMAGE_DECODER_MEMORY_MB must be 0 \(no limit\) or at least 256/);
  });

  test('library thumbnails: a file declaring more pixels than the limit is served the icon; the server says why', async () => {
    const api = `${server.url}/api/v1`;
    // The library is indexed in the background after the start: wait for the scan's verdict.
    await until(() => /huge\.jpg/.test(server.output()));
    assert.match(server.output(), /huge\.jpg.*20000×20000 pixels, over the limit of 268402689/);
    const root = (await (await fetch(`${api}/assets/folder/root`, { headers: h })).json()) as { folders: { id: string; name: string }[] };
    const shots = root.folders.find((f) => f.name === 'Shots')!;
    const page = (await (await fetch(`${api}/assets/folder/${encodeURIComponent(shots.id)}`, { headers: h })).json()) as { assets: { name: string; thumbnailUrl: string }[] };
    const byName = Object.fromEntries(page.assets.map((a) => [a.name, a]));
    const huge = await fetch(byName['huge.jpg']!.thumbnailUrl);
    assert.equal(huge.status, 200);
    assert.match(String(huge.headers.get('content-type')), /image\/svg\+xml/);
    const good = await fetch(byName['good.jpg']!.thumbnailUrl);
    assert.equal(good.headers.get('content-type'), 'image/jpeg');
  });
});

/** Waits for a state the code under test brings about (not a duration). */
async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 6000 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(cond(), 'the condition was never met');
}
