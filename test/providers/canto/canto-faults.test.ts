/**
 * Canto faults through the hub, each ending as a clear integration-* error (never a 500) within
 * the deadline: tokens expiring or revoked mid-traversal, tenants that are not Canto sites or are
 * private, 429 storms (Retry-After honoured through the injected sleep, no real waits), cursors
 * past the end, an album of 100,000 contents (paged, never read whole), content deleted between
 * listing and detail, and HTML error pages.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startCantoReplay, type CantoReplay } from '../../helpers/canto-replay.js';
import { assertError, bearer, type TestHub } from '../../helpers/hub.js';
import { continueToVendor, pollDamLogin, TestBrowser, vendorConsent } from '../../helpers/browser.js';
import { cantoSignIn, startCantoHub } from './harness.js';

let r: CantoReplay;
let t: TestHub;
let access: string;
let dam: { access_token: string; refresh_token?: string };
const slept: number[] = [];
/** Generous: the machine running the suite may be busy; no test here waits for it. */
const TIMEOUT_MS = 5000;

before(async () => {
  r = await startCantoReplay([
    ...Array.from({ length: 6 }, (_, i) => `Shoot/img ${i}.jpg`),
    'Shoot/gone.jpg',
    'Odd/a.jpg', 'Odd/b.jpg', 'Odd/c.jpg',
  ]);
  ({ t } = await startCantoHub(r.url, { timeoutMs: TIMEOUT_MS, retries: 2, retryBaseMs: 1 }, {
    sleep: async (ms) => { slept.push(ms); },
  }));
  access = (await t.login()).access_token;
  dam = await cantoSignIn(t, access, r.url);
});
after(async () => {
  await t?.close();
  await r?.close();
});

const get = (url: string, token = dam.access_token) =>
  t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: { authorization: bearer(access), 'provider-authorization': bearer(token) } });
const album = () => `/assets/folder/${encodeURIComponent(r.ids['Shoot']!)}`;

test('a token that expires mid-traversal: integration-auth-failed 401 with Canto\'s message; after the refresh the traversal goes on', async () => {
  const first = await get(`${album()}?size=3`);
  assert.equal(first.statusCode, 200, first.body);
  const more = first.json().more;
  r.fault('expired-token');
  const body = assertError(await get(`${album()}?size=3&more=${encodeURIComponent(more)}`), 'integration-auth-failed', 401, 'integration');
  assert.match(body.error.details, /answered 401: Unauthorized: the access token is invalid or expired/);
  r.revokeTokens();
  assertError(await get(`${album()}?size=3&more=${encodeURIComponent(more)}`), 'integration-auth-failed', 401, 'integration');
  const ref = await t.app.inject({ method: 'GET', url: '/api/v1/auth/refreshToken', headers: { authorization: bearer(access), 'provider-authorization': bearer(dam.refresh_token!) } });
  assert.equal(ref.statusCode, 200, ref.body);
  dam = { ...dam, access_token: ref.json().access_token };
  const next = await get(`${album()}?size=3&more=${encodeURIComponent(more)}`);
  assert.equal(next.statusCode, 200, next.body);
  assert.equal(next.json().assets.length, 3);
});

test('a revoked refresh token: the renewal is integration-auth-failed with Canto\'s invalid_grant', async () => {
  r.revokeTokens(true);
  const ref = await t.app.inject({ method: 'GET', url: '/api/v1/auth/refreshToken', headers: { authorization: bearer(access), 'provider-authorization': bearer(dam.refresh_token!) } });
  const body = assertError(ref, 'integration-auth-failed', 401, 'integration');
  assert.match(body.error.details, /invalid_grant/);
  dam = await cantoSignIn(t, access, r.url);
});

