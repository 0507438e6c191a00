/** The HTTP layer every route shares: the error envelope on every path, request ids, ops endpoints, OpenAPI, CORS, headers. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertError, startTestHub, type TestHub } from '../helpers/hub.js';

let t: TestHub;

before(async () => {
  t = await startTestHub({ config: { bodyLimitBytes: 1024, demo: true } });
  t.app.get('/api/v1/test/boom', async () => {
    throw new Error('secret internal detail at /etc/passwd');
  });
});
after(() => t.close());

test('unknown route → hub-not-found envelope', async () => {
  const res = await t.app.inject({ method: 'GET', url: '/api/v1/no/such/route?x=1' });
  const body = assertError(res, 'hub-not-found', 404);
  assert.equal(body.details, 'GET /api/v1/no/such/route failed: There is no such endpoint.');
});

test('a crash → hub-internal-error with the request id and no internals', async () => {
  const res = await t.app.inject({ method: 'GET', url: '/api/v1/test/boom', headers: { 'x-request-id': 'req-abc.123' } });
  const body = assertError(res, 'hub-internal-error', 500);
  assert.equal(res.headers['x-request-id'], 'req-abc.123');
  assert.match(body.error.details, /req-abc\.123/);
  assert.ok(!res.body.includes('secret internal detail'));
  assert.ok(!res.body.includes('passwd'));
});

test('an insane x-request-id is replaced', async () => {
  const res = await t.app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'bad id\twith spaces' } });
  assert.notEqual(res.headers['x-request-id'], 'bad id\twith spaces');
  assert.match(String(res.headers['x-request-id']), /^[0-9a-f-]{36}$/);
});

test('schema validation → hub-validation-error naming the parameter', async () => {
  const { access_token } = await t.login();
  const res = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', headers: { authorization: `Bearer ${access_token}` } });
  const body = assertError(res, 'hub-validation-error', 400);
  assert.match(body.error.details, /provider/);
});

test('malformed JSON body → hub-validation-error', async () => {
  const res = await t.app.inject({ method: 'POST', url: '/api/v1/auth/exchangeToken', headers: { authorization: `Bearer ${await t.jwt()}`, 'content-type': 'application/json' }, payload: '{"email":' });
  assertError(res, 'hub-validation-error', 400);
});

test('unsupported content type → hub-validation-error', async () => {
  const res = await t.app.inject({ method: 'POST', url: '/api/v1/auth/exchangeToken', headers: { authorization: `Bearer ${await t.jwt()}`, 'content-type': 'application/x-unknown' }, payload: 'x' });
  assertError(res, 'hub-validation-error', 400);
});

test('body over the limit → hub-payload-too-large, and no state change', async () => {
  const before = (await t.hub.stores.partners.list()).length;
  const res = await t.app.inject({
    method: 'POST', url: '/api/v1/admin/partners',
    headers: { authorization: `Bearer ${t.hub.adminKey}`, 'content-type': 'application/json' },
    payload: JSON.stringify({ issuer: 'https://big.example/', jwksUrl: 'https://big.example/jwks', name: 'x'.repeat(4000) }),
  });
  assertError(res, 'hub-payload-too-large', 413);
  assert.equal((await t.hub.stores.partners.list()).length, before);
});

test('healthz, readyz and metrics', async () => {
  assert.deepEqual((await t.app.inject({ url: '/healthz' })).json(), { status: 'ok' });
  const ready = await t.app.inject({ url: '/readyz' });
  assert.equal(ready.statusCode, 200);
  assert.equal(ready.json().checks.store, 'ok');
  await t.app.inject({ url: '/api/v1/auth/checkToken' });
  const metrics = await t.app.inject({ url: '/metrics' });
  assert.equal(metrics.statusCode, 200);
  assert.match(metrics.body, /damhub_http_requests_total\{method="GET",route="\/api\/v1\/auth\/checkToken",status="401"\} \d+/);
  assert.match(metrics.body, /damhub_http_request_duration_seconds_bucket/);
});

test('readyz answers 503 when the store is down', async () => {
  const t2 = await startTestHub();
  await t2.hub.stores.close();
  const res = await t2.app.inject({ url: '/readyz' });
  assert.equal(res.statusCode, 503);
  assert.match(res.json().checks.store, /^down/);
  await t2.app.close();
});

test('OpenAPI 3.1 document generated from the route schemas, and a reference page', async () => {
  const res = await t.app.inject({ url: '/api/v1/openapi.json' });
  assert.equal(res.statusCode, 200);
  const doc = res.json();
  assert.equal(doc.openapi, '3.1.0');
  for (const p of ['/api/v1/auth/exchangeToken', '/api/v1/auth/checkToken', '/api/v1/auth/refreshToken', '/api/v1/auth/logout', '/api/v1/auth/providers', '/api/v1/auth/login', '/api/v1/system/providerInfo', '/api/v1/admin/partners']) {
    assert.ok(doc.paths[p], `OpenAPI lists ${p}`);
  }
  assert.ok(doc.components.schemas.ErrorEnvelope);
  assert.ok(doc.components.securitySchemes.HubAuth);
  const page = await t.app.inject({ url: '/api/v1/docs/' });
  assert.equal(page.statusCode, 200);
  assert.match(String(page.headers['content-type']), /text\/html/);
});

test('CORS only for origins a partner registered', async () => {
  const ok = await t.app.inject({ method: 'OPTIONS', url: '/api/v1/auth/checkToken', headers: { origin: 'https://app.partner.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' } });
  assert.equal(ok.headers['access-control-allow-origin'], 'https://app.partner.example');
  const no = await t.app.inject({ method: 'OPTIONS', url: '/api/v1/auth/checkToken', headers: { origin: 'https://evil.example', 'access-control-request-method': 'GET' } });
  assert.equal(no.headers['access-control-allow-origin'], undefined);
});

test('CORS for the writes: a browser may send If-Match and Idempotency-Key, and read the ETag, the asset id and the replay flag', async () => {
  const res = await t.app.inject({ method: 'OPTIONS', url: '/api/v1/assets/update/x', headers: { origin: 'https://app.partner.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, provider-authorization, if-match, idempotency-key, content-type' } });
  assert.equal(res.statusCode, 204);
  const allowed = String(res.headers['access-control-allow-headers']).split(/,\s*/);
  for (const h of ['if-match', 'idempotency-key', 'provider-authorization', 'content-type']) assert.ok(allowed.includes(h), `${h} allowed: ${allowed.join(', ')}`);
  assert.match(String(res.headers['access-control-allow-methods']), /PATCH/);
  const get = await t.app.inject({ url: '/api/v1/auth/checkToken', headers: { origin: 'https://app.partner.example' } });
  const exposed = String(get.headers['access-control-expose-headers']).split(/,\s*/);
  for (const h of ['etag', 'damhub-asset-id', 'idempotent-replayed', 'location']) assert.ok(exposed.includes(h), `${h} exposed: ${exposed.join(', ')}`);
});

