/**
 * /api/v1/admin/partners (SPEC.md section 4): the admin bearer key, create/list/get/patch/delete,
 * defaults, validation with details naming the field, and the secret files in the data dir.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { assertError, bearer, startTestHub, type TestHub } from '../helpers/hub.js';
import { makeKey, signPartnerJwt, type TestKey } from '../helpers/partner.js';

const PARTNERS = '/api/v1/admin/partners';

let t: TestHub;
let key: TestKey;

before(async () => {
  t = await startTestHub();
  key = await makeKey();
});
after(() => t.close());

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

function admin(method: Method, url: string, body?: unknown, authorization: string | null = bearer(t.hub.adminKey)): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = {};
  if (authorization !== null) headers.authorization = authorization;
  if (body === undefined) return t.app.inject({ method, url, headers });
  headers['content-type'] = 'application/json';
  return t.app.inject({ method, url, headers, payload: JSON.stringify(body) });
}

let counter = 0;
const uniqueIssuer = () => `https://admin-${++counter}.example/`;

async function create(body: Record<string, unknown>): Promise<Record<string, any>> {
  const res = await admin('POST', PARTNERS, body);
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}

function exchangeAs(issuer: string, k: TestKey = key) {
  return signPartnerJwt(t.clock.now(), { key: k, issuer }).then((jwt) =>
    t.app.inject({ method: 'POST', url: '/api/v1/auth/exchangeToken', headers: { authorization: bearer(jwt) } }));
}

test('no Authorization → hub-access-token-missing 401', async () => {
  for (const [method, url] of [['GET', PARTNERS], ['POST', PARTNERS], ['GET', `${PARTNERS}/p1`], ['PATCH', `${PARTNERS}/p1`], ['DELETE', `${PARTNERS}/p1`]] as const) {
    const res = await admin(method, url, method === 'POST' || method === 'PATCH' ? { enabled: false } : undefined, null);
    assertError(res, 'hub-access-token-missing', 401);
  }
  assert.equal((await t.hub.stores.partners.get('p1'))?.enabled, true, 'nothing changed');
});

test('a wrong admin key → hub-access-denied 403', async () => {
  for (const authorization of [bearer('wrong-key'), bearer(`${t.hub.adminKey}x`), bearer(t.hub.adminKey.slice(0, -1))]) {
    const body = assertError(await admin('GET', PARTNERS, undefined, authorization), 'hub-access-denied', 403);
    assert.match(body.error.details, /admin key/);
  }
  assertError(await admin('DELETE', `${PARTNERS}/p1`, undefined, bearer('wrong-key')), 'hub-access-denied', 403);
  assert.ok(await t.hub.stores.partners.get('p1'), 'nothing deleted');
});

test('an access token of a user is not an admin key', async () => {
  const { access_token } = await t.login();
  assertError(await admin('GET', PARTNERS, undefined, bearer(access_token)), 'hub-access-denied', 403);
});

test('create with inline jwks → 201 with the defaults', async () => {
  const issuer = uniqueIssuer();
  const p = await create({ issuer, jwks: { keys: [key.publicJwk] } });
  assert.equal(typeof p.id, 'string');
  assert.ok(p.id.length > 0);
  assert.equal(p.issuer, issuer);
  assert.equal(p.name, issuer);
  assert.equal(p.audience, 'urn:damhub');
  assert.equal(p.maxTokenAge, 3600);
  assert.equal(p.rateLimit, 60);
  assert.equal(p.enabled, true);
  assert.equal(p.writes, false, 'writes are off unless given');
  assert.deepEqual(p.allowedOrigins, []);
  assert.equal(p.jwksUrl, null);
  assert.deepEqual(p.jwks, { keys: [key.publicJwk] });
  assert.equal(p.createdAt, t.clock.now());
  assert.equal(p.updatedAt, t.clock.now());
  // The registration works for an exchange right away.
  assert.equal((await exchangeAs(issuer)).statusCode, 200);
});

test('create with jwksUrl and every field given', async () => {
  const issuer = uniqueIssuer();
  const p = await create({
    id: 'acme-1', name: 'Acme', issuer, audience: 'urn:acme', jwksUrl: 'https://acme.example/.well-known/jwks.json',
    maxTokenAge: 300, rateLimit: 10, allowedOrigins: ['https://app.acme.example', 'http://localhost:3000'], enabled: false, writes: true,
  });
  assert.deepEqual({ ...p, createdAt: 0, updatedAt: 0 }, {
    id: 'acme-1', name: 'Acme', issuer, audience: 'urn:acme', jwksUrl: 'https://acme.example/.well-known/jwks.json', jwks: null,
    maxTokenAge: 300, rateLimit: 10, allowedOrigins: ['https://app.acme.example', 'http://localhost:3000'], enabled: false, writes: true, createdAt: 0, updatedAt: 0,
  });
  assert.equal((await t.hub.stores.partners.get('acme-1'))!.writes, true, 'stored');
});

test('list and get', async () => {
  const issuer = uniqueIssuer();
  const created = await create({ issuer, jwks: { keys: [key.publicJwk] }, name: 'Listed' });
  const list = await admin('GET', PARTNERS);
  assert.equal(list.statusCode, 200);
  const partners = list.json() as Record<string, any>[];
  assert.ok(Array.isArray(partners));
  assert.ok(partners.some((p) => p.id === 'p1' && p.issuer === t.partner.issuer));
  assert.deepEqual(partners.find((p) => p.id === created.id), created);

  const one = await admin('GET', `${PARTNERS}/${created.id}`);
  assert.equal(one.statusCode, 200);
  assert.deepEqual(one.json(), created);
});

test('get an unknown id → hub-not-found 404', async () => {
  assertError(await admin('GET', `${PARTNERS}/nope`), 'hub-not-found', 404);
  assertError(await admin('PATCH', `${PARTNERS}/nope`, { enabled: false }), 'hub-not-found', 404);
  assertError(await admin('DELETE', `${PARTNERS}/nope`), 'hub-not-found', 404);
});

test('patch: disable → exchange fails with hub-sdk-partner-unknown; enable → works again', async () => {
  const issuer = uniqueIssuer();
  const p = await create({ issuer, jwks: { keys: [key.publicJwk] } });
  assert.equal((await exchangeAs(issuer)).statusCode, 200);

  t.clock.advance(1000);
  const res = await admin('PATCH', `${PARTNERS}/${p.id}`, { enabled: false });
  assert.equal(res.statusCode, 200, res.body);
  const patched = res.json();
  assert.equal(patched.enabled, false);
  assert.equal(patched.issuer, issuer, 'other fields are kept');
  assert.equal(patched.createdAt, p.createdAt);
  assert.equal(patched.updatedAt, t.clock.now());
  assertError(await exchangeAs(issuer), 'hub-sdk-partner-unknown', 403);

  assert.equal((await admin('PATCH', `${PARTNERS}/${p.id}`, { enabled: true })).statusCode, 200);
  assert.equal((await exchangeAs(issuer)).statusCode, 200);
});

test('patch writes: on and off, kept by other patches; not a boolean → hub-validation-error naming writes', async () => {
  const p = await create({ issuer: uniqueIssuer(), jwks: { keys: [key.publicJwk] } });
  t.clock.advance(1000);
  const on = await admin('PATCH', `${PARTNERS}/${p.id}`, { writes: true });
  assert.equal(on.statusCode, 200, on.body);
  assert.equal(on.json().writes, true);
  assert.equal(on.json().updatedAt, t.clock.now());
  assert.equal((await t.hub.stores.partners.get(p.id))!.writes, true);
  assert.equal((await admin('PATCH', `${PARTNERS}/${p.id}`, { rateLimit: 9 })).json().writes, true, 'another patch keeps it');
  assert.equal((await admin('GET', `${PARTNERS}/${p.id}`)).json().writes, true);
  assert.equal((await admin('GET', PARTNERS)).json().find((x: { id: string }) => x.id === p.id).writes, true);
  const off = await admin('PATCH', `${PARTNERS}/${p.id}`, { writes: false });
  assert.equal(off.json().writes, false);
  assert.equal((await t.hub.stores.partners.get(p.id))!.writes, false);
  for (const writes of ['yes', 'on', { on: true }]) {
    const body = assertError(await admin('PATCH', `${PARTNERS}/${p.id}`, { writes }), 'hub-validation-error', 400);
    assert.match(body.error.details, /writes/);
  }
  assert.equal((await t.hub.stores.partners.get(p.id))!.writes, false, 'unchanged');
});

test('patch other fields: audience, rateLimit, jwks', async () => {
  const issuer = uniqueIssuer();
  const p = await create({ issuer, jwks: { keys: [key.publicJwk] } });
  const res = await admin('PATCH', `${PARTNERS}/${p.id}`, { audience: 'urn:changed', rateLimit: 5 });
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json().audience, 'urn:changed');
  assert.equal(res.json().rateLimit, 5);
  assertError(await exchangeAs(issuer), 'hub-sdk-audience-invalid', 403);

  // Swapping the key: the old one stops working, the new one works.
  const next = await makeKey();
  const swapped = await admin('PATCH', `${PARTNERS}/${p.id}`, { audience: 'urn:damhub', jwks: { keys: [next.publicJwk] } });
  assert.equal(swapped.statusCode, 200, swapped.body);
  assertError(await exchangeAs(issuer), 'hub-sdk-token-invalid', 401);
  assert.equal((await exchangeAs(issuer, next)).statusCode, 200);

  // Switching to a URL clears the inline keys.
  const toUrl = await admin('PATCH', `${PARTNERS}/${p.id}`, { jwksUrl: 'https://keys.example/jwks.json' });
  assert.equal(toUrl.json().jwksUrl, 'https://keys.example/jwks.json');
  assert.equal(toUrl.json().jwks, null);
});

test('patch cannot change the id; patch onto a taken issuer → hub-validation-error', async () => {
  const a = await create({ issuer: uniqueIssuer(), jwks: { keys: [key.publicJwk] } });
  const b = await create({ issuer: uniqueIssuer(), jwks: { keys: [key.publicJwk] } });
  const idChange = assertError(await admin('PATCH', `${PARTNERS}/${a.id}`, { id: 'other-id' }), 'hub-validation-error', 400);
  assert.match(idChange.error.details, /id/);
  const taken = assertError(await admin('PATCH', `${PARTNERS}/${a.id}`, { issuer: b.issuer }), 'hub-validation-error', 400);
  assert.match(taken.error.details, /issuer/);
  assert.equal((await t.hub.stores.partners.get(a.id))?.issuer, a.issuer);
});

test('delete → 204, then get → hub-not-found; its users lose access', async () => {
  const issuer = uniqueIssuer();
  const p = await create({ issuer, jwks: { keys: [key.publicJwk] } });
  const login = await exchangeAs(issuer);
  assert.equal(login.statusCode, 200);
  const access = login.json().access_token as string;

  const del = await admin('DELETE', `${PARTNERS}/${p.id}`);
  assert.equal(del.statusCode, 204);
  assert.equal(del.body, '');
  const gone = assertError(await admin('GET', `${PARTNERS}/${p.id}`), 'hub-not-found', 404);
  assert.match(gone.error.details, new RegExp(p.id));
  assertError(await admin('DELETE', `${PARTNERS}/${p.id}`), 'hub-not-found', 404);
  assert.ok(!(await admin('GET', PARTNERS)).json().some((x: { id: string }) => x.id === p.id));

  const check = await t.app.inject({ method: 'GET', url: '/api/v1/auth/checkToken', headers: { authorization: bearer(access) } });
  assertError(check, 'hub-access-token-invalid', 401);
  assertError(await exchangeAs(issuer), 'hub-sdk-partner-unknown', 403);
});

test('duplicate issuer → hub-validation-error 400', async () => {
  const issuer = uniqueIssuer();
  await create({ issuer, jwks: { keys: [key.publicJwk] } });
  const body = assertError(await admin('POST', PARTNERS, { issuer, jwksUrl: 'https://x.example/jwks' }), 'hub-validation-error', 400);
  assert.match(body.error.details, /issuer/);
  // A trailing slash makes it another issuer.
  await create({ issuer: issuer.replace(/\/$/, ''), jwks: { keys: [key.publicJwk] } });
});

test('duplicate id → hub-validation-error 400', async () => {
  await create({ id: 'dup-id', issuer: uniqueIssuer(), jwks: { keys: [key.publicJwk] } });
  assertError(await admin('POST', PARTNERS, { id: 'dup-id', issuer: uniqueIssuer(), jwks: { keys: [key.publicJwk] } }), 'hub-validation-error', 400);
});

/** Posts an invalid registration and asserts a validation error whose details name `field`; nothing is stored. */
async function rejects(body: Record<string, unknown>, field: RegExp, method: Method = 'POST', url = PARTNERS) {
  const before = (await t.hub.stores.partners.list()).length;
  const res = await admin(method, url, body);
  const env = assertError(res, 'hub-validation-error', 400);
  assert.match(env.error.details, field, `details should name the field: ${env.error.details}`);
  assert.equal((await t.hub.stores.partners.list()).length, before);
}

