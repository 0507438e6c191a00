/**
 * The Microsoft 365 connector end to end through the hub, against its replay server (bodies built
 * from Microsoft's documented examples): sign-in (PKCE, the scopes, the account from GET /me),
 * the hierarchy (My files, followed sites, their libraries, folders), paging, search with its
 * scope, quoting and type filter, asset detail, versions, downloads fetched with no session
 * (byte-equal to what the replay serves), thumbnails that decode as images, and the DAM refresh
 * with Microsoft's rotating refresh tokens.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import sharp from 'sharp';
import { DAM_ACCESS_TYP } from '../../../src/auth/provider-tokens.js';
import { microsoft365Connector } from '../../../src/providers/microsoft365/provider.js';
import { siteId } from '../../../src/providers/microsoft365/mapping.js';
import { m365Fixture, startMicrosoft365Replay, type M365Replay } from '../../helpers/microsoft365-replay.js';
import { assertError, bearer, type TestHub } from '../../helpers/hub.js';
import { oauthSignIn, startConnectorHub } from '../../helpers/saas.js';

let r: M365Replay;
let t: TestHub;
let access: string;
let dam: { access_token: string; refresh_token?: string };
let origin: string;

before(async () => {
  r = await startMicrosoft365Replay([
    'Photos/hero.jpg', 'Photos/logo.png', 'Photos/a.txt', 'Photos/b.txt', 'Photos/Trips/beach.jpg', "Docs/o'brien notes.txt", 'readme.txt',
    '@site/Brand/guide.pdf', '@site/Brand/banner.jpg',
  ], { 'Photos/hero.jpg': 2 });
  ({ t } = await startConnectorHub(microsoft365Connector({
    clientId: 'm365-app', clientSecret: 'm365-secret', allowInsecureRequests: true,
    endpoints: { authorize: `${r.url}/common/oauth2/v2.0/authorize`, token: `${r.url}/common/oauth2/v2.0/token`, graph: `${r.url}/v1.0` },
  }), { timeoutMs: 2000, retries: 1, retryBaseMs: 1 }));
  access = (await t.login()).access_token;
  dam = await oauthSignIn(t, 'microsoft365', access);
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
/** A hub link (public URL http://hub.test) pointed at the listening hub. */
const local = (link: string) => {
  const u = new URL(link);
  assert.equal(u.origin, 'http://hub.test', 'the link is on the hub');
  return `${origin}${u.pathname}${u.search}`;
};

test('sign-in: PKCE S256, read-only scopes with offline_access, the account from GET /me, the token expiry', async () => {
  const q = r.lastAuthorize!;
  assert.equal(q.get('code_challenge_method'), 'S256');
  assert.equal(q.get('scope'), 'offline_access User.Read Files.Read.All Sites.Read.All');
  assert.equal(q.get('response_type'), 'code');
  const c = await t.hub.providerTokens.open(dam.access_token, DAM_ACCESS_TYP);
  assert.equal(c.cred.acct, m365Fixture('me').response.id);
  assert.equal(c.cred.rt, r.refreshTokens[0]);
  assert.equal(c.cred.exp, t.clock.now() + 3599 * 1000, 'expires_in of the token response');
});

