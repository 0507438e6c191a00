/**
 * The Cloudinary connector end to end through the hub over its replay (documented responses):
 * form sign-in (a wrong secret first), browse and paging with exact totals, keyword search scoped
 * to a folder, facet filters from the Search API's aggregations, search by image, asset details,
 * backed-up versions, downloads fetched with a plain HTTP client and no session (the CDN's public
 * URL, the hub's grant for private assets and old versions), thumbnails that decode as images,
 * and the DAM refresh.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import sharp from 'sharp';
import { DAM_ACCESS_TYP } from '../../../src/auth/provider-tokens.js';
import { assertError, bearer } from '../../helpers/hub.js';
import { signInCloudinary, startCloudinaryHub, startCloudinaryReplay, type CloudinaryHub, type CloudinaryReplay } from '../../helpers/cloudinary-replay.js';

let r: CloudinaryReplay;
let h: CloudinaryHub;
let origin: string;

before(async () => {
  r = await startCloudinaryReplay(['Brand/logo.png', 'Brand/hero.jpg', 'Brand/Guides/guide.pdf', 'Brand/secret.jpg', 'Brand/members.jpg', 'notes.txt'], {
    versions: { 'Brand/hero.jpg': 2 }, delivery: { 'Brand/secret.jpg': 'private', 'Brand/members.jpg': 'authenticated' }, tier2: true,
  });
  h = await startCloudinaryHub(r, { timeoutMs: 2000, retries: 1, retryBaseMs: 1 });
  await h.t.app.listen({ port: 0, host: '127.0.0.1' });
  origin = `http://127.0.0.1:${(h.t.app.server.address() as AddressInfo).port}`;
});
after(async () => {
  await h?.t.close();
  await r?.close();
});

const bytesOf = (p: string) => r.assets.get(r.ids[p]!)!.bytes;
/** A partner's server: plain fetch, no cookie, no Authorization header; hub links go to the listening hub. */
async function fetchPlain(url: string): Promise<{ status: number; body: Buffer; type: string | null }> {
  const u = new URL(url);
  const res = await fetch(u.origin === 'http://hub.test' ? `${origin}${u.pathname}${u.search}` : url);
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()), type: res.headers.get('content-type') };
}

test('the form refuses a wrong secret (never echoed) and a malformed cloud name; the token keeps the folder mode', async () => {
  const { access_token } = await h.t.login({ sub: 'user-2', email: 'two@partner.example' });
  const wrong = await signInCloudinary(h.t, access_token, { cloud: r.cloud, key: r.key, secret: 'not-the-secret' });
  assert.equal(wrong.status, 401);
  assert.match(wrong.page, /did not accept this API key and secret/);
  assert.doesNotMatch(wrong.page, /not-the-secret/);
  assert.equal(wrong.token, null);
  const bad = await signInCloudinary(h.t, access_token, { cloud: '../evil', key: r.key, secret: r.secret });
  assert.equal(bad.status, 400);
  assert.match(bad.page, /cloud name is not valid/);
  const c = await h.t.hub.providerTokens.open(h.dam, DAM_ACCESS_TYP);
  assert.equal(c.cred.mode, 'dynamic');
  assert.equal(c.cred.cloud, r.cloud);
});

test('root and folder browse: subfolders on the first page, exact totals, the vendor cursor sealed in more', async () => {
  const root = await h.get('/assets/folder/root');
  assert.equal(root.status, 200, JSON.stringify(root.body));
  assert.equal(root.body.name, r.cloud);
  assert.deepEqual(root.body.folders, [{ id: 'Brand', name: 'Brand' }]);
  assert.deepEqual(root.body.assets.map((a: any) => a.name), ['notes.txt']);
  assert.equal(root.body.totalAssetsCount, 1);
  assert.equal(root.body.assets[0].mimeType, 'text/plain');

  const ids: string[] = [];
  let more: string | undefined;
  let pages = 0;
  do {
    const p = await h.get(`/assets/folder/Brand?size=2${more ? `&more=${encodeURIComponent(more)}` : ''}`);
    assert.equal(p.status, 200, JSON.stringify(p.body));
    assert.deepEqual(p.body.folders, pages === 0 ? [{ id: 'Brand/Guides', name: 'Guides' }] : []);
    assert.equal(p.body.totalAssetsCount, 4);
    ids.push(...p.body.assets.map((a: any) => a.id));
    more = p.body.more;
    pages++;
  } while (more);
  assert.equal(pages, 2);
  assert.deepEqual(new Set(ids), new Set(['Brand/logo.png', 'Brand/hero.jpg', 'Brand/secret.jpg', 'Brand/members.jpg'].map((p) => r.ids[p])));
  // The folder is asked of the Search API by asset_folder (dynamic folder mode), sorted for stable pages.
  assert.equal(r.searches.at(-1).expression, 'asset_folder="Brand"');
  assert.deepEqual(r.searches.at(-1).sort_by, [{ public_id: 'asc' }]);
});

