/**
 * The Canto connector end to end through the hub over its replay (documented shapes): sign-in on
 * the region's OAuth host in Canto's token dialect, the folder/album hierarchy, paging, search
 * with filters, asset details, versions, downloads fetched by a plain HTTP client with no session
 * (bytes equal to what the replay serves), thumbnails that decode as images, and the refresh.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import sharp from 'sharp';
import { DAM_ACCESS_TYP } from '../../../src/auth/provider-tokens.js';
import { cantoFixture, startCantoReplay, type CantoReplay } from '../../helpers/canto-replay.js';
import { assertError, bearer, type TestHub } from '../../helpers/hub.js';
import { cantoSignIn, startCantoHub } from './harness.js';

let r: CantoReplay;
let t: TestHub;
let access: string;
let dam: { access_token: string; refresh_token?: string };
let origin: string;

before(async () => {
  r = await startCantoReplay([
    'Marketing/Campaign/hero.jpg', 'Marketing/Campaign/brief.pdf', 'Marketing/Campaign/spot.mp4', 'Marketing/Campaign/jingle.mp3',
    'Marketing/Logos/logo.png', 'Press/kit.txt',
  ], { 'Marketing/Campaign/hero.jpg': 2 });
  ({ t } = await startCantoHub(r.url, { timeoutMs: 5000, retries: 1, retryBaseMs: 1 }));
  access = (await t.login()).access_token;
  dam = await cantoSignIn(t, access, r.url);
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  origin = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
});
after(async () => {
  await t?.close();
  await r?.close();
});

const get = (url: string, token = dam.access_token) =>
  t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: { authorization: bearer(access), 'provider-authorization': bearer(token) } });
const ok = async (url: string) => {
  const res = await get(url);
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
};
/** A hub link pointed at the listening hub (its public URL is http://hub.test). */
const local = (link: string) => {
  const u = new URL(link);
  assert.equal(u.origin, 'http://hub.test', 'the link is on the hub, not on Canto');
  return `${origin}${u.pathname}${u.search}`;
};

test('sign-in: Canto\'s app_id/app_secret and PKCE at the token endpoint; the camelCase answer read; the user as account', async () => {
  const req = r.lastTokenRequest;
  assert.equal(req.app_id, 'canto-app');
  assert.equal(req.app_secret, 'canto-secret');
  assert.equal(req.grant_type, 'authorization_code');
  assert.match(req.code_verifier ?? '', /^[A-Za-z0-9_-]{43,128}$/);
  const c = await t.hub.providerTokens.open(dam.access_token, DAM_ACCESS_TYP);
  const fx = cantoFixture('oauth_token').code;
  assert.ok(String(c.cred.at).startsWith(fx.accessToken));
  assert.ok(String(c.cred.rt).startsWith(fx.refreshToken));
  assert.equal(c.cred.exp, t.clock.now() + Number(fx.expiresIn) * 1000, 'expiresIn of the token answer');
  assert.equal(c.cred.acct, `${new URL(r.url).host}/${cantoFixture('user').response.userId}`);
  assert.equal(c.cred.srv, r.url);
});

test('the provider is listed with serverUrl, filters, the Md5 hash and an inline logo', async () => {
  const p = (await (await t.app.inject({ method: 'GET', url: '/api/v1/auth/providers', headers: { authorization: bearer(access) } })).json()).find((x: any) => x.id === 'canto');
  assert.equal(p.name, 'Canto');
  assert.match(p.logo, /^data:image\/svg\+xml,/);
  assert.equal(p.capabilities.serverUrl, true);
  assert.equal(p.capabilities.filters, true);
  assert.equal(p.capabilities.versions, true);
  assert.equal(p.capabilities.similarSearch, false);
  assert.equal(p.capabilities.assetHashAlgorithm, 'Md5');
});

test('providerInfo names the tenant and the search filters', async () => {
  const info = await ok('/system/providerInfo');
  assert.equal(info.remoteSystemPrefix, r.url);
  assert.deepEqual(info.filters, [{ id: 'scheme', name: 'Type' }, { id: 'approval', name: 'Approval status' }]);
});

