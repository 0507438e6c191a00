/**
 * Search by image through the hub's HTTP contract, on a library of generated scenes: the
 * original of an edited copy comes first, paging, cursors bound to their query, folder limits,
 * index upkeep when files change, and every malformed reference a client may send.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { after, before, test } from 'node:test';
import sharp from 'sharp';
import { addAccount } from '../../src/providers/library/accounts.js';
import { assetIdFor } from '../../src/providers/library/scanner.js';
import { assertError } from '../helpers/hub.js';
import { signInToLibrary, startLibraryHub, writeFiles, type LibraryHarness, libraryOf } from '../helpers/library.js';
import { cosine, DIM, hamming, SCALE, type Descriptor } from '../../src/providers/library/similarity/descriptor.js';
import { MAX_BOOST, NEAR_DUPLICATE_BITS, VectorIndex } from '../../src/providers/library/similarity/vector-index.js';
import { withShardSize } from '../../src/providers/library/large-map.js';
import { rng, sceneJpeg, transform, TRANSFORMS } from '../helpers/scenes.js';

const api = '/api/v1';
const SCENES = 12;
let lib: LibraryHarness;
const scenes: Buffer[] = [];
const relOf = (i: number) => `${i % 2 ? 'Beta' : 'Alpha'}/scene-${i}.jpg`;
const dataUri = (b: Buffer, type = 'image/jpeg') => `data:${type};base64,${b.toString('base64')}`;

before(async () => {
  const files: Record<string, Buffer> = {};
  for (let i = 0; i < SCENES; i++) {
    scenes.push(await sceneJpeg(i));
    files[relOf(i)] = scenes[i]!;
  }
  // Edited copies of scene 0 in both folders: a search for it has several hits above the cut-off.
  files['Alpha/scene-0-small.jpg'] = await transform(scenes[0]!, 'resize50');
  files['Alpha/scene-0-crop.jpg'] = await transform(scenes[0]!, 'crop10');
  files['Beta/scene-0-bright.jpg'] = await transform(scenes[0]!, 'bright15');
  files['Beta/scene-0-blur.jpg'] = await transform(scenes[0]!, 'blur');
  lib = await startLibraryHub(files, { config: { bodyLimitBytes: 2 * 1024 * 1024, imageMaxPixels: 40_000_000 } });
});
after(() => lib.t.close());

const search = (ref: string, query = '') => lib.t.app.inject({ method: 'POST', url: `${api}/assets/search${query}`, headers: lib.headers, payload: { dataBase64: ref } });

test('the library declares similarSearch in the providers listing', async () => {
  const r = await lib.get(`${api}/auth/providers`);
  assert.equal(r.status, 200);
  assert.equal(r.body.find((p: { id: string }) => p.id === 'library').capabilities.similarSearch, true);
});

test('every edit of a picture finds its original first', async () => {
  for (const t of TRANSFORMS) {
    for (const i of [2, 7]) {
      const res = await search(dataUri(await transform(scenes[i]!, t)));
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json();
      assert.equal(body.assets[0]?.id, assetIdFor(relOf(i)), `${t} of scene ${i}`);
      assert.ok(body.totalAssetsCount >= 1);
      assert.deepEqual(body.capabilities, { canAddAsset: false });
    }
  }
});

test('a downloadUrl or thumbnailUrl from a result is a valid reference', async () => {
  const first = (await search(dataUri(scenes[4]!))).json();
  const res = await search(first.assets[0].downloadUrl);
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json().assets[0].id, assetIdFor(relOf(4)));
  const thumb = await search(first.assets[0].thumbnailUrl);
  assert.equal(thumb.statusCode, 200, thumb.body);
  assert.equal(thumb.json().assets[0].id, assetIdFor(relOf(4)));
  // A tampered signature is refused, never fetched or served.
  const forged = first.assets[0].downloadUrl.replace(/sig=[^&]+/, 'sig=AAAA');
  assertError(await search(forged), 'hub-access-denied', 403);
});

test('pages follow the ranking without repeats; totalAssetsCount counts the hits above the cut-off', async () => {
  // A picture unlike any scene matches nothing at or above the cut-off.
  const flat = await sharp({ create: { width: 64, height: 64, channels: 3, background: { r: 128, g: 128, b: 128 } } }).png().toBuffer();
  const none = (await search(dataUri(flat, 'image/png'))).json();
  assert.equal(none.totalAssetsCount, 0);
  assert.deepEqual(none.assets, []);
  assert.equal(none.more, undefined);

  const ref = dataUri(scenes[0]!);
  const all = (await search(ref, '?size=200')).json();
  assert.ok(all.totalAssetsCount >= 5, `the original and its four edits, got ${all.totalAssetsCount}`);
  assert.equal(all.assets.length, all.totalAssetsCount);
  assert.equal(all.more, undefined);
  // The original and its edits lead (a half-size copy may tie with the original itself).
  const family = [relOf(0), 'Alpha/scene-0-small.jpg', 'Alpha/scene-0-crop.jpg', 'Beta/scene-0-bright.jpg', 'Beta/scene-0-blur.jpg'].map(assetIdFor);
  assert.deepEqual(new Set(all.assets.slice(0, 5).map((a: { id: string }) => a.id)), new Set(family));

  const seen: string[] = [];
  let more: string | undefined;
  let pages = 0;
  do {
    const res = await search(ref, `?size=2${more ? `&more=${encodeURIComponent(more)}` : ''}`);
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.equal(body.totalAssetsCount, all.totalAssetsCount);
    seen.push(...body.assets.map((a: { id: string }) => a.id));
    more = body.more;
    pages++;
  } while (more && pages < 50);
  assert.ok(pages >= 3);
  assert.deepEqual(seen, all.assets.map((a: { id: string }) => a.id), 'pages concatenate to the full ranking');
});

test('a cursor continues only the search it came from', async () => {
  const p1 = (await search(dataUri(scenes[0]!), '?size=1')).json();
  assert.ok(p1.more);
  const body = assertError(await search(dataUri(scenes[1]!), `?size=1&more=${encodeURIComponent(p1.more)}`), 'hub-validation-error', 400);
  assert.match(body.error.details, /more: the cursor belongs to another query/);
  assertError(await search(dataUri(scenes[0]!), '?size=1&more=forged.cursor.value'), 'hub-validation-error', 400);
});

test('an account limited to a folder never sees assets outside it', async () => {
  await addAccount(libraryOf(lib.t.hub).index, 'bob', 'battery staple', ['Alpha'], lib.t.clock.now());
  const dam = await signInToLibrary(lib.t, lib.access, 'bob', 'battery staple');
  const headers = { authorization: `Bearer ${lib.access}`, 'provider-authorization': `Bearer ${dam}` };
  // Scene 3 lives in Beta: bob's results may hold Alpha assets only.
  const res = await lib.t.app.inject({ method: 'POST', url: `${api}/assets/search?size=200`, headers, payload: { dataBase64: dataUri(scenes[3]!) } });
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json();
  assert.ok(body.assets.every((a: { parentPath: string }) => a.parentPath === '/Alpha'), JSON.stringify(body.assets.map((a: { parentPath: string }) => a.parentPath)));
  assert.ok(!body.assets.some((a: { id: string }) => a.id === assetIdFor(relOf(3))));
  assert.equal(body.totalAssetsCount, body.assets.length);
});

test('descriptors follow the files: a changed picture is found by its new content, a removed one is gone', async () => {
  const rel = relOf(8);
  writeFiles(lib.root, { [rel]: await sceneJpeg(100) });
  fs.utimesSync(path.join(lib.root, rel), new Date(), new Date(Date.now() + 5000));
  await libraryOf(lib.t.hub).rescan();
  let body = (await search(dataUri(await sceneJpeg(100)))).json();
  assert.equal(body.assets[0].id, assetIdFor(rel));
  assert.equal(body.assets[0].version, 2);
  body = (await search(dataUri(scenes[8]!))).json();
  assert.notEqual(body.assets[0]?.id, assetIdFor(rel));

  fs.rmSync(path.join(lib.root, relOf(9)));
  await libraryOf(lib.t.hub).rescan();
  body = (await search(dataUri(scenes[9]!))).json();
  assert.ok(!body.assets.some((a: { id: string }) => a.id === assetIdFor(relOf(9))));
  assert.equal(libraryOf(lib.t.hub).similarity.index.has(assetIdFor(relOf(9))), false);
});

test('malformed data URIs and base64 are 400 hub-validation-error', async () => {
  for (const bad of ['data:image/png;base64,@@@@', 'data:image/png,rawbytes', 'data:text/plain;base64,aGVsbG8=', 'data:image/png;base64,aGVsbG8', 'data:image/png;base64,', 'not a reference', 'ftp://example.com/a.jpg']) {
    assertError(await search(bad), 'hub-validation-error', 400);
  }
  assertError(await lib.t.app.inject({ method: 'POST', url: `${api}/assets/search`, headers: lib.headers, payload: {} }), 'hub-validation-error', 400);
});

test('a non-image under an image media type is 400', async () => {
  const body = assertError(await search(dataUri(Buffer.from('this is plain text, not a picture at all'), 'image/jpeg')), 'hub-validation-error', 400);
  assert.match(body.error.details, /not an image/);
  assertError(await search(dataUri(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>'), 'image/svg+xml')), 'hub-validation-error', 400);
});

test('a truncated image is 400', async () => {
  const cut = scenes[0]!.subarray(0, Math.floor(scenes[0]!.length * 0.6));
  const body = assertError(await search(dataUri(cut)), 'hub-validation-error', 400);
  assert.match(body.error.details, /damaged or truncated/);
});

test('an image bomb (huge declared dimensions) is 413 before it is decoded', async () => {
  const body = assertError(await search(dataUri(pngDeclaring(100_000, 100_000), 'image/png')), 'hub-payload-too-large', 413);
  assert.match(body.error.details, /100000×100000/);
});

test('a body over the configured limit is 413 hub-payload-too-large', async () => {
  const big = 'A'.repeat(3 * 1024 * 1024);
  const res = await lib.t.app.inject({ method: 'POST', url: `${api}/assets/search`, headers: { ...lib.headers, 'content-type': 'application/json' }, payload: JSON.stringify({ dataBase64: `data:image/jpeg;base64,${big}` }) });
  assertError(res, 'hub-payload-too-large', 413);
});

/** A PNG whose header declares width × height (with one tiny, valid IDAT): what a bomb looks like to a decoder. */
function pngDeclaring(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(td));
    return Buffer.concat([len, td, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 0; // greyscale
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', zlib.deflateSync(Buffer.alloc(1024))), chunk('IEND', Buffer.alloc(0))]);
}

function crc32(buf: Buffer): number {
  let c = ~0;
  for (const b of buf) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1;
  }
  return ~c >>> 0;
}

