/**
 * @damhub/client's error normalisation: the hub's envelope, and each legacy shape a DAM
 * integration may still send, served by a tiny local node:http server (`{message, details}`
 * without `error`, an envelope with its fields unset, an empty body, a plain-text 404, HTML, a
 * string body), network failures; the not-supported rule on search by image; the paging guard;
 * and placeholder resolution.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import {
  DamhubClient, DamhubError, errorFromResponse, hasPlaceholders, isNotSupported, isRetryable, needsDamLogin, needsExchange, paginate,
  placeholdersIn, resolvePlaceholders, webStorage, type Folder,
} from '@damhub/client';
import { freePort } from '../helpers/client-harness.js';

interface Canned {
  status: number;
  body?: string;
  type?: string;
  headers?: Record<string, string>;
}

/** Path → canned answer. Every request also gets a valid token pair on exchange. */
const routes = new Map<string, Canned>();
let server: http.Server;
let base: string;

before(async () => {
  server = http.createServer((req, res) => {
    const path = new URL(req.url!, 'http://x').pathname.replace('/api/v1', '');
    if (path === '/auth/exchangeToken') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ access_token: 'a', refresh_token: 'r', expires_in: 3600, token_type: 'Bearer' }));
    }
    const c = routes.get(`${req.method} ${path}`) ?? { status: 404, body: 'Not Found', type: 'text/plain' };
    res.writeHead(c.status, { ...(c.type ? { 'content-type': c.type } : {}), 'x-request-id': 'req-legacy', ...c.headers });
    res.end(c.body ?? '');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`;
});
after(() => {
  server.closeAllConnections();
  server.close();
});

const legacyClient = () => new DamhubClient({ baseUrl: base, getPartnerJwt: () => 'jwt', provider: 'legacy', tokens: { accessToken: 'a', refreshToken: 'r', expiresAt: Number.MAX_SAFE_INTEGER } });
async function failure(p: Promise<unknown>): Promise<DamhubError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof DamhubError, `not a DamhubError: ${e}`);
    return e;
  }
  assert.fail('expected a failure');
}
const withDam = async (c: DamhubClient) => {
  await c.setDamConnection('legacy', { accessToken: 'dam' });
  return c;
};

test('the envelope: code, source, status, message, details, provider, request id', async () => {
  routes.set('GET /assets/asset/x', {
    status: 403, type: 'application/json',
    body: JSON.stringify({ message: 'Error', details: 'GET /assets/asset/x failed: nope', errorCode: 'integration-forbidden', error: { code: 'integration-forbidden', source: 'integration', status: 403, message: 'You may not.', details: 'upstream said no', provider: 'acme', requestId: 'r-1' } }),
  });
  const e = await failure((await withDam(legacyClient())).asset('x'));
  assert.equal(e.kind, 'envelope');
  assert.equal(e.code, 'integration-forbidden');
  assert.equal(e.source, 'integration');
  assert.equal(e.status, 403);
  assert.equal(e.message, 'You may not.');
  assert.equal(e.details, 'upstream said no');
  assert.equal(e.provider, 'acme');
  assert.equal(e.requestId, 'r-1');
  assert.equal(e.operation, 'asset');
  assert.equal(needsDamLogin(e), false);
  assert.equal(isNotSupported(e), false);
});

test('legacy shapes: {message, details} without error, unset envelope fields, empty body, plain-text 404, HTML, a JSON string', async () => {
  const asset = async (id: string) => (await withDam(legacyClient())).asset(id);
  routes.set('GET /assets/asset/legacy', { status: 400, type: 'application/json', body: JSON.stringify({ message: 'Asset id is malformed', details: 'stack-free detail' }) });
  let e = await failure(asset('legacy'));
  assert.equal(e.kind, 'legacy');
  assert.equal(e.code, undefined);
  assert.equal(e.status, 400);
  assert.equal(e.message, 'Asset id is malformed');
  assert.equal(e.details, 'stack-free detail');
  assert.equal(e.requestId, 'req-legacy', 'request id from the header when the body has none');

  routes.set('GET /assets/asset/unset', { status: 401, type: 'application/json', body: JSON.stringify({ message: 'Error', details: 'd', errorCode: 'integration-auth-failed', error: null }) });
  e = await failure(asset('unset'));
  assert.equal(e.kind, 'legacy');
  assert.equal(e.code, 'integration-auth-failed', 'the top-level errorCode is used when error is unset');
  assert.equal(e.source, 'integration');
  assert.equal(e.message, 'Unauthorized (401)', '"Error" is not a message');
  assert.equal(needsDamLogin(e), true);

  routes.set('GET /assets/asset/half', { status: 502, type: 'application/json', body: JSON.stringify({ error: { message: 'gateway trouble' } }) });
  e = await failure(asset('half'));
  assert.equal(e.kind, 'legacy');
  assert.equal(e.status, 502);
  assert.equal(e.message, 'gateway trouble');
  assert.equal(isRetryable(e), true);

  routes.set('GET /assets/asset/empty', { status: 503, headers: { 'retry-after': '7' } });
  e = await failure(asset('empty'));
  assert.equal(e.kind, 'empty');
  assert.equal(e.status, 503);
  assert.equal(e.message, 'Service unavailable (503)');
  assert.equal(e.retryAfterSec, 7);

  e = await failure(asset('nothing-here')); // the canned default: text/plain "Not Found"
  assert.equal(e.kind, 'text');
  assert.equal(e.status, 404);
  assert.equal(e.message, 'Not Found');

  routes.set('GET /assets/asset/html', { status: 500, type: 'text/html', body: '<html><body><h1>Internal Server Error</h1></body></html>' });
  e = await failure(asset('html'));
  assert.equal(e.kind, 'text');
  assert.equal(e.message, 'Internal server error (500)');
  assert.match(String(e.details), /Internal Server Error/);

  routes.set('GET /assets/asset/str', { status: 409, type: 'application/json', body: '"conflict at the DAM"' });
  e = await failure(asset('str'));
  assert.equal(e.kind, 'legacy');
  assert.equal(e.message, 'conflict at the DAM');

  // Shapes straight through the parser: an `error` string (as login polls answer) and a bare array.
  const hdr = new Headers();
  assert.equal(errorFromResponse(400, JSON.stringify({ error: 'the sign-in failed' }), hdr).message, 'the sign-in failed');
  assert.equal(errorFromResponse(418, '[1,2]', hdr).message, 'HTTP error (418)');
});

test('search by image: 501, 404 and 400 from an integration all mean "not supported"; the hub\'s validation error does not', async () => {
  const c = await withDam(legacyClient());
  const img = 'data:image/png;base64,iVBORw0KGgo=';
  for (const [status, body] of [[501, ''], [404, 'Not Found'], [400, JSON.stringify({ message: 'unsupported operation', details: 'similarity search disabled' })]] as const) {
    routes.set('POST /assets/search', { status, body, type: status === 400 ? 'application/json' : 'text/plain' });
    const e = await failure(c.searchByImage(img));
    assert.equal(e.operation, 'searchByImage');
    assert.equal(isNotSupported(e), true, `status ${status}`);
    assert.equal(e.isNotSupported(), true);
  }
  routes.set('POST /assets/search', { status: 400, type: 'application/json', body: JSON.stringify({ message: 'Error', details: 'x', errorCode: 'hub-validation-error', error: { code: 'hub-validation-error', source: 'hub', status: 400, message: 'The request is malformed.', requestId: 'r' } }) });
  assert.equal(isNotSupported(await failure(c.searchByImage(img))), false);
  // 404 and 400 elsewhere are not "not supported".
  routes.set('GET /assets/asset/gone', { status: 404, type: 'application/json', body: JSON.stringify({ message: 'no such asset' }) });
  assert.equal(isNotSupported(await failure(c.asset('gone'))), false);
});

test('network failures and the helpers for what to do next', async () => {
  const port = await freePort(); // nothing listens there
  const c = new DamhubClient({ baseUrl: `http://127.0.0.1:${port}`, getPartnerJwt: () => 'jwt' });
  assert.equal(c.baseUrl, `http://127.0.0.1:${port}/api/v1`, 'a bare origin gets /api/v1');
  const e = await failure(c.checkToken());
  assert.equal(e.kind, 'network');
  assert.equal(e.status, 0);
  assert.equal(e.code, 'client-network-error');
  assert.equal(e.operation, 'exchange');
  assert.equal(isRetryable(e), true);
  assert.equal(needsExchange(e), false);

  const env = (code: string, status: number, operation?: 'hubRefresh') => {
    const err = errorFromResponse(status, JSON.stringify({ message: 'Error', details: '', errorCode: code, error: { code, source: code.startsWith('integration') ? 'integration' : 'hub', status, message: 'm', requestId: 'r' } }), new Headers(), operation);
    return err;
  };
  assert.equal(needsDamLogin(env('provider-access-token-missing', 403)), true);
  assert.equal(needsDamLogin(env('provider-access-token-invalid', 403)), true);
  assert.equal(needsDamLogin(env('integration-auth-failed', 401)), true);
  assert.equal(needsDamLogin(env('integration-forbidden', 403)), false);
  assert.equal(needsExchange(env('hub-access-token-invalid', 401)), true);
  assert.equal(needsExchange(env('hub-access-token-missing', 401)), true);
  assert.equal(needsExchange(env('hub-refresh-token-invalid', 401)), true);
  assert.equal(needsExchange(env('provider-access-token-invalid', 403, 'hubRefresh')), true, 'a refresh token failing on /auth/refreshToken');
  assert.equal(needsDamLogin(env('provider-access-token-invalid', 403, 'hubRefresh')), false);
  assert.equal(needsExchange(env('provider-access-token-invalid', 403)), false);
  assert.equal(isNotSupported(env('integration-not-implemented', 501)), true);
  assert.equal(isNotSupported(new Error('x')), false);
  assert.equal(isRetryable(env('hub-rate-limited', 429)), true);
});