test('filters come from the aggregations and narrow the listing', async () => {
  const all = await h.get('/assets/folder/Brand');
  const format = all.body.filters.find((f: any) => f.id === 'format');
  assert.deepEqual(format.options.map((o: any) => [o.id, o.count]).sort(), [['format:jpg', 3], ['format:png', 1]]);
  const png = await h.get('/assets/folder/Brand?filters=format:png');
  assert.equal(png.status, 200, JSON.stringify(png.body));
  assert.deepEqual(png.body.assets.map((a: any) => a.name), ['logo.png']);
  assert.equal(png.body.totalAssetsCount, 1);
  assert.equal(png.body.filters.find((f: any) => f.id === 'format').options.find((o: any) => o.id === 'format:png').isActive, true);
  assertError(await h.t.app.inject({ method: 'GET', url: '/api/v1/assets/folder/Brand?filters=colour:red', headers: h.headers }), 'hub-validation-error', 400);
});

test('keyword search: scoped by folder, user input escaped in the expression', async () => {
  const s = await h.get('/assets/search?query=hero');
  assert.equal(s.status, 200, JSON.stringify(s.body));
  assert.deepEqual(s.body.assets.map((a: any) => a.id), [r.ids['Brand/hero.jpg']]);
  const scoped = await h.get(`/assets/search?query=guide&parentId=${encodeURIComponent('Brand/Guides')}`);
  assert.deepEqual(scoped.body.assets.map((a: any) => a.name), ['guide.pdf']);
  assert.equal(r.searches.at(-1).expression, 'guide AND (asset_folder="Brand/Guides" OR asset_folder:Brand/Guides/*)');
  const none = await h.get(`/assets/search?query=${encodeURIComponent('logo") OR (type:upload AND')}`);
  assert.equal(none.status, 200, JSON.stringify(none.body));
  assert.equal(none.body.totalAssetsCount, 0, 'operators in the query are words, not operators');
  assert.equal(r.searches.at(-1).expression, 'logo\\"\\) AND or AND \\(type\\:upload AND and');
});

test('search by image: the reference bytes go to the visual search as image_file', async () => {
  const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#3448c5' } }).png().toBuffer();
  const res = await h.post('/assets/search', { dataBase64: `data:image/png;base64,${png.toString('base64')}` });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.ok(res.body.assets.length > 0);
  assert.equal(res.body.totalAssetsCount, res.body.assets.length);
  assert.ok(Number(r.calls.get('visual_search_bytes')) > 0, 'the replay received the image file');
});