test('a serverUrl that is not a Canto site is refused at the login start, naming why', async () => {
  for (const bad of ['https://example.com', 'http://10.0.0.1', 'https://oauth.canto.com', 'https://acme.canto.com.evil.example', 'http://acme.canto.com', 'https://a.b.canto.com']) {
    const res = await t.app.inject({ method: 'POST', url: `/api/v1/auth/login?provider=canto&polling=true&serverUrl=${encodeURIComponent(bad)}`, headers: { authorization: bearer(access) } });
    const body = assertError(res, 'integration-operation-failed', 400, 'integration');
    assert.equal(body.error.provider, 'canto');
    assert.match(body.error.message, /Canto site/, bad);
  }
  assertError(await t.app.inject({ method: 'POST', url: '/api/v1/auth/login?provider=canto&polling=true&serverUrl=not%20a%20url', headers: { authorization: bearer(access) } }), 'hub-validation-error', 400);
  const none = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login?provider=canto&polling=true', headers: { authorization: bearer(access) } });
  assert.ok(none.statusCode === 400, none.body);
});

test('each Canto region signs in on its own OAuth host (the US one replaced by the stand-in here), with app_id and an S256 challenge', async () => {
  const hosts: Record<string, string> = {
    'https://acme.canto.com': new URL(r.url).host, 'https://acme.canto.global': 'oauth.canto.global', 'https://acme.canto.de': 'oauth.canto.de',
    'https://acme.ca.canto.com': 'oauth.ca.canto.com', 'https://acme.au.canto.com': 'oauth.au.canto.com',
  };
  for (const [site, host] of Object.entries(hosts)) {
    const res = await t.app.inject({ method: 'POST', url: `/api/v1/auth/login?provider=canto&polling=true&serverUrl=${encodeURIComponent(site)}`, headers: { authorization: bearer(access) } });
    assert.equal(res.statusCode, 200, res.body);
    // The hub's confirm page first; its Continue goes on to the region's authorization endpoint.
    const u = new URL(await continueToVendor(new TestBrowser(t), res.json().redirect_uri));
    assert.equal(`${u.host}${u.pathname}`, `${host}/oauth/api/oauth2/authorize`, site);
    assert.equal(u.searchParams.get('app_id'), 'canto-app');
    assert.equal(u.searchParams.get('code_challenge_method'), 'S256');
    assert.equal(u.searchParams.get('response_type'), 'code');
  }
});

test('a tenant at a private address (not allowed by the hub): the login fails with the address refusal, no token used', async () => {
  const built = await startCantoHub(r.url, { allowHosts: [] });
  try {
    const acc = (await built.t.login()).access_token;
    const start = await built.t.app.inject({ method: 'POST', url: `/api/v1/auth/login?provider=canto&polling=true&serverUrl=${encodeURIComponent(r.url)}`, headers: { authorization: bearer(acc) } });
    assert.equal(start.statusCode, 200, start.body);
    const { state, redirect_uri } = start.json();
    const browser = new TestBrowser(built.t);
    // A failed callback of the right browser keeps the login pending (the user may try again from
    // the confirm page) until the state's attempt budget is spent; the last failure ends it.
    for (let i = 1; i <= 5; i++) {
      const back = await vendorConsent(browser, await continueToVendor(browser, redirect_uri));
      const cb = await browser.open(back);
      assert.equal(cb.status, 400);
      const poll = await pollDamLogin({ t: built.t }, state);
      if (i < 5) assert.deepEqual(poll, {}, `still pending after failure ${i}`);
      else assert.match(poll.error!, /address is not allowed/);
    }
  } finally {
    await built.t.close();
  }
});

test('429 storm: Retry-After honoured between attempts, then integration-unavailable 503 passing Retry-After on', async () => {
  slept.length = 0;
  r.fault('rate-limit', 3);
  const body = assertError(await get(album()), 'integration-unavailable', 503, 'integration');
  assert.deepEqual(slept, [1000, 1000], 'each retry waited the second Retry-After asked for');
  assert.match(body.error.details, /answered 429: Too many requests/);
  slept.length = 0;
  r.fault('rate-limit', 1);
  assert.equal((await get(album())).statusCode, 200, 'one 429, then the retry answers');
  assert.deepEqual(slept, [1000]);
  slept.length = 0;
  r.fault('rate-limit-long', 1);
  const long = await get(album());
  assertError(long, 'integration-unavailable', 503, 'integration');
  assert.equal(long.headers['retry-after'], '300', 'a longer wait goes back to the client');
  assert.deepEqual(slept, [], 'no wait for a Retry-After beyond maxRetryAfterMs');
});

