/**
 * @damhub/client's token manager against the real hub over loopback HTTP: exchange with the node
 * signer, checkToken, proactive refresh before expires_in (shared manual clock), reactive refresh
 * on hub-access-token-invalid, single flight under concurrent calls, fallback to a fresh exchange,
 * persistence hooks, logout; and the node signer and JWKS helpers themselves.
 */
import assert from 'node:assert/strict';
import { createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { DamhubError, memoryStorage, needsExchange } from '@damhub/client';
import { createPartnerSigner, generatePartnerKey, jwksHandler, publicJwk, publicJwks } from '@damhub/client/node';
import { startClientHarness, type ClientHarness } from '../helpers/client-harness.js';

let h: ClientHarness;

before(async () => {
  h = await startClientHarness();
});
after(async () => {
  await h?.close();
});

/** A fetch that records the paths it was asked for. */
function recordingFetch() {
  const calls: string[] = [];
  const f = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const u = new URL(String(input instanceof Request ? input.url : input));
    calls.push(`${init?.method ?? 'GET'} ${u.pathname.replace('/api/v1', '')}`);
    return fetch(input, init);
  }) as typeof fetch;
  return { calls, fetch: f, count: (p: string) => calls.filter((c) => c === p).length };
}

test('the first call exchanges a freshly signed partner JWT; checkToken answers the user', async () => {
  const rec = recordingFetch();
  const minted = h.minted;
  const c = h.client({ sub: 'alice', fetch: rec.fetch });
  const me = await c.checkToken();
  assert.equal(me.user.email, 'alice@example.com');
  assert.equal(me.user.name, 'User alice');
  assert.equal(me.source, 'damhub');
  assert.deepEqual(rec.calls, ['POST /auth/exchangeToken', 'GET /auth/checkToken']);
  assert.equal(h.minted, minted + 1);
  const tokens = c.tokens.current()!;
  assert.equal(tokens.expiresAt, h.t.clock.now() + 3600_000, 'expiresAt from expires_in on the client clock');
  assert.equal(me.expiresAt, tokens.expiresAt);
  // Two exchanges in the same second: each JWT has its own jti, so the hub's replay check passes.
  await c.exchange();
  await c.exchange();
  assert.equal(c.tokens.stats.exchanges, 3);
});

test('proactive refresh: shortly before expires_in the client rotates first, with no failed call', async () => {
  const rec = recordingFetch();
  const c = h.client({ sub: 'bob', fetch: rec.fetch, refreshMarginMs: 60_000 });
  await c.checkToken();
  const first = c.tokens.current()!;
  h.t.clock.advance(3600_000 - 61_000); // just outside the margin: still used as is
  await c.checkToken();
  assert.equal(c.tokens.current()!.accessToken, first.accessToken);
  h.t.clock.advance(2_000); // inside the margin
  await c.checkToken();
  const second = c.tokens.current()!;
  assert.notEqual(second.accessToken, first.accessToken);
  assert.notEqual(second.refreshToken, first.refreshToken, 'the refresh token rotates');
  assert.deepEqual(rec.calls, ['POST /auth/exchangeToken', 'GET /auth/checkToken', 'GET /auth/checkToken', 'GET /auth/refreshToken', 'GET /auth/checkToken']);
  assert.equal(c.tokens.stats.exchanges, 1);
});

test('reactive refresh: an access token the hub rejects is refreshed once and the call retried', async () => {
  const rec = recordingFetch();
  const c = h.client({ sub: 'carol', fetch: rec.fetch });
  await c.checkToken();
  // The client believes its token is good (a clock that is off, a token revoked by rotation elsewhere).
  c.tokens.set({ ...c.tokens.current()!, expiresAt: Number.MAX_SAFE_INTEGER });
  h.t.clock.advance(2 * 3600_000);
  const me = await c.checkToken();
  assert.equal(me.user.email, 'carol@example.com');
  assert.deepEqual(rec.calls.slice(2), ['GET /auth/checkToken', 'GET /auth/refreshToken', 'GET /auth/checkToken']);
  assert.equal(c.tokens.stats.exchanges, 1);
});

test('single flight: twenty concurrent calls with an expired token share one refresh', async () => {
  const rec = recordingFetch();
  const c = h.client({ sub: 'dave', fetch: rec.fetch });
  await c.checkToken();
  h.t.clock.advance(3600_000);
  const results = await Promise.all(Array.from({ length: 20 }, () => c.checkToken()));
  assert.ok(results.every((r) => r.user.email === 'dave@example.com'));
  assert.equal(rec.count('GET /auth/refreshToken'), 1);
  assert.equal(rec.count('POST /auth/exchangeToken'), 1);

  // The same when the hub is the one that says no: twenty 401s, still one refresh.
  c.tokens.set({ ...c.tokens.current()!, expiresAt: Number.MAX_SAFE_INTEGER });
  h.t.clock.advance(2 * 3600_000);
  const again = await Promise.all(Array.from({ length: 20 }, () => c.checkToken()));
  assert.equal(again.length, 20);
  assert.equal(rec.count('GET /auth/refreshToken'), 2);
  assert.equal(rec.count('GET /auth/checkToken'), 1 + 20 + 20 + 20);
  assert.equal(c.tokens.stats.exchanges, 1);
});

