/**
 * Hub sessions (SPEC.md sections 2, 3 and 5; seed "Authentication"): GET /auth/checkToken,
 * GET /auth/refreshToken with hub refresh tokens (rotation, the grace window for concurrent
 * refreshes, reuse detection revoking the family, 30-day lifetime), GET /auth/logout, sessions
 * surviving a restart, removed users and disabled partners, and x-request-id handling.
 * Time moves through the ManualClock only.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { decodeJwt } from 'jose';
import { assertError, bearer, startTestHub, type TestHub } from '../helpers/hub.js';
import { signPartnerJwt } from '../helpers/partner.js';
import { respellings } from '../helpers/respell.js';
import { StoreUnavailableError } from '../../src/stores/types.js';

const CHECK = '/api/v1/auth/checkToken';
const REFRESH = '/api/v1/auth/refreshToken';
const LOGOUT = '/api/v1/auth/logout';
const EXCHANGE = '/api/v1/auth/exchangeToken';

const SECOND = 1000;
const HOUR = 3600 * SECOND;
const DAY = 24 * HOUR;

interface Pair {
  access_token: string;
  refresh_token: string;
  expires_in: number;
}

function checkToken(t: TestHub, access: string | null, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return t.app.inject({ method: 'GET', url: CHECK, headers: access === null ? headers : { ...headers, authorization: bearer(access) } });
}

async function checkOk(t: TestHub, access: string): Promise<Record<string, any>> {
  const res = await checkToken(t, access);
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

function refresh(t: TestHub, access: string | null, refreshToken: string | null): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = {};
  if (access !== null) headers.authorization = bearer(access);
  if (refreshToken !== null) headers['provider-authorization'] = bearer(refreshToken);
  return t.app.inject({ method: 'GET', url: REFRESH, headers });
}

async function refreshOk(t: TestHub, access: string, refreshToken: string): Promise<Pair> {
  const res = await refresh(t, access, refreshToken);
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json();
  assert.equal(typeof body.access_token, 'string');
  assert.equal(typeof body.refresh_token, 'string');
  assert.equal(body.expires_in, 3600);
  assert.equal(body.token_type, 'Bearer');
  assert.equal(res.headers['cache-control'], 'no-store');
  return body;
}

/** Changes one character in the middle of the signature (a middle base64url character carries 6 full bits). */
function tamperSignature(token: string): string {
  const parts = token.split('.');
  const sig = parts[2]!;
  const i = Math.floor(sig.length / 2);
  parts[2] = sig.slice(0, i) + (sig[i] === 'A' ? 'B' : 'A') + sig.slice(i + 1);
  return parts.join('.');
}

const jti = (token: string) => decodeJwt(token).jti;

