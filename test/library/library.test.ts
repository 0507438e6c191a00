/**
 * The library provider through the hub's contract, on a generated tree of real files with known
 * EXIF, IPTC and XMP: every field read back, every hash against an independent computation,
 * folder limits, hostile ids, odd files, localisation, rescans and restarts.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { after, before, test } from 'node:test';
import { addAccount } from '../../src/providers/library/accounts.js';
import { assetIdFor } from '../../src/providers/library/scanner.js';
import { jpegWithMetadata, pngWithMetadata } from '../helpers/fixtures.js';
import { startTestHub, tempDir } from '../helpers/hub.js';
import { signInToLibrary, solidJpeg, startLibraryHub, writeFiles, type LibraryHarness, libraryOf } from '../helpers/library.js';

let lib: LibraryHarness;
let outside: string;
const api = '/api/v1';

before(async () => {
  outside = tempDir('damhub-outside-');
  fs.writeFileSync(path.join(outside, 'secret.jpg'), await solidJpeg(10, 10, [1, 1, 1]));
  const tagged = await jpegWithMetadata({
    width: 120,
    height: 80,
    exif: { model: 'Test Cam X100', copyright: 'EXIF copyright', orientation: 6, resolution: { value: 300, unit: 'inch' }, dateTimeOriginal: '2024:07:14 15:30:45', offsetTimeOriginal: '+02:00', exposureTime: '1/250', fNumber: '28/10', iso: 400 },
    iptc: { objectName: 'IPTC name', keywords: ['harbour', 'boats', 'Zürich'], caption: 'IPTC caption', headline: 'IPTC headline', city: 'Zürich', countryName: 'Schweiz', credit: 'IPTC credit', writer: 'Ed Itor', specialInstructions: 'Do not crop', provinceState: 'ZH', copyrightNotice: 'IPTC copyright', supplementalCategories: ['travel'] },
    xmp: { title: 'Harbour at dusk', description: 'Boats in the old harbour', rights: '© Photographer 2024', subject: ['boats', 'dusk'], headline: 'XMP headline', credit: 'XMP credit', city: 'Zürich', state: 'ZH', country: 'Switzerland', documentId: 'xmp.did:1', instanceId: 'xmp.iid:2', originalDocumentId: 'xmp.did:0' },
  });
  const files: Record<string, Buffer | string> = {
    'Harbour/tagged.jpg': tagged,
    'Harbour/plain.png': await pngWithMetadata({ width: 30, height: 60 }),
    'Harbour/empty.jpg': Buffer.alloc(0),
    'Harbour/corrupt.jpg': Buffer.concat([tagged.subarray(0, 200), Buffer.from('garbage')]),
    'Harbour/report.pdf': '%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n',
    'Private/hidden harbour.jpg': await solidJpeg(20, 20, [9, 9, 9]),
    'Ünïcödé folder/日本 写真.jpg': await solidJpeg(22, 20, [3, 200, 3]),
  };
  lib = await startLibraryHub(files);
  fs.symlinkSync(path.join(outside, 'secret.jpg'), path.join(lib.root, 'Harbour', 'link-out.jpg'));
  fs.symlinkSync(outside, path.join(lib.root, 'linked-dir'));
  await libraryOf(lib.t.hub).scanner.scan();
});
after(() => lib.t.close());

const idOf = (rel: string) => assetIdFor(rel);

test('every field of a tagged JPEG, read back through GET /assets/asset', async () => {
  const r = await lib.get(`${api}/assets/asset/${idOf('Harbour/tagged.jpg')}`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const a = r.body;
  const bytes = fs.readFileSync(path.join(lib.root, 'Harbour/tagged.jpg'));
  const stat = fs.statSync(path.join(lib.root, 'Harbour/tagged.jpg'));
  assert.equal(a.name, 'tagged.jpg');
  assert.equal(a.parentPath, '/Harbour');
  assert.equal(a.fileSize, bytes.length);
  assert.equal(a.mimeType, 'image/jpeg');
  assert.equal(a.type, 'image');
  assert.equal(a.xSizePx, 120);
  assert.equal(a.ySizePx, 80);
  assert.equal(a.modified, Math.floor(stat.mtimeMs));
  assert.equal(a.version, 1);
  assert.equal(a.displayVersion, 1);
  // Precedence: XMP wins over IPTC, which wins over EXIF.
  assert.equal(a.title, 'Harbour at dusk');
  assert.equal(a.caption, 'Boats in the old harbour');
  assert.equal(a.copyright, '© Photographer 2024');
  assert.equal(a.instructions, 'Do not crop');
  assert.deepEqual(a.keywords, ['harbour', 'boats', 'Zürich', 'dusk']);
  assert.ok(a.categories.includes('travel'));
  assert.equal(a.colorSpace, 'sRGB');
  assert.deepEqual(
    { ...a.exif },
    { cameraModel: 'Test Cam X100', orientation: '6', exposureTime: 0.004, apertureValue: '2.8', isoSpeedRatings: '400', width: 120, height: 80, resolution: '300x300 dpi', dateTimeOriginal: Date.UTC(2024, 6, 14, 13, 30, 45) },
  );
  assert.deepEqual({ ...a.iptc }, { headline: 'IPTC headline', caption: 'IPTC caption', captionWriter: 'Ed Itor', instructions: 'Do not crop', copyrightNotice: 'IPTC copyright', credit: 'IPTC credit', city: 'Zürich', provinceState: 'ZH', countryName: 'Schweiz' });
  assert.equal(a.xmp.headline, 'XMP headline');
  assert.equal(a.xmp.credit, 'XMP credit');
  assert.equal(a.xmp.countryName, 'Switzerland');
  assert.equal(a.xmp.documentId, 'xmp.did:1');
  assert.equal(a.xmp.instanceId, 'xmp.iid:2');
  assert.equal(a.xmp.originalDocumentId, 'xmp.did:0');
  assert.match(a.xmp.iccProfileDescription, /sRGB/i);

  // Every hash against an independent computation.
  const h = (alg: string) => createHash(alg).update(bytes).digest('hex');
  assert.equal(a.downloadHashMd5, h('md5'));
  assert.equal(a.downloadHashSha1, h('sha1'));
  assert.equal(a.downloadHashSha256, h('sha256'));
  assert.equal(a.downloadHashSha512, h('sha512'));
  assert.equal(a.downloadHashCrc32, zlib.crc32(bytes).toString(16).padStart(8, '0'));
  assert.equal(a.downloadHashSha256First16MB, h('sha256'));
  assert.equal(a.downloadHashSha256Split4MB, createHash('sha256').update(createHash('sha256').update(bytes).digest()).digest('hex'));
  assert.equal(a.downloadHashFileAttributes, `${bytes.length}-${Math.floor(stat.mtimeMs)}`);

  // URLs and renditions.
  assert.match(a.thumbnailUrl, /^http:\/\/hub\.test\/api\/v1\/assets\/thumbnail\/library\//);
  assert.deepEqual(a.conversions.map((c: { id: string }) => c.id), ['thumbnail', 'preview', 'original']);
  assert.deepEqual(a.capabilities, { canDeleteAsset: false, canUpdateAsset: false, canLockAsset: false, canUnlockAsset: false, canRenameAsset: false, uploadExtensions: [] });
  const values = Object.fromEntries(a.values.map((v: { id: string; value: string }) => [v.id, v]));
  assert.equal(values.cameraModel.value, 'Test Cam X100');
  assert.equal(values.dateTimeOriginal.type, 'DATETIME');
  assert.equal(values.dateTimeOriginal.value, '2024-07-14T13:30:45.000Z');
  assert.equal(values.dimensions.i18nName.ja, 'サイズ');
});

test('uiLocale localises labels and timeZone formats date values', async () => {
  const r = await lib.get(`${api}/assets/asset/${idOf('Harbour/tagged.jpg')}?uiLocale=de&timeZone=Asia/Tokyo`);
  const values = Object.fromEntries(r.body.values.map((v: { id: string }) => [v.id, v]));
  assert.equal(values.cameraModel.name, 'Kamera');
  assert.equal(values.dateTimeOriginal.value, '2024-07-14T22:30:45+09:00');
  assert.equal((await lib.get(`${api}/assets/asset/${idOf('Harbour/tagged.jpg')}?uiLocale=xx`)).status, 400);
  assert.equal((await lib.get(`${api}/assets/asset/${idOf('Harbour/tagged.jpg')}?timeZone=Mars/Olympus`)).status, 400);
  const search = await lib.get(`${api}/assets/search?query=harbour&uiLocale=fr`);
  assert.equal(search.body.filters.find((f: { id: string }) => f.id === 'type').name, 'Type de fichier');
});

test('odd files are indexed with what can be read; non-images get an icon thumbnail', async () => {
  for (const [rel, mime] of [['Harbour/empty.jpg', 'application/octet-stream'], ['Harbour/corrupt.jpg', 'image/jpeg'], ['Harbour/report.pdf', 'application/pdf']] as const) {
    const r = await lib.get(`${api}/assets/asset/${idOf(rel)}`);
    assert.equal(r.status, 200, rel);
    assert.equal(r.body.mimeType, mime, rel);
    const thumb = await lib.t.app.inject({ url: new URL(r.body.thumbnailUrl).pathname + new URL(r.body.thumbnailUrl).search });
    assert.equal(thumb.statusCode, 200, rel);
    assert.match(String(thumb.headers['content-type']), /^image\//);
  }
  const pdfThumb = (await lib.get(`${api}/assets/asset/${idOf('Harbour/report.pdf')}`)).body.thumbnailUrl;
  const res = await lib.t.app.inject({ url: new URL(pdfThumb).pathname + new URL(pdfThumb).search });
  assert.equal(res.headers['content-type'], 'image/svg+xml');
  assert.match(res.body, /PDF/);
});

test('non-ASCII names browse and search; symlinks out of the root are not followed', async () => {
  const root = await lib.get(`${api}/assets/folder/root`);
  const names = root.body.folders.map((f: { name: string }) => f.name);
  assert.ok(names.includes('Ünïcödé folder'));
  assert.ok(!names.includes('linked-dir'));
  const folder = root.body.folders.find((f: { name: string }) => f.name === 'Ünïcödé folder');
  const inside = await lib.get(`${api}/assets/folder/${encodeURIComponent(folder.id)}`);
  assert.equal(inside.body.assets[0].name, '日本 写真.jpg');
  const s = await lib.get(`${api}/assets/search?query=${encodeURIComponent('写真')}`);
  assert.equal(s.body.totalAssetsCount, 1);
  const folded = await lib.get(`${api}/assets/search?query=unicode`);
  assert.equal(folded.body.totalAssetsCount, 1, 'diacritics are folded (Ünïcödé ~ unicode)');
  const harbour = await lib.get(`${api}/assets/folder/${encodeURIComponent('/Harbour')}?size=100`);
  assert.ok(!harbour.body.assets.some((a: { name: string }) => a.name === 'link-out.jpg'), 'a symlink leading out of the root is skipped');
});

test('hostile folder and asset ids never reach the file system', async () => {
  for (const id of ['/../..', '/Harbour/../..', '/%2e%2e/etc', '/Harbour/\u0000', `/${'a'.repeat(3000)}`, '..', '/etc/passwd', '//Harbour']) {
    const r = await lib.get(`${api}/assets/folder/${encodeURIComponent(id)}`);
    assert.ok([400, 404].includes(r.status), `${JSON.stringify(id).slice(0, 40)} → ${r.status}`);
    assert.ok(r.body.error, 'an error envelope');
  }
  for (const id of ['../../etc/passwd', '%00', 'x'.repeat(5000)]) {
    const r = await lib.get(`${api}/assets/asset/${encodeURIComponent(id)}`);
    assert.ok([400, 404].includes(r.status));
  }
  const versions = await lib.get(`${api}/assets/assetversions/${encodeURIComponent('../../etc/passwd')}`);
  assert.equal(versions.status, 404);
});

test('keyword search: prefix matching, scoping to a folder, facets with counts, keyword filter', async () => {
  const pre = await lib.get(`${api}/assets/search?query=harb`);
  assert.ok(pre.body.totalAssetsCount >= 2);
  const scoped = await lib.get(`${api}/assets/search?query=harbour&parentId=${encodeURIComponent('/Private')}`);
  assert.equal(scoped.body.totalAssetsCount, 1);
  assert.equal(scoped.body.assets[0].name, 'hidden harbour.jpg');
  const kw = await lib.get(`${api}/assets/search?query=&filters=keyword:boats`);
  assert.equal(kw.body.totalAssetsCount, 1);
  const kwFacet = kw.body.filters.find((f: { id: string }) => f.id === 'keyword');
  assert.ok(kwFacet.options.find((o: { id: string; isActive: boolean }) => o.id === 'keyword:boats' && o.isActive));
  const year = await lib.get(`${api}/assets/search?filters=year:2024&filters=orientation:landscape`);
  assert.ok(year.body.assets.some((a: { name: string }) => a.name === 'tagged.jpg'));
  const bad = await lib.get(`${api}/assets/search?filters=nonsense`);
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.code, 'hub-validation-error');
});

test('a library account limited to a folder cannot reach outside it', async () => {
  await addAccount(libraryOf(lib.t.hub).index, 'carol', 'carol-password', ['Private'], lib.t.clock.now());
  const { access_token } = await lib.t.login({ sub: 'carol' });
  const dam = await signInToLibrary(lib.t, access_token, 'carol', 'carol-password');
  const get = (url: string) => lib.t.app.inject({ url, headers: { authorization: `Bearer ${access_token}`, 'provider-authorization': `Bearer ${dam}` } });
  const root = (await get(`${api}/assets/folder/root`)).json();
  assert.deepEqual(root.folders.map((f: { id: string }) => f.id), ['/Private']);
  assert.equal(root.totalAssetsCount, 0);
  const forbidden = await get(`${api}/assets/folder/${encodeURIComponent('/Harbour')}`);
  assert.equal(forbidden.statusCode, 403);
  assert.equal(forbidden.json().error.code, 'integration-forbidden');
  assert.equal(forbidden.json().error.source, 'integration');
  assert.equal(forbidden.json().error.provider, 'library');
  const asset = await get(`${api}/assets/asset/${idOf('Harbour/tagged.jpg')}`);
  assert.equal(asset.statusCode, 404);
  const search = (await get(`${api}/assets/search?query=harbour`)).json();
  assert.deepEqual(search.assets.map((a: { name: string }) => a.name), ['hidden harbour.jpg']);
  // Alice's DAM token does not work with Carol's hub session.
  const mixed = await lib.t.app.inject({ url: `${api}/assets/folder/root`, headers: { authorization: `Bearer ${access_token}`, 'provider-authorization': `Bearer ${lib.dam}` } });
  assert.equal(mixed.statusCode, 403);
  assert.equal(mixed.json().error.code, 'provider-access-token-invalid');
});

test('ids are stable across rescans and restarts; the rescan is cheap; a deleted file disappears', async (t) => {
  const before = await lib.get(`${api}/assets/asset/${idOf('Harbour/tagged.jpg')}`);
  const report = await libraryOf(lib.t.hub).scanner.scan();
  assert.equal(report.added + report.updated, 0, 'nothing re-indexed when size and mtime match');
  assert.ok(report.unchanged >= 7);

  // A second hub on the same data dir and library (a restart) serves the same ids.
  const t2 = await startTestHub({ dataDir: lib.t.dataDir, config: { libraryDir: lib.root }, clock: lib.t.clock });
  t.after(() => t2.close());
  await t2.hub.start();
  // The partner was registered by the first hub: sign with its key.
  const ex = await t2.app.inject({ method: 'POST', url: `${api}/auth/exchangeToken`, headers: { authorization: `Bearer ${await lib.t.jwt({ sub: 'restart-user' })}` } });
  assert.equal(ex.statusCode, 200, ex.body);
  const { access_token } = ex.json();
  const dam = await signInToLibrary(t2, access_token, 'alice', 'correct horse');
  const again = await t2.app.inject({ url: `${api}/assets/asset/${idOf('Harbour/tagged.jpg')}`, headers: { authorization: `Bearer ${access_token}`, 'provider-authorization': `Bearer ${dam}` } });
  assert.equal(again.statusCode, 200);
  assert.equal(again.json().downloadHashSha256, before.body.downloadHashSha256);

  fs.rmSync(path.join(lib.root, 'Private', 'hidden harbour.jpg'));
  const r2 = await libraryOf(lib.t.hub).scanner.scan();
  assert.equal(r2.removed, 1);
  assert.equal((await lib.get(`${api}/assets/asset/${idOf('Private/hidden harbour.jpg')}`)).status, 404);
  writeFiles(lib.root, { 'Private/hidden harbour.jpg': await solidJpeg(20, 20, [9, 9, 9]) });
  await libraryOf(lib.t.hub).scanner.scan();
});

test('providerInfo answers data locales and filters', async () => {
  const r = await lib.get(`${api}/system/providerInfo?uiLocale=es`);
  assert.equal(r.status, 200);
  assert.equal(r.body.dataLocales[0].default, true);
  assert.deepEqual(r.body.filters.map((f: { id: string }) => f.id), ['type', 'ext', 'keyword', 'year', 'orientation']);
  assert.equal(r.body.filters[0].name, 'Tipo de archivo');
});

test('media URLs: ETag, conditional GET, ranges, expiry and tampering', async () => {
  const a = (await lib.get(`${api}/assets/asset/${idOf('Harbour/tagged.jpg')}`)).body;
  const u = new URL(a.downloadUrl);
  const path0 = u.pathname + u.search;
  const full = await lib.t.app.inject({ url: path0 });
  assert.equal(full.statusCode, 200);
  assert.equal(full.headers.etag, `"${a.downloadHashSha256}"`);
  assert.equal(Number(full.headers['content-length']), a.fileSize);
  const cached = await lib.t.app.inject({ url: path0, headers: { 'if-none-match': full.headers.etag as string } });
  assert.equal(cached.statusCode, 304);
  const tail = await lib.t.app.inject({ url: path0, headers: { range: 'bytes=-10' } });
  assert.equal(tail.statusCode, 206);
  assert.equal(tail.headers['content-range'], `bytes ${a.fileSize - 10}-${a.fileSize - 1}/${a.fileSize}`);
  const bad = await lib.t.app.inject({ url: path0, headers: { range: `bytes=${a.fileSize + 5}-` } });
  assert.equal(bad.statusCode, 416);
  const otherAsset = path0.replace(idOf('Harbour/tagged.jpg'), idOf('Harbour/plain.png'));
  assert.equal((await lib.t.app.inject({ url: otherAsset })).statusCode, 403, 'a signature covers the asset id');
  assert.equal((await lib.t.app.inject({ url: u.pathname })).statusCode, 403, 'no signature, no bytes');
  lib.t.clock.advance(4 * 3600_000);
  const expired = await lib.t.app.inject({ url: path0 });
  assert.equal(expired.statusCode, 403);
  assert.equal(expired.json().error.code, 'hub-access-denied');
  lib.t.clock.advance(-4 * 3600_000);
});

test('an index of an earlier version: an untyped file whose name now gives a type is read again by the next scan, once (issue 29)', async () => {
  const { index, scanner } = libraryOf(lib.t.hub);
  writeFiles(lib.root, { 'Notes/brief.md': '# Brief\n' });
  await scanner.scan();
  const id = idOf('Notes/brief.md');
  const row = (await index.asset(id))!;
  assert.equal(row.mimeType, 'text/markdown');
  const emptyBefore = (await index.asset(idOf('Harbour/empty.jpg')))!;
  assert.equal(emptyBefore.mimeType, 'application/octet-stream');
  // What versions before the fix wrote: the type of a snapshot without the file's name.
  await index.upsertAsset({ ...row, mimeType: 'application/octet-stream', kind: 'other' }, null);
  lib.t.clock.advance(1000);
  await scanner.scan();
  const fixed = (await index.asset(id))!;
  assert.deepEqual([fixed.mimeType, fixed.kind, fixed.version], ['text/markdown', 'document', 1], 'the type corrected, no version added');
  assert.equal(fixed.indexedAt, row.indexedAt + 1000, 'read again');
  lib.t.clock.advance(1000);
  await scanner.scan();
  assert.equal((await index.asset(id))!.indexedAt, fixed.indexedAt, 'and only once');
  assert.equal((await index.asset(idOf('Harbour/empty.jpg')))!.indexedAt, emptyBefore.indexedAt, 'an untyped file whose name gives no type is left alone');
  lib.t.clock.advance(-2000);
});