test('fallback: when the refresh fails (session revoked) the client exchanges a new partner JWT', async () => {
  const rec = recordingFetch();
  const c = h.client({ sub: 'erin', fetch: rec.fetch });
  await c.checkToken();
  const { accessToken } = c.tokens.current()!;
  // The session ends behind the client's back (another tab logged out).
  const out = await fetch(`${h.api}/auth/logout`, { headers: { authorization: `Bearer ${accessToken}` } });
  assert.equal(await out.text(), 'OK');
  const minted = h.minted;
  const me = await c.checkToken();
  assert.equal(me.user.email, 'erin@example.com');
  assert.deepEqual(rec.calls.slice(2), ['GET /auth/checkToken', 'GET /auth/refreshToken', 'POST /auth/exchangeToken', 'GET /auth/checkToken']);
  assert.equal(h.minted, minted + 1);
});

test('without getPartnerJwt a dead session surfaces as an error needsExchange() recognises', async () => {
  const seed = h.client({ sub: 'frank' });
  await seed.checkToken();
  const c = h.client({ sub: 'frank', getPartnerJwt: undefined, tokens: seed.tokens.current()! });
  await fetch(`${h.api}/auth/logout`, { headers: { authorization: `Bearer ${seed.tokens.current()!.accessToken}` } });
  await assert.rejects(c.checkToken(), (e: unknown) => {
    assert.ok(e instanceof DamhubError);
    assert.equal(e.code, 'provider-access-token-invalid');
    assert.equal(e.operation, 'hubRefresh');
    assert.equal(needsExchange(e), true);
    assert.equal(e.needsDamLogin(), false, 'a failed hub refresh is not a DAM problem');
    return true;
  });
  const none = h.client({ getPartnerJwt: undefined });
  await assert.rejects(none.checkToken(), (e: unknown) => e instanceof DamhubError && e.code === 'client-no-exchange' && needsExchange(e));
});

test('persistence: tokens are saved on every change and a new client resumes without exchanging', async () => {
  const storage = memoryStorage();
  const c = h.client({ sub: 'gina', storage });
  await c.checkToken();
  assert.equal(storage.value?.hub?.accessToken, c.tokens.current()!.accessToken);
  const minted = h.minted;
  const rec = recordingFetch();
  const resumed = h.client({ sub: 'gina', storage, fetch: rec.fetch });
  assert.equal((await resumed.checkToken()).user.email, 'gina@example.com');
  assert.deepEqual(rec.calls, ['GET /auth/checkToken']);
  assert.equal(h.minted, minted);
  h.t.clock.advance(3600_000);
  await resumed.checkToken();
  assert.equal(storage.value?.hub?.refreshToken, resumed.tokens.current()!.refreshToken, 'the rotated refresh token is saved');
  // A store that throws does not fail the call.
  const broken = h.client({ sub: 'gina', storage: { load: () => null, save: () => { throw new Error('quota'); } } });
  assert.equal((await broken.checkToken()).user.email, 'gina@example.com');
});

test('logout revokes the session at the hub and forgets the tokens; the next call exchanges again', async () => {
  const storage = memoryStorage();
  const c = h.client({ sub: 'hank', storage });
  await c.checkToken();
  const old = c.tokens.current()!;
  await c.logout();
  assert.equal(c.tokens.current(), null);
  assert.equal(storage.value?.hub, null);
  const refresh = await fetch(`${h.api}/auth/refreshToken`, { headers: { authorization: `Bearer ${old.accessToken}`, 'provider-authorization': `Bearer ${old.refreshToken}` } });
  assert.equal(refresh.status, 403, 'the refresh token family is revoked server-side');
  await c.checkToken();
  assert.equal(c.tokens.stats.exchanges, 2);

  // An access token that expired meanwhile is refreshed so the logout still revokes the session.
  h.t.clock.advance(2 * 3600_000);
  const stale = c.tokens.current()!;
  await c.logout();
  const after = await fetch(`${h.api}/auth/refreshToken`, { headers: { authorization: `Bearer ${stale.accessToken}`, 'provider-authorization': `Bearer ${stale.refreshToken}` } });
  assert.equal(after.status, 403);
  // Logging out of a session that is already gone is not an error.
  const gone = h.client({ sub: 'hank' });
  await gone.checkToken();
  await fetch(`${h.api}/auth/logout`, { headers: { authorization: `Bearer ${gone.tokens.current()!.accessToken}` } });
  await gone.logout();
  assert.equal(gone.tokens.current(), null);
});

