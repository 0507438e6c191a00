/**
 * The Microsoft 365 connector under upstream faults (replay server, documented error bodies): each
 * answers with its integration-* code and status, never a 500, within the deadline. Retries wait
 * through the injected sleep (no real waiting).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { microsoft365Connector } from '../../../src/providers/microsoft365/provider.js';
import { startMicrosoft365Replay, type M365Replay } from '../../helpers/microsoft365-replay.js';
import { assertError, bearer, type TestHub } from '../../helpers/hub.js';
import { oauthSignIn, startConnectorHub } from '../../helpers/saas.js';

let r: M365Replay;
let t: TestHub;
let access: string;
let dam: { access_token: string; refresh_token?: string };
const slept: number[] = [];

const TIMEOUT_MS = 1500;
const CAP = 50;

before(async () => {
  const photos = Array.from({ length: 20 }, (_, i) => `Photos/p${String(i).padStart(2, '0')}.jpg`);
  r = await startMicrosoft365Replay([...photos, 'Photos/Old/x.txt', 'notes.txt', 'gone.txt'], {}, { huge: { path: 'Huge', count: 100_000 } });
  const factory = microsoft365Connector({
    clientId: 'm365-app', allowInsecureRequests: true, maxEntries: CAP,
    endpoints: { authorize: `${r.url}/common/oauth2/v2.0/authorize`, token: `${r.url}/common/oauth2/v2.0/token`, graph: `${r.url}/v1.0` },
  });
  ({ t } = await startConnectorHub((deps) => factory({ ...deps, sleep: async (ms) => { slept.push(ms); } }), { timeoutMs: TIMEOUT_MS, retries: 2, retryBaseMs: 1 }));
  access = (await t.login()).access_token;
  dam = await oauthSignIn(t, 'microsoft365', access);
});
after(async () => {
  await t?.close();
  await r?.close();
});

const get = (url: string, token = dam.access_token) =>
  t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: { authorization: bearer(access), 'provider-authorization': bearer(token) } });

test('a token that expires mid-traversal: the next page is integration-auth-failed 401 naming Graph\'s error', async () => {
  const first = await get(`/assets/folder/${r.ids['Photos']}?size=5`);
  assert.equal(first.statusCode, 200, first.body);
  r.fault('expired-token');
  const body = assertError(await get(`/assets/folder/${r.ids['Photos']}?size=5&more=${encodeURIComponent(first.json().more)}`), 'integration-auth-failed', 401, 'integration');
  assert.match(body.error.details, /unauthenticated/);
});

test('a 429 storm: Retry-After honoured through the sleep seam, then integration-unavailable 503 passing Retry-After on', async () => {
  slept.length = 0;
  r.fault('rate-limit', 10, '2');
  const res = await get('/assets/folder/me');
  const body = assertError(res, 'integration-unavailable', 503, 'integration');
  assert.deepEqual(slept, [2000, 2000], 'each retry waited the Retry-After');
  assert.equal(res.headers['retry-after'], '2');
  assert.match(body.error.details, /TooManyRequests: Please retry again later/);
  r.fault('rate-limit', 0);
  slept.length = 0;
  // A Retry-After longer than the hub waits for itself goes straight back to the client.
  r.fault('rate-limit', 1, '120');
  const long = await get('/assets/folder/me');
  assertError(long, 'integration-unavailable', 503, 'integration');
  assert.equal(long.headers['retry-after'], '120');
  assert.deepEqual(slept, []);
  // Graph's documented sample says `Retry-After: 2.128`: fractional seconds are honoured (rounded up), not ignored.
  slept.length = 0;
  r.fault('rate-limit', 1, '2.128');
  assert.equal((await get('/assets/folder/me')).statusCode, 200);
  assert.deepEqual(slept, [3000]);
  slept.length = 0;
  // One 503 with Retry-After, then an answer: the read is retried and succeeds.
  r.fault('service-unavailable', 1, '1');
  assert.equal((await get('/assets/folder/me')).statusCode, 200);
  assert.deepEqual(slept, [1000]);
});

test('a Graph cursor that expired while the listing was read: integration-operation-failed 400 naming invalidRequest', async () => {
  r.fault('cursor-expired');
  const body = assertError(await get(`/assets/folder/${r.ids['Photos']}`), 'integration-operation-failed', 400, 'integration');
  assert.match(body.error.details, /invalidRequest: The request is malformed or incorrect/);
});

test('an altered or foreign hub cursor is a clear 400, never another folder\'s data', async () => {
  const first = (await get(`/assets/folder/${r.ids['Photos']}?size=5`)).json();
  const altered = await get(`/assets/folder/${r.ids['Photos']}?size=5&more=${encodeURIComponent(first.more.slice(0, -2) + 'xx')}`);
  assertError(altered, 'hub-validation-error', 400);
  assertError(await get(`/assets/folder/me?size=5&more=${encodeURIComponent(first.more)}`), 'hub-validation-error', 400);
});

test('a folder of 100,000 entries: refused from its childCount before any listing call (bounded memory)', async () => {
  const before = [...r.calls.keys()].filter((p) => p.endsWith('/children')).reduce((n, p) => n + r.calls.get(p)!, 0);
  const body = assertError(await get(`/assets/folder/${r.ids['Huge']}`), 'integration-operation-failed', 400, 'integration');
  assert.match(body.error.message, new RegExp(`more than ${CAP} items`));
  const after = [...r.calls.keys()].filter((p) => p.endsWith('/children')).reduce((n, p) => n + r.calls.get(p)!, 0);
  assert.equal(after, before, 'no page of it was read');
});

test('a search over the entry bound is refused the same way, after at most cap/page pages', async () => {
  const body = assertError(await get('/assets/search?query=entry'), 'integration-operation-failed', 400, 'integration');
  assert.match(body.error.message, new RegExp(`more than ${CAP} items`));
});

test('an asset deleted between listing and detail: integration-not-found 404 (detail, versions, download link)', async () => {
  const listed = (await get('/assets/folder/me')).json();
  const gone = listed.assets.find((a: any) => a.name === 'gone.txt');
  r.remove('gone.txt');
  const body = assertError(await get(`/assets/asset/${gone.id}`), 'integration-not-found', 404, 'integration');
  assert.match(body.error.details, /itemNotFound: The resource could not be found/);
  assertError(await get(`/assets/assetversions/${gone.id}`), 'integration-not-found', 404, 'integration');
  const u = new URL(gone.downloadUrl);
  assertError(await t.app.inject({ method: 'GET', url: `${u.pathname}${u.search}` }), 'integration-not-found', 404, 'integration');
});

test('malformed or foreign ids are integration-not-found 404, never sent to Graph', async () => {
  const before = r.calls.size;
  for (const id of ['x', 'i.AAA', 'i.%2F.%2F', `i.${Buffer.from('a/b').toString('base64url')}.cm9vdA`, 's.', 'me.extra']) {
    assertError(await get(`/assets/asset/${encodeURIComponent(id)}`), 'integration-not-found', 404, 'integration');
    assertError(await get(`/assets/folder/${encodeURIComponent(id)}`), 'integration-not-found', 404, 'integration');
  }
  assert.equal(r.calls.size, before);
});

test('an HTML error page instead of JSON: integration-unavailable with its words, no markup, bounded', async () => {
  r.fault('html', 3);
  const body = assertError(await get('/assets/folder/me'), 'integration-unavailable', 503, 'integration');
  assert.match(body.error.details, /Service Unavailable The service is temporarily unavailable & will be back/);
  assert.doesNotMatch(body.error.details, /[<>]|font:12px/);
  assert.ok(body.error.details.length < 2300, `bounded: ${body.error.details.length}`);
});

test('a Graph that stops answering: retried once per attempt, then integration-unavailable 504 within the deadline', async () => {
  // A success first: the breaker counts consecutive failures, and the HTML test left three.
  assert.equal((await get('/assets/folder/me')).statusCode, 200);
  r.fault('hang', 3);
  const started = Date.now();
  const body = assertError(await get('/assets/folder/me'), 'integration-unavailable', 504, 'integration');
  assert.match(body.error.details, new RegExp(`no answer within ${TIMEOUT_MS} ms`));
  assert.ok(Date.now() - started < 3 * TIMEOUT_MS + 2000);
});

test('a revoked connection (access and refresh tokens): content calls and the DAM refresh are integration-auth-failed', async () => {
  r.revokeAll();
  assertError(await get('/assets/folder/me'), 'integration-auth-failed', 401, 'integration');
  const ref = await t.app.inject({ method: 'GET', url: '/api/v1/auth/refreshToken', headers: { authorization: bearer(access), 'provider-authorization': bearer(dam.refresh_token!) } });
  const body = assertError(ref, 'integration-auth-failed', 401, 'integration');
  assert.match(body.error.details, /invalid_grant: AADSTS70000/);
});
