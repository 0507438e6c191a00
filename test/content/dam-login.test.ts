/**
 * The DAM side of authentication (SPEC.md sections 2, 3 and 5): the providers listing, the DAM
 * login state machine (POST/GET /auth/login and a provider's sign-in page), DAM connection tokens
 * on content calls (GET /system/providerInfo), their renewal through GET /auth/refreshToken, and
 * their confidentiality. Time moves through the ManualClock only.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { decodeProtectedHeader } from 'jose';
import { assertError, bearer, startTestHub, type TestHub } from '../helpers/hub.js';
import { testProvider } from '../helpers/test-provider.js';

const PROVIDERS = '/api/v1/auth/providers';
const LOGIN = '/api/v1/auth/login';
const REFRESH = '/api/v1/auth/refreshToken';
const INFO = '/api/v1/system/providerInfo';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

interface DamTokens {
  access_token: string;
  refresh_token?: string;
  userHash: string;
  expires_in: number;
}

function startHub(): Promise<TestHub> {
  return startTestHub({ providers: [testProvider(), testProvider({ id: 'other', refreshable: false })] });
}

function startLoginRaw(t: TestHub, access: string | null, query: string): Promise<LightMyRequestResponse> {
  return t.app.inject({ method: 'POST', url: `${LOGIN}?${query}`, headers: access === null ? {} : { authorization: bearer(access) } });
}

async function startLogin(t: TestHub, access: string, provider = 'testdam'): Promise<{ redirect_uri: string; state: string }> {
  const res = await startLoginRaw(t, access, `provider=${encodeURIComponent(provider)}&polling=true`);
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

async function poll(t: TestHub, state: string): Promise<Record<string, any>> {
  const res = await t.app.inject({ method: 'GET', url: `${LOGIN}?state=${encodeURIComponent(state)}&polling=true` });
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.headers['cache-control'], 'no-store');
  return res.json();
}

/** Posts to the provider's sign-in page that redirect_uri points at. */
async function signIn(t: TestHub, redirectUri: string, body: Record<string, unknown>): Promise<{ ok: boolean; error?: string }> {
  const u = new URL(redirectUri);
  const res = await t.app.inject({ method: 'POST', url: u.pathname, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) });
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

/** The whole DAM login: start, sign in as `account` with the right password, poll the tokens. */
async function damLogin(t: TestHub, access: string, account = 'alice', provider = 'testdam'): Promise<DamTokens> {
  const { redirect_uri, state } = await startLogin(t, access, provider);
  assert.deepEqual(await signIn(t, redirect_uri, { state, user: account, password: 'secret' }), { ok: true });
  const tokens = await poll(t, state);
  assert.equal(typeof tokens.access_token, 'string', JSON.stringify(tokens));
  return tokens as DamTokens;
}

function providerInfo(t: TestHub, access: string | null, dam: string | null, query = ''): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = {};
  if (access !== null) headers.authorization = bearer(access);
  if (dam !== null) headers['provider-authorization'] = bearer(dam);
  return t.app.inject({ method: 'GET', url: `${INFO}${query}`, headers });
}

function refresh(t: TestHub, access: string, token: string): Promise<LightMyRequestResponse> {
  return t.app.inject({ method: 'GET', url: REFRESH, headers: { authorization: bearer(access), 'provider-authorization': bearer(token) } });
}

/** Flips a character in the middle of one JWE part (4: ciphertext, 5: tag). */
function tamperJwe(token: string, part = 3): string {
  const parts = token.split('.');
  const s = parts[part]!;
  const i = Math.floor(s.length / 2);
  parts[part] = s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
  return parts.join('.');
}