test('paging: follow more until absent (a short page is not the end, a full page may be), folders once, a repeated cursor stops', async () => {
  const f = (id: string): Folder => ({ id, name: id });
  const pages = [
    { assets: [1], folders: [f('a'), f('b')], more: 'm1' },
    { assets: [2, 3, 4], folders: [f('a'), f('b'), f('c')], more: 2 },
    { assets: [5, 6, 7], folders: [f('b')] },
  ];
  const asked: unknown[] = [];
  const out = [];
  for await (const p of paginate(async (more) => {
    asked.push(more);
    return pages[asked.length - 1]!;
  })) out.push(p);
  assert.deepEqual(asked, [undefined, 'm1', 2], 'cursors are sent back unchanged, numbers included');
  assert.deepEqual(out.map((p) => p.assets), [[1], [2, 3, 4], [5, 6, 7]]);
  assert.deepEqual(out.map((p) => p.folders.map((x) => x.id)), [['a', 'b'], ['c'], []]);

  let n = 0;
  const looping = paginate(async () => ({ assets: [n++], folders: [], more: 'same' }));
  await assert.rejects((async () => {
    for await (const _ of looping) { /* drain */ }
  })(), (e: unknown) => e instanceof DamhubError && e.code === 'client-paging-loop');
  assert.equal(n, 2);
  // An empty-string cursor is the end too.
  const ended = [];
  for await (const p of paginate(async () => ({ assets: [], folders: [], more: '' }))) ended.push(p);
  assert.equal(ended.length, 1);
});

