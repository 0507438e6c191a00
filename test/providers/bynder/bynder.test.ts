/**
 * The Bynder connector end to end through the hub, against its replay of documented responses:
 * sign-in on the portal named by serverUrl, browse (asset bank, brands, sub-brands, collections),
 * paging, keyword search with facet filters, search by image, asset detail, versions, download
 * bytes fetched with no session, thumbnails that decode as images, refresh.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import sharp from 'sharp';
import { DAM_ACCESS_TYP } from '../../../src/auth/provider-tokens.js';
import { BYNDER_SCOPES, bynderConnector } from '../../../src/providers/bynder/provider.js';
import { BYNDER_CLIENT, bynderFixture, bynderSignIn, startBynderReplay, type BynderReplay } from '../../helpers/bynder-replay.js';
import { assertError, bearer, type TestHub } from '../../helpers/hub.js';
import { startConnectorHub } from '../../helpers/saas.js';

let r: BynderReplay;
let t: TestHub;
let access: string;
let dam: { access_token: string; refresh_token?: string };
let authorizeUrl: URL;
let origin: string;

before(async () => {
  r = await startBynderReplay(['Acme/hero.jpg', 'Acme/logo.png', 'Acme/Outdoor/trail.jpg', 'Acme/guide.pdf', 'notes.txt'], { 'Acme/logo.png': 1 }, {
    collections: { 'Spring campaign': ['Acme/hero.jpg', 'Acme/Outdoor/trail.jpg'] },
  });
  // Multi-tenant: no portal configured, the user names it.
  ({ t } = await startConnectorHub(bynderConnector({ clientId: BYNDER_CLIENT.id, clientSecret: BYNDER_CLIENT.secret, allowInsecureRequests: true })));
  // Listening: downloads are fetched as a partner's server would, over HTTP.
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const addr = t.app.server.address() as AddressInfo;
  origin = `http://127.0.0.1:${addr.port}`;
  access = (await t.login()).access_token;
  const s = await bynderSignIn(t, access, `${r.url}/some/page?x=1`);
  dam = s.tokens;
  authorizeUrl = s.authorize;
});
after(async () => {
  await t?.close();
  await r?.close();
});

const get = (url: string, token = dam.access_token) =>
  t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: { authorization: bearer(access), 'provider-authorization': bearer(token) } });
const json = async (url: string) => {
  const res = await get(url);
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
};
/** A hub link fetched as a partner's server would: no session, no Authorization header. */
const fetchPlain = (url: string) => {
  const u = new URL(url);
  return t.app.inject({ method: 'GET', url: u.pathname + u.search });
};

test('sign-in: the portal origin from serverUrl, PKCE and the read-only scopes, the user from Retrieve current user, the offline refresh token', async () => {
  assert.equal(authorizeUrl.origin, r.url);
  assert.equal(authorizeUrl.pathname, '/v6/authentication/oauth2/auth');
  assert.equal(authorizeUrl.searchParams.get('scope'), BYNDER_SCOPES.join(' '));
  assert.equal(authorizeUrl.searchParams.get('code_challenge_method'), 'S256');
  const c = await t.hub.providerTokens.open(dam.access_token, DAM_ACCESS_TYP);
  assert.equal(c.cred.srv, `${r.url}/some/page?x=1`);
  assert.equal(c.cred.acct, `${new URL(r.url).host}/${bynderFixture('current_user').response.id}`);
  assert.match(String(c.cred.rt), /^c12e\.\.\.b5dc\./);
  assert.equal(c.cred.exp, t.clock.now() + 3600 * 1000);
  assert.equal(r.calls.get('/v6/authentication/oauth2/scopes'), 1, 'the portal was checked once, before the user was sent there');
});