test('missing issuer or keys → hub-validation-error naming them', async () => {
  await rejects({ jwks: { keys: [key.publicJwk] } }, /issuer/);
  await rejects({ issuer: uniqueIssuer() }, /jwks/);
  await rejects({ issuer: '', jwks: { keys: [key.publicJwk] } }, /issuer/);
  await rejects({ issuer: '   ', jwks: { keys: [key.publicJwk] } }, /issuer/);
});

test('invalid jwksUrl → hub-validation-error naming jwksUrl', async () => {
  await rejects({ issuer: uniqueIssuer(), jwksUrl: 'not a url' }, /jwksUrl/);
  await rejects({ issuer: uniqueIssuer(), jwksUrl: 'ftp://keys.example/jwks.json' }, /jwksUrl/);
  await rejects({ issuer: uniqueIssuer(), jwksUrl: '/relative/jwks.json' }, /jwksUrl/);
  await rejects({ issuer: uniqueIssuer(), jwksUrl: 42 }, /jwksUrl/);
});

test('invalid jwks → hub-validation-error naming jwks', async () => {
  await rejects({ issuer: uniqueIssuer(), jwks: { nokeys: [] } }, /jwks/);
  await rejects({ issuer: uniqueIssuer(), jwks: { keys: 'x' } }, /jwks/);
  await rejects({ issuer: uniqueIssuer(), jwks: { keys: ['x'] } }, /jwks/);
  await rejects({ issuer: uniqueIssuer(), jwks: [key.publicJwk] }, /jwks/);
});