describe('GET /auth/providers', () => {
  let t: TestHub;
  before(async () => {
    t = await startHub();
  });
  after(() => t.close());

  test('lists both providers with absolute URLs, capabilities and exactly one default', async () => {
    const { access_token } = await t.login();
    const res = await t.app.inject({ method: 'GET', url: PROVIDERS, headers: { authorization: bearer(access_token) } });
    assert.equal(res.statusCode, 200, res.body);
    const list = res.json() as Record<string, any>[];
    assert.deepEqual(list.map((p) => p.id).sort(), ['other', 'testdam']);
    for (const p of list) {
      assert.equal(p.name, `Test DAM ${p.id}`);
      assert.equal(p.version, '1.0.0');
      assert.equal(p.logo, `http://hub.test/api/v1/auth/${p.id}/logo.svg`);
      assert.equal(p.glyph, 'T');
      assert.equal(typeof p.capabilities, 'object');
      assert.equal(p.capabilities.browse, true);
      assert.equal(p.loginUrl, `http://hub.test/api/v1/auth/login?provider=${p.id}&polling=true`);
      assert.equal(typeof p.isDefault, 'boolean');
    }
    assert.equal(list.filter((p) => p.isDefault).length, 1);
    assert.equal(list.find((p) => p.id === 'testdam')!.capabilities.refresh, true);
    assert.equal(list.find((p) => p.id === 'other')!.capabilities.refresh, false);
  });

  test('without Authorization → hub-access-token-missing 401', async () => {
    assertError(await t.app.inject({ method: 'GET', url: PROVIDERS }), 'hub-access-token-missing', 401);
  });
});

describe('POST /auth/login', () => {
  let t: TestHub;
  let access: string;
  before(async () => {
    t = await startHub();
    access = (await t.login()).access_token;
  });
  after(() => t.close());

  test('answers {redirect_uri, state} with an absolute redirect_uri carrying the state', async () => {
    const a = await startLogin(t, access);
    const b = await startLogin(t, access);
    assert.deepEqual(Object.keys(a).sort(), ['redirect_uri', 'state']);
    assert.ok(a.state.length >= 32, 'the state is long enough not to be guessed');
    assert.notEqual(a.state, b.state);
    const u = new URL(a.redirect_uri);
    assert.equal(u.origin, 'http://hub.test');
    assert.equal(u.searchParams.get('state'), a.state);
  });

  test('an unknown provider → 400 hub-validation-error naming it', async () => {
    const body = assertError(await startLoginRaw(t, access, 'provider=nope&polling=true'), 'hub-validation-error', 400);
    assert.match(body.error.details, /nope/);
  });

  test('a missing provider parameter → 400 hub-validation-error naming it', async () => {
    const body = assertError(await startLoginRaw(t, access, 'polling=true'), 'hub-validation-error', 400);
    assert.match(body.error.details, /provider/);
    assertError(await startLoginRaw(t, access, 'provider=&polling=true'), 'hub-validation-error', 400);
  });

  test('serverUrl on a provider without that capability → 400', async () => {
    const body = assertError(await startLoginRaw(t, access, 'provider=testdam&polling=true&serverUrl=https%3A%2F%2Fdam.example'), 'hub-validation-error', 400);
    assert.match(body.error.details, /serverUrl/);
  });

  test('serverUrl on a provider with the capability must be an http(s) URL', async () => {
    const tt = await startTestHub({ providers: [testProvider({ id: 'multi', serverUrl: true })] });
    try {
      const a = (await tt.login()).access_token;
      for (const bad of ['not-a-url', 'ftp://dam.example/', 'javascript:alert(1)']) {
        assertError(await startLoginRaw(tt, a, `provider=multi&polling=true&serverUrl=${encodeURIComponent(bad)}`), 'hub-validation-error', 400);
      }
      const res = await startLoginRaw(tt, a, `provider=multi&polling=true&serverUrl=${encodeURIComponent('https://dam.example/')}`);
      assert.equal(res.statusCode, 200, res.body);
    } finally {
      await tt.close();
    }
  });

  test('without Authorization → 401 hub-access-token-missing; with a bad one → hub-access-token-invalid', async () => {
    assertError(await startLoginRaw(t, null, 'provider=testdam&polling=true'), 'hub-access-token-missing', 401);
    assertError(await startLoginRaw(t, 'garbage', 'provider=testdam&polling=true'), 'hub-access-token-invalid', 401);
  });
});