describe('GET /auth/checkToken', () => {
  let t: TestHub;
  before(async () => {
    t = await startTestHub();
  });
  after(() => t.close());

  test('answers adapter, source, user, account and userHash', async () => {
    const pair = await t.login({ sub: 'ada', email: 'ada@example.com', extra: { name: 'Ada Lovelace', given_name: 'Ada', family_name: 'Lovelace' } });
    const res = await checkToken(t, pair.access_token);
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.equal(body.adapter, 'p1');
    assert.equal(body.source, 'damhub');
    assert.equal(typeof body.user.id, 'string');
    assert.ok(body.user.id.length > 0);
    assert.equal(body.user.name, 'Ada Lovelace');
    assert.equal(body.user.email, 'ada@example.com');
    assert.deepEqual(body.account, { id: 'p1', name: 'Partner One', issuer: 'https://partner.example/' });
    assert.equal(typeof body.userHash, 'string');
    assert.ok(body.userHash.length >= 16);
    assert.ok(!body.userHash.includes('ada'), 'userHash is opaque');
    assert.equal(body.expiresAt, t.clock.now() + HOUR);
  });

  test('user.name falls back to the email when the JWT names nobody', async () => {
    const pair = await t.login({ sub: 'nameless', email: 'nameless@example.com' });
    const body = await checkOk(t, pair.access_token);
    assert.equal(body.user.name, 'nameless@example.com');
  });

  test('userHash and user id are stable across exchanges of the same sub and differ for another sub', async () => {
    const a1 = await checkOk(t, (await t.login({ sub: 'stable-a' })).access_token);
    const a2 = await checkOk(t, (await t.login({ sub: 'stable-a' })).access_token);
    const b = await checkOk(t, (await t.login({ sub: 'stable-b' })).access_token);
    assert.equal(a1.userHash, a2.userHash);
    assert.equal(a1.user.id, a2.user.id);
    assert.notEqual(a1.userHash, b.userHash);
    assert.notEqual(a1.user.id, b.user.id);
  });

  test('no Authorization → hub-access-token-missing 401', async () => {
    assertError(await checkToken(t, null), 'hub-access-token-missing', 401);
    assertError(await checkToken(t, null, { authorization: 'Basic dXNlcjpwYXNz' }), 'hub-access-token-missing', 401);
    assertError(await checkToken(t, null, { authorization: 'Bearer' }), 'hub-access-token-missing', 401);
  });

  test('garbage → hub-access-token-invalid 401', async () => {
    for (const garbage of ['garbage', 'a.b.c', 'eyJhbGciOiJIUzI1NiJ9.e30.', 'x'.repeat(2000)]) {
      assertError(await checkToken(t, garbage), 'hub-access-token-invalid', 401);
    }
  });

  test('tampered signature → hub-access-token-invalid', async () => {
    const { access_token } = await t.login();
    assertError(await checkToken(t, tamperSignature(access_token)), 'hub-access-token-invalid', 401);
    // A payload swapped under the original signature does not verify either.
    const [h, , s] = access_token.split('.');
    const forged = `${h}.${Buffer.from(JSON.stringify({ ...decodeJwt(access_token), sub: 'someone-else' })).toString('base64url')}.${s}`;
    assertError(await checkToken(t, forged), 'hub-access-token-invalid', 401);
    await checkOk(t, access_token);
  });

  test('a re-spelt access token (padding or a flipped unused bit in any part) → hub-access-token-invalid, and no spelling outlives a logout', async () => {
    const { access_token } = await t.login({ sub: 'respelt-access' });
    const variants = respellings(access_token);
    assert.ok(variants.some((v) => v.what.startsWith('part 2')), 'the HMAC signature (43 characters) has unused bits');
    await checkOk(t, access_token); // now in the principal cache
    for (const v of variants) {
      const body = assertError(await checkToken(t, v.token), 'hub-access-token-invalid', 401);
      assert.match(body.error.details, /malformed/, v.what);
    }
    assert.equal((await t.app.inject({ method: 'GET', url: LOGOUT, headers: { authorization: bearer(access_token) } })).statusCode, 200);
    for (const token of [access_token, ...variants.map((v) => v.token)]) assertError(await checkToken(t, token), 'hub-access-token-invalid', 401);
  });

  test('a re-spelt refresh token is refused and rotates nothing; the canonical one still refreshes', async () => {
    const pair = await t.login({ sub: 'respelt-refresh' });
    for (const v of respellings(pair.refresh_token)) {
      const res = await refresh(t, pair.access_token, v.token);
      assert.equal(res.statusCode, 403, `${v.what}: ${res.body}`);
      assert.equal(res.json().errorCode, 'provider-access-token-invalid');
    }
    const next = await refreshOk(t, pair.access_token, pair.refresh_token);
    await checkOk(t, next.access_token);
  });

  test('a refresh token (or a partner JWT) used as access token → hub-access-token-invalid', async () => {
    const { refresh_token } = await t.login();
    const body = assertError(await checkToken(t, refresh_token), 'hub-access-token-invalid', 401);
    assert.match(body.error.details, /access token/);
    assertError(await checkToken(t, await t.jwt()), 'hub-access-token-invalid', 401);
  });

  test('expires after 1 hour', async () => {
    const tt = await startTestHub();
    try {
      const { access_token, expires_in } = await tt.login();
      assert.equal(expires_in, 3600);
      tt.clock.advance(HOUR - 1000);
      await checkOk(tt, access_token);
      tt.clock.advance(1001);
      const body = assertError(await checkToken(tt, access_token), 'hub-access-token-invalid', 401);
      assert.match(body.error.details, /expired/);
    } finally {
      await tt.close();
    }
  });
});