test('hierarchy: the root lists the top folders and albums; a folder its albums; an album its content', async () => {
  const root = await ok('/assets/folder/root');
  assert.deepEqual(root.folders, [{ id: r.ids['Marketing'], name: 'Marketing' }, { id: r.ids['Press'], name: 'Press' }]);
  assert.match(r.ids['Marketing']!, /^folder:/);
  assert.match(r.ids['Press']!, /^album:/);
  assert.equal(root.totalAssetsCount, 0);
  const folder = await ok(`/assets/folder/${encodeURIComponent(r.ids['Marketing']!)}`);
  assert.deepEqual(folder.folders.map((f: any) => f.name), ['Campaign', 'Logos']);
  assert.deepEqual(folder.assets, []);
  const album = await ok(`/assets/folder/${encodeURIComponent(r.ids['Marketing/Campaign']!)}?size=2`);
  assert.equal(album.totalAssetsCount, 4, 'found of the album listing');
  assert.equal(album.assets.length, 2);
  assert.equal(typeof album.more, 'string');
  const rest = await ok(`/assets/folder/${encodeURIComponent(r.ids['Marketing/Campaign']!)}?size=2&more=${encodeURIComponent(album.more)}`);
  assert.equal(rest.assets.length, 2);
  assert.equal(rest.more, undefined);
  assert.equal(new Set([...album.assets, ...rest.assets].map((a: any) => a.id)).size, 4);
});