describe('GET /auth/login (polling)', () => {
  let t: TestHub;
  let access: string;
  before(async () => {
    t = await startHub();
    access = (await t.login()).access_token;
  });
  after(() => t.close());

  test('{} while pending, the tokens exactly once after sign-in, then {error}', async () => {
    const { redirect_uri, state } = await startLogin(t, access);
    assert.deepEqual(await poll(t, state), {});
    assert.deepEqual(await poll(t, state), {});
    assert.deepEqual(await signIn(t, redirect_uri, { state, user: 'alice', password: 'secret' }), { ok: true });
    const tokens = await poll(t, state);
    assert.deepEqual(Object.keys(tokens).sort(), ['access_token', 'expires_in', 'refresh_token', 'userHash']);
    assert.equal(typeof tokens.access_token, 'string');
    assert.equal(typeof tokens.refresh_token, 'string');
    assert.equal(typeof tokens.userHash, 'string');
    assert.equal(tokens.expires_in, 24 * 3600);
    const again = await poll(t, state);
    assert.deepEqual(Object.keys(again), ['error']);
    assert.equal(typeof again.error, 'string');
    // The sign-in page refuses a finished login.
    const page = await signIn(t, redirect_uri, { state, user: 'mallory', password: 'secret' });
    assert.equal(page.ok, false);
    assert.deepEqual(Object.keys(await poll(t, state)), ['error']);
  });

  test('an unknown state → {error}', async () => {
    const body = await poll(t, 'no-such-state');
    assert.deepEqual(Object.keys(body), ['error']);
    assert.match(body.error, /unknown/);
  });

  test('a missing state → 400 hub-validation-error', async () => {
    assertError(await t.app.inject({ method: 'GET', url: `${LOGIN}?polling=true` }), 'hub-validation-error', 400);
  });

  test('a pending state expires after 5 minutes: the poll says so and the sign-in page refuses it', async () => {
    const { redirect_uri, state } = await startLogin(t, access);
    t.clock.advance(5 * MINUTE - SECOND);
    assert.deepEqual(await poll(t, state), {});
    t.clock.advance(SECOND);
    const body = await poll(t, state);
    assert.deepEqual(Object.keys(body), ['error']);
    assert.match(body.error, /expire/);
    const page = await signIn(t, redirect_uri, { state, user: 'alice', password: 'secret' });
    assert.equal(page.ok, false);
    assert.match(String(page.error), /expired/);
    assert.match((await poll(t, state)).error, /expire/);
  });

  test('a wrong password → the poll answers {error}', async () => {
    const { redirect_uri, state } = await startLogin(t, access);
    assert.deepEqual(await signIn(t, redirect_uri, { state, user: 'alice', password: 'wrong' }), { ok: false, error: 'wrong password' });
    const body = await poll(t, state);
    assert.deepEqual(Object.keys(body), ['error']);
    assert.match(body.error, /wrong password/);
    // The failed state is settled: a second try with the right password is refused.
    assert.equal((await signIn(t, redirect_uri, { state, user: 'alice', password: 'secret' })).ok, false);
    assert.deepEqual(Object.keys(await poll(t, state)), ['error']);
  });

  test('a cancelled sign-in → the poll answers {error}', async () => {
    const { redirect_uri, state } = await startLogin(t, access);
    await signIn(t, redirect_uri, { state, cancel: true });
    const body = await poll(t, state);
    assert.deepEqual(Object.keys(body), ['error']);
    assert.match(body.error, /cancel/);
  });

  test('two concurrent polls after completion: exactly one gets the tokens', async () => {
    const { redirect_uri, state } = await startLogin(t, access);
    await signIn(t, redirect_uri, { state, user: 'alice', password: 'secret' });
    const answers = await Promise.all([poll(t, state), poll(t, state)]);
    assert.equal(answers.filter((a) => typeof a.access_token === 'string').length, 1, JSON.stringify(answers));
    assert.equal(answers.filter((a) => typeof a.error === 'string').length, 1, JSON.stringify(answers));
  });

  test('userHash identifies the DAM account: stable for one account, different for another', async () => {
    const a1 = await damLogin(t, access, 'hash-alice');
    const a2 = await damLogin(t, access, 'hash-alice');
    const b = await damLogin(t, access, 'hash-bob');
    assert.equal(a1.userHash, a2.userHash);
    assert.notEqual(a1.userHash, b.userHash);
    assert.ok(!a1.userHash.includes('hash-alice'));
  });

  test('a provider without the refresh capability gives no refresh_token', async () => {
    const tokens = await damLogin(t, access, 'alice', 'other');
    assert.equal('refresh_token' in tokens, false);
    assert.equal(typeof tokens.access_token, 'string');
    const info = await providerInfo(t, access, tokens.access_token);
    assert.equal(info.statusCode, 200, info.body);
  });
});