describe('GET /auth/refreshToken with a hub refresh token', () => {
  let t: TestHub;
  before(async () => {
    t = await startTestHub();
  });
  after(() => t.close());

  test('returns a new pair; the new refresh token differs and both new tokens work', async () => {
    const first = await t.login({ sub: 'r-basic' });
    const next = await refreshOk(t, first.access_token, first.refresh_token);
    assert.notEqual(next.refresh_token, first.refresh_token);
    assert.notEqual(jti(next.refresh_token), jti(first.refresh_token));
    assert.notEqual(next.access_token, first.access_token);
    const before = await checkOk(t, first.access_token);
    const now = await checkOk(t, next.access_token);
    assert.equal(now.user.id, before.user.id);
    // The rotated refresh token in turn rotates.
    const third = await refreshOk(t, next.access_token, next.refresh_token);
    assert.notEqual(jti(third.refresh_token), jti(next.refresh_token));
  });

  test('missing provider-authorization → provider-access-token-missing 403', async () => {
    const { access_token } = await t.login({ sub: 'r-missing' });
    assertError(await refresh(t, access_token, null), 'provider-access-token-missing', 403);
  });

  test('missing Authorization → hub-access-token-missing 401', async () => {
    const { refresh_token } = await t.login({ sub: 'r-missing' });
    assertError(await refresh(t, null, refresh_token), 'hub-access-token-missing', 401);
  });

  test('an access token that does not verify → hub-access-token-invalid 401', async () => {
    const { access_token, refresh_token } = await t.login({ sub: 'r-bad-access' });
    assertError(await refresh(t, 'garbage', refresh_token), 'hub-access-token-invalid', 401);
    assertError(await refresh(t, tamperSignature(access_token), refresh_token), 'hub-access-token-invalid', 401);
    // The refresh token in Authorization is not an access token either.
    assertError(await refresh(t, refresh_token, refresh_token), 'hub-access-token-invalid', 401);
  });

  test('an access token in provider-authorization → hub-refresh-token-invalid 401', async () => {
    const { access_token, refresh_token } = await t.login({ sub: 'r-wrong-type' });
    const body = assertError(await refresh(t, access_token, access_token), 'hub-refresh-token-invalid', 401);
    assert.match(body.error.details, /refresh token/);
    // Nothing was revoked by the mistake.
    await refreshOk(t, access_token, refresh_token);
  });

  test('a tampered refresh token → provider-access-token-invalid 403', async () => {
    const { access_token, refresh_token } = await t.login({ sub: 'r-tampered' });
    assertError(await refresh(t, access_token, tamperSignature(refresh_token)), 'provider-access-token-invalid', 403);
    assertError(await refresh(t, access_token, 'garbage'), 'provider-access-token-invalid', 403);
    await refreshOk(t, access_token, refresh_token);
  });

  test("user B's refresh token with user A's access token → hub-refresh-token-invalid, and B's session survives", async () => {
    const a = await t.login({ sub: 'r-user-a', email: 'a@example.com' });
    const b = await t.login({ sub: 'r-user-b', email: 'b@example.com' });
    const body = assertError(await refresh(t, a.access_token, b.refresh_token), 'hub-refresh-token-invalid', 401);
    assert.match(body.error.details, /another user/);
    await refreshOk(t, b.access_token, b.refresh_token);
    await refreshOk(t, a.access_token, a.refresh_token);
  });

  test('a store outage while the user is read → 503 hub-unavailable, and the refresh token still works afterwards', async () => {
    // Found by the cluster fault test: the user/partner lookup's errors were all mapped to
    // "session ended" (403), so a PostgreSQL hiccup told a client to throw its session away.
    const { access_token, refresh_token } = await t.login({ sub: 'r-outage' });
    const users = t.hub.stores.users;
    const get = users.get.bind(users);
    users.get = async () => {
      throw new StoreUnavailableError('postgres', new Error('connection terminated'));
    };
    try {
      assertError(await refresh(t, access_token, refresh_token), 'hub-unavailable', 503);
    } finally {
      users.get = get;
    }
    await refreshOk(t, access_token, refresh_token);
  });
});