test('bad allowedOrigins → hub-validation-error naming allowedOrigins', async () => {
  for (const origin of ['https://app.example.com/', 'https://app.example.com/path', 'app.example.com', '*', 'https://app.example.com:443']) {
    await rejects({ issuer: uniqueIssuer(), jwks: { keys: [key.publicJwk] }, allowedOrigins: [origin] }, /allowedOrigins/);
  }
  await rejects({ issuer: uniqueIssuer(), jwks: { keys: [key.publicJwk] }, allowedOrigins: [42] }, /allowedOrigins/);
});

test('unknown field → hub-validation-error naming the field', async () => {
  await rejects({ issuer: uniqueIssuer(), jwks: { keys: [key.publicJwk] }, colour: 'blue' }, /colour/);
  await rejects({ issuer: uniqueIssuer(), jwks: { keys: [key.publicJwk] }, max_token_age: 10 }, /max_token_age/);
});

test('maxTokenAge and rateLimit out of range → hub-validation-error naming them', async () => {
  for (const maxTokenAge of [0, -1, 86_401, 1.5, 'soon']) await rejects({ issuer: uniqueIssuer(), jwks: { keys: [key.publicJwk] }, maxTokenAge }, /maxTokenAge/);
  for (const rateLimit of [0, -5, 1_000_001]) await rejects({ issuer: uniqueIssuer(), jwks: { keys: [key.publicJwk] }, rateLimit }, /rateLimit/);
  // The bounds themselves are accepted.
  const p = await create({ issuer: uniqueIssuer(), jwks: { keys: [key.publicJwk] }, maxTokenAge: 1, rateLimit: 1 });
  assert.equal(p.maxTokenAge, 1);
  await rejects({ maxTokenAge: 0 }, /maxTokenAge/, 'PATCH', `${PARTNERS}/${p.id}`);
  assert.equal((await t.hub.stores.partners.get(p.id))?.maxTokenAgeSec, 1, 'a rejected patch changes nothing');
});