test('root: "My files" and the followed SharePoint sites; a site: its document libraries', async () => {
  const root = await ok('/assets/folder/root');
  assert.equal(root.name, 'Microsoft 365');
  assert.deepEqual(root.folders.map((f: any) => f.name), ['My files', 'OneDrive Team Site', 'OneDrive Team Site1']);
  assert.equal(root.totalAssetsCount, 0);
  const site = await ok(`/assets/folder/${root.folders[1].id}`);
  assert.equal(site.name, 'OneDrive Team Site');
  assert.deepEqual(site.folders.map((f: any) => f.name), ['Documents']);
  const lib = await ok(`/assets/folder/${site.folders[0].id}`);
  assert.equal(lib.name, 'Shared Documents', 'a library is named by its URL, not Graph\'s "root"');
  assert.deepEqual(lib.folders, [{ id: r.ids['@site/Brand'], name: 'Brand' }]);
  const brand = await ok(`/assets/folder/${r.ids['@site/Brand']}`);
  const banner = brand.assets.find((a: any) => a.name === 'banner.jpg');
  assert.equal(banner.downloadHashSha1, undefined, 'SharePoint reports no SHA-1');
  assert.deepEqual(banner.values.find((v: any) => v.id === 'quickXorHash'), { id: 'quickXorHash', type: 'TEXT', name: 'QuickXorHash', value: 'HrqfA2a4dLd1Rh7/y0XxnXsHZTE=' });
  assert.equal(banner.parentPath, '/Brand');
  assert.equal((await ok(`/assets/folder/${siteId(m365Fixture('sites').followed.value[1].id)}`)).folders.length, 0);
});

test('a personal account (followedSites not supported): the root holds "My files" only; an outage there still surfaces', async () => {
  r.personal(true);
  try {
    const root = await ok('/assets/folder/root');
    assert.deepEqual(root.folders, [{ id: 'me', name: 'My files' }]);
  } finally {
    r.personal(false);
  }
  r.fault('rate-limit', 2, '120');
  assertError(await get('/assets/folder/root'), 'integration-unavailable', 503, 'integration');
  r.fault('rate-limit', 0);
});

test('My files: folders first page only, files paged by the hub over the whole listing, exact total', async () => {
  const mine = await ok('/assets/folder/me');
  assert.equal(mine.name, 'My files');
  assert.deepEqual(mine.folders.map((f: any) => f.name), ['Docs', 'Photos']);
  assert.deepEqual(mine.assets.map((a: any) => a.name), ['readme.txt']);
  const p1 = await ok(`/assets/folder/${r.ids['Photos']}?size=2`);
  assert.equal(p1.totalAssetsCount, 4);
  assert.deepEqual(p1.folders.map((f: any) => f.name), ['Trips']);
  const p2 = await ok(`/assets/folder/${r.ids['Photos']}?size=2&more=${encodeURIComponent(p1.more)}`);
  assert.deepEqual([...p1.assets, ...p2.assets].map((a: any) => a.name), ['a.txt', 'b.txt', 'hero.jpg', 'logo.png']);
  assert.deepEqual(p2.folders, []);
  assert.equal(p2.more, undefined);
});

test('search: scoped to a folder and below, quotes escaped, a type filter from the file facets', async () => {
  const scoped = await ok(`/assets/search?query=${encodeURIComponent('.jpg')}&parentId=${r.ids['Photos']}`);
  assert.deepEqual(scoped.assets.map((a: any) => a.name), ['beach.jpg', 'hero.jpg']);
  const quoted = await ok(`/assets/search?query=${encodeURIComponent("o'brien")}`);
  assert.deepEqual(quoted.assets.map((a: any) => a.name), ["o'brien notes.txt"]);
  assert.ok([...r.calls.keys()].some((p) => p.endsWith("/search(q='o''brien')")), 'the quote is doubled in the OData literal');
  const everything = await ok(`/assets/search?query=${encodeURIComponent('.')}`);
  const type = everything.filters.find((f: any) => f.id === 'type');
  assert.deepEqual(type.options.map((o: any) => [o.id, o.count]), [['type:image', 3], ['type:document', 4]]);
  const images = await ok(`/assets/search?query=${encodeURIComponent('.')}&filters=type:image`);
  assert.deepEqual(images.assets.map((a: any) => a.name), ['beach.jpg', 'hero.jpg', 'logo.png']);
  assert.equal(images.totalAssetsCount, 3);
  const site = await ok(`/assets/search?query=guide&parentId=${siteId(m365Fixture('sites').followed.value[0].id)}`);
  assert.deepEqual(site.assets.map((a: any) => a.name), ['guide.pdf']);
  const none = await ok(`/assets/search?query=readme&parentId=${r.ids['Photos']}`);
  assert.equal(none.totalAssetsCount, 0);
});