test('asset detail: the documented content record mapped onto the seed\'s fields', async () => {
  const a = await ok(`/assets/asset/${encodeURIComponent(r.ids['Marketing/Campaign/hero.jpg']!)}`);
  const fx = cantoFixture('content').image;
  assert.equal(a.name, 'hero.jpg');
  assert.equal(a.type, 'image');
  assert.equal(a.mimeType, 'image/jpeg');
  assert.equal(a.fileSize, r.bytesOf('Marketing/Campaign/hero.jpg').length);
  assert.equal(a.xSizePx, Number(fx.width));
  assert.equal(a.ySizePx, Number(fx.height));
  assert.equal(a.created, Date.UTC(2015, 3, 15, 6, 38, 36, 418), 'yyyyMMddHHmmssSSS read as UTC');
  assert.equal(a.modified, Date.UTC(2015, 3, 16, 10, 15, 0, 0));
  assert.equal(a.caption, fx.description);
  assert.equal(a.copyright, fx.copyright);
  assert.equal(a.termsOfUse, fx.termsAndConditions);
  assert.equal(a.released, 'Approved');
  assert.deepEqual(a.keywords, ['spring', 'campaign', 'hero']);
  assert.match(a.downloadHashMd5, /^[0-9a-f]{32}$/);
  assert.deepEqual(a.values.map((v: any) => [v.id, v.value]), [['approvalStatus', 'Approved'], ['additional.Photographer', 'A. Person'], ['additional.Region', 'EMEA, APAC']]);
  assert.equal(a.version, 3, 'the current entry of versionHistory, numbered from the oldest');
  assert.equal(a.versionComment, 'upload 3');
  assert.equal(a.assetDetailsExternalUrl, `${r.url}/library?viewIndex=0&column=image&id=${r.ids['Marketing/Campaign/hero.jpg']!.split(':')[1]}`);
  assert.match(a.downloadUrl, /^http:\/\/hub\.test\/api\/v1\/connectors\/canto\/download\/hero\.jpg\?g=/);
  assert.match(a.thumbnailUrl, /^http:\/\/hub\.test\/api\/v1\/connectors\/canto\/thumbnail\//);
  const pdf = await ok(`/assets/asset/${encodeURIComponent(r.ids['Marketing/Campaign/brief.pdf']!)}`);
  assert.equal(pdf.mimeType, 'application/pdf', 'from the name where Canto gives no Content Type');
  const mp3 = await ok(`/assets/asset/${encodeURIComponent(r.ids['Marketing/Campaign/jingle.mp3']!)}`);
  assert.equal(mp3.thumbnailUrl, undefined, 'Canto has no preview of audio');
});

test('versions: newest first, numbered as the detail numbers them; the current one only with withMaster', async () => {
  const id = encodeURIComponent(r.ids['Marketing/Campaign/hero.jpg']!);
  const all = await ok(`/assets/assetversions/${id}?withMaster=true`);
  assert.equal(all.name, 'hero.jpg');
  assert.deepEqual(all.versions.map((v: any) => v.version), [3, 2, 1]);
  assert.deepEqual(all.versions.map((v: any) => v.versionComment), ['upload 3', 'upload 2', 'upload 1']);
  const older = await ok(`/assets/assetversions/${id}`);
  assert.deepEqual(older.versions.map((v: any) => v.version), [2, 1]);
});

test('search: keyword across the library with exact totals; filters with counts; a filter narrows', async () => {
  const s = await ok('/assets/search?query=o');
  assert.deepEqual(s.assets.map((a: any) => a.name).sort(), ['hero.jpg', 'logo.png', 'spot.mp4']);
  assert.equal(s.totalAssetsCount, 3, 'found of the search');
  const type = s.filters.find((f: any) => f.id === 'scheme');
  assert.deepEqual(type.options.map((o: any) => [o.id, o.count]), [['scheme:image', 2], ['scheme:video', 1], ['scheme:audio', 0], ['scheme:document', 0], ['scheme:presentation', 0], ['scheme:other', 0]]);
  assert.ok(s.filters.some((f: any) => f.id === 'approval'));
  const images = await ok('/assets/search?query=o&filters=scheme%3Aimage');
  assert.deepEqual(images.assets.map((a: any) => a.name).sort(), ['hero.jpg', 'logo.png']);
  assert.equal(images.filters.find((f: any) => f.id === 'scheme').options.find((o: any) => o.id === 'scheme:image').isActive, true);
  const two = await ok('/assets/search?query=o&filters=scheme%3Aimage&filters=scheme%3Avideo');
  assert.equal(two.totalAssetsCount, 3, 'options of one facet are OR\'d');
  for (const bad of ['colour%3Ared', 'constructor%3Ax', 'toString%3A', 'scheme%3Afolder', 'scheme', '%3Aimage']) {
    assertError(await get(`/assets/search?query=o&filters=${bad}`), 'hub-validation-error', 400);
  }
});

test('search scoped to an album; a folder scope is not offered by Canto', async () => {
  const s = await ok(`/assets/search?query=logo&parentId=${encodeURIComponent(r.ids['Marketing/Logos']!)}`);
  assert.deepEqual(s.assets.map((a: any) => a.name), ['logo.png']);
  const none = await ok(`/assets/search?query=hero&parentId=${encodeURIComponent(r.ids['Marketing/Logos']!)}`);
  assert.equal(none.totalAssetsCount, 0);
  assertError(await get(`/assets/search?query=logo&parentId=${encodeURIComponent(r.ids['Marketing']!)}`), 'integration-not-supported', 501, 'integration');
});

test('search by image is not offered: 501 integration-not-supported', async () => {
  const res = await t.app.inject({ method: 'POST', url: '/api/v1/assets/search', headers: { authorization: bearer(access), 'provider-authorization': bearer(dam.access_token) }, payload: { dataBase64: 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==' } });
  assertError(res, 'integration-not-supported', 501, 'integration');
});

test('download: the link is fetched with no session and no Authorization; the bytes are the replay\'s; Range passes', async () => {
  const a = await ok(`/assets/asset/${encodeURIComponent(r.ids['Marketing/Campaign/brief.pdf']!)}`);
  const res = await fetch(local(a.downloadUrl));
  assert.equal(res.status, 200);
  assert.ok(Buffer.from(await res.arrayBuffer()).equals(r.bytesOf('Marketing/Campaign/brief.pdf')));
  assert.match(String(res.headers.get('content-disposition')), /filename\*=UTF-8''brief\.pdf/);
  const part = await fetch(local(a.downloadUrl), { headers: { range: 'bytes=2-9' } });
  assert.equal(part.status, 206);
  assert.ok(Buffer.from(await part.arrayBuffer()).equals(r.bytesOf('Marketing/Campaign/brief.pdf').subarray(2, 10)));
  const listed = await ok(`/assets/folder/${encodeURIComponent(r.ids['Press']!)}`);
  const kit = await fetch(local(listed.assets[0].downloadUrl));
  assert.ok(Buffer.from(await kit.arrayBuffer()).equals(r.bytesOf('Press/kit.txt')), 'listings carry working links too');
});

test('thumbnails: Canto\'s preview through the hub, decoded as an image', async () => {
  const album = await ok(`/assets/folder/${encodeURIComponent(r.ids['Marketing/Campaign']!)}`);
  const hero = album.assets.find((a: any) => a.name === 'hero.jpg');
  const res = await fetch(local(hero.thumbnailUrl));
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'image/jpeg');
  const m = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
  assert.equal(m.format, 'jpeg');
  assert.ok(m.width! > 0 && m.height! > 0);
});

test('refresh: /auth/refreshToken runs Canto\'s refresh_token grant; the new token browses', async () => {
  const ref = await t.app.inject({ method: 'GET', url: '/api/v1/auth/refreshToken', headers: { authorization: bearer(access), 'provider-authorization': bearer(dam.refresh_token!) } });
  assert.equal(ref.statusCode, 200, ref.body);
  assert.equal(r.lastTokenRequest.grant_type, 'refresh_token');
  assert.equal(r.lastTokenRequest.app_id, 'canto-app');
  const renewed = ref.json();
  const c = await t.hub.providerTokens.open(renewed.access_token, DAM_ACCESS_TYP);
  assert.ok(String(c.cred.at).startsWith(cantoFixture('oauth_token').refresh.accessToken));
  assert.equal((await get('/assets/folder/root', renewed.access_token)).statusCode, 200);
});
