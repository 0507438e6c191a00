/**
 * Cloudinary upstream failures through the hub (issue 20's fault rows), each answered with an
 * integration-* code and status, never a 500, within the deadline: a key revoked mid-traversal,
 * the Admin API's hourly limit (420 with X-FeatureRateLimit-Reset), 429 storms (Retry-After
 * honoured through the injected sleep), cursors that expire upstream, a folder of 100,000 assets
 * (one page read, never the whole folder), an asset deleted between listing and detail, HTML error
 * pages, a plan without Search API aggregations, an upstream that stops answering.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { cloudinaryConnector } from '../../../src/providers/cloudinary/provider.js';
import { assertError } from '../../helpers/hub.js';
import { signInCloudinary, startCloudinaryHub, startCloudinaryReplay, type CloudinaryHub, type CloudinaryReplay } from '../../helpers/cloudinary-replay.js';
import { startConnectorHub } from '../../helpers/saas.js';

const TIMEOUT_MS = 1500;
let r: CloudinaryReplay;
let h: CloudinaryHub;

before(async () => {
  const tree = Array.from({ length: 9 }, (_, i) => `Shoot/frame ${i}.jpg`);
  tree.push('Shoot/Raw/frame 0.txt', 'Brand/logo.png', 'Brand/hero.jpg');
  r = await startCloudinaryReplay(tree, { mode: 'fixed', bulk: { folder: 'Huge', count: 100_000 } });
  h = await startCloudinaryHub(r, { timeoutMs: TIMEOUT_MS, retries: 1, retryBaseMs: 1 });
});
after(async () => {
  await h?.t.close();
  await r?.close();
});

const inject = (url: string) => h.t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: h.headers });

test('the Admin API rate limit (420): integration-unavailable 503, Retry-After from X-FeatureRateLimit-Reset, no retry', async () => {
  // The hub's clock reads 2026-06-01T12:00:00Z: the limit resets in 30 minutes.
  r.fault('rate-limit', 5, new Date(Date.UTC(2026, 5, 1, 12, 30)).toUTCString());
  const before = r.calls.get('/v1_1/cld-docs/resources/search') ?? 0;
  const res = await inject('/assets/search?query=frame');
  const body = assertError(res, 'integration-unavailable', 503, 'integration');
  assert.equal(res.headers['retry-after'], '1800');
  assert.match(body.error.details, /answered 420: Cloudinary's Admin API rate limit of 500 calls per hour is used up \(Rate Limit Exceeded\)/);
  assert.equal((r.calls.get('/v1_1/cld-docs/resources/search') ?? 0) - before, 1, 'an hourly limit is not retried');
  r.fault('rate-limit', 0);
});

test('a plan without aggregations (Tier 1): results without filters, aggregate not asked again', async () => {
  r.searches.length = 0;
  const res = await h.get('/assets/search?query=frame');
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual(res.body.filters, []);
  assert.equal(res.body.totalAssetsCount, 10);
  assert.deepEqual(r.searches.map((s) => Boolean(s.aggregate)), [true, false]);
  r.searches.length = 0;
  await h.get('/assets/folder/Shoot');
  assert.deepEqual(r.searches.map((s) => Boolean(s.aggregate)), [false]);
});

test('a key revoked mid-traversal: the next page is integration-auth-failed 401, the secret never shown', async (t) => {
  const first = await h.get('/assets/folder/Shoot?size=4');
  assert.equal(first.status, 200, JSON.stringify(first.body));
  assert.equal(first.body.totalAssetsCount, 9);
  const old = r.secret;
  r.rotateSecret();
  t.after(() => {
    // Later tests sign in again with the new secret.
  });
  const next = await inject(`/assets/folder/Shoot?size=4&more=${encodeURIComponent(first.body.more)}`);
  const body = assertError(next, 'integration-auth-failed', 401, 'integration');
  assert.match(body.error.details, /Invalid api_key/);
  assert.doesNotMatch(next.body, new RegExp(old.slice(0, 12)));
  // A fresh sign-in with the new secret: the later tests use it.
  const s = await signInCloudinary(h.t, h.access, { cloud: r.cloud, key: r.key, secret: r.secret });
  assert.ok(s.token);
  h.headers['provider-authorization'] = `Bearer ${s.token}`;
});

test('an upstream cursor that expired: integration-operation-failed 400 with Cloudinary\'s message', async () => {
  const first = await h.get('/assets/folder/Shoot?size=4');
  assert.equal(first.status, 200, JSON.stringify(first.body));
  r.fault('cursor-expired');
  const next = await inject(`/assets/folder/Shoot?size=4&more=${encodeURIComponent(first.body.more)}`);
  const body = assertError(next, 'integration-operation-failed', 400, 'integration');
  assert.match(body.error.details, /resources\/search answered 400: Invalid next_cursor/);
  // Starting again from the first page works.
  assert.equal((await h.get('/assets/folder/Shoot?size=4')).status, 200);
});

test('a folder of 100,000 assets: one page read, the exact total, bounded memory', async () => {
  r.searches.length = 0;
  const res = await h.get('/assets/folder/Huge?size=50');
  assert.equal(res.status, 200, JSON.stringify(res.body).slice(0, 300));
  assert.equal(res.body.totalAssetsCount, 100_000);
  assert.equal(res.body.assets.length, 50);
  assert.equal(typeof res.body.more, 'string');
  assert.deepEqual(r.searches.map((s) => s.max_results), [50], 'one Search API page of the asked size, nothing read ahead');
  assert.equal(r.searches[0].expression, 'folder="Huge"', 'fixed folder mode: the folder is the public-id path');
  const second = await h.get(`/assets/folder/Huge?size=50&more=${encodeURIComponent(res.body.more)}`);
  assert.equal(second.status, 200);
  assert.equal(second.body.assets.length, 50);
  assert.notEqual(second.body.assets[0].id, res.body.assets[0].id);
});

test('an asset deleted between listing and detail: integration-not-found 404; malformed ids too', async () => {
  const list = await h.get('/assets/folder/Brand');
  const logo = list.body.assets.find((a: any) => a.name === 'logo.png');
  r.remove('Brand/logo.png');
  assertError(await inject(`/assets/asset/${logo.id}`), 'integration-not-found', 404, 'integration');
  assertError(await inject(`/assets/assetversions/${logo.id}`), 'integration-not-found', 404, 'integration');
  assertError(await inject('/assets/asset/..%2F..%2Fetc'), 'integration-not-found', 404, 'integration');
  assertError(await inject(`/assets/folder/${encodeURIComponent('Brand//x')}`), 'integration-not-found', 404, 'integration');
  assertError(await inject(`/assets/folder/${encodeURIComponent('No/Such')}`), 'integration-not-found', 404, 'integration');
});

test('an HTML error page: clean, bounded text in details, integration-unavailable', async () => {
  r.fault('html', 4);
  const res = await inject('/assets/search?query=frame');
  const body = assertError(res, 'integration-unavailable', 502, 'integration');
  assert.match(body.error.details, /502 Bad Gateway upstream unavailable/);
  assert.doesNotMatch(body.error.details, /<|body\{/);
  assert.ok(body.error.details.length < 2300);
  r.fault('html', 0);
});

test('an upstream that stops answering: 504 within the deadline', async () => {
  r.fault('hang', 4);
  const started = Date.now();
  const res = await inject('/assets/search?query=frame');
  assertError(res, 'integration-unavailable', 504, 'integration');
  assert.ok(Date.now() - started < TIMEOUT_MS * 4 + 2000);
  r.fault('hang', 0);
});

test('a 429 storm: Retry-After honoured through the injected sleep, then integration-unavailable 503', async (t) => {
  const waits: number[] = [];
  const { t: hub } = await startConnectorHub((deps) => cloudinaryConnector({ endpoints: { api: r.url, res: r.url } })({ ...deps, sleep: async (ms) => { waits.push(ms); } }), { timeoutMs: TIMEOUT_MS, retries: 2, retryBaseMs: 1 });
  t.after(() => hub.close());
  const access = (await hub.login()).access_token;
  const s = await signInCloudinary(hub, access, { cloud: r.cloud, key: r.key, secret: r.secret });
  assert.ok(s.token, s.page);
  r.fault('too-many', 10);
  const res = await hub.app.inject({ method: 'GET', url: '/api/v1/assets/search?query=frame', headers: { authorization: `Bearer ${access}`, 'provider-authorization': `Bearer ${s.token}` } });
  assertError(res, 'integration-unavailable', 503, 'integration');
  assert.deepEqual(waits, [2000, 2000], 'each retry waited the Retry-After');
  assert.equal(res.headers['retry-after'], '2');
  r.fault('too-many', 0);
});