test('a cursor past the end (the album shrank between pages): an empty last page, no error', async () => {
  const first = (await get(`${album()}?size=6`)).json();
  assert.equal(typeof first.more, 'string');
  r.remove('Shoot/img 5.jpg');
  const rest = await get(`${album()}?size=6&more=${encodeURIComponent(first.more)}`);
  assert.equal(rest.statusCode, 200, rest.body);
  assert.equal(rest.json().assets.length, 0);
  assert.equal(rest.json().more, undefined);
  assert.equal(rest.json().totalAssetsCount, 6);
});

test('an album of 100,000 contents is paged by Canto\'s start/limit: exact total, bounded pages', async () => {
  r.addBigAlbum('Archive', 100_000);
  const id = encodeURIComponent(r.ids['Archive']!);
  const p1 = await get(`/assets/folder/${id}?size=1000`);
  assert.equal(p1.statusCode, 200, p1.body);
  const b1 = p1.json();
  assert.equal(b1.totalAssetsCount, 100_000);
  assert.equal(b1.assets.length, 100, 'clamped to the connector maximum');
  assert.ok(r.maxLimit <= 100, 'no listing asked Canto for more than one page');
  const b2 = (await get(`/assets/folder/${id}?size=1000&more=${encodeURIComponent(b1.more)}`)).json();
  assert.equal(b2.assets[0].name, 'big 000100.jpg');
  assert.equal(new Set([...b1.assets, ...b2.assets].map((a: any) => a.id)).size, 200);
});

test('content deleted between listing and detail: 404 integration-not-found; its download link too', async () => {
  const listed = (await get(album())).json();
  const gone = listed.assets.find((a: any) => a.name === 'gone.jpg');
  r.remove('Shoot/gone.jpg');
  assertError(await get(`/assets/asset/${encodeURIComponent(gone.id)}`), 'integration-not-found', 404, 'integration');
  assertError(await get(`/assets/assetversions/${encodeURIComponent(gone.id)}`), 'integration-not-found', 404, 'integration');
  const u = new URL(gone.downloadUrl);
  const dl = await t.app.inject({ method: 'GET', url: `${u.pathname}${u.search}` });
  assertError(dl, 'integration-not-found', 404, 'integration');
  assertError(await get(`/assets/asset/${encodeURIComponent('image:../../etc')}`), 'integration-not-found', 404, 'integration');
  assertError(await get(`/assets/folder/${encodeURIComponent('album:x/y')}`), 'integration-not-found', 404, 'integration');
});

test('an HTML error page: integration-unavailable 502 with its words, no markup, bounded', async () => {
  r.fault('html', 3);
  const body = assertError(await get(album()), 'integration-unavailable', 502, 'integration');
  assert.match(body.error.details, /answered 502: Bad Gateway The server is temporarily unable to service your request\./);
  assert.doesNotMatch(body.error.details, /<|font:12px/);
  assert.ok(body.error.details.length < 2300, `bounded: ${body.error.details.length}`);
});

test('filter counts Canto does not give (rate-limited): the search still answers, without filters', async () => {
  r.fault('rate-limit-counts', 100);
  const res = await get('/assets/search?query=img');
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json().totalAssetsCount, 5);
  assert.deepEqual(res.json().filters, []);
  r.fault('rate-limit-counts', 0);
});