test('root: the asset bank with its exact total, brands and collections as folders, facets as filters', async () => {
  const b = await json('/assets/folder/root');
  assert.equal(b.name, 'Bynder');
  assert.deepEqual(b.folders.map((f: any) => f.name), ['Acme', 'Spring campaign']);
  assert.equal(b.folders[0].id, r.ids['Acme']);
  assert.equal(b.folders[1].id, r.ids['collection:Spring campaign']);
  assert.equal(b.totalAssetsCount, 5);
  const byId = Object.fromEntries(b.filters.map((f: any) => [f.id, f]));
  assert.deepEqual(byId.type.options.map((o: any) => [o.id, o.count]), [['type=image', 3], ['type=document', 2]]);
  assert.equal(byId.property_colours.name, 'Colours');
  assert.deepEqual(byId.property_colours.options.map((o: any) => o.name).sort(), ['Red', 'Yellow']);
  // The hub's ui locales (en, de, ...) have no Dutch: Bynder's en_US labels serve "en", the label the rest.
  const de = await json('/assets/folder/root?uiLocale=de');
  assert.deepEqual(de.filters.find((f: any) => f.id === 'property_colours').options.map((o: any) => o.name).sort(), ['Red', 'Yellow']);
  const hero = b.assets.find((a: any) => a.name === 'hero.jpg');
  assert.equal(hero.id, r.ids['Acme/hero.jpg']);
  assert.equal(hero.mimeType, 'image/jpeg');
  assert.equal(hero.title, 'hero');
  assert.deepEqual(hero.keywords, ['photo', 'tag1']);
  assert.equal(hero.assetDetailsExternalUrl, `${r.url}/media/?mediaId=${hero.id}`);
  assert.match(hero.downloadUrl, /^http:\/\/hub\.test\/api\/v1\/connectors\/bynder\/download\//);
});

test('providerInfo: the portal and the filters it offers', async () => {
  const info = await json('/system/providerInfo');
  assert.equal(info.remoteSystemPrefix, r.url);
  assert.deepEqual(info.filters.map((f: any) => f.id), ['type', 'property_colours', 'property_Bob_button', 'tags']);
});

test('brand, sub-brand and collection folders', async () => {
  const brand = await json(`/assets/folder/${encodeURIComponent(r.ids['Acme']!)}`);
  assert.equal(brand.name, 'Acme');
  assert.deepEqual(brand.folders, [{ id: r.ids['Acme/Outdoor'], name: 'Outdoor' }]);
  assert.equal(brand.totalAssetsCount, 4, 'a brand holds its sub-brands\' assets too');
  const sub = await json(`/assets/folder/${encodeURIComponent(r.ids['Acme/Outdoor']!)}`);
  assert.equal(sub.name, 'Outdoor');
  assert.deepEqual(sub.assets.map((a: any) => a.name), ['trail.jpg']);
  const col = await json(`/assets/folder/${encodeURIComponent(r.ids['collection:Spring campaign']!)}`);
  assert.equal(col.name, 'Spring campaign');
  assert.deepEqual(col.assets.map((a: any) => a.name).sort(), ['hero.jpg', 'trail.jpg']);
  assert.deepEqual(col.folders, []);
  const gone = await get(`/assets/folder/${encodeURIComponent('collection:00000000-0000-0000-0000000000000000')}`);
  assertError(gone, 'integration-not-found', 404, 'integration');
});

test('paging: Bynder pages behind the hub cursor, totals exact, no duplicates', async () => {
  const seen: string[] = [];
  let more: string | undefined;
  do {
    const p = await json(`/assets/folder/root?size=2${more ? `&more=${encodeURIComponent(more)}` : ''}`);
    assert.equal(p.totalAssetsCount, 5);
    if (seen.length) assert.deepEqual(p.folders, [], 'folders on the first page only');
    seen.push(...p.assets.map((a: any) => a.id));
    more = p.more;
  } while (more);
  assert.equal(seen.length, 5);
  assert.equal(new Set(seen).size, 5);
});

test('paging with a size changed mid-listing: no page exceeds its size, nothing skipped or repeated', async () => {
  const all = (await json('/assets/folder/root?size=5')).assets.map((a: any) => a.id);
  const seen: string[] = [];
  let more: string | undefined;
  for (const size of [3, 1, 4]) {
    const p = await json(`/assets/folder/root?size=${size}${more ? `&more=${encodeURIComponent(more)}` : ''}`);
    assert.ok(p.assets.length <= size, `a page of size ${size} held ${p.assets.length}`);
    seen.push(...p.assets.map((a: any) => a.id));
    more = p.more;
    if (!more) break;
  }
  assert.deepEqual(seen, all);
});

test('search: keyword, scoped to a folder, and narrowed by a facet filter', async () => {
  const hero = await json('/assets/search?query=hero');
  assert.deepEqual(hero.assets.map((a: any) => a.name), ['hero.jpg']);
  const scoped = await json(`/assets/search?query=photo&parentId=${encodeURIComponent(r.ids['Acme/Outdoor']!)}`);
  assert.deepEqual(scoped.assets.map((a: any) => a.name), ['trail.jpg']);
  const all = await json('/assets/search?query=photo');
  const yellow = all.filters.find((f: any) => f.id === 'property_colours').options.find((o: any) => o.name === 'Yellow');
  const narrowed = await json(`/assets/search?query=photo&filters=${encodeURIComponent(yellow.id)}`);
  assert.equal(narrowed.totalAssetsCount, yellow.count);
  assert.ok(narrowed.totalAssetsCount < all.totalAssetsCount);
  assert.equal(narrowed.filters.find((f: any) => f.id === 'property_colours').options.find((o: any) => o.id === yellow.id).isActive, true);
  const bad = await get(`/assets/search?query=photo&filters=${encodeURIComponent('brandId=x')}`);
  assertError(bad, 'hub-validation-error', 400);
});

test('search by image: the reference bytes go to Similar Assets Search as imageData; ranked assets come back', async () => {
  const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#336699' } }).png().toBuffer();
  const res = await t.app.inject({
    method: 'POST', url: '/api/v1/assets/search?size=2', headers: { authorization: bearer(access), 'provider-authorization': bearer(dam.access_token) },
    payload: { dataBase64: `data:image/png;base64,${png.toString('base64')}` },
  });
  assert.equal(res.statusCode, 200, res.body);
  const b = res.json();
  assert.equal(r.lastImageData, `data:image/png;base64,${png.toString('base64')}`);
  assert.equal(b.totalAssetsCount, 3, 'the image assets, ranked');
  assert.deepEqual(b.assets.map((a: any) => a.id), [r.ids['Acme/hero.jpg'], r.ids['Acme/logo.png']], 'the similarity order, v4 ids');
  assert.ok(b.more);
});

test('asset detail: metadata, metaproperties as values, renditions, current version', async () => {
  const a = await json(`/assets/asset/${encodeURIComponent(r.ids['Acme/logo.png']!)}`);
  const fx = bynderFixture('media').item;
  assert.equal(a.name, 'logo.png');
  assert.equal(a.mimeType, 'image/png');
  assert.equal(a.caption, fx.description);
  assert.equal(a.copyright, fx.copyright);
  assert.equal(a.xSizePx, 1967);
  assert.equal(a.ySizePx, 1311);
  assert.equal(a.fileSize, r.bytesOf(r.ids['Acme/logo.png']!).length);
  assert.equal(typeof a.created, 'number');
  assert.equal(a.version, 2, 'the active original media item');
  assert.deepEqual(a.values, [{ id: '00000000-0000-0000-0000000000000000', type: 'TEXT', value: 'Red', name: 'Colours' }]);
  assert.deepEqual(a.conversions.map((c: any) => c.name), ['mini', 'webimage', 'thul']);
  assert.ok(a.conversions.every((c: any) => c.url.startsWith(`${r.url}/cdn/`) && c.extension === 'jpg'));
  // The v4 id in Bynder's newer lower-case form names the same asset.
  const lower = r.ids['Acme/logo.png']!.toLowerCase();
  assert.equal((await json(`/assets/asset/${encodeURIComponent(`${lower.slice(0, 23)}-${lower.slice(23)}`)}`)).id, a.id);
});

test('download: a plain HTTP client with no session gets the original; Range passes through; no token reaches the signed URL', async () => {
  const id = r.ids['Acme/hero.jpg']!;
  const a = await json(`/assets/asset/${encodeURIComponent(id)}`);
  // The hub's public URL is http://hub.test: the same path on the listening hub.
  const u = new URL(a.downloadUrl);
  const res = await fetch(`${origin}${u.pathname}${u.search}`);
  assert.equal(res.status, 200);
  assert.deepEqual(Buffer.from(await res.arrayBuffer()), r.bytesOf(id));
  assert.match(String(res.headers.get('content-disposition')), /hero\.jpg/);
  const part = await fetch(`${origin}${u.pathname}${u.search}`, { headers: { range: 'bytes=10-19' } });
  assert.equal(part.status, 206);
  assert.equal(part.headers.get('content-range'), `bytes 10-19/${r.bytesOf(id).length}`);
  assert.deepEqual(Buffer.from(await part.arrayBuffer()), r.bytesOf(id).subarray(10, 20));
  assert.equal(r.signedWithAuth, 0, 'the bearer token never goes to the signed storage URL');
});

test('thumbnails: every image asset of a listing and a detail has one that decodes as an image', async () => {
  const root = await json('/assets/folder/root');
  const images = root.assets.filter((a: any) => a.mimeType.startsWith('image/'));
  assert.equal(images.length, 3);
  const detail = await json(`/assets/asset/${encodeURIComponent(r.ids['Acme/hero.jpg']!)}`);
  for (const a of [...images, detail]) {
    const res = await fetchPlain(a.thumbnailUrl);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['content-type'], 'image/jpeg');
    const m = await sharp(res.rawPayload).metadata();
    assert.equal(m.format, 'jpeg');
    assert.ok(m.width! > 0 && m.height! > 0);
  }
});