describe('DAM connection tokens on content calls', () => {
  let t: TestHub;
  before(async () => {
    t = await startHub();
  });
  after(() => t.close());

  test('both headers → the provider info of that connection', async () => {
    const { access_token } = await t.login({ sub: 'info-a' });
    const dam = await damLogin(t, access_token, 'alice');
    const res = await providerInfo(t, access_token, dam.access_token);
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.equal(body.remoteSystemPrefix, 'test:alice');
    assert.deepEqual(body.filters, [{ id: 'kind', name: 'kind (en)' }]);
    assert.deepEqual(body.dataLocales, [{ id: 'en', name: 'English', displayName: 'English', default: true }]);
  });

  test('without provider-authorization → 403 provider-access-token-missing', async () => {
    const { access_token } = await t.login({ sub: 'info-a' });
    assertError(await providerInfo(t, access_token, null), 'provider-access-token-missing', 403);
  });

  test('without Authorization → 401 hub-access-token-missing', async () => {
    const { access_token } = await t.login({ sub: 'info-a' });
    const dam = await damLogin(t, access_token);
    assertError(await providerInfo(t, null, dam.access_token), 'hub-access-token-missing', 401);
  });

  test('a tampered or malformed DAM token → 403 provider-access-token-invalid', async () => {
    const { access_token } = await t.login({ sub: 'info-a' });
    const dam = await damLogin(t, access_token);
    assertError(await providerInfo(t, access_token, tamperJwe(dam.access_token, 3)), 'provider-access-token-invalid', 403);
    assertError(await providerInfo(t, access_token, tamperJwe(dam.access_token, 4)), 'provider-access-token-invalid', 403);
    assertError(await providerInfo(t, access_token, 'garbage'), 'provider-access-token-invalid', 403);
    assertError(await providerInfo(t, access_token, 'a.b.c.d.e'), 'provider-access-token-invalid', 403);
    // A hub token or the DAM refresh token is no DAM access token.
    assertError(await providerInfo(t, access_token, access_token), 'provider-access-token-invalid', 403);
    assertError(await providerInfo(t, access_token, dam.refresh_token!), 'provider-access-token-invalid', 403);
  });

  test("user A's DAM token with user B's access token → 403 provider-access-token-invalid", async () => {
    const a = await t.login({ sub: 'owner-a', email: 'a@example.com' });
    const b = await t.login({ sub: 'owner-b', email: 'b@example.com' });
    const dam = await damLogin(t, a.access_token);
    const body = assertError(await providerInfo(t, b.access_token, dam.access_token), 'provider-access-token-invalid', 403);
    assert.match(body.error.details, /another user/);
    const ok = await providerInfo(t, a.access_token, dam.access_token);
    assert.equal(ok.statusCode, 200, ok.body);
  });

  test('uiLocale: xx → 400 hub-validation-error, de accepted', async () => {
    const { access_token } = await t.login({ sub: 'info-a' });
    const dam = await damLogin(t, access_token);
    const body = assertError(await providerInfo(t, access_token, dam.access_token, '?uiLocale=xx'), 'hub-validation-error', 400);
    assert.match(body.error.details, /uiLocale/);
    const de = await providerInfo(t, access_token, dam.access_token, '?uiLocale=de');
    assert.equal(de.statusCode, 200, de.body);
    assert.equal(de.json().filters[0].name, 'kind (de)');
  });

  test('a DAM token expires after 24 h → 403 provider-access-token-invalid (with a fresh hub token)', async () => {
    const tt = await startHub();
    try {
      const dam = await damLogin(tt, (await tt.login({ sub: 'expiring' })).access_token);
      tt.clock.advance(24 * HOUR - SECOND);
      let access = (await tt.login({ sub: 'expiring' })).access_token;
      const ok = await providerInfo(tt, access, dam.access_token);
      assert.equal(ok.statusCode, 200, ok.body);
      tt.clock.advance(2 * SECOND);
      access = (await tt.login({ sub: 'expiring' })).access_token;
      const body = assertError(await providerInfo(tt, access, dam.access_token), 'provider-access-token-invalid', 403);
      assert.match(body.error.details, /expired/);
    } finally {
      await tt.close();
    }
  });
});

