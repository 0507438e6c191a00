/**
 * An upload is hashed while it is written (disk.ts writeBody, hash-lanes.ts) and indexed without
 * reading the file again: the digests it records must be the ones a rescan of the same file
 * computes, for a body hashed inline (small) and one hashed in the worker lanes (large, in uneven
 * chunks crossing the 4 MiB and 16 MiB boundaries); the kept version is a copy, not a second name
 * of the file, so an edit in place outside the hub leaves it as it was.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, test } from 'node:test';
import type { ProviderSession, UploadBody } from '../../src/providers/contract.js';
import { HashLanes, LANE_THRESHOLD, SLOT_SIZE } from '../../src/providers/library/hash-lanes.js';
import { FIRST_PREFIX_SIZE, hashBytes, hashFile, SPLIT_BLOCK_SIZE } from '../../src/providers/library/hashes.js';
import type { LibraryProvider } from '../../src/providers/library/provider.js';
import { assetIdFor } from '../../src/providers/library/scanner.js';
import { everyName, failingBody, libraryDirs, makeLibrary, sessionOf } from '../helpers/library-writes.js';

let dirs: { root: string; data: string };
let lib: LibraryProvider;
let writer: ProviderSession;

before(async () => {
  dirs = libraryDirs();
  fs.mkdirSync(path.join(dirs.root, 'Open'));
  lib = await makeLibrary(dirs.root, dirs.data);
  await lib.rescan();
  writer = await sessionOf(lib, 'writer', [], ['Open']);
});
after(() => lib.close());

/** `bytes` in chunks of the given sizes, cycled: never lined up with a batch or a block. */
function chunked(bytes: Buffer, sizes: number[]): UploadBody {
  const parts: Buffer[] = [];
  for (let at = 0, i = 0; at < bytes.length; i++) {
    const n = sizes[i % sizes.length]!;
    parts.push(bytes.subarray(at, at + n));
    at += n;
  }
  return { stream: Readable.from(parts), length: bytes.length, mimeType: 'application/octet-stream' };
}

const SIZES = [
  ['inline (small)', 300_001],
  ['in lanes: 4 MiB blocks, the 16 MiB prefix, a short last block', FIRST_PREFIX_SIZE + 2 * SPLIT_BLOCK_SIZE + 12_345],
  ['in lanes: exactly 3 blocks', 3 * SPLIT_BLOCK_SIZE],
] as const;

for (const [what, size] of SIZES) {
  test(`the digests recorded by an upload are a rescan's (${what})`, async () => {
    const bytes = randomBytes(size);
    const name = `h-${size}.bin`;
    // One chunk larger than a shared slot too: it is gathered in memory of its own.
    const { asset } = await lib.upload(writer, { parentId: '/Open', name, onConflict: 'fail' }, chunked(bytes, [65_536, 70_001, SLOT_SIZE + 5, 1]));
    const rel = `Open/${name}`;
    const recorded = (await lib.index.asset(assetIdFor(rel)))!;
    const reread = await hashFile(path.join(dirs.root, rel));
    assert.deepEqual(recorded.hashes, reread);
    assert.deepEqual(recorded.hashes, await hashBytes(bytes));
    assert.equal(asset.downloadHashSha256, createHash('sha256').update(bytes).digest('hex'));
    // The kept version holds the same bytes.
    assert.deepEqual(await hashFile(lib.scanner.blobPath(recorded.blob!)), reread);
    // A scan that reads the file again (an index row made stale) records the same digests.
    await lib.index.upsertAsset({ ...recorded, size: recorded.size + 1 }, null);
    assert.equal(await lib.scanner.indexFile(rel), 'unchanged', 'the same content: no new version');
    assert.deepEqual((await lib.index.asset(assetIdFor(rel)))!.hashes, reread);
    assert.deepEqual(everyName(path.join(dirs.root, 'Open')).filter((n) => n.startsWith('.')), [], 'no temp file left');
  });
}

test('the kept version is a copy: an editor writing the file in place outside the hub does not change it', async () => {
  const v1 = randomBytes(LANE_THRESHOLD + 1000);
  await lib.upload(writer, { parentId: '/Open', name: 'inplace.bin', onConflict: 'fail' }, chunked(v1, [65_536]));
  const file = path.join(dirs.root, 'Open/inplace.bin');
  const row = (await lib.index.asset(assetIdFor('Open/inplace.bin')))!;
  const blob = lib.scanner.blobPath(row.blob!);
  assert.notEqual(fs.statSync(blob).ino, fs.statSync(file).ino, 'not a hard link');
  const fd = fs.openSync(file, 'r+');
  fs.writeSync(fd, Buffer.from('edited in place'), 0, 15, 0);
  fs.closeSync(fd);
  assert.deepEqual(fs.readFileSync(blob), v1, 'the kept version keeps its bytes');
});

test('a large body that fails half-way leaves nothing, and the lanes go on serving the next uploads', async () => {
  const before = everyName(dirs.root);
  await assert.rejects(lib.upload(writer, { parentId: '/Open', name: 'cut.bin', onConflict: 'fail' }, failingBody(randomBytes(LANE_THRESHOLD))), /the client went away/);
  assert.deepEqual(everyName(dirs.root), before);
  // Two at once, after the failure: neither takes the other's digests, and the slots came back.
  const a = randomBytes(LANE_THRESHOLD * 2 + 7);
  const b = randomBytes(LANE_THRESHOLD + 3);
  await Promise.all([
    lib.upload(writer, { parentId: '/Open', name: 'a.bin', onConflict: 'fail' }, chunked(a, [65_536, 1_000_000])),
    lib.upload(writer, { parentId: '/Open', name: 'b.bin', onConflict: 'fail' }, chunked(b, [16_384])),
  ]);
  assert.deepEqual((await lib.index.asset(assetIdFor('Open/a.bin')))!.hashes, await hashBytes(a));
  assert.deepEqual((await lib.index.asset(assetIdFor('Open/b.bin')))!.hashes, await hashBytes(b));
});

test('the lanes hash an empty stream and one of a single byte as hashBytes does', async () => {
  const lanes = new HashLanes();
  try {
    for (const bytes of [Buffer.alloc(0), Buffer.from([42])]) {
      const h = lanes.hasher(null);
      if (bytes.length) {
        const buf = await h.buffer(bytes.length);
        bytes.copy(buf);
        h.update(buf);
        h.release(buf);
      }
      assert.deepEqual(await h.result(), await hashBytes(bytes));
    }
  } finally {
    await lanes.close();
  }
});
