/**
 * The Box connector end to end through the hub, against its replay server (responses built from
 * Box's published API reference): sign-in, browse and paging, scoped search, asset detail,
 * versions with withMaster, download bytes fetched by a plain HTTP client with no session,
 * thumbnails (Box's, and hub-made while Box has none), the rotating refresh token; then the fault
 * rows: expired and revoked tokens mid-traversal, 429 storms (Retry-After honoured through the
 * injected sleep), a marker Box refuses, a folder of 100,000 entries, an asset deleted between
 * listing and detail, an HTML error page, an upstream that hangs.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import sharp from 'sharp';
import { DAM_ACCESS_TYP } from '../../../src/auth/provider-tokens.js';
import { boxConnector } from '../../../src/providers/box/provider.js';
import { BOX_CLIENT, boxFixture, startBoxReplay, type BoxReplay } from '../../helpers/box-replay.js';
import { assertError, bearer, type TestHub } from '../../helpers/hub.js';
import { oauthSignIn, startConnectorHub } from '../../helpers/saas.js';

let r: BoxReplay;
let t: TestHub;
let access: string;
let dam: { access_token: string; refresh_token?: string };
let origin: string;
/** Waits the upstream client asked for (the injected sleep: no real waiting). */
const slept: number[] = [];

/** Generous: the CI machine may be busy (a sign-in under load took over a second). */
const TIMEOUT_MS = 1500;
const MAX_ENTRIES = 2500;

before(async () => {
  const tree = [
    'Brand/logo.png', 'Brand/hero.jpg', 'Brand/guide.pdf', 'Brand/Guides/style guide.pdf', 'Brand/notes.txt',
    'Brand/pending.png', 'Brand/vector.png', 'Brand/gone.png', 'readme.txt',
    ...Array.from({ length: 12 }, (_, i) => `Library/asset ${String(i).padStart(2, '0')}.txt`),
  ];
  r = await startBoxReplay(tree, { 'Brand/logo.png': 2 }, { Huge: 100_000 });
  r.thumbnailMode('Brand/pending.png', 'pending');
  r.thumbnailMode('Brand/vector.png', 'none');
  const factory = boxConnector({
    clientId: BOX_CLIENT.id, clientSecret: BOX_CLIENT.secret, allowInsecureRequests: true, maxEntries: MAX_ENTRIES,
    endpoints: { authorize: `${r.url}/api/oauth2/authorize`, token: `${r.url}/oauth2/token`, api: `${r.url}/2.0`, app: r.url },
  });
  ({ t } = await startConnectorHub((deps) => factory({ ...deps, sleep: async (ms) => { slept.push(ms); } }), {
    timeoutMs: TIMEOUT_MS, retries: 2, retryBaseMs: 1,
    // The fault rows fail many calls in a row: the circuit breaker (tested in the kit) stays out of their way.
    breaker: { failureThreshold: 1000, coolDownMs: 1000 },
  }));
  access = (await t.login()).access_token;
  dam = await oauthSignIn(t, 'box', access);
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  origin = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
});
after(async () => {
  await t?.close();
  await r?.close();
});

const get = (url: string, token = dam.access_token) =>
  t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: { authorization: bearer(access), 'provider-authorization': bearer(token) } });
const ok = async (url: string, token?: string) => {
  const res = await get(url, token);
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
};
/** A partner's server: the hub link pointed at the listening hub, fetched with no cookie and no Authorization header. */
const fetchPlain = (hubUrl: string, headers: Record<string, string> = {}) => {
  const u = new URL(hubUrl);
  assert.equal(u.origin, 'http://hub.test', 'the link is on the hub, not on Box');
  return fetch(`${origin}${u.pathname}${u.search}`, { headers });
};

test('sign-in: the account is GET /users/me\'s id; the refresh token and expiry are kept in the DAM token', async () => {
  const c = await t.hub.providerTokens.open(dam.access_token, DAM_ACCESS_TYP);
  assert.equal(c.cred.acct, boxFixture('users_me').response.id);
  assert.match(String(c.cred.rt), /^c3FIOG9vSGV4VHz8QzNmc2RBRDNnRmd0YkE4\./);
  assert.equal(c.cred.exp, t.clock.now() + 3600 * 1000, 'expires_in of the token response');
  assert.equal(r.calls.get('/2.0/users/me'), 1);
});