test('$name$ placeholders: found, resolved URL-encoded or raw, and unresolved ones refused unless lenient', () => {
  const url = 'https://dam.example/$tenant$/thumb/$id$?token=$token$';
  assert.deepEqual(placeholdersIn(url), ['tenant', 'id', 'token']);
  assert.equal(hasPlaceholders(url), true);
  assert.equal(hasPlaceholders('https://hub/x?sig=a$b'), false);
  assert.equal(resolvePlaceholders(url, { tenant: 'acme corp', id: 'a/b', token: 't&u' }), 'https://dam.example/acme%20corp/thumb/a%2Fb?token=t%26u');
  assert.equal(resolvePlaceholders('$base$/x.jpg', { base: { raw: 'https://cdn.example/p' } }), 'https://cdn.example/p/x.jpg');
  assert.throws(() => resolvePlaceholders(url, { tenant: 'a' }), (e: unknown) => e instanceof DamhubError && e.code === 'client-placeholder-unresolved' && /\$id\$, \$token\$/.test(e.message));
  assert.equal(resolvePlaceholders(url, { id: 1 }, { strict: false }), 'https://dam.example/$tenant$/thumb/1?token=$token$');
});

test('webStorage: state round-trips through a Web Storage; a corrupt entry reads as nothing; the current provider is restored', async () => {
  const map = new Map<string, string>();
  const store = { getItem: (k: string) => map.get(k) ?? null, setItem: (k: string, v: string) => void map.set(k, v) };
  const a = new DamhubClient({ baseUrl: base, storage: webStorage(store, 'k'), tokens: { accessToken: 'a', refreshToken: 'r', expiresAt: Number.MAX_SAFE_INTEGER } });
  await a.setDamConnection('legacy', { accessToken: 'dam', userHash: 'u' });
  assert.deepEqual(JSON.parse(map.get('k')!).dam.legacy, { accessToken: 'dam', userHash: 'u', providerId: 'legacy' });
  routes.set('GET /system/providerInfo', { status: 200, type: 'application/json', body: '{"dataLocales":[]}' });
  const b = new DamhubClient({ baseUrl: base, storage: webStorage(store, 'k') });
  assert.deepEqual(await b.providerInfo(), { dataLocales: [] }, 'tokens and the provider come from storage');
  assert.equal(b.provider, 'legacy');
  map.set('k', '{not json');
  assert.equal(webStorage(store, 'k').load(), null);
});