test('a binary answered with a redirect (a delivery host): followed once, without the user\'s token', async () => {
  r.redirectBinaries(true);
  try {
    const a = (await get(`/assets/asset/${encodeURIComponent(r.ids['Shoot/img 0.jpg']!)}`)).json();
    const u = new URL(a.downloadUrl);
    const dl = await t.app.inject({ method: 'GET', url: `${u.pathname}${u.search}` });
    assert.equal(dl.statusCode, 200, dl.body);
    assert.ok(dl.rawPayload.equals(r.bytesOf('Shoot/img 0.jpg')));
    const th = new URL(a.thumbnailUrl);
    const thumb = await t.app.inject({ method: 'GET', url: `${th.pathname}${th.search}` });
    assert.equal(thumb.statusCode, 200);
    assert.equal(thumb.headers['content-type'], 'image/jpeg');
    assert.equal(r.deliveryAuth.length, 2);
    assert.deepEqual(r.deliveryAuth, [undefined, undefined], 'the token is not sent to the redirect target');
  } finally {
    r.redirectBinaries(false);
  }
});

test('a token endpoint answering in plain RFC 6749 form is read as well (the dialect view passes it through)', async () => {
  r.rfcTokens(true);
  try {
    const ref = await t.app.inject({ method: 'GET', url: '/api/v1/auth/refreshToken', headers: { authorization: bearer(access), 'provider-authorization': bearer(dam.refresh_token!) } });
    assert.equal(ref.statusCode, 200, ref.body);
    assert.equal((await get('/assets/folder/root', ref.json().access_token)).statusCode, 200);
  } finally {
    r.rfcTokens(false);
  }
});

test('records the connector cannot use are skipped without shifting the pages (no repeat, no gap)', async () => {
  r.addRaw('Odd', { id: 'X1', name: 'a web link', scheme: 'weblink' });
  r.addRaw('Odd', { id: 'X2', scheme: 'image' });
  const names: string[] = [];
  let more: string | undefined;
  for (let i = 0; i < 10; i++) {
    const res = await get(`/assets/folder/${encodeURIComponent(r.ids['Odd']!)}?size=2${more ? `&more=${encodeURIComponent(more)}` : ''}`);
    assert.equal(res.statusCode, 200, res.body);
    names.push(...res.json().assets.map((a: any) => a.name));
    more = res.json().more;
    if (!more) break;
  }
  assert.deepEqual(names, ['a.jpg', 'b.jpg', 'c.jpg']);
});

test('a cursor past its lifetime (24 h, the hub\'s clock): a clear 400, never a 500 or another page', async () => {
  const first = await get(`${album()}?size=2`);
  assert.equal(first.statusCode, 200, first.body);
  const more = first.json().more;
  t.clock.advance(25 * 3600_000);
  // The hub access token and the DAM connection token have expired too: a new exchange and sign-in, same user.
  access = (await t.login()).access_token;
  dam = await cantoSignIn(t, access, r.url);
  const stale = await get(`${album()}?size=2&more=${encodeURIComponent(more)}`);
  const body = assertError(stale, 'hub-validation-error', 400);
  assert.match(body.error.details, /more/);
});

test('a content record in an unexpected shape (a string where a list was due, null version entries): mapped as far as it goes, never a 500', async () => {
  r.patch('Odd/a.jpg', { keyword: 'spring', tag: [1, 'hero', null], additional: 'none', default: 'x', versionHistory: [null, { version: '1.0', currentVersion: false }, 7, { version: '2.0', comment: 'now', currentVersion: true }] });
  const id = encodeURIComponent(r.ids['Odd/a.jpg']!);
  const a = await get(`/assets/asset/${id}`);
  assert.equal(a.statusCode, 200, a.body);
  assert.deepEqual(a.json().keywords, ['hero']);
  assert.equal(a.json().mimeType, 'image/jpeg');
  assert.equal(a.json().version, 2);
  assert.equal(a.json().versionComment, 'now');
  const v = await get(`/assets/assetversions/${id}?withMaster=true`);
  assert.equal(v.statusCode, 200, v.body);
  assert.deepEqual(v.json().versions.map((x: any) => x.version), [2, 1]);
});