describe('DAM connection renewal (GET /auth/refreshToken with a DAM refresh token)', () => {
  let t: TestHub;
  before(async () => {
    t = await startHub();
  });
  after(() => t.close());

  test('a DAM refresh token → a new DAM access token that works on providerInfo', async () => {
    const { access_token } = await t.login({ sub: 'renew' });
    const dam = await damLogin(t, access_token, 'alice');
    const res = await refresh(t, access_token, dam.refresh_token!);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['cache-control'], 'no-store');
    const body = res.json();
    assert.equal(body.token_type, 'Bearer');
    assert.equal(body.expires_in, 24 * 3600);
    assert.equal(body.access_token.split('.').length, 5);
    assert.equal(typeof body.refresh_token, 'string');
    assert.notEqual(body.access_token, dam.access_token);
    const info = await providerInfo(t, access_token, body.access_token);
    assert.equal(info.statusCode, 200, info.body);
    assert.equal(info.json().remoteSystemPrefix, 'test:alice');
    // And the renewed refresh token renews again.
    const again = await refresh(t, access_token, body.refresh_token);
    assert.equal(again.statusCode, 200, again.body);
  });

  test('the hub access token may be expired when renewing the DAM connection', async () => {
    const tt = await startHub();
    try {
      const { access_token } = await tt.login({ sub: 'renew-late' });
      const dam = await damLogin(tt, access_token);
      tt.clock.advance(2 * HOUR);
      const res = await refresh(tt, access_token, dam.refresh_token!);
      assert.equal(res.statusCode, 200, res.body);
    } finally {
      await tt.close();
    }
  });

  test('a DAM access token passed as refresh token → 403 provider-access-token-invalid', async () => {
    const { access_token } = await t.login({ sub: 'renew' });
    const dam = await damLogin(t, access_token);
    const body = assertError(await refresh(t, access_token, dam.access_token), 'provider-access-token-invalid', 403);
    assert.match(body.error.details, /refresh/);
  });

  test('a tampered DAM refresh token → 403 provider-access-token-invalid', async () => {
    const { access_token } = await t.login({ sub: 'renew' });
    const dam = await damLogin(t, access_token);
    assertError(await refresh(t, access_token, tamperJwe(dam.refresh_token!)), 'provider-access-token-invalid', 403);
  });

  test("user A's DAM refresh token with user B's access token → 403 provider-access-token-invalid", async () => {
    const a = await t.login({ sub: 'renew-a', email: 'a@example.com' });
    const b = await t.login({ sub: 'renew-b', email: 'b@example.com' });
    const dam = await damLogin(t, a.access_token);
    assertError(await refresh(t, b.access_token, dam.refresh_token!), 'provider-access-token-invalid', 403);
  });

  test('the DAM rejecting the renewal → 401 integration-auth-failed, provider named, details verbatim', async () => {
    const { access_token } = await t.login({ sub: 'renew' });
    const dam = await damLogin(t, access_token, 'revoked');
    const body = assertError(await refresh(t, access_token, dam.refresh_token!), 'integration-auth-failed', 401, 'integration');
    assert.equal(body.error.provider, 'testdam');
    assert.equal(body.error.details, 'account revoked upstream');
  });
});