test('abort: a call with an aborted signal rejects with the signal reason, a shared refresh still completes', async () => {
  const c = h.client({ sub: 'ivy' });
  await c.checkToken();
  const ac = new AbortController();
  ac.abort();
  await assert.rejects(c.checkToken({ signal: ac.signal }), (e: Error) => e.name === 'AbortError');
  h.t.clock.advance(3600_000);
  const ac2 = new AbortController();
  const aborted = c.checkToken({ signal: ac2.signal });
  const other = c.checkToken();
  ac2.abort();
  await assert.rejects(aborted, (e: Error) => e.name === 'AbortError');
  assert.equal((await other).user.email, 'ivy@example.com', 'the other caller gets the refreshed token');
});

test('node signer: RS256 with kid, iss/aud/sub/email, fresh iat and jti per call, verifiable with the published JWK', async () => {
  const key = generatePartnerKey();
  let now = Date.UTC(2026, 0, 1);
  const sign = createPartnerSigner({ privateKey: key.privateKeyPem, kid: key.kid, issuer: 'https://p.example/', audience: 'urn:x', ttlSec: 120, now: () => now });
  const a = await sign({ sub: 'u1', email: 'u1@example.com', name: 'U One', extra: { iss: 'evil', tenant: 't1' } });
  now += 5000;
  const b = await sign({ sub: 'u1' });
  const decode = (jwt: string) => jwt.split('.').slice(0, 2).map((p) => JSON.parse(Buffer.from(p, 'base64url').toString()));
  const [ha, pa] = decode(a);
  const [, pb] = decode(b);
  assert.deepEqual(ha, { alg: 'RS256', typ: 'JWT', kid: key.kid });
  assert.equal(pa.iss, 'https://p.example/', 'extra claims cannot override iss');
  assert.equal(pa.aud, 'urn:x');
  assert.equal(pa.sub, 'u1');
  assert.equal(pa.email, 'u1@example.com');
  assert.equal(pa.name, 'U One');
  assert.equal(pa.tenant, 't1');
  assert.equal(pa.iat, Date.UTC(2026, 0, 1) / 1000);
  assert.equal(pa.exp, pa.iat + 120);
  assert.equal(pb.iat, pa.iat + 5);
  assert.notEqual(pa.jti, pb.jti);
  assert.equal(pb.email, undefined);
  const [h64, p64, s64] = a.split('.');
  const pub = createPublicKey({ key: key.publicJwk, format: 'jwk' });
  assert.ok(verify('sha256', Buffer.from(`${h64}.${p64}`), pub, Buffer.from(s64!, 'base64url')));

  // The JWKS carries only public parts.
  const jwks = publicJwks([{ key: key.privateKeyPem, kid: key.kid }]);
  assert.deepEqual(Object.keys(jwks.keys[0]!).sort(), ['alg', 'e', 'kid', 'kty', 'n', 'use']);
  assert.deepEqual(publicJwk(pub, 'x').n, key.publicJwk.n);
  const server = http.createServer(jwksHandler([{ key: key.privateKeyPem, kid: key.kid }]));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`);
    assert.match(res.headers.get('cache-control')!, /max-age=600/);
    assert.deepEqual(await res.json(), jwks);
  } finally {
    server.close();
  }

  // Weak or non-RSA keys are refused up front.
  const small = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey;
  assert.throws(() => createPartnerSigner({ privateKey: small, kid: 'k', issuer: 'i' }), /at least 2048/);
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
  assert.throws(() => createPartnerSigner({ privateKey: ec, kid: 'k', issuer: 'i' }), /RSA/);
  await assert.rejects(sign({ sub: '' }), /sub is required/);
});

test('the hub accepts the signer\'s JWT only with the registered issuer and audience', async () => {
  const good = h.client({ sub: 'jack' });
  await good.exchange();
  const key = generatePartnerKey();
  const stranger = createPartnerSigner({ privateKey: key.privateKeyPem, kid: key.kid, issuer: 'https://unknown.example/', now: () => h.t.clock.now() });
  const c = h.client({ getPartnerJwt: () => stranger({ sub: 'x', email: 'x@example.com' }) });
  await assert.rejects(c.exchange(), (e: unknown) => e instanceof DamhubError && e.code === 'hub-sdk-partner-unknown' && e.status === 403 && e.kind === 'envelope');
});