describe('refresh-token lifetime, grace window and reuse detection', () => {
  let t: TestHub;
  before(async () => {
    t = await startTestHub();
  });
  after(() => t.close());

  test('the access token may have expired (2 h later) and refresh still works', async () => {
    const first = await t.login({ sub: 'life-expired-access' });
    t.clock.advance(2 * HOUR);
    assertError(await checkToken(t, first.access_token), 'hub-access-token-invalid', 401);
    const next = await refreshOk(t, first.access_token, first.refresh_token);
    await checkOk(t, next.access_token);
  });

  test('the rotated-out token reused within the 60 s grace window works and answers the current refresh token', async () => {
    const r0 = await t.login({ sub: 'grace' });
    const r1 = await refreshOk(t, r0.access_token, r0.refresh_token);
    t.clock.advance(30 * SECOND);
    const again = await refreshOk(t, r0.access_token, r0.refresh_token);
    assert.equal(jti(again.refresh_token), jti(r1.refresh_token), 'the grace answer carries the current refresh token');
    await checkOk(t, again.access_token);
    t.clock.advance(30 * SECOND); // exactly 60 s after the rotation: still inside the window
    const last = await refreshOk(t, r0.access_token, r0.refresh_token);
    assert.equal(jti(last.refresh_token), jti(r1.refresh_token));
    // The current token still rotates normally afterwards.
    const r2 = await refreshOk(t, r1.access_token, r1.refresh_token);
    assert.notEqual(jti(r2.refresh_token), jti(r1.refresh_token));
    await checkOk(t, r2.access_token);
  });

  test('two concurrent refreshes with the same token both succeed and converge on one refresh token', async () => {
    const r0 = await t.login({ sub: 'concurrent' });
    const [x, y] = await Promise.all([refresh(t, r0.access_token, r0.refresh_token), refresh(t, r0.access_token, r0.refresh_token)]);
    assert.equal(x!.statusCode, 200, x!.body);
    assert.equal(y!.statusCode, 200, y!.body);
    const rx = x!.json().refresh_token as string;
    const ry = y!.json().refresh_token as string;
    assert.equal(jti(rx), jti(ry));
    assert.notEqual(jti(rx), jti(r0.refresh_token));
    await refreshOk(t, x!.json().access_token, rx);
  });

  test('reuse after the window → 403 provider-access-token-invalid and the whole family is revoked', async () => {
    const r0 = await t.login({ sub: 'reuse' });
    const other = await t.login({ sub: 'reuse' }); // another session of the same user
    const r1 = await refreshOk(t, r0.access_token, r0.refresh_token);
    await checkOk(t, r1.access_token);
    t.clock.advance(61 * SECOND);
    const body = assertError(await refresh(t, r1.access_token, r0.refresh_token), 'provider-access-token-invalid', 403);
    assert.match(body.error.details, /already used/);
    // The newest refresh token and every access token of the family stop working.
    assertError(await refresh(t, r1.access_token, r1.refresh_token), 'provider-access-token-invalid', 403);
    assertError(await checkToken(t, r1.access_token), 'hub-access-token-invalid', 401);
    assertError(await checkToken(t, r0.access_token), 'hub-access-token-invalid', 401);
    // Only that family: the user's other session lives on.
    await checkOk(t, other.access_token);
    await refreshOk(t, other.access_token, other.refresh_token);
  });

  test('a token two rotations old is reuse even inside the window', async () => {
    const r0 = await t.login({ sub: 'reuse-old' });
    const r1 = await refreshOk(t, r0.access_token, r0.refresh_token);
    const r2 = await refreshOk(t, r1.access_token, r1.refresh_token);
    assertError(await refresh(t, r2.access_token, r0.refresh_token), 'provider-access-token-invalid', 403);
    assertError(await refresh(t, r2.access_token, r2.refresh_token), 'provider-access-token-invalid', 403);
    assertError(await checkToken(t, r2.access_token), 'hub-access-token-invalid', 401);
  });

  test('a refresh token older than 30 days → provider-access-token-invalid 403', async () => {
    const tt = await startTestHub();
    try {
      const first = await tt.login();
      tt.clock.advance(30 * DAY + SECOND);
      const body = assertError(await refresh(tt, first.access_token, first.refresh_token), 'provider-access-token-invalid', 403);
      assert.match(body.error.details, /expired/);
    } finally {
      await tt.close();
    }
  });

  test('the 30 days slide with every refresh', async () => {
    const tt = await startTestHub();
    try {
      const first = await tt.login();
      tt.clock.advance(29 * DAY);
      const second = await refreshOk(tt, first.access_token, first.refresh_token);
      tt.clock.advance(29 * DAY);
      const third = await refreshOk(tt, second.access_token, second.refresh_token);
      await checkOk(tt, third.access_token);
      tt.clock.advance(30 * DAY + SECOND);
      assertError(await refresh(tt, third.access_token, third.refresh_token), 'provider-access-token-invalid', 403);
    } finally {
      await tt.close();
    }
  });
});