for (const shard of [null, 64]) test(`VectorIndex${shard ? ` (id map in LargeMap shards of ${shard})` : ''}: exact against brute force after puts, replacements and removals; keyset pages; folder filter`, () => {
  // grows several times; with shards, its id map spans 47 of them and removals empty some
  const index = shard ? withShardSize(shard, () => new VectorIndex(4)) : new VectorIndex(4);
  const rand = rng(7);
  const vecs = new Map<string, { folder: string; d: Descriptor }>();
  const randomDescriptor = (): Descriptor => {
    const f = Array.from({ length: DIM }, () => rand() - 0.5);
    const n = Math.hypot(...f);
    return { vector: Int8Array.from(f, (x) => Math.round((x / n) * SCALE)), phash: Uint8Array.from({ length: 8 }, () => Math.floor(rand() * 256)) };
  };
  for (let i = 0; i < 3000; i++) {
    const id = `a${String(i).padStart(5, '0')}`;
    const e = { folder: i % 3 ? 'X' : 'Y/sub', d: randomDescriptor() };
    vecs.set(id, e);
    index.put(id, e.folder, e.d);
  }
  for (let i = 0; i < 3000; i += 2) {
    const id = `a${String(i).padStart(5, '0')}`;
    assert.equal(index.remove(id), true);
    vecs.delete(id);
  }
  for (let i = 1; i < 300; i += 6) {
    const id = `a${String(i).padStart(5, '0')}`;
    const e = { folder: 'X', d: randomDescriptor() };
    vecs.set(id, e);
    index.put(id, e.folder, e.d);
  }
  assert.equal(index.size, vecs.size);
  const q = randomDescriptor();
  const cutoff = 0.1;
  const folderAllowed = (f: string) => f === 'Y' || f.startsWith('Y/');
  const expected = [...vecs.entries()]
    .filter(([, e]) => folderAllowed(e.folder))
    .map(([id, e]) => {
      const h = hamming(q.phash, e.d.phash);
      return { id, score: cosine(q.vector, e.d.vector) + (h <= NEAR_DUPLICATE_BITS ? MAX_BOOST * (1 - h / (NEAR_DUPLICATE_BITS + 1)) : 0) };
    })
    .filter((h) => h.score >= cutoff)
    .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1));
  assert.ok(expected.length > 20);
  const got: string[] = [];
  let after: { id: string; score: number } | null = null;
  for (;;) {
    const r = index.query(q, { k: 7, after, cutoff, folderAllowed });
    assert.equal(r.total, expected.length);
    got.push(...r.hits.map((h) => h.id));
    if (r.hits.length < 7) break;
    after = r.hits[r.hits.length - 1]!;
  }
  assert.deepEqual(got, expected.map((h) => h.id));
});