test('search scope holds when Graph answers a folder search with matches from the whole drive (re-checked by path)', async () => {
  r.wideSearch(true);
  try {
    const scoped = await ok(`/assets/search?query=${encodeURIComponent('.txt')}&parentId=${r.ids['Photos']}`);
    assert.deepEqual(scoped.assets.map((a: any) => a.name), ['a.txt', 'b.txt']);
    const sub = await ok(`/assets/search?query=${encodeURIComponent('.jpg')}&parentId=${r.ids['Photos/Trips']}`);
    assert.deepEqual(sub.assets.map((a: any) => a.name), ['beach.jpg']);
  } finally {
    r.wideSearch(false);
  }
});

test('asset: sizes, dates, hashes, photo EXIF, values, the web URL, and the version number of the versions list', async () => {
  const a = await ok(`/assets/asset/${r.ids['Photos/hero.jpg']}`);
  const f = m365Fixture('items').file;
  assert.equal(a.name, 'hero.jpg');
  assert.equal(a.parentPath, '/Photos');
  assert.equal(a.mimeType, 'image/jpeg');
  assert.equal(a.fileSize, r.content('Photos/hero.jpg').length);
  assert.equal(a.xSizePx, 1800);
  assert.equal(a.ySizePx, 1200);
  assert.equal(a.created, Date.parse(f.createdDateTime));
  assert.match(a.downloadHashSha1, /^[0-9a-f]{40}$/);
  assert.match(a.downloadHashSha256, /^[0-9a-f]{64}$/);
  assert.deepEqual(a.exif, { cameraModel: 'Contoso X100', orientation: '1', exposureTime: 0.004, apertureValue: '2.8', isoSpeedRatings: '200', width: 1800, height: 1200, dateTimeOriginal: Date.parse('2016-03-20T14:12:03Z') });
  assert.match(a.assetDetailsExternalUrl, /^https:\/\/m365x214355-my\.sharepoint\.com\/.*\/Photos\/hero\.jpg$/);
  assert.equal(a.version, 3);
  const v = await ok(`/assets/assetversions/${r.ids['Photos/hero.jpg']}?withMaster=true`);
  assert.equal(v.versions[0].version, a.version, 'the detail and the list agree on the current version');
  // Graph's large rendition as a conversion, fetched with no session; a non-image has none.
  assert.deepEqual(a.conversions.map((c: any) => [c.id, c.extension]), [['large', 'jpg']]);
  const conv = await fetch(local(a.conversions[0].url));
  assert.equal(conv.status, 200);
  assert.equal((await sharp(Buffer.from(await conv.arrayBuffer())).metadata()).format, 'jpeg');
  assert.ok((r.thumbnails.get(r.graphId('Photos/hero.jpg')) ?? 0) >= 1);
  assert.equal((await ok(`/assets/asset/${r.ids['readme.txt']}`)).conversions, undefined);
});

test('versions: newest first, numbered from the oldest; withMaster includes the current one; each version downloads its own bytes', async () => {
  const all = await ok(`/assets/assetversions/${r.ids['Photos/hero.jpg']}?withMaster=true`);
  assert.equal(all.name, 'hero.jpg');
  assert.deepEqual(all.versions.map((x: any) => x.version), [3, 2, 1]);
  assert.deepEqual(all.versions.map((x: any) => x.versionComment), ['version 3.0 by Ryan Gregg', 'version 2.0 by Ryan Gregg', 'version 1.0 by Ryan Gregg']);
  const older = await ok(`/assets/assetversions/${r.ids['Photos/hero.jpg']}`);
  assert.deepEqual(older.versions.map((x: any) => x.version), [2, 1]);
  for (const x of all.versions) {
    const res = await fetch(local(x.downloadUrl));
    assert.equal(res.status, 200);
    assert.ok(Buffer.from(await res.arrayBuffer()).equals(r.content('Photos/hero.jpg', x.version)), `version ${x.version}`);
  }
  assertError(await get(`/assets/assetversions/${r.ids['Photos']}`), 'integration-not-found', 404, 'integration');
});