test('the picker lists Box with its inline logo and honest capabilities (no filters, no search by image)', async () => {
  const res = await t.app.inject({ method: 'GET', url: '/api/v1/auth/providers', headers: { authorization: bearer(access) } });
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json();
  const box = (Array.isArray(body) ? body : body.providers).find((p: any) => p.id === 'box');
  assert.match(box.logo, /^data:image\/svg\+xml,%3Csvg /);
  assert.doesNotMatch(box.logo, /#/, 'a "#" would end a data URI');
  const caps = box.capabilities;
  assert.equal(caps.search, true);
  assert.equal(caps.versions, true);
  assert.equal(caps.filters, false);
  assert.equal(caps.similarSearch, false);
  assert.equal(caps.assetHashAlgorithm, 'Sha1');
});

test('root browse: "All Files" (folder 0), its folders on the first page, files mapped from File (Full)', async () => {
  const b = await ok('/assets/folder/root');
  assert.equal(b.name, 'All Files');
  assert.deepEqual(b.folders.map((f: any) => f.name), ['Brand', 'Huge', 'Library']);
  assert.equal(b.totalAssetsCount, 1);
  const a = b.assets[0];
  assert.equal(a.name, 'readme.txt');
  assert.equal(a.id, r.ids['readme.txt']);
  assert.equal(a.parentPath, '/');
  assert.equal(a.mimeType, 'text/plain');
  assert.equal(a.downloadHashSha1.length, 40);
  assert.equal(a.caption, 'Contract for Q1 renewal', 'description → caption');
  assert.deepEqual(a.keywords, ['approved'], 'tags → keywords');
  assert.equal(a.assetDetailsExternalUrl, `${r.url}/file/${a.id}`);
  assert.match(a.downloadUrl, /^http:\/\/hub\.test\/api\/v1\/connectors\/box\/download\/readme\.txt\?g=/);
  assert.equal(a.thumbnailUrl, undefined, 'no thumbnail for a text file');
});

test('a folder of 12 pages in name order; markers followed upstream (7 entries a page), exact total', async () => {
  const id = r.ids['Library']!;
  const names: string[] = [];
  let more: string | undefined;
  let pages = 0;
  do {
    const b = await ok(`/assets/folder/${id}?size=5${more ? `&more=${encodeURIComponent(more)}` : ''}`);
    assert.equal(b.totalAssetsCount, 12);
    names.push(...b.assets.map((a: any) => a.name));
    more = b.more;
    pages++;
  } while (more);
  assert.equal(pages, 3);
  assert.deepEqual(names, Array.from({ length: 12 }, (_, i) => `asset ${String(i).padStart(2, '0')}.txt`));
});

test('search within a folder\'s subtree (ancestor_folder_ids), Box\'s total_count', async () => {
  const s = await ok(`/assets/search?query=guide&parentId=${r.ids['Brand']}`);
  assert.deepEqual(s.assets.map((a: any) => a.name).sort(), ['guide.pdf', 'style guide.pdf']);
  assert.equal(s.totalAssetsCount, 2);
  assert.equal(s.assets.find((a: any) => a.name === 'style guide.pdf').parentPath, '/Brand/Guides');
  const none = await ok(`/assets/search?query=readme&parentId=${r.ids['Brand']}`);
  assert.equal(none.totalAssetsCount, 0);
  const paged = await ok('/assets/search?query=asset&size=5');
  assert.equal(paged.totalAssetsCount, 12);
  assert.equal(paged.assets.length, 5);
  const next = await ok(`/assets/search?query=asset&size=5&more=${encodeURIComponent(paged.more)}`);
  assert.equal(next.assets.length, 5);
  assert.equal(new Set([...paged.assets, ...next.assets].map((a: any) => a.id)).size, 10);
  assertError(await get('/assets/search?query=x&parentId=not-a-box-id'), 'integration-not-found', 404, 'integration');
});

test('asset detail: SHA-1, sizes, dates, dimensions from the head read, version consistent with the versions list', async () => {
  const a = await ok(`/assets/asset/${r.ids['Brand/logo.png']}`);
  assert.equal(a.name, 'logo.png');
  assert.equal(a.parentPath, '/Brand');
  assert.equal(a.mimeType, 'image/png');
  const bytes = r.bytes('Brand/logo.png');
  assert.equal(a.fileSize, bytes.length);
  assert.equal(a.downloadHashSha1, (await import('node:crypto')).createHash('sha1').update(bytes).digest('hex'));
  assert.equal(a.xSizePx, 66, 'the current (third) version is 66 px wide');
  assert.equal(a.ySizePx, 48);
  assert.deepEqual(a.keywords, ['approved'], 'Box tags win over what the file embeds');
  assert.equal(a.version, 3);
  assert.equal(typeof a.created, 'number');
  assert.ok(a.modified > a.created);
  assert.equal(a.assetDetailsExternalUrl, `${r.url}/file/${r.ids['Brand/logo.png']}`);
  assertError(await get(`/assets/asset/${r.ids['Brand']}`), 'integration-not-found', 404, 'integration');
});

test('versions: older ones by default, the current one too with withMaster; numbers match the detail; each downloads its own bytes', async () => {
  const id = r.ids['Brand/logo.png']!;
  const older = await ok(`/assets/assetversions/${id}`);
  assert.deepEqual(older.versions.map((v: any) => v.version), [2, 1]);
  const all = await ok(`/assets/assetversions/${id}?withMaster=true`);
  assert.deepEqual(all.versions.map((v: any) => v.version), [3, 2, 1]);
  assert.equal(all.versions[0].downloadHashSha1, (await ok(`/assets/asset/${id}`)).downloadHashSha1);
  assert.equal(new Set(all.versions.map((v: any) => v.downloadHashSha1)).size, 3);
  for (const v of all.versions) {
    const res = await fetchPlain(v.downloadUrl);
    assert.equal(res.status, 200);
    assert.ok(Buffer.from(await res.arrayBuffer()).equals(r.bytes('Brand/logo.png', v.version)), `version ${v.version}`);
  }
});

test('download: a plain HTTP client with no session gets the bytes Box serves; Range is honoured', async () => {
  const a = await ok(`/assets/asset/${r.ids['Brand/notes.txt']}`);
  const res = await fetchPlain(a.downloadUrl);
  assert.equal(res.status, 200);
  assert.ok(Buffer.from(await res.arrayBuffer()).equals(r.bytes('Brand/notes.txt')));
  assert.match(String(res.headers.get('content-disposition')), /attachment; filename\*=UTF-8''notes\.txt/);
  const part = await fetchPlain(a.downloadUrl, { range: 'bytes=4-9' });
  assert.equal(part.status, 206);
  assert.ok(Buffer.from(await part.arrayBuffer()).equals(r.bytes('Brand/notes.txt').subarray(4, 10)));
  const altered = await fetchPlain(a.downloadUrl.replace(/g=(.)/, (_m: string, c: string) => `g=${c === 'A' ? 'B' : 'A'}`));
  assert.ok(altered.status >= 400 && altered.status < 500, `an altered link is refused (${altered.status})`);
});

test('download: a file Box is still processing (202) is integration-unavailable 503 with its Retry-After; a redirect off Box\'s hosts is refused', async () => {
  const a = await ok(`/assets/asset/${r.ids['Brand/guide.pdf']}`);
  r.contentMode('Brand/guide.pdf', 'pending');
  const pending = await fetchPlain(a.downloadUrl);
  assert.equal(pending.status, 503);
  assert.equal(pending.headers.get('retry-after'), '30');
  assert.equal(((await pending.json()) as any).error.code, 'integration-unavailable');
  r.contentMode('Brand/guide.pdf', 'foreign');
  const foreign = await fetchPlain(a.downloadUrl);
  assert.equal(foreign.status, 502);
  const body = (await foreign.json()) as any;
  assert.equal(body.error.code, 'integration-unavailable');
  assert.match(body.error.details, /downloads\.example\.net, which is not a Box download host/);
  r.contentMode('Brand/guide.pdf', 'redirect');
  assert.equal((await fetchPlain(a.downloadUrl)).status, 200);
});

test('thumbnails: Box\'s rendition, and hub-made from the original while Box makes one (202) or has none (302); all decode as images', async () => {
  const b = await ok(`/assets/folder/${r.ids['Brand']}`);
  const by = Object.fromEntries(b.assets.map((a: any) => [a.name, a]));
  assert.equal(by['guide.pdf'].thumbnailUrl, undefined);
  for (const name of ['logo.png', 'hero.jpg', 'pending.png', 'vector.png']) {
    const res = await fetchPlain(by[name].thumbnailUrl);
    assert.equal(res.status, 200, name);
    assert.equal(res.headers.get('content-type'), 'image/jpeg', name);
    const m = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
    assert.equal(m.format, 'jpeg', name);
    assert.ok(m.width! > 0 && m.width! <= 320, name);
  }
  assert.equal(r.thumbnails.get(r.ids['Brand/pending.png']!), 1, 'Box was asked once; the hub made it from the original');
});

test('refresh: Box rotates the refresh token; the spent one is refused (integration-auth-failed), the new one works', async () => {
  const before = await t.hub.providerTokens.open(dam.access_token, DAM_ACCESS_TYP);
  const ref = await t.app.inject({ method: 'GET', url: '/api/v1/auth/refreshToken', headers: { authorization: bearer(access), 'provider-authorization': bearer(dam.refresh_token!) } });
  assert.equal(ref.statusCode, 200, ref.body);
  const renewed = ref.json();
  const c = await t.hub.providerTokens.open(renewed.access_token, DAM_ACCESS_TYP);
  assert.notEqual(c.cred.rt, before.cred.rt, 'the new refresh token is kept');
  assert.equal((await get('/assets/folder/root', renewed.access_token)).statusCode, 200);
  const again = await t.app.inject({ method: 'GET', url: '/api/v1/auth/refreshToken', headers: { authorization: bearer(access), 'provider-authorization': bearer(dam.refresh_token!) } });
  const body = assertError(again, 'integration-auth-failed', 401, 'integration');
  assert.match(body.error.details, /invalid_grant/);
  dam = renewed;
});

test('expired token mid-traversal: integration-auth-failed; after /auth/refreshToken the traversal goes on', async () => {
  const first = await ok(`/assets/folder/${r.ids['Library']}?size=5`);
  r.fault('expired-token');
  const body = assertError(await get(`/assets/folder/${r.ids['Library']}?size=5&more=${encodeURIComponent(first.more)}`), 'integration-auth-failed', 401, 'integration');
  assert.match(body.error.details, /unauthorized/);
  const ref = await t.app.inject({ method: 'GET', url: '/api/v1/auth/refreshToken', headers: { authorization: bearer(access), 'provider-authorization': bearer(dam.refresh_token!) } });
  assert.equal(ref.statusCode, 200, ref.body);
  dam = ref.json();
  const second = await get(`/assets/folder/${r.ids['Library']}?size=5&more=${encodeURIComponent(first.more)}`);
  assert.equal(second.statusCode, 200, second.body);
  assert.equal(second.json().assets[0].name, 'asset 05.txt');
});

test('revoked tokens mid-traversal: browse and a download link both answer integration-auth-failed', async () => {
  const a = await ok(`/assets/asset/${r.ids['readme.txt']}`);
  r.revokeTokens();
  assertError(await get('/assets/folder/root'), 'integration-auth-failed', 401, 'integration');
  const res = await fetchPlain(a.downloadUrl);
  assert.equal(res.status, 401);
  assert.equal(((await res.json()) as any).error.code, 'integration-auth-failed');
  const ref = await t.app.inject({ method: 'GET', url: '/api/v1/auth/refreshToken', headers: { authorization: bearer(access), 'provider-authorization': bearer(dam.refresh_token!) } });
  assert.equal(ref.statusCode, 200, ref.body);
  dam = ref.json();
});

test('429 with a short Retry-After is waited out (injected sleep); a storm ends as integration-unavailable 503 with Retry-After', async () => {
  slept.length = 0;
  r.fault('rate-limit', 2, '2');
  assert.equal((await get('/assets/folder/root')).statusCode, 200, 'the third attempt answers');
  // Browse makes two calls at once (the folder, its items): each met one 429 and waited Box's Retry-After.
  assert.deepEqual(slept, [2000, 2000], 'Box\'s Retry-After, in ms');
  slept.length = 0;
  r.fault('rate-limit', 10, '2');
  const storm = assertError(await get('/assets/folder/root'), 'integration-unavailable', 503, 'integration');
  assert.match(storm.error.details, /rate_limit_exceeded: Request rate limit exceeded/);
  assert.deepEqual(slept, [2000, 2000, 2000, 2000], 'two retries of each of the two calls, then the error');
  slept.length = 0;
  r.fault('rate-limit', 1, '300');
  const long = await get('/assets/folder/root');
  assertError(long, 'integration-unavailable', 503, 'integration');
  assert.equal(long.headers['retry-after'], '300', 'a wait longer than the hub\'s goes back to the client');
  assert.deepEqual(slept, []);
  r.fault('rate-limit', 0);
});

test('a marker Box no longer accepts (400 bad_request): integration-operation-failed with Box\'s words', async () => {
  r.fault('bad-marker');
  const body = assertError(await get(`/assets/folder/${r.ids['Library']}`), 'integration-operation-failed', 400, 'integration');
  assert.match(body.error.details, /bad_request: Bad Request \(request_id abcdef123456\)/);
});

test('a folder of 100,000 entries: a clear integration refusal after a bounded read', async () => {
  const before = r.calls.get(`/2.0/folders/${r.ids['Huge']}/items`) ?? 0;
  const body = assertError(await get(`/assets/folder/${r.ids['Huge']}`), 'integration-operation-failed', 400, 'integration');
  assert.match(body.error.message, new RegExp(`more than ${MAX_ENTRIES} items`));
  const calls = (r.calls.get(`/2.0/folders/${r.ids['Huge']}/items`) ?? 0) - before;
  assert.equal(calls, 3, '1,000 a call: it stopped past the bound');
  const search = await ok(`/assets/search?query=readme&parentId=${r.ids['Huge']}`);
  assert.equal(search.totalAssetsCount, 0, 'search within it still works');
});

test('an asset deleted between listing and detail: 404 integration-not-found; its versions too', async () => {
  const b = await ok(`/assets/folder/${r.ids['Brand']}`);
  const gone = b.assets.find((a: any) => a.name === 'gone.png');
  r.remove('Brand/gone.png');
  const body = assertError(await get(`/assets/asset/${gone.id}`), 'integration-not-found', 404, 'integration');
  assert.match(body.error.details, /not_found: Not Found/);
  assertError(await get(`/assets/assetversions/${gone.id}`), 'integration-not-found', 404, 'integration');
  const dl = await fetchPlain(gone.downloadUrl);
  assert.equal(dl.status, 404);
});

test('an HTML error page: integration-unavailable 502, its words without markup or script, bounded', async () => {
  r.fault('html', 6); // both calls of a browse, each tried three times
  const body = assertError(await get('/assets/folder/root'), 'integration-unavailable', 502, 'integration');
  assert.match(body.error.details, /Bad Gateway The upstream server is temporarily unavailable/);
  assert.doesNotMatch(body.error.details, /<|secret|color:red/);
  assert.ok(body.error.details.length < 2200, `bounded (${body.error.details.length})`);
});

test('an upstream that hangs: integration-unavailable 504 within the deadline', async () => {
  r.fault('hang', 6);
  const started = Date.now();
  const body = assertError(await get('/assets/folder/root'), 'integration-unavailable', 504, 'integration');
  assert.match(body.error.details, new RegExp(`no answer within ${TIMEOUT_MS} ms`));
  assert.ok(Date.now() - started < 3 * TIMEOUT_MS + 1500);
});

test('malformed ids are integration-not-found without a Box call', async () => {
  const before = [...r.calls.values()].reduce((a, b) => a + b, 0);
  assertError(await get('/assets/asset/..%2F..%2Fusers%2Fme'), 'integration-not-found', 404, 'integration');
  assertError(await get('/assets/folder/12ab'), 'integration-not-found', 404, 'integration');
  assertError(await get('/assets/assetversions/x'), 'integration-not-found', 404, 'integration');
  assert.equal([...r.calls.values()].reduce((a, b) => a + b, 0), before);
});
