/**
 * The browse page cache (src/content/page-cache.ts): repeated pages come from it, and it never
 * answers what the uncached path would not — after library changes (this process or another
 * connection), for another user or another library account, across media-URL expiry buckets, or
 * after the account is removed.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Type } from '@sinclair/typebox';
import Fastify from 'fastify';
import { addAccount } from '../../src/providers/library/accounts.js';
import { LibraryIndex } from '../../src/providers/library/index/sqlite.js';
import { PageCache } from '../../src/content/page-cache.js';
import { ManualClock } from '../../src/clock.js';
import { responses, SHARED_SCHEMAS } from '../../src/http/schemas.js';
import type { FolderPage } from '../../src/providers/model.js';
import { assetOpsOf, NO_FOLDER_CAPABILITIES, folderResultBytes } from '../../src/routes/content.js';
import { signInToLibrary, solidJpeg, startLibraryHub, writeFiles, type LibraryHarness, libraryOf } from '../helpers/library.js';

let lib: LibraryHarness;
const api = '/api/v1';
const harbour = `${api}/assets/folder/${encodeURIComponent('/Harbour')}?size=2`;

before(async () => {
  const files: Record<string, Buffer> = {};
  for (let i = 0; i < 5; i++) files[`Harbour/boat ${i}.jpg`] = await solidJpeg(20 + i, 10, [10 * i, 20, 30]);
  files['Private/secret.jpg'] = await solidJpeg(12, 12, [1, 2, 3]);
  lib = await startLibraryHub(files);
  // Off the exact hour the test clock starts at: media-URL expiry buckets change on the hour.
  lib.t.clock.advance(60_000);
});
after(() => lib.t.close());

const cache = () => lib.t.app.pageCache;

test('a repeated page is answered from the cache, byte for byte', async () => {
  const first = await lib.get(harbour);
  assert.equal(first.status, 200);
  assert.equal(first.body.assets.length, 2);
  assert.ok(first.body.more);
  const hits = cache().hits;
  lib.t.clock.advance(1000);
  const second = await lib.get(harbour);
  assert.equal(cache().hits, hits + 1);
  // A fresh answer would seal its cursor at the new time; the cached one is the same bytes.
  assert.deepEqual(second.raw, first.raw);
  assert.equal(second.headers['content-type'], 'application/json; charset=utf-8');
  // Another size, cursor or locale is another entry.
  const next = await lib.get(`${harbour}&more=${encodeURIComponent(first.body.more)}`);
  assert.equal(next.status, 200);
  assert.notDeepEqual(next.body.assets.map((a: { id: string }) => a.id), first.body.assets.map((a: { id: string }) => a.id));
  const de = await lib.get(`${harbour}&uiLocale=de`);
  assert.notDeepEqual(de.raw, first.raw);
});

test('the MCP tools\' browse (AssetOps.browse) is served the entry a REST browse made, parsed back', async () => {
  const rest = await lib.get(harbour);
  assert.equal(rest.status, 200);
  const principal = await lib.t.hub.sessions.authenticate(`Bearer ${lib.access}`);
  const dam = await lib.t.hub.connections.open(`Bearer ${lib.dam}`, { userId: principal.user.id, partnerId: principal.partner.id });
  const hits = cache().hits;
  const page = await assetOpsOf(lib.t.hub).browse(dam, '/Harbour', { size: 2 });
  assert.equal(cache().hits, hits + 1);
  assert.deepEqual(page, rest.body);
});

test('a library change made by this process invalidates the cached pages', async () => {
  const before = await lib.get(harbour);
  assert.equal(before.body.totalAssetsCount, 5);
  writeFiles(lib.root, { 'Harbour/aaa new boat.jpg': await solidJpeg(30, 30, [200, 0, 0]) });
  await libraryOf(lib.t.hub).scanner.scan();
  const after = await lib.get(harbour);
  assert.equal(after.body.totalAssetsCount, 6);
  assert.equal(after.body.assets[0].name, 'aaa new boat.jpg');
});

test('a change committed by another connection (another process) invalidates too', async () => {
  const before = await lib.get(harbour);
  const first = before.body.assets[0].name as string;
  const other = new LibraryIndex(path.join(lib.t.dataDir, 'library', 'library.sqlite'));
  try {
    other.removeAsset(`Harbour/${first}`);
  } finally {
    other.close();
  }
  const after = await lib.get(harbour);
  assert.equal(after.body.totalAssetsCount, before.body.totalAssetsCount - 1);
  assert.ok(!after.body.assets.some((a: { name: string }) => a.name === first));
  await libraryOf(lib.t.hub).scanner.scan(); // put the file back in the index
});

test('users and library accounts never share entries', async () => {
  const alicePage = await lib.get(`${api}/assets/folder/root`);
  assert.deepEqual(alicePage.body.folders.map((f: { id: string }) => f.id).sort(), ['/Harbour', '/Private']);
  assert.equal((await lib.get(harbour)).status, 200);

  // Another hub user, signed in to a library account limited to Private.
  await addAccount(libraryOf(lib.t.hub).index, 'dora', 'dora-password', ['Private'], lib.t.clock.now());
  const { access_token } = await lib.t.login({ sub: 'dora' });
  const doraDam = await signInToLibrary(lib.t, access_token, 'dora', 'dora-password');
  const asDora = (url: string) => lib.t.app.inject({ url, headers: { authorization: `Bearer ${access_token}`, 'provider-authorization': `Bearer ${doraDam}` } });
  const root = await asDora(`${api}/assets/folder/root`);
  assert.deepEqual(root.json().folders.map((f: { id: string }) => f.id), ['/Private']);
  const forbidden = await asDora(harbour);
  assert.equal(forbidden.statusCode, 403);
  assert.equal(forbidden.json().error.code, 'integration-forbidden');

  // The same hub user as alice, now signed in to dora's library account: dora's scope, not alice's cached page.
  const aliceAsDora = await signInToLibrary(lib.t, lib.access, 'dora', 'dora-password');
  const mixed = await lib.t.app.inject({ url: harbour, headers: { authorization: `Bearer ${lib.access}`, 'provider-authorization': `Bearer ${aliceAsDora}` } });
  assert.equal(mixed.statusCode, 403);
  const mixedRoot = await lib.t.app.inject({ url: `${api}/assets/folder/root`, headers: { authorization: `Bearer ${lib.access}`, 'provider-authorization': `Bearer ${aliceAsDora}` } });
  assert.deepEqual(mixedRoot.json().folders.map((f: { id: string }) => f.id), ['/Private']);
  // And alice's own page is still hers.
  assert.deepEqual((await lib.get(`${api}/assets/folder/root`)).raw, alicePage.raw);
});

test('signed URLs in cached pages verify, and a new expiry bucket means a fresh page', async () => {
  const a = await lib.get(harbour);
  const urlA = new URL(a.body.assets[0].downloadUrl);
  lib.t.clock.advance(30 * 60_000);
  const b = await lib.get(harbour);
  const urlB = new URL(b.body.assets[0].downloadUrl);
  // Within the hour a fresh answer (the entry aged out after a minute) carries the very same URLs.
  const expA = Number(urlA.searchParams.get('exp'));
  if (urlB.searchParams.get('exp') === String(expA)) assert.equal(urlB.href, urlA.href);
  lib.t.clock.advance(3600_000);
  // The hub access token has expired by now: a fresh one for the same user (the DAM token still fits).
  const { access_token } = await lib.t.login();
  const c = { body: (await lib.t.app.inject({ url: harbour, headers: { ...lib.headers, authorization: `Bearer ${access_token}` } })).json() };
  const urlC = new URL(c.body.assets[0].downloadUrl);
  assert.ok(Number(urlC.searchParams.get('exp')) > expA);
  // Still at least the documented two hours of validity from now.
  assert.ok(Number(urlC.searchParams.get('exp')) * 1000 - lib.t.clock.now() >= 2 * 3600_000);
  const download = await lib.t.app.inject({ url: urlC.pathname + urlC.search });
  assert.equal(download.statusCode, 200);
});

test('removing the library account ends cached answers at once', async () => {
  await addAccount(libraryOf(lib.t.hub).index, 'erin', 'erin-password', [], lib.t.clock.now());
  const { access_token } = await lib.t.login({ sub: 'erin' });
  const dam = await signInToLibrary(lib.t, access_token, 'erin', 'erin-password');
  const get = () => lib.t.app.inject({ url: harbour, headers: { authorization: `Bearer ${access_token}`, 'provider-authorization': `Bearer ${dam}` } });
  assert.equal((await get()).statusCode, 200);
  assert.equal((await get()).statusCode, 200);
  assert.ok(await libraryOf(lib.t.hub).index.removeAccount('erin'));
  const res = await get();
  assert.equal(res.json().error.code, 'integration-auth-failed');
});

test('folderResultBytes: the bytes Fastify itself sends for the browse route\'s response schema', async () => {
  const app = Fastify({ logger: false });
  for (const s of SHARED_SCHEMAS) app.addSchema(s);
  const asset = {
    id: 'a1', name: '港の船 "1" \\ ünï', parentPath: '/Harbour', fileSize: 12, xSizePx: 3, ySizePx: 4, modified: 5, version: 2,
    thumbnailUrl: 'https://hub.test/t?a=1&b=2', notInTheSchema: 'dropped',
    conversions: [{ id: 'web', name: 'Web', url: 'https://hub.test/c', extra: 1 }],
    exif: { cameraModel: 'X', exposureTime: 0.004, width: 3 },
    values: [{ id: 'v', type: 'TEXT' as const, value: 'val', name: 'Name', i18nName: { de: 'Näme', ja: '名前' } }],
  };
  const page: FolderPage = {
    id: '/Harbour', name: 'Harbour ☃', assets: [asset], folders: [{ id: '/Harbour/Old', name: 'Old' }],
    filters: [{ id: 'type', name: 'Type', options: [{ id: 'jpeg', name: 'JPEG', count: 1, isActive: true }] }], more: 'k.abc', totalAssetsCount: 1,
  };
  app.get('/f', { schema: { response: responses(Type.Ref('FolderResult')) } }, async () => ({ ...page, capabilities: NO_FOLDER_CAPABILITIES }));
  try {
    const res = await app.inject({ url: '/f' });
    assert.equal(res.statusCode, 200);
    assert.ok(!res.body.includes('notInTheSchema'));
    assert.deepEqual(folderResultBytes(page), res.rawPayload);
  } finally {
    await app.close();
  }
});

test('PageCache: bounded by bytes (least recently used out first) and by age', () => {
  const clock = new ManualClock(0);
  const c = new PageCache(clock, 1000, 60_000);
  c.set('a', Buffer.alloc(250));
  c.set('b', Buffer.alloc(250));
  c.set('c', Buffer.alloc(250));
  assert.ok(c.get('a'));
  c.set('d', Buffer.alloc(250));
  c.set('e', Buffer.alloc(250)); // over 1000 bytes: b (least recently used) goes
  assert.equal(c.get('b'), undefined);
  assert.ok(c.get('a') && c.get('c') && c.get('d') && c.get('e'));
  c.set('huge', Buffer.alloc(600)); // more than a quarter of the budget: never cached
  assert.equal(c.get('huge'), undefined);
  clock.advance(60_000);
  assert.equal(c.get('a'), undefined);
  const off = new PageCache(clock, 0);
  off.set('x', Buffer.alloc(1));
  assert.equal(off.get('x'), undefined);
  assert.equal(off.enabled, false);
});
