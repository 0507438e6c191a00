/** The scanner on its own: versions, touches, vanishing files, large files, concurrent scans. */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { ManualClock } from '../../src/clock.js';
import { LibraryIndex } from '../../src/providers/library/index/sqlite.js';
import { Renditions } from '../../src/providers/library/renditions.js';
import { assetIdFor, LibraryScanner } from '../../src/providers/library/scanner.js';
import { tempDir } from '../helpers/hub.js';
import { solidJpeg, writeFiles } from '../helpers/library.js';

let root: string;
let data: string;
let index: LibraryIndex;
let scanner: LibraryScanner;

before(async () => {
  root = tempDir('damhub-scan-');
  data = tempDir('damhub-scan-data-');
  writeFiles(root, { 'a/one.jpg': await solidJpeg(10, 10, [1, 2, 3]), 'a/two.txt': 'two' });
  index = new LibraryIndex(path.join(data, 'library.sqlite'));
  scanner = new LibraryScanner(root, index, new Renditions(path.join(data, 'renditions')), data, new ManualClock());
});
after(() => index.close());

test('first scan adds, a second scan changes nothing', async () => {
  const r1 = await scanner.scan();
  assert.deepEqual([r1.added, r1.updated, r1.removed, r1.failed.length], [2, 0, 0, 0]);
  const r2 = await scanner.scan();
  assert.deepEqual([r2.added, r2.updated, r2.unchanged], [0, 0, 2]);
});

test('scans never run in parallel; requests made during a scan share one follow-up scan', async () => {
  const first = scanner.scan();
  const second = scanner.scan();
  const third = scanner.scan();
  assert.notEqual(first, second, 'a request during a scan gets a later scan, which sees changes made before it');
  assert.equal(second, third, 'requests made meanwhile share one follow-up');
  const [a, b] = await Promise.all([first, second]);
  assert.equal(a.files, b.files);
});

test('a content change makes version 2 and keeps version 1; a touch keeps the version', async () => {
  const file = path.join(root, 'a/two.txt');
  const v1sha = createHash('sha256').update('two').digest('hex');
  fs.writeFileSync(file, 'two, edited');
  await scanner.scan();
  const row = index.asset(assetIdFor('a/two.txt'))!;
  assert.equal(row.version, 2);
  const versions = index.versions(row.id);
  assert.equal(versions.length, 1);
  assert.equal(versions[0]!.version, 1);
  assert.equal(versions[0]!.hashes!.sha256, v1sha);
  assert.equal(fs.readFileSync(scanner.blobPath(versions[0]!.blob!), 'utf8'), 'two');
  const later = new Date(Date.now() + 5000);
  fs.utimesSync(file, later, later);
  const r = await scanner.scan();
  assert.equal(r.updated, 0);
  assert.equal(index.asset(row.id)!.version, 2, 'same content, same version');
});

test('a file that vanished before it was indexed is removed, not an error', async () => {
  writeFiles(root, { 'a/ghost.txt': 'boo' });
  await scanner.scan();
  fs.rmSync(path.join(root, 'a/ghost.txt'));
  assert.equal(await scanner.indexFile('a/ghost.txt'), 'removed');
  assert.equal(index.assetByPath('a/ghost.txt'), null);
});

test('a 21 MiB file gets every hash right (several 4 MiB blocks, 16 MiB prefix)', async () => {
  const big = randomBytes(21 * 1024 * 1024 + 123);
  writeFiles(root, { 'big/blob.bin': big });
  await scanner.scan();
  const h = index.assetByPath('big/blob.bin')!.hashes!;
  assert.equal(h.sha256, createHash('sha256').update(big).digest('hex'));
  assert.equal(h.sha256First16MB, createHash('sha256').update(big.subarray(0, 16 * 1024 * 1024)).digest('hex'));
  const blocks: Buffer[] = [];
  for (let o = 0; o < big.length; o += 4 * 1024 * 1024) blocks.push(createHash('sha256').update(big.subarray(o, o + 4 * 1024 * 1024)).digest());
  assert.equal(h.sha256Split4MB, createHash('sha256').update(Buffer.concat(blocks)).digest('hex'));
  assert.equal(index.assetByPath('big/blob.bin')!.mimeType, 'application/octet-stream');
});

test('a file above the in-memory limit (copied, then hashed streaming) gets every hash and an exact snapshot', async () => {
  const big = randomBytes(33 * 1024 * 1024 + 7);
  writeFiles(root, { 'big/huge.bin': big });
  await scanner.scan();
  const row = index.assetByPath('big/huge.bin')!;
  const h = row.hashes!;
  assert.equal(h.size, big.length);
  assert.equal(h.md5, createHash('md5').update(big).digest('hex'));
  assert.equal(h.sha256, createHash('sha256').update(big).digest('hex'));
  assert.equal(h.sha256First16MB, createHash('sha256').update(big.subarray(0, 16 * 1024 * 1024)).digest('hex'));
  const blocks: Buffer[] = [];
  for (let o = 0; o < big.length; o += 4 * 1024 * 1024) blocks.push(createHash('sha256').update(big.subarray(o, o + 4 * 1024 * 1024)).digest());
  assert.equal(h.sha256Split4MB, createHash('sha256').update(Buffer.concat(blocks)).digest('hex'));
  assert.ok(fs.readFileSync(scanner.blobPath(row.blob!)).equals(big), 'the version store holds the same bytes');
  fs.rmSync(path.join(root, 'big/huge.bin'));
  assert.equal((await scanner.scan()).removed, 1);
});

test('a folder that disappears takes its assets and its folder entry with it', async () => {
  fs.rmSync(path.join(root, 'big'), { recursive: true });
  const r = await scanner.scan();
  assert.equal(r.removed, 1);
  assert.equal(index.folder('big'), null);
  assert.ok(index.folder('a'));
});