test('an id with unsupported characters → hub-validation-error naming id', async () => {
  await rejects({ id: 'has space', issuer: uniqueIssuer(), jwks: { keys: [key.publicJwk] } }, /\bid\b/);
  await rejects({ id: 'slash/inside', issuer: uniqueIssuer(), jwks: { keys: [key.publicJwk] } }, /\bid\b/);
});

test('a body that is not JSON → hub-validation-error', async () => {
  const res = await t.app.inject({ method: 'POST', url: PARTNERS, headers: { authorization: bearer(t.hub.adminKey), 'content-type': 'application/json' }, payload: '{issuer:' });
  assertError(res, 'hub-validation-error', 400);
});

test('the admin key and the token keys live in the data dir with mode 0600', () => {
  const adminFile = path.join(t.dataDir, 'admin.key');
  const keysFile = path.join(t.dataDir, 'keys.json');
  assert.ok(fs.existsSync(adminFile));
  assert.ok(fs.existsSync(keysFile));
  if (process.platform !== 'win32') {
    assert.equal(fs.statSync(adminFile).mode & 0o777, 0o600);
    assert.equal(fs.statSync(keysFile).mode & 0o777, 0o600);
    assert.equal(fs.statSync(t.dataDir).mode & 0o077, 0, 'the data dir is not readable by others');
  }
  assert.equal(fs.readFileSync(adminFile, 'utf8').trim(), t.hub.adminKey);
  assert.ok(t.hub.adminKey.length >= 32, 'a generated admin key is long');
  const keys = JSON.parse(fs.readFileSync(keysFile, 'utf8')) as { kid: string; use: string }[];
  assert.deepEqual(keys.map((k) => k.use).sort(), ['enc', 'sig']);
});

test('a configured admin key is used instead of a generated one', async () => {
  const t2 = await startTestHub({ config: { adminKey: 'configured-admin-key-0123456789' } });
  try {
    assert.equal(t2.hub.adminKey, 'configured-admin-key-0123456789');
    const ok = await t2.app.inject({ method: 'GET', url: PARTNERS, headers: { authorization: bearer('configured-admin-key-0123456789') } });
    assert.equal(ok.statusCode, 200);
    assert.ok(!fs.existsSync(path.join(t2.dataDir, 'admin.key')));
  } finally {
    await t2.close();
  }
});

test('the generated admin key survives a restart', async () => {
  const first = await startTestHub();
  const dataDir = first.dataDir;
  const adminKey = first.hub.adminKey;
  await first.close();
  const second = await startTestHub({ dataDir });
  try {
    assert.equal(second.hub.adminKey, adminKey);
  } finally {
    await second.close();
  }
});