test('versions: original media items, newest first, withMaster honoured, numbered as the detail is; old versions download', async () => {
  const id = r.ids['Acme/logo.png']!;
  const all = await json(`/assets/assetversions/${encodeURIComponent(id)}?withMaster=true`);
  assert.equal(all.name, 'logo.png');
  assert.deepEqual(all.versions.map((v: any) => v.version), [2, 1]);
  const older = await json(`/assets/assetversions/${encodeURIComponent(id)}`);
  assert.deepEqual(older.versions.map((v: any) => v.version), [1]);
  const v1 = await fetchPlain(older.versions[0].downloadUrl);
  assert.equal(v1.statusCode, 200);
  assert.deepEqual(v1.rawPayload, r.bytesOf(id, 1));
  const v2 = await fetchPlain(all.versions[0].downloadUrl);
  assert.deepEqual(v2.rawPayload, r.bytesOf(id, 2));
  assert.notDeepEqual(v1.rawPayload, v2.rawPayload);
});

test('refresh: /auth/refreshToken renews the Bynder token; the first refresh token is kept when none is returned', async () => {
  const ref = await t.app.inject({ method: 'GET', url: '/api/v1/auth/refreshToken', headers: { authorization: bearer(access), 'provider-authorization': bearer(dam.refresh_token!) } });
  assert.equal(ref.statusCode, 200, ref.body);
  const renewed = ref.json();
  assert.equal((await get('/assets/folder/root', renewed.access_token)).statusCode, 200);
  const c = await t.hub.providerTokens.open(renewed.access_token, DAM_ACCESS_TYP);
  assert.match(String(c.cred.at), /^eyJh\.\.\.NDcw\./);
  assert.match(String(c.cred.rt), /^c12e\.\.\.b5dc\./);
});