test('asset details: sizes, MIME, context, tags, structured metadata, MD5, derived renditions, Media Library link', async () => {
  const a = (await h.get(`/assets/asset/${r.ids['Brand/hero.jpg']}`)).body;
  assert.equal(a.name, 'hero.jpg');
  assert.equal(a.mimeType, 'image/jpeg');
  assert.equal(a.parentPath, '/Brand');
  assert.equal(a.fileSize, bytesOf('Brand/hero.jpg').length);
  assert.equal(a.xSizePx, 40);
  assert.equal(a.ySizePx, 30);
  assert.equal(a.downloadHashMd5, createHash('md5').update(bytesOf('Brand/hero.jpg')).digest('hex'));
  assert.equal(a.title, 'Blue sweater');
  assert.equal(a.caption, 'Blue sweater');
  assert.deepEqual(a.keywords, ['hero']);
  assert.equal(a.copyright, 'Cloudinary Ltd.');
  assert.equal(a.exif.cameraModel, 'NIKON D70');
  assert.deepEqual(a.values.map((v: any) => [v.id, v.value]), [['in_stock', 'yes'], ['sku_id', '1234']]);
  assert.equal(a.conversions[0].name, 'c_fill,w_100,h_100');
  assert.match(a.conversions[0].url, /\/image\/upload\/c_fill,w_100,h_100\/v\d+\//);
  assert.equal(a.assetDetailsExternalUrl, `https://console.cloudinary.com/console/media_library/asset/${a.id}/manage`);
  assert.equal(a.version, 3, 'two backed-up versions before the current one');
  for (const v of [a.downloadUrl, a.thumbnailUrl]) assert.doesNotMatch(v, new RegExp(`${r.secret}|${r.key}`), 'no credential in a handed-out URL');
});

test('downloads with no session: a public original from the CDN, private and authenticated ones through the hub', async () => {
  const pub = (await h.get(`/assets/asset/${r.ids['Brand/logo.png']}`)).body;
  assert.match(pub.downloadUrl, new RegExp(`^${r.url}/${r.cloud}/image/upload/v\\d+/`), 'the public secure_url');
  const p = await fetchPlain(pub.downloadUrl);
  assert.equal(p.status, 200);
  assert.ok(p.body.equals(bytesOf('Brand/logo.png')));
  for (const path of ['Brand/secret.jpg', 'Brand/members.jpg']) {
    const a = (await h.get(`/assets/asset/${r.ids[path]}`)).body;
    assert.match(a.downloadUrl, /^http:\/\/hub\.test\/api\/v1\/connectors\/cloudinary\/download\//);
    const d = await fetchPlain(a.downloadUrl);
    assert.equal(d.status, 200, d.body.toString());
    assert.ok(d.body.equals(bytesOf(path)), `${path}: the bytes the signed download endpoint serves`);
    assert.doesNotMatch(a.downloadUrl, new RegExp(`${r.key}|${r.secret}`));
  }
});

test('versions: backed-up versions newest first, withMaster honoured, old bytes through the hub', async () => {
  const id = r.ids['Brand/hero.jpg']!;
  const all = await h.get(`/assets/assetversions/${id}?withMaster=true`);
  assert.equal(all.status, 200, JSON.stringify(all.body));
  assert.deepEqual(all.body.versions.map((v: any) => v.version), [3, 2, 1]);
  const older = await h.get(`/assets/assetversions/${id}`);
  assert.deepEqual(older.body.versions.map((v: any) => v.version), [2, 1]);
  const a = r.assets.get(id)!;
  for (const v of older.body.versions) {
    const d = await fetchPlain(v.downloadUrl);
    assert.equal(d.status, 200);
    assert.ok(d.body.equals(a.older[v.version - 1]!.bytes), `version ${v.version} downloads its own bytes`);
  }
  const current = await fetchPlain(all.body.versions[0].downloadUrl);
  assert.ok(current.body.equals(a.bytes));
  const plain = await h.get(`/assets/assetversions/${r.ids['notes.txt']}?withMaster=true`);
  assert.deepEqual(plain.body.versions.map((v: any) => v.version), [1], 'without backups the asset is its only version');
});

test('thumbnails decode as images: the CDN rendition for public images, made by the hub for private ones', async () => {
  for (const path of ['Brand/hero.jpg', 'Brand/logo.png', 'Brand/secret.jpg']) {
    const a = (await h.get(`/assets/asset/${r.ids[path]}`)).body;
    assert.match(a.thumbnailUrl, /^http:\/\/hub\.test\/api\/v1\/connectors\/cloudinary\/thumbnail\//);
    const t = await fetchPlain(a.thumbnailUrl);
    assert.equal(t.status, 200);
    assert.equal(t.type, 'image/jpeg');
    const meta = await sharp(t.body).metadata();
    assert.equal(meta.format, 'jpeg', path);
    assert.ok(meta.width! > 0 && meta.width! <= 256);
  }
  assert.ok(Number(r.calls.get('thumbnail')) >= 2, 'public images use the CDN rendition');
  const raw = (await h.get(`/assets/asset/${r.ids['notes.txt']}`)).body;
  assert.equal(raw.thumbnailUrl, undefined, 'a raw file has no thumbnail');
  assert.equal(raw.name, 'notes.txt', 'a raw file keeps its extension in the public id and has no format');
  assert.equal(raw.mimeType, 'text/plain');
  assert.equal(raw.xSizePx, undefined);
});

test('refresh re-checks the key; a revoked key fails it with integration-auth-failed', async () => {
  assert.ok(h.damRefresh, 'the sign-in gives a refresh token');
  const ok = await h.t.app.inject({ method: 'GET', url: '/api/v1/auth/refreshToken', headers: { authorization: bearer(h.access), 'provider-authorization': bearer(h.damRefresh!) } });
  assert.equal(ok.statusCode, 200, ok.body);
  const again = await h.t.app.inject({ method: 'GET', url: '/api/v1/assets/folder/root', headers: { authorization: bearer(h.access), 'provider-authorization': bearer(ok.json().access_token) } });
  assert.equal(again.statusCode, 200);
  r.rotateSecret();
  const revoked = await h.t.app.inject({ method: 'GET', url: '/api/v1/auth/refreshToken', headers: { authorization: bearer(h.access), 'provider-authorization': bearer(h.damRefresh!) } });
  const body = assertError(revoked, 'integration-auth-failed', 401, 'integration');
  assert.match(body.error.details, /Invalid api_key/);
  assert.doesNotMatch(revoked.body, new RegExp(r.secret.slice(0, 12)));
});