test('download: fetched with no session, byte-equal; Range honoured; Graph\'s pre-authenticated URL gets no Authorization', async () => {
  const a = await ok(`/assets/asset/${r.ids['Docs/o\'brien notes.txt']}`);
  const url = local(a.downloadUrl);
  const res = await fetch(url);
  assert.equal(res.status, 200);
  assert.ok(Buffer.from(await res.arrayBuffer()).equals(r.content("Docs/o'brien notes.txt")));
  assert.equal(r.downloads.at(-1)!.headers.authorization, undefined, 'the user\'s token stays with Graph');
  const part = await fetch(url, { headers: { range: 'bytes=10-19' } });
  assert.equal(part.status, 206);
  assert.ok(Buffer.from(await part.arrayBuffer()).equals(r.content("Docs/o'brien notes.txt").subarray(10, 20)));
  assert.equal(r.downloads.at(-1)!.headers.range, 'bytes=10-19', 'Range goes to the pre-authenticated URL');
  const listed = (await ok(`/assets/folder/${r.ids['Photos']}`)).assets.find((x: any) => x.name === 'a.txt');
  const viaList = await fetch(local(listed.downloadUrl));
  assert.ok(Buffer.from(await viaList.arrayBuffer()).equals(r.content('Photos/a.txt')));
});

test('thumbnails: every image of a listing, a search and a detail has a thumbnailUrl that decodes as an image; other files have none', async () => {
  const folder = await ok(`/assets/folder/${r.ids['Photos']}`);
  assert.equal(folder.assets.find((a: any) => a.name === 'a.txt').thumbnailUrl, undefined);
  const search = await ok('/assets/search?query=beach');
  const detail = await ok(`/assets/asset/${r.ids['@site/Brand/banner.jpg']}`);
  for (const a of [folder.assets.find((x: any) => x.name === 'hero.jpg'), search.assets[0], detail]) {
    assert.match(a.thumbnailUrl, /\/api\/v1\/connectors\/microsoft365\/thumbnail\//);
    const res = await fetch(local(a.thumbnailUrl));
    assert.equal(res.status, 200);
    const m = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
    assert.ok(m.format && m.width! > 0 && m.height! > 0, 'decodes as an image');
  }
  assert.ok((r.thumbnails.get(r.graphId('Photos/hero.jpg')) ?? 0) >= 1, 'Graph\'s medium rendition was used');
});

test('refresh: a revoked access token is integration-auth-failed; /auth/refreshToken renews it and keeps Microsoft\'s new refresh token', async () => {
  r.revokeTokens();
  const body = assertError(await get('/assets/folder/me'), 'integration-auth-failed', 401, 'integration');
  assert.match(body.error.details, /unauthenticated: The caller is not authenticated/);
  const issued = r.refreshTokens.length;
  const ref = await t.app.inject({ method: 'GET', url: '/api/v1/auth/refreshToken', headers: { authorization: bearer(access), 'provider-authorization': bearer(dam.refresh_token!) } });
  assert.equal(ref.statusCode, 200, ref.body);
  const renewed = ref.json();
  assert.equal((await get('/assets/folder/me', renewed.access_token)).statusCode, 200);
  const c = await t.hub.providerTokens.open(renewed.access_token, DAM_ACCESS_TYP);
  assert.equal(c.cred.rt, r.refreshTokens[issued], 'the rotated refresh token is the one kept');
  assert.notEqual(c.cred.rt, r.refreshTokens[0]);
  dam = renewed;
});

test('a download link outlives the access token it was made with: past its expiry the grant\'s refresh token renews it', async () => {
  const a = await ok(`/assets/asset/${r.ids['readme.txt']}`);
  t.clock.advance(2 * 3600_000);
  r.revokeTokens();
  const res = await fetch(local(a.downloadUrl));
  assert.equal(res.status, 200, await res.clone().text());
  assert.ok(Buffer.from(await res.arrayBuffer()).equals(r.content('readme.txt')));
});
