/**
 * The OAuth 2.0 authorization code + PKCE sign-in, end to end against a real authorization server
 * (oidc-provider) on loopback: DAM login through the hub, the callback route, the poll, refresh,
 * and the ways it must fail (state mismatch, replayed callback, injected code, denied consent).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { DAM_ACCESS_TYP, DAM_REFRESH_TYP } from '../../../src/auth/provider-tokens.js';
import type { Provider } from '../../../src/providers/contract.js';
import { DEFAULT_UPSTREAM, UpstreamClient } from '../../../src/providers/kit/http.js';
import { discoveredServer, OAuthFlow } from '../../../src/providers/oauth/flow.js';
import { oauthLogin } from '../../../src/providers/oauth/login.js';
import { assertError, bearer, startTestHub, type TestHub } from '../../helpers/hub.js';
import { continueToVendor, TestBrowser } from '../../helpers/browser.js';
import { startOidcServer, type OidcServer } from '../../helpers/oidc-server.js';

const CALLBACK = 'http://hub.test/api/v1/auth/callback/oidctest';

let idp: OidcServer;
let t: TestHub;
let hubAccess: string;

function oidcTestProvider(now: () => number): Provider {
  const flow = new OAuthFlow({
    providerId: 'oidctest', name: 'OIDC Test DAM', clientId: 'damhub', clientSecret: 'damhub-secret',
    scopes: ['openid', 'offline_access'], authorizationParams: { prompt: 'consent' },
    server: discoveredServer({ providerId: 'oidctest', allowInsecureRequests: true }),
    allowInsecureRequests: true, now,
  });
  return {
    descriptor: {
      id: 'oidctest', name: 'OIDC Test DAM', version: '1.0.0', logo: '/logo.svg', glyph: 'O',
      features: { serverUrl: true },
      paging: { defaultSize: 25, maxSize: 100 },
    },
    ...oauthLogin(flow),
  };
}

before(async () => {
  idp = await startOidcServer({ clientId: 'damhub', clientSecret: 'damhub-secret', redirectUris: [CALLBACK] });
  let hubNow = () => Date.now();
  t = await startTestHub({ providers: [oidcTestProvider(() => hubNow())] });
  // The authorization server checks real time (its tokens and cookies); the hub's clock follows it.
  t.clock.set(Date.now());
  hubNow = () => t.clock.now();
  hubAccess = (await t.login()).access_token;
});
after(async () => {
  await t?.close();
  await idp?.close();
});

/** POST /auth/login, then the hub's confirm page and its Continue in a browser: the authorization URL it goes on to. */
async function startLogin(serverUrl = idp.issuer): Promise<{ state: string; url: URL; browser: TestBrowser }> {
  const res = await t.app.inject({ method: 'POST', url: `/api/v1/auth/login?provider=oidctest&polling=true&serverUrl=${encodeURIComponent(serverUrl)}`, headers: { authorization: bearer(hubAccess) } });
  assert.equal(res.statusCode, 200, res.body);
  const { state, redirect_uri } = res.json();
  const browser = new TestBrowser(t);
  return { state, url: new URL(await continueToVendor(browser, redirect_uri)), browser };
}

/** The vendor's redirect back, opened in `browser` (the one that started the login carries its cookie). */
async function callback(url: URL, browser: TestBrowser) {
  const v = await browser.open(url.href);
  return { statusCode: v.status, body: v.body };
}

async function poll(state: string) {
  const res = await t.app.inject({ method: 'GET', url: `/api/v1/auth/login?state=${encodeURIComponent(state)}&polling=true` });
  assert.equal(res.statusCode, 200);
  return res.json();
}