describe('GET /auth/logout', () => {
  let t: TestHub;
  before(async () => {
    t = await startTestHub();
  });
  after(() => t.close());

  test('answers OK; afterwards the access token is invalid and the refresh token is revoked', async () => {
    const pair = await t.login({ sub: 'bye' });
    const other = await t.login({ sub: 'bye' });
    await checkOk(t, pair.access_token);
    const res = await t.app.inject({ method: 'GET', url: LOGOUT, headers: { authorization: bearer(pair.access_token) } });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.body, 'OK');
    assert.match(String(res.headers['content-type']), /^text\/plain/);
    assertError(await checkToken(t, pair.access_token), 'hub-access-token-invalid', 401);
    assertError(await refresh(t, pair.access_token, pair.refresh_token), 'provider-access-token-invalid', 403);
    // A second logout with the dead token is refused like any other call.
    assertError(await t.app.inject({ method: 'GET', url: LOGOUT, headers: { authorization: bearer(pair.access_token) } }), 'hub-access-token-invalid', 401);
    // Logout ends this session only.
    await checkOk(t, other.access_token);
  });

  test('without Authorization → hub-access-token-missing', async () => {
    assertError(await t.app.inject({ method: 'GET', url: LOGOUT }), 'hub-access-token-missing', 401);
  });
});

describe('sessions survive a restart', () => {
  test('tokens issued before the restart work after it on the same data dir', async () => {
    const t1 = await startTestHub();
    const pair = await t1.login({ sub: 'persistent' });
    const before = await checkOk(t1, pair.access_token);
    await t1.close();

    const t2 = await startTestHub({ dataDir: t1.dataDir, clock: t1.clock });
    try {
      assert.equal(t2.partner.id, t1.partner.id, 'the partner registered before the restart is reused');
      const after = await checkOk(t2, pair.access_token);
      assert.equal(after.user.id, before.user.id);
      assert.equal(after.userHash, before.userHash, 'userHash is stable across restarts');
      t2.clock.advance(10 * SECOND);
      const next = await refreshOk(t2, pair.access_token, pair.refresh_token);
      await checkOk(t2, next.access_token);
      // The partner's first key is still the registered one.
      const jwt = await signPartnerJwt(t2.clock.now(), { key: t1.key, issuer: t1.partner.issuer, sub: 'persistent' });
      const res = await t2.app.inject({ method: 'POST', url: EXCHANGE, headers: { authorization: bearer(jwt) } });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal((await checkOk(t2, res.json().access_token)).user.id, before.user.id);
    } finally {
      await t2.close();
    }
  });

  test('a rotated-out refresh token is still detected as reuse after a restart', async () => {
    const t1 = await startTestHub();
    const r0 = await t1.login({ sub: 'persistent-reuse' });
    const r1 = await refreshOk(t1, r0.access_token, r0.refresh_token);
    await t1.close();
    const t2 = await startTestHub({ dataDir: t1.dataDir, clock: t1.clock });
    try {
      t2.clock.advance(2 * 60 * SECOND);
      assertError(await refresh(t2, r1.access_token, r0.refresh_token), 'provider-access-token-invalid', 403);
      assertError(await refresh(t2, r1.access_token, r1.refresh_token), 'provider-access-token-invalid', 403);
    } finally {
      await t2.close();
    }
  });
});