describe('DAM connection tokens are confidential', () => {
  test('five JWE parts; neither the credentials nor the bindings are readable in any part', async () => {
    const t = await startHub();
    try {
      const { access_token } = await t.login({ sub: 'secretive' });
      const account = 'alice-confidential-7f3a9c';
      const check = await t.app.inject({ method: 'GET', url: '/api/v1/auth/checkToken', headers: { authorization: bearer(access_token) } });
      const userId = check.json().user.id as string;
      const dam = await damLogin(t, access_token, account);
      for (const token of [dam.access_token, dam.refresh_token!]) {
        const parts = token.split('.');
        assert.equal(parts.length, 5);
        const header = decodeProtectedHeader(token);
        assert.deepEqual(Object.keys(header).sort(), ['alg', 'enc', 'kid']);
        assert.equal(header.alg, 'dir');
        assert.equal(header.enc, 'A256GCM');
        assert.ok(!token.includes(account));
        for (const part of parts) {
          const decoded = Buffer.from(part, 'base64url').toString('latin1');
          for (const secret of [account, userId, 'account', 'testdam']) {
            assert.ok(!decoded.includes(secret), `${JSON.stringify(secret)} readable in a token part`);
          }
        }
      }
    } finally {
      await t.close();
    }
  });
});

describe('LoginHost for sign-in pages: describe, failedAttempt, the browser binding (issue 28)', () => {
  test('describe names the partner, the hub user\'s email and the provider; a removed user leaves nothing to describe', async () => {
    const t = await startTestHub({ providers: [testProvider()] });
    try {
      const access = (await t.login({ sub: 'dora', email: 'dora@example.com' })).access_token;
      const { state } = await startLogin(t, access);
      const d = await t.hub.damLogin.describe(state);
      assert.ok(!('error' in d));
      assert.deepEqual([d.partnerName, d.userEmail, d.providerName, d.serverUrl], ['Partner One', 'dora@example.com', 'Test DAM testdam', null]);
      await t.hub.stores.users.remove(d.userId);
      // The user's login states go with the user (or, if kept, name nobody): no page either way.
      assert.match((await t.hub.damLogin.describe(state) as { error: string }).error, /not valid|no longer valid/);
      assert.match((await t.hub.damLogin.describe('unknown') as { error: string }).error, /not valid/);
    } finally {
      await t.close();
    }
  });

  test('failedAttempt keeps the state pending until its attempt budget (signInStateAttempts) is spent; the last failure ends it with its error', async () => {
    const t = await startTestHub({ providers: [testProvider()], config: { signInStateAttempts: 3 } });
    try {
      const access = (await t.login()).access_token;
      const { state } = await startLogin(t, access);
      assert.deepEqual(await t.hub.damLogin.failedAttempt(state, 'invalid_grant: one'), { ended: false });
      assert.deepEqual(await t.hub.damLogin.failedAttempt(state, 'invalid_grant: two'), { ended: false });
      assert.deepEqual(await poll(t, state), {});
      assert.deepEqual(await t.hub.damLogin.failedAttempt(state, 'invalid_grant: three'), { ended: true });
      assert.deepEqual(await poll(t, state), { error: 'invalid_grant: three' });
    } finally {
      await t.close();
    }
  });

  test('the browser binding holds for its own state only, and only with the exact value', async () => {
    const t = await startTestHub({ providers: [testProvider()] });
    try {
      const b = t.hub.damLogin.browser;
      const pair = (s: string) => b.setCookie(s).split(';')[0]!;
      assert.equal(b.holds('s1', pair('s1')), true);
      assert.equal(b.holds('s1', `other=1; ${pair('s2')}; ${pair('s1')}`), true, 'among other cookies');
      assert.equal(b.holds('s2', pair('s1')), false, 'another state\'s cookie');
      assert.equal(b.holds('s1', `${pair('s1').slice(0, -1)}x`), false, 'an altered value');
      assert.equal(b.holds('s1', `${pair('s2').split('=')[0]}=${pair('s1').split('=')[1]}`), false, 'the value under another name');
      assert.equal(b.holds('s1', undefined), false);
      assert.equal(b.holds('', pair('')), false, 'no state, no binding');
    } finally {
      await t.close();
    }
  });
});
