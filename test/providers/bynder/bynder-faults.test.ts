/**
 * The Bynder connector's failure rows against its replay: tokens expired or revoked in the middle
 * of a traversal, a serverUrl that is private or not a Bynder portal, 429 storms (Retry-After
 * honoured through the injected sleep, then a clear error), cursors gone stale or outliving the
 * assets they paged, a collection of 100,000 assets, an asset deleted between listing and
 * detail, and an HTML error page where JSON was due. Each answer is an integration-* (or hub
 * validation) error with its status, never a 500, and comes at once (no real sleeps).
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { bynderConnector } from '../../../src/providers/bynder/provider.js';
import { MAX_DETAIL_CHARS } from '../../../src/providers/kit/upstream-errors.js';
import { BYNDER_CLIENT, bynderSignIn, startBynderReplay, type BynderReplay } from '../../helpers/bynder-replay.js';
import { assertError, bearer, type TestHub } from '../../helpers/hub.js';
import { startConnectorHub } from '../../helpers/saas.js';

let r: BynderReplay;
let t: TestHub;
let notBynder: http.Server;
let notBynderUrl: string;
let access: string;
let dam: { access_token: string; refresh_token?: string };
const sleeps: number[] = [];

const BIG = 100_000;
const tree = Array.from({ length: 9 }, (_, i) => `Brand/pic ${i}.jpg`);

before(async () => {
  r = await startBynderReplay(tree, {}, { bigCollection: BIG });
  // A web server that is not a Bynder portal: HTML for everything.
  notBynder = http.createServer((_req, res) => {
    res.writeHead(404, { 'content-type': 'text/html' });
    res.end('<html><body>Not found</body></html>');
  });
  await new Promise<void>((ok) => notBynder.listen(0, '127.0.0.1', ok));
  notBynderUrl = `http://127.0.0.1:${(notBynder.address() as AddressInfo).port}`;
  const factory = bynderConnector({ clientId: BYNDER_CLIENT.id, clientSecret: BYNDER_CLIENT.secret, allowInsecureRequests: true });
  // The upstream client's waits are recorded and return at once: Retry-After is honoured without sleeping.
  ({ t } = await startConnectorHub((deps) => factory({ ...deps, sleep: async (ms) => void sleeps.push(ms) }), { retries: 2, maxRetryAfterMs: 5_000 }));
  access = (await t.login()).access_token;
  dam = (await bynderSignIn(t, access, r.url)).tokens;
});
after(async () => {
  await t?.close();
  await r?.close();
  await new Promise<void>((ok) => notBynder?.close(() => ok()));
});

const get = (url: string, token = dam.access_token) =>
  t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: { authorization: bearer(access), 'provider-authorization': bearer(token) } });
const loginWith = (serverUrl: string) =>
  t.app.inject({ method: 'POST', url: `/api/v1/auth/login?provider=bynder&polling=true&serverUrl=${encodeURIComponent(serverUrl)}`, headers: { authorization: bearer(access) } });
const refresh = (rt: string) => t.app.inject({ method: 'GET', url: '/api/v1/auth/refreshToken', headers: { authorization: bearer(access), 'provider-authorization': bearer(rt) } });

test('a private serverUrl fails the login: the address policy refuses it, and says so', async () => {
  for (const url of ['http://10.0.0.7', 'https://169.254.169.254', 'http://[fd00::1]:8080']) {
    const body = assertError(await loginWith(url), 'integration-unavailable', 502, 'integration');
    assert.match(body.error.message, /not allowed/);
    assert.match(body.error.details, /refused to connect/);
  }
});

test('a serverUrl that is not a Bynder portal fails the login, naming why', async () => {
  const body = assertError(await loginWith(notBynderUrl), 'integration-operation-failed', 400, 'integration');
  assert.match(body.error.message, /is not a Bynder portal/);
  assert.match(body.error.details, /Retrieve scopes.*: it answered 404 text\/html/);
  // A portal named by an address that redirects (http://, an old domain): the details say where to.
  const redirecting = http.createServer((_req, res) => {
    res.writeHead(301, { location: 'https://acme.bynder.com/v6/authentication/oauth2/scopes' });
    res.end();
  });
  await new Promise<void>((ok) => redirecting.listen(0, '127.0.0.1', ok));
  try {
    const moved = assertError(await loginWith(`http://127.0.0.1:${(redirecting.address() as AddressInfo).port}`), 'integration-operation-failed', 400, 'integration');
    assert.match(moved.error.details, /redirects to https:\/\/acme\.bynder\.com\/v6\/authentication\/oauth2\/scopes; use that address/);
  } finally {
    await new Promise<void>((ok) => redirecting.close(() => ok()));
  }
  const noUrl = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login?provider=bynder&polling=true', headers: { authorization: bearer(access) } });
  assert.match(assertError(noUrl, 'integration-operation-failed', 400, 'integration').error.message, /needs the address of your portal/);
});

test('with the app\'s portal configured, a serverUrl naming another portal is refused before any request', async () => {
  const other = bynderConnector({ clientId: 'x', allowInsecureRequests: true, endpoints: { portal: 'https://acme.bynder.com' } });
  const { t: t2 } = await startConnectorHub(other);
  try {
    const a = (await t2.login()).access_token;
    const res = await t2.app.inject({ method: 'POST', url: `/api/v1/auth/login?provider=bynder&polling=true&serverUrl=${encodeURIComponent(r.url)}`, headers: { authorization: bearer(a) } });
    const body = assertError(res, 'integration-operation-failed', 400, 'integration');
    assert.match(body.error.message, /signs in to the Bynder portal acme\.bynder\.com only/);
  } finally {
    await t2.close();
  }
});

test('an access token expiring mid-traversal: integration-auth-failed; after the refresh the same cursor goes on', async () => {
  const first = await get(`/assets/folder/${encodeURIComponent(r.ids['Brand']!)}?size=4`);
  assert.equal(first.statusCode, 200, first.body);
  r.fault('expired-token');
  const more = encodeURIComponent(first.json().more);
  assertError(await get(`/assets/folder/${encodeURIComponent(r.ids['Brand']!)}?size=4&more=${more}`), 'integration-auth-failed', 401, 'integration');
  const ref = await refresh(dam.refresh_token!);
  assert.equal(ref.statusCode, 200, ref.body);
  const second = await get(`/assets/folder/${encodeURIComponent(r.ids['Brand']!)}?size=4&more=${more}`, ref.json().access_token);
  assert.equal(second.statusCode, 200, second.body);
  assert.equal(second.json().assets.length, 4);
  dam = { ...dam, access_token: ref.json().access_token };
});

test('tokens revoked mid-traversal (the app\'s refresh tokens too): auth-failed, and the refresh fails cleanly', async () => {
  const s = (await bynderSignIn(t, access, r.url)).tokens;
  assert.equal((await get('/assets/folder/root?size=2', s.access_token)).statusCode, 200);
  r.revokeTokens(true);
  const body = assertError(await get('/assets/folder/root?size=2', s.access_token), 'integration-auth-failed', 401, 'integration');
  assert.match(body.error.details, /Unauthorized/);
  assertError(await refresh(s.refresh_token), 'integration-auth-failed', 401, 'integration');
  dam = (await bynderSignIn(t, access, r.url)).tokens;
});

test('a 429 storm: Retry-After honoured (through the injected sleep), then integration-unavailable 503 passing it on', async () => {
  sleeps.length = 0;
  r.fault('rate-limit', 100, '2');
  const body = assertError(await get('/assets/folder/root'), 'integration-unavailable', 503, 'integration');
  assert.ok(sleeps.length >= 2 && sleeps.every((ms) => ms === 2000), `each retry waited what Bynder asked: ${JSON.stringify(sleeps)}`);
  assert.match(body.error.details, /Too Many Requests/);
  r.fault('rate-limit', 0);
  // A Retry-After longer than the client waits for itself goes straight back to the caller.
  sleeps.length = 0;
  r.fault('rate-limit', 100, '300');
  const res = await get('/assets/folder/root');
  assertError(res, 'integration-unavailable', 503, 'integration');
  assert.equal(res.headers['retry-after'], '300');
  // No wait at all: the first call's failure also ended its siblings (none retries on its own).
  assert.deepEqual(sleeps, []);
  r.fault('rate-limit', 0);
  // A short burst is absorbed.
  r.fault('rate-limit', 1, '1');
  assert.equal((await get('/assets/folder/root')).statusCode, 200);
});

test('a cursor outliving the assets it paged ends the listing cleanly', async () => {
  const brand = encodeURIComponent(r.ids['Brand']!);
  const first = (await get(`/assets/folder/${brand}?size=4`)).json();
  for (const f of tree.slice(0, 8)) r.deleteAsset(r.ids[f]!);
  // Page 2 of 4 now lies past the single asset left: no error, no further cursor.
  const second = await get(`/assets/folder/${brand}?size=4&more=${encodeURIComponent(first.more)}`);
  assert.equal(second.statusCode, 200, second.body);
  assert.deepEqual(second.json().assets, []);
  assert.equal(second.json().more, undefined);
  assert.equal(second.json().totalAssetsCount, 1);
});

test('a collection of 100,000 assets: paged by Bynder, exact total, never read whole', async () => {
  const id = encodeURIComponent(`collection:${r.bigCollectionId}`);
  const p1 = await get(`/assets/folder/${id}?size=200`);
  assert.equal(p1.statusCode, 200, p1.body);
  const b = p1.json();
  assert.equal(b.totalAssetsCount, BIG);
  assert.equal(b.assets.length, 200);
  const p2 = (await get(`/assets/folder/${id}?size=200&more=${encodeURIComponent(b.more)}`)).json();
  assert.equal(p2.assets.length, 200);
  assert.equal(new Set([...b.assets, ...p2.assets].map((a: any) => a.id)).size, 400);
  assert.ok(r.maxLimit <= 200, `the largest page asked of Bynder was ${r.maxLimit}`);
});

test('an asset deleted between listing and detail: 404 integration-not-found (detail, versions, download link)', async () => {
  const list = (await get('/assets/folder/root')).json();
  const victim = list.assets[0];
  r.deleteAsset(victim.id);
  assertError(await get(`/assets/asset/${encodeURIComponent(victim.id)}`), 'integration-not-found', 404, 'integration');
  assertError(await get(`/assets/assetversions/${encodeURIComponent(victim.id)}`), 'integration-not-found', 404, 'integration');
  const u = new URL(victim.downloadUrl);
  const dl = await t.app.inject({ method: 'GET', url: u.pathname + u.search });
  assert.equal(dl.statusCode, 404, dl.body);
  assert.equal(dl.json().error.code, 'integration-not-found');
  assert.match(dl.json().error.details, /Original file not available/);
});

test('an HTML error page where JSON was due: integration-unavailable with its words (no markup), bounded', async () => {
  // One call (metaproperties are cached), three attempts: below the circuit breaker's threshold.
  r.fault('html', 3);
  const body = assertError(await get(`/assets/asset/${encodeURIComponent('86B09440-FB61-450F-AFA65FABF4F5D628')}`), 'integration-unavailable', 502, 'integration');
  assert.match(body.error.details, /Bad Gateway The portal is being upgraded & will be back shortly\./);
  assert.doesNotMatch(body.error.details, /<|color:red/);
  assert.ok(body.error.details.length <= MAX_DETAIL_CHARS + 200);
  r.fault('html', 0);
});

test('malformed ids are 404 integration-not-found, never a request to Bynder with them', async () => {
  const before = r.calls.get('/api/v4/media/') ?? 0;
  for (const bad of ['../../etc/passwd', 'brand:nope', 'collection:123', 'x'.repeat(500)]) {
    assertError(await get(`/assets/folder/${encodeURIComponent(bad)}`), 'integration-not-found', 404, 'integration');
    assertError(await get(`/assets/asset/${encodeURIComponent(bad)}`), 'integration-not-found', 404, 'integration');
  }
  assert.equal(r.calls.get('/api/v4/media/') ?? 0, before);
});

test('a cursor older than the hub keeps them (24 h) is a clear 400, even on a renewed connection', async () => {
  const id = encodeURIComponent(`collection:${r.bigCollectionId}`);
  const big = (await get(`/assets/folder/${id}?size=3`)).json();
  t.clock.advance(25 * 3600_000);
  access = (await t.login()).access_token;
  const ref = await refresh(dam.refresh_token!);
  assert.equal(ref.statusCode, 200, ref.body);
  const stale = await get(`/assets/folder/${id}?size=3&more=${encodeURIComponent(big.more)}`, ref.json().access_token);
  assert.match(assertError(stale, 'hub-validation-error', 400).error.details, /stale/);
});
