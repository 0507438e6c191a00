/**
 * The Frontify connector end to end through the hub against its replay of one tenant (bodies
 * built from Frontify's published GraphQL reference): sign-in with the tenant as serverUrl,
 * browse, paging, search, detail, download bytes, thumbnail, versions, refresh; and the faults
 * of issue 20 (tokens expired or revoked mid-traversal, a serverUrl that is private or not
 * Frontify, 429 storms, a folder of 100,000 assets, an asset deleted after listing, HTML errors).
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import sharp from 'sharp';
import { DAM_ACCESS_TYP } from '../../../src/auth/provider-tokens.js';
import { frontifyConnector } from '../../../src/providers/frontify/provider.js';
import { frontifyFixture, startFrontifyReplay, type FrontifyReplay } from '../../helpers/frontify-replay.js';
import { assertError, bearer, type TestHub } from '../../helpers/hub.js';
import { continueToVendor, TestBrowser, vendorConsent } from '../../helpers/browser.js';
import { startConnectorHub } from '../../helpers/saas.js';

let r: FrontifyReplay;
let t: TestHub;
let access: string;
let dam: { access_token: string; refresh_token?: string };
const sleeps: number[] = [];

const TIMEOUT_MS = 800;

async function signIn(serverUrl: string | null) {
  const q = serverUrl ? `&serverUrl=${encodeURIComponent(serverUrl)}` : '';
  const start = await t.app.inject({ method: 'POST', url: `/api/v1/auth/login?provider=frontify&polling=true${q}`, headers: { authorization: bearer(access) } });
  if (start.statusCode !== 200) return { start };
  const { state, redirect_uri } = start.json();
  // As a browser does it (test/helpers/browser.ts): the confirm page, Continue, the vendor, the callback.
  const browser = new TestBrowser(t);
  const back = await vendorConsent(browser, await continueToVendor(browser, redirect_uri));
  const cb = await browser.open(back);
  assert.equal(cb.status, 200, cb.body);
  const poll = await t.app.inject({ method: 'GET', url: `/api/v1/auth/login?state=${encodeURIComponent(state)}&polling=true` });
  return { start, tokens: poll.json() as { access_token: string; refresh_token?: string } };
}

before(async () => {
  r = await startFrontifyReplay(['Brand/hero.jpg', 'Brand/guide.pdf', 'Brand/notes.txt', 'Brand/Sub/logo.png', 'top.png', '@Archive/hero old.jpg', '@Archive/Old/hero older.jpg', '@Archive/x.png'], { 'Brand/hero.jpg': 2 }, { big: { Huge: 100_000 } });
  const factory = frontifyConnector({ clientId: 'fy-app', clientSecret: 'fy-secret', allowInsecureRequests: true });
  // A recording sleep: Retry-After is honoured without real waiting.
  ({ t } = await startConnectorHub((deps) => factory({ ...deps, sleep: async (ms) => { sleeps.push(ms); } }), { timeoutMs: TIMEOUT_MS, retries: 1, retryBaseMs: 1 }));
  access = (await t.login()).access_token;
  const s = await signIn(r.url);
  assert.ok(s.tokens, s.start.body);
  dam = s.tokens;
});
after(async () => {
  await t?.close();
  await r?.close();
});

const get = (url: string, token = dam.access_token) =>
  t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: { authorization: bearer(access), 'provider-authorization': bearer(token) } });
const folder = (path: string) => get(`/assets/folder/${encodeURIComponent(r.ids[path]!)}`);

test('sign-in on the tenant: PKCE code exchange, the GraphQL currentUser as account, the refresh token and expiry kept', async () => {
  const c = await t.hub.providerTokens.open(dam.access_token, DAM_ACCESS_TYP);
  assert.equal(c.cred.acct, frontifyFixture('graphql').currentUser.value.id);
  assert.equal(c.cred.srv, r.url);
  assert.match(String(c.cred.rt), /^def50200a1b2c3d4e5f6\./);
  assert.equal(c.cred.exp, t.clock.now() + 3600 * 1000);
  assert.equal(r.calls.get('accesstoken'), 1);
});

test('a sign-in without serverUrl (no pinned tenant) is a clear integration error', async () => {
  const s = await signIn(null);
  const body = assertError(s.start, 'integration-operation-failed', 400, 'integration');
  assert.match(body.error.message, /address of your Frontify/);
});

test('a private serverUrl is refused by the address policy before any connection', async () => {
  const s = await signIn('https://10.1.2.3');
  const body = assertError(s.start, 'integration-unavailable', 502, 'integration');
  assert.match(body.error.details, /refused to connect to 10\.1\.2\.3/);
});

test('a serverUrl that is not a Frontify fails the sign-in before the user is sent there', async () => {
  const other = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<html><body>Welcome to nginx!</body></html>');
  });
  await new Promise<void>((ok) => other.listen(0, '127.0.0.1', ok));
  try {
    const s = await signIn(`http://127.0.0.1:${(other.address() as AddressInfo).port}`);
    const body = assertError(s.start, 'integration-operation-failed', 400, 'integration');
    assert.match(body.error.message, /does not answer like a Frontify/);
    assert.match(body.error.details, /not a Frontify/);
  } finally {
    other.closeAllConnections();
    other.close();
  }
});

test('the providers listing shows Frontify with its capabilities and an inline SVG logo that renders', async () => {
  const res = await t.app.inject({ method: 'GET', url: '/api/v1/auth/providers', headers: { authorization: bearer(access) } });
  const fy = res.json().find((p: any) => p.id === 'frontify');
  assert.equal(fy.name, 'Frontify');
  assert.equal(fy.capabilities.serverUrl, true);
  assert.equal(fy.capabilities.similarSearch, false);
  assert.equal(fy.capabilities.filters, false);
  assert.match(fy.logo, /^data:image\/svg\+xml,/);
  assert.doesNotMatch(fy.logo, /#/, 'a bare # would end the data URL');
  const png = await sharp(Buffer.from(decodeURIComponent(fy.logo.slice('data:image/svg+xml,'.length)))).png().toBuffer();
  assert.equal((await sharp(png).metadata()).width, 64);
});

test('hierarchy: root → brands → libraries → folders and assets', async () => {
  const root = (await get('/assets/folder/root')).json();
  assert.deepEqual(root.folders, [{ id: r.ids['#brand'], name: 'Acme' }]);
  assert.equal(root.totalAssetsCount, 0);
  const brand = (await get(`/assets/folder/${encodeURIComponent(r.ids['#brand']!)}`)).json();
  assert.equal(brand.name, 'Acme');
  assert.deepEqual(brand.folders, [{ id: r.ids[''], name: 'Media Library' }, { id: r.ids['@Archive'], name: 'Archive' }]);
  const lib = (await get(`/assets/folder/${encodeURIComponent(r.ids['']!)}`)).json();
  assert.deepEqual(lib.folders.map((f: any) => f.name), ['Brand', 'Huge']);
  assert.deepEqual(lib.assets.map((a: any) => a.name), ['top.png']);
  assert.equal(lib.totalAssetsCount, 1);
});

test('a folder: assets mapped from the Image/Document/File bodies, thumbnails for images and documents, exact totals, paging', async () => {
  const res = await folder('Brand');
  assert.equal(res.statusCode, 200, res.body);
  const b = res.json();
  assert.equal(b.name, 'Brand');
  assert.deepEqual(b.folders, [{ id: r.ids['Brand/Sub'], name: 'Sub' }]);
  assert.equal(b.totalAssetsCount, 3);
  const byName = Object.fromEntries(b.assets.map((a: any) => [a.name, a]));
  const hero = byName['hero.jpg'];
  assert.equal(hero.id, r.ids['Brand/hero.jpg']);
  assert.equal(hero.title, 'hero');
  assert.equal(hero.caption, 'Spring campaign hero image');
  assert.deepEqual(hero.keywords, ['campaign', 'spring']);
  assert.equal(hero.mimeType, 'image/jpeg');
  assert.equal(hero.type, 'image');
  assert.equal(hero.xSizePx, 1920);
  assert.equal(hero.fileSize, r.bytes('Brand/hero.jpg').length);
  assert.equal(hero.created, Date.parse('2024-03-01T09:30:00.000+00:00'));
  assert.match(hero.thumbnailUrl, /\/api\/v1\/connectors\/frontify\/thumbnail\//);
  assert.match(byName['guide.pdf'].thumbnailUrl, /\/thumbnail\//);
  assert.equal(byName['notes.txt'].thumbnailUrl, undefined);
  assert.equal(byName['notes.txt'].fileSize, r.bytes('Brand/notes.txt').length, 'BigInt size given as a string');
  const p1 = (await get(`/assets/folder/${encodeURIComponent(r.ids['Brand']!)}?size=2`)).json();
  assert.equal(p1.assets.length, 2);
  assert.equal(typeof p1.more, 'string');
  const p2 = (await get(`/assets/folder/${encodeURIComponent(r.ids['Brand']!)}?size=2&more=${encodeURIComponent(p1.more)}`)).json();
  assert.equal(p2.assets.length, 1);
  assert.deepEqual(p2.folders, []);
  assert.equal(p2.more, undefined);
});

test('search: within a folder (Frontify inFolder), a library, and from the root', async () => {
  const inFolder = (await get(`/assets/search?query=logo&parentId=${encodeURIComponent(r.ids['Brand']!)}`)).json();
  assert.deepEqual(inFolder.assets.map((a: any) => a.name), ['logo.png']);
  const none = (await get(`/assets/search?query=top&parentId=${encodeURIComponent(r.ids['Brand']!)}`)).json();
  assert.equal(none.totalAssetsCount, 0);
  const everywhere = (await get('/assets/search?query=guide')).json();
  assert.deepEqual(everywhere.assets.map((a: any) => a.name), ['guide.pdf']);
  assert.equal(everywhere.totalAssetsCount, 1);
});

test('search across libraries (root, brand): each library\'s total, then its hits one after another, exact and without gaps', async () => {
  for (const scope of ['', `&parentId=${encodeURIComponent(r.ids['#brand']!)}`]) {
    const p1 = (await get(`/assets/search?query=hero&size=2${scope}`)).json();
    assert.equal(p1.totalAssetsCount, 3);
    assert.deepEqual(p1.assets.map((a: any) => a.name), ['hero.jpg'], 'a short page at the end of the first library');
    const p2 = (await get(`/assets/search?query=hero&size=2${scope}&more=${encodeURIComponent(p1.more)}`)).json();
    assert.deepEqual(p2.assets.map((a: any) => a.name), ['hero old.jpg', 'hero older.jpg']);
    assert.equal(p2.more, undefined);
    assert.equal(p2.totalAssetsCount, 3);
  }
  const lib = (await get(`/assets/search?query=hero&parentId=${encodeURIComponent(r.ids['@Archive']!)}`)).json();
  assert.equal(lib.totalAssetsCount, 2);
  const sub = (await get(`/assets/search?query=hero&parentId=${encodeURIComponent(r.ids['@Archive/Old']!)}`)).json();
  assert.deepEqual(sub.assets.map((a: any) => a.name), ['hero older.jpg']);
  const detail = (await get(`/assets/asset/${encodeURIComponent(r.ids['@Archive/Old/hero older.jpg']!)}`)).json();
  assert.equal(detail.parentPath, '/Acme/Archive/Old');
});

test('asset detail: metadata, copyright, parent path, preview conversion; the signed downloadUrl serves the bytes to a plain client', async () => {
  const res = await get(`/assets/asset/${encodeURIComponent(r.ids['Brand/hero.jpg']!)}`);
  assert.equal(res.statusCode, 200, res.body);
  const a = res.json();
  assert.equal(a.copyright, '© Acme AG');
  assert.equal(a.parentPath, '/Acme/Media Library/Brand');
  assert.deepEqual(a.values.map((v: any) => [v.name, v.value]), [['Region', 'EMEA'], ['Channels', 'Web, Print'], ['Author', 'Jane Photographer']]);
  assert.equal(a.conversions[0].id, 'preview');
  assert.match(a.conversions[0].url, /^http:\/\/127\.0\.0\.1:\d+\/preview\//);
  // No session, no Authorization header: Frontify signs its download URLs.
  const dl = await fetch(a.downloadUrl);
  assert.equal(dl.status, 200);
  assert.deepEqual(Buffer.from(await dl.arrayBuffer()), r.bytes('Brand/hero.jpg'));
});

test('thumbnail: Frontify\'s preview at 256 px, fetched by the hub, loads as an image', async () => {
  const a = (await get(`/assets/asset/${encodeURIComponent(r.ids['Brand/hero.jpg']!)}`)).json();
  const u = new URL(a.thumbnailUrl);
  const res = await t.app.inject({ method: 'GET', url: u.pathname + u.search });
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.headers['content-type'], 'image/jpeg');
  const m = await sharp(res.rawPayload).metadata();
  assert.equal(m.format, 'jpeg');
  assert.ok(m.width! <= 256 && m.height! <= 256);
  assert.equal(r.previews.get(r.ids['Brand/hero.jpg']!), 1);
});

test('versions: Frontify revisions newest first; withMaster adds the current file', async () => {
  const id = encodeURIComponent(r.ids['Brand/hero.jpg']!);
  const all = (await get(`/assets/assetversions/${id}?withMaster=true`)).json();
  assert.deepEqual(all.versions.map((v: any) => v.version), [3, 2, 1]);
  assert.ok(all.versions[0].downloadUrl, 'the current file downloads');
  assert.equal(all.versions[1].downloadUrl, undefined, 'Frontify reports no file of an older revision');
  assert.match(all.versions[1].versionComment, /^revision .+ by Ada Example$/);
  const older = (await get(`/assets/assetversions/${id}`)).json();
  assert.deepEqual(older.versions.map((v: any) => v.version), [2, 1]);
});

test('a folder of 100,000 assets is paged by Frontify (limit ≤ 100), with its exact total, never read whole', async () => {
  const p1 = (await folder('Huge')).json();
  assert.equal(p1.totalAssetsCount, 100_000);
  assert.equal(p1.assets.length, 50);
  const p2 = (await get(`/assets/folder/${encodeURIComponent(r.ids['Huge']!)}?size=100&more=${encodeURIComponent(p1.more)}`)).json();
  assert.equal(p2.assets.length, 50, 'an unaligned offset gives a short page, then pages align');
  assert.equal(p2.assets[0].name, 'big 000050.jpg');
  assert.ok(r.maxLimit <= 100);
});

test('an asset deleted between the listing and the detail: 404 integration-not-found', async () => {
  const listed = (await folder('Brand')).json();
  const notes = listed.assets.find((a: any) => a.name === 'notes.txt');
  r.remove('Brand/notes.txt');
  assertError(await get(`/assets/asset/${encodeURIComponent(notes.id)}`), 'integration-not-found', 404, 'integration');
  assertError(await get(`/assets/asset/${encodeURIComponent('not/a/frontify:id')}`), 'integration-not-found', 404, 'integration');
});

test('429 with a long Retry-After: integration-unavailable 503 passing Retry-After on', async () => {
  r.fault('rate-limit', 2);
  const res = await folder('Brand');
  assertError(res, 'integration-unavailable', 503, 'integration');
  assert.equal(res.headers['retry-after'], '300');
});

test('a 429 storm with a short Retry-After: honoured (no real sleep), then a clear 503', async () => {
  sleeps.length = 0;
  r.fault('rate-limit-short', 5);
  const res = await folder('Brand');
  assertError(res, 'integration-unavailable', 503, 'integration');
  assert.deepEqual(sleeps, [2000]);
  r.fault('rate-limit-short', 0);
});

test('an HTML error page: integration-unavailable with its words, bounded, in details', async () => {
  r.fault('html-502', 2);
  const body = assertError(await folder('Brand'), 'integration-unavailable', 502, 'integration');
  assert.match(body.error.details, /502 Bad Gateway upstream unavailable/);
  assert.doesNotMatch(body.error.details, /<|color:red/);
  assert.ok(body.error.details.length < 2300);
  r.fault('html', 1);
  const ok200 = assertError(await folder('Brand'), 'integration-unavailable', 502, 'integration');
  assert.match(ok200.error.details, /expected JSON but the answer is text\/html/);
});

test('an upstream that keeps hanging: integration-unavailable 504 within the deadline', async () => {
  r.fault('hang', 2);
  const started = Date.now();
  assertError(await folder('Brand'), 'integration-unavailable', 504, 'integration');
  assert.ok(Date.now() - started < 10 * TIMEOUT_MS);
});

test('a token that expires mid-traversal (Frontify\'s permission error, HTTP 200): integration-auth-failed with Frontify\'s words', async () => {
  const p1 = (await get(`/assets/folder/${encodeURIComponent(r.ids['Brand']!)}?size=1`)).json();
  r.fault('expired-token', 1);
  const body = assertError(await get(`/assets/folder/${encodeURIComponent(r.ids['Brand']!)}?size=1&more=${encodeURIComponent(p1.more)}`), 'integration-auth-failed', 401, 'integration');
  assert.match(body.error.details, /policy 'authenticated' not fulfilled/);
});

test('revoked mid-traversal: integration-auth-failed; the DAM refresh (Frontify /api/oauth/refresh) rotates the refresh token and works', async () => {
  r.revokeTokens();
  const body = assertError(await folder('Brand'), 'integration-auth-failed', 401, 'integration');
  assert.match(body.error.details, /UserId not set in identity/);
  const ref = await t.app.inject({ method: 'GET', url: '/api/v1/auth/refreshToken', headers: { authorization: bearer(access), 'provider-authorization': bearer(dam.refresh_token!) } });
  assert.equal(ref.statusCode, 200, ref.body);
  const renewed = ref.json();
  assert.equal(r.calls.get('refresh'), 1);
  const again = await folder('Brand').then(() => get(`/assets/folder/${encodeURIComponent(r.ids['Brand']!)}`, renewed.access_token));
  assert.equal(again.statusCode, 200, again.body);
  const c = await t.hub.providerTokens.open(renewed.access_token, DAM_ACCESS_TYP);
  assert.match(String(c.cred.rt), /^def50200f6e5d4c3b2a1\./, 'Frontify rotates refresh tokens: the new one is kept');
  assert.equal(c.cred.srv, r.url);
});

test('a refresh token used again after Frontify rotated it: integration-auth-failed with invalid_grant', async () => {
  const ref = await t.app.inject({ method: 'GET', url: '/api/v1/auth/refreshToken', headers: { authorization: bearer(access), 'provider-authorization': bearer(dam.refresh_token!) } });
  const body = assertError(ref, 'integration-auth-failed', 401, 'integration');
  assert.match(body.error.details, /invalid_grant/);
});

test('a cursor that outlived its connection (25 h later, signed in again): a clear 400, and a fresh traversal works', async () => {
  const p1 = (await get(`/assets/folder/${encodeURIComponent(r.ids['Brand']!)}?size=1`)).json();
  t.clock.advance(25 * 3600_000);
  // Both the hub access token and the DAM connection have expired by then: the user signs in again.
  access = (await t.login()).access_token;
  dam = (await signIn(r.url)).tokens!;
  const stale = await get(`/assets/folder/${encodeURIComponent(r.ids['Brand']!)}?size=1&more=${encodeURIComponent(p1.more)}`);
  const body = assertError(stale, 'hub-validation-error', 400);
  assert.match(body.error.details, /more: .*start again from the first page/);
  assert.equal((await get(`/assets/folder/${encodeURIComponent(r.ids['Brand']!)}?size=1`)).statusCode, 200);
});