describe('removed users and disabled partners', () => {
  test('a removed user → hub-access-token-invalid, and refresh fails', async () => {
    const t = await startTestHub();
    try {
      const pair = await t.login({ sub: 'doomed' });
      const { user } = await checkOk(t, pair.access_token); // now in the principal cache
      assert.equal(await t.hub.stores.users.remove(user.id), true);
      assertError(await checkToken(t, pair.access_token), 'hub-access-token-invalid', 401);
      assertError(await refresh(t, pair.access_token, pair.refresh_token), 'provider-access-token-invalid', 403);
    } finally {
      await t.close();
    }
  });

  test('a disabled partner → hub-access-token-invalid for its users', async () => {
    const t = await startTestHub();
    try {
      const pair = await t.login({ sub: 'partner-off' });
      await checkOk(t, pair.access_token);
      await t.hub.stores.partners.update(t.partner.id, { enabled: false }, t.clock.now());
      const body = assertError(await checkToken(t, pair.access_token), 'hub-access-token-invalid', 401);
      assert.match(body.error.details, /partner/);
      assertError(await refresh(t, pair.access_token, pair.refresh_token), 'provider-access-token-invalid', 403);
    } finally {
      await t.close();
    }
  });

  test('a removed partner → hub-access-token-invalid for its users', async () => {
    const t = await startTestHub();
    try {
      const pair = await t.login({ sub: 'partner-gone' });
      await checkOk(t, pair.access_token);
      assert.equal(await t.hub.stores.partners.remove(t.partner.id), true);
      assertError(await checkToken(t, pair.access_token), 'hub-access-token-invalid', 401);
    } finally {
      await t.close();
    }
  });
});

describe('x-request-id', () => {
  let t: TestHub;
  before(async () => {
    t = await startTestHub();
  });
  after(() => t.close());

  test('a sane incoming id is echoed in the header, error.requestId and details', async () => {
    const id = 'req-42.abc:def@node_1';
    const res = await checkToken(t, null, { 'x-request-id': id });
    assert.equal(res.headers['x-request-id'], id);
    const body = assertError(res, 'hub-access-token-missing', 401);
    assert.equal(body.error.requestId, id);
    assert.ok(body.error.details.includes(id), body.error.details);

    const ok = await checkToken(t, (await t.login()).access_token, { 'x-request-id': 'ok-123' });
    assert.equal(ok.statusCode, 200);
    assert.equal(ok.headers['x-request-id'], 'ok-123');
    const longest = 'y'.repeat(128);
    assert.equal((await checkToken(t, null, { 'x-request-id': longest })).headers['x-request-id'], longest);
  });

  test('an insane incoming id is replaced by a generated one', async () => {
    for (const insane of ['has spaces in it', 'x'.repeat(300), 'z'.repeat(129), 'semi;colon', '<script>']) {
      const res = await checkToken(t, null, { 'x-request-id': insane });
      const generated = res.headers['x-request-id'];
      assert.equal(typeof generated, 'string');
      assert.notEqual(generated, insane);
      assert.match(String(generated), /^[A-Za-z0-9._:@-]{1,128}$/);
      const body = assertError(res, 'hub-access-token-missing', 401);
      assert.equal(body.error.requestId, generated);
      assert.ok(!res.body.includes(insane), 'the insane id is not reflected');
    }
  });

  test('without an incoming id every response gets a distinct one', async () => {
    const a = await checkToken(t, null);
    const b = await checkToken(t, null);
    assert.equal(typeof a.headers['x-request-id'], 'string');
    assert.notEqual(a.headers['x-request-id'], b.headers['x-request-id']);
  });
});