test('the admin API and /metrics grant no CORS to partner origins', async () => {
  const origin = 'https://app.partner.example'; // registered by an enabled partner: granted on /auth
  const preflight = (url: string, method = 'GET') => t.app.inject({ method: 'OPTIONS', url, headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization, content-type' } });
  assert.equal((await preflight('/api/v1/auth/checkToken')).headers['access-control-allow-origin'], origin);
  for (const [url, method] of [['/api/v1/admin/partners', 'POST'], ['/api/v1/admin/partners/p1', 'DELETE'], ['/api/v1/admin/partners?x=1', 'GET'], ['/api/v1/ADMIN/partners', 'GET'], ['/api/v1/%61dmin/partners', 'GET'], ['/metrics', 'GET']] as const) {
    const res = await preflight(url, method);
    assert.equal(res.headers['access-control-allow-origin'], undefined, `no grant on ${url}`);
    assert.equal(res.headers['access-control-allow-methods'], undefined, `no grant on ${url}`);
    assert.notEqual(res.statusCode, 204, `the preflight of ${url} is not answered as allowed`);
  }
  // The actual request, were a browser to send one, gets no grant to read the answer either.
  const res = await t.app.inject({ method: 'GET', url: '/api/v1/admin/partners', headers: { origin, authorization: `Bearer ${t.hub.adminKey}` } });
  assert.equal(res.headers['access-control-allow-origin'], undefined);
});

test('DAMHUB_METRICS_TOKEN: /metrics asks for the bearer token, compared in constant time', async () => {
  const t2 = await startTestHub({ config: { metricsToken: 'scrape-secret-1234' } });
  try {
    const none = assertError(await t2.app.inject({ url: '/metrics' }), 'hub-access-token-missing', 401);
    assert.match(none.error.details, /DAMHUB_METRICS_TOKEN/);
    for (const authorization of ['Bearer wrong', 'Bearer scrape-secret-123', 'Bearer scrape-secret-12345', `Bearer ${t2.hub.adminKey}`]) {
      assertError(await t2.app.inject({ url: '/metrics', headers: { authorization } }), 'hub-access-denied', 403);
    }
    const ok = await t2.app.inject({ url: '/metrics', headers: { authorization: 'Bearer scrape-secret-1234' } });
    assert.equal(ok.statusCode, 200);
    assert.match(ok.body, /damhub_http_requests_total/);
    assert.doesNotMatch(ok.body, /scrape-secret/);
    // Liveness and readiness stay open for the orchestrator.
    assert.equal((await t2.app.inject({ url: '/healthz' })).statusCode, 200);
    assert.equal((await t2.app.inject({ url: '/readyz' })).statusCode, 200);
  } finally {
    await t2.close();
  }
});

test('HTML pages carry CSP, frame-ancestors and nosniff', async () => {
  const res = await t.app.inject({ url: '/demo' });
  assert.equal(res.statusCode, 200);
  assert.match(String(res.headers['content-security-policy']), /frame-ancestors 'none'/);
  assert.match(String(res.headers['content-security-policy']), /script-src 'self'/);
  assert.equal(res.headers['x-content-type-options'], 'nosniff');
});

test('the demo partner signs JWTs the hub accepts', async () => {
  const { jwt } = (await t.app.inject({ method: 'POST', url: '/demo/partner-token' })).json();
  const res = await t.app.inject({ method: 'POST', url: '/api/v1/auth/exchangeToken', headers: { authorization: `Bearer ${jwt}` } });
  assert.equal(res.statusCode, 200, res.body);
});