async function userinfo(accessToken: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${idp.issuer}/me`, { headers: { authorization: `Bearer ${accessToken}` } });
  return { status: res.status, body: res.status === 200 ? await res.json() : await res.text() };
}

test('the popup goes to the discovered authorization endpoint of serverUrl with state and an S256 PKCE challenge', async () => {
  const { state, url } = await startLogin();
  assert.equal(`${url.origin}${url.pathname}`, `${idp.issuer}/auth`);
  assert.equal(url.searchParams.get('state'), state);
  assert.equal(url.searchParams.get('response_type'), 'code');
  assert.equal(url.searchParams.get('client_id'), 'damhub');
  assert.equal(url.searchParams.get('redirect_uri'), CALLBACK);
  assert.equal(url.searchParams.get('code_challenge_method'), 'S256');
  assert.match(url.searchParams.get('code_challenge')!, /^[A-Za-z0-9_-]{43}$/);
  const other = await startLogin();
  assert.notEqual(other.url.searchParams.get('code_challenge'), url.searchParams.get('code_challenge'), 'one verifier per login');
});

test('full sign-in: consent, callback, one poll with tokens whose upstream access token works; refresh renews it', async () => {
  const { state, url, browser } = await startLogin();
  assert.deepEqual(await poll(state), {}, 'pending until the callback');
  const cb = await idp.authorize(url.href, CALLBACK, { user: 'alice', consent: 'accept' });
  assert.equal(cb.searchParams.get('state'), state);
  assert.ok(cb.searchParams.get('code'));
  const page = await callback(cb, browser);
  assert.equal(page.statusCode, 200, page.body);
  assert.match(page.body, /Signed in to OIDC Test DAM/);

  const tokens = await poll(state);
  assert.equal(typeof tokens.access_token, 'string');
  assert.equal(typeof tokens.refresh_token, 'string');
  assert.match(tokens.userHash, /^[A-Za-z0-9_-]{32}$/);
  assert.match((await poll(state)).error, /already completed/, 'tokens are handed out once');

  const claims = await t.hub.providerTokens.open(tokens.access_token, DAM_ACCESS_TYP);
  assert.equal(claims.prv, 'oidctest');
  assert.equal(claims.cred.acct, 'alice');
  assert.equal(claims.cred.srv, idp.issuer, 'the tenant is kept for refresh');
  const me = await userinfo(claims.cred.at as string);
  assert.equal(me.status, 200, String(me.body));
  assert.equal(me.body.sub, 'alice');
  assert.doesNotMatch(JSON.stringify(tokens), new RegExp(String(claims.cred.at)), 'the upstream token is only inside the encrypted DAM token');

  const replay = await callback(cb, browser);
  assert.equal(replay.statusCode, 400, 'a replayed callback settles nothing');
  assert.match(replay.body, /already finished/);

  const r = await t.app.inject({ method: 'GET', url: '/api/v1/auth/refreshToken', headers: { authorization: bearer(hubAccess), 'provider-authorization': bearer(tokens.refresh_token) } });
  assert.equal(r.statusCode, 200, r.body);
  const renewed = await t.hub.providerTokens.open(r.json().access_token, DAM_ACCESS_TYP);
  assert.notEqual(renewed.cred.at, claims.cred.at, 'a new upstream access token');
  assert.equal(renewed.cred.acct, 'alice');
  assert.equal((await userinfo(renewed.cred.at as string)).body.sub, 'alice');
  const refreshClaims = await t.hub.providerTokens.open(r.json().refresh_token, DAM_REFRESH_TYP);
  assert.equal(typeof refreshClaims.cred.rt, 'string');
});

test('a revoked upstream refresh token: the DAM refresh answers integration-auth-failed with the upstream error in details', async () => {
  const { state, url, browser } = await startLogin();
  await callback(await idp.authorize(url.href, CALLBACK, { user: 'bob', consent: 'accept' }), browser);
  const tokens = await poll(state);
  const { cred } = await t.hub.providerTokens.open(tokens.refresh_token, DAM_REFRESH_TYP);
  const rt = await idp.provider.RefreshToken.find(cred.rt as string);
  await rt!.destroy();
  const r = await t.app.inject({ method: 'GET', url: '/api/v1/auth/refreshToken', headers: { authorization: bearer(hubAccess), 'provider-authorization': bearer(tokens.refresh_token) } });
  const body = assertError(r, 'integration-auth-failed', 401, 'integration');
  assert.equal(body.error.provider, 'oidctest');
  assert.match(body.error.details, /invalid_grant/);
});

test('state mismatch: a callback whose state is unknown, missing or of another provider settles nothing', async () => {
  const { state, url, browser } = await startLogin();
  const cb = await idp.authorize(url.href, CALLBACK, { user: 'carol', consent: 'accept' });
  for (const bad of ['forged-state', '']) {
    const u = new URL(cb);
    u.searchParams.set('state', bad);
    const res = await callback(u, browser);
    assert.equal(res.statusCode, 400, bad);
    assert.match(res.body, /not valid/);
  }
  const noState = new URL(cb);
  noState.searchParams.delete('state');
  assert.equal((await callback(noState, browser)).statusCode, 400);
  assert.deepEqual(await poll(state), {}, 'the real login is still pending');
  // The genuine callback still finishes it.
  assert.equal((await callback(cb, browser)).statusCode, 200);
  assert.ok((await poll(state)).access_token);
});

test('PKCE: a code injected into another login (its verifier does not match) is not redeemed; that login stays pending and can still finish', async () => {
  const victim = await startLogin();
  const stolen = await idp.authorize(victim.url.href, CALLBACK, { user: 'victim', consent: 'accept' });
  const attacker = await startLogin();
  const injected = new URL(stolen);
  injected.searchParams.set('state', attacker.state);
  // Even from the browser of the login it names, a refused code is one failed attempt, not the end.
  const res = await callback(injected, attacker.browser);
  assert.equal(res.statusCode, 400);
  assert.match(res.body, /Try again/);
  assert.deepEqual(await poll(attacker.state), {}, 'no tokens, and the login is still pending');
  const own = await idp.authorize(attacker.url.href, CALLBACK, { user: 'mallory', consent: 'accept' });
  assert.equal((await callback(own, attacker.browser)).statusCode, 200, 'its own code still finishes it');
  assert.equal(typeof (await poll(attacker.state)).access_token, 'string');
});

test('denied consent: error=access_denied ends the login with {error}', async () => {
  const { state, url, browser } = await startLogin();
  const cb = await idp.authorize(url.href, CALLBACK, { user: 'dave', consent: 'deny' });
  assert.equal(cb.searchParams.get('error'), 'access_denied');
  assert.equal(cb.searchParams.get('state'), state);
  const page = await callback(cb, browser);
  assert.equal(page.statusCode, 200);
  assert.match(page.body, /declined/);
  const answer = await poll(state);
  assert.deepEqual(Object.keys(answer), ['error']);
  assert.match(answer.error, /^access_denied/);
});

test('serverUrl: a tenant that is not an authorization server is a clear integration error at login start', async () => {
  const res = await t.app.inject({ method: 'POST', url: `/api/v1/auth/login?provider=oidctest&serverUrl=${encodeURIComponent('http://127.0.0.1:9/')}`, headers: { authorization: bearer(hubAccess) } });
  const body = assertError(res, 'integration-unavailable', 503, 'integration');
  assert.equal(body.error.provider, 'oidctest');
});

test('through a connector\'s upstream client, discovery of a tenant serverUrl obeys the address policy', async () => {
  const flow = new OAuthFlow({
    providerId: 'oidctest', name: 'OIDC Test DAM', clientId: 'damhub', scopes: ['openid'],
    server: discoveredServer({ providerId: 'oidctest', allowInsecureRequests: true }), allowInsecureRequests: true, now: () => t.clock.now(),
  });
  const strict = new UpstreamClient('oidctest', { ...DEFAULT_UPSTREAM, retries: 0 }, { clock: t.clock });
  const allowed = new UpstreamClient('oidctest', { ...DEFAULT_UPSTREAM, allowHosts: ['127.0.0.1'] }, { clock: t.clock });
  try {
    await assert.rejects(flow.authorizationUrl('s1', idp.issuer, CALLBACK, strict), (e: any) => {
      assert.equal(e.code, 'integration-unavailable');
      assert.match(e.details, /refused to connect to 127\.0\.0\.1/);
      return true;
    });
    const url = new URL(await flow.authorizationUrl('s2', idp.issuer, CALLBACK, allowed));
    assert.equal(`${url.origin}${url.pathname}`, `${idp.issuer}/auth`);
  } finally {
    await strict.close();
    await allowed.close();
  }
});
