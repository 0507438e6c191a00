/**
 * POST /api/v1/auth/exchangeToken: every rule of SPEC.md section 3 for partner JWTs, the error code
 * each failure maps to (section 5), just-in-time users, replay protection, the per-partner rate
 * limit and JWKS fetching/caching from a partner's URL. Time moves through the ManualClock only.
 */
import assert from 'node:assert/strict';
import { createHmac, createPublicKey } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { exportJWK, generateKeyPair } from 'jose';
import { assertError, bearer, startTestHub, type TestHub } from '../helpers/hub.js';
import { JwksServer, makeKey, signPartnerJwt, type TestKey } from '../helpers/partner.js';
import { respellings, sameBytes } from '../helpers/respell.js';

const EXCHANGE = '/api/v1/auth/exchangeToken';

function exchange(t: TestHub, token: string | null, body?: unknown): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = {};
  if (token !== null) headers.authorization = bearer(token);
  if (body === undefined) return t.app.inject({ method: 'POST', url: EXCHANGE, headers });
  headers['content-type'] = 'application/json';
  return t.app.inject({ method: 'POST', url: EXCHANGE, headers, payload: typeof body === 'string' ? body : JSON.stringify(body) });
}

function assertTokens(res: LightMyRequestResponse): { access_token: string; refresh_token: string } {
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json();
  assert.equal(typeof body.access_token, 'string');
  assert.equal(typeof body.refresh_token, 'string');
  assert.equal(body.expires_in, 3600);
  assert.equal(body.token_type, 'Bearer');
  assert.equal(res.headers['cache-control'], 'no-store');
  return body;
}

async function checkToken(t: TestHub, access: string): Promise<Record<string, any>> {
  const res = await t.app.inject({ method: 'GET', url: '/api/v1/auth/checkToken', headers: { authorization: bearer(access) } });
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

const b64url = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

/** A JWT assembled by hand, for algorithms a JOSE library would refuse to produce with an RSA key. */
function handMadeJwt(header: Record<string, unknown>, payload: Record<string, unknown>, sign: (input: string) => string): string {
  const input = `${b64url(header)}.${b64url(payload)}`;
  return `${input}.${sign(input)}`;
}

function validClaims(t: TestHub): Record<string, unknown> {
  const now = Math.floor(t.clock.now() / 1000);
  return { iss: t.partner.issuer, aud: 'urn:damhub', sub: 'user-1', email: 'user1@example.com', iat: now, exp: now + 300, jti: `hand-${now}-${Math.random()}` };
}

/** A second partner on the same hub with its own key. */
async function addPartner(t: TestHub, o: { id: string; issuer: string; key: TestKey; rateLimitPerMin?: number }) {
  return t.hub.stores.partners.create({
    id: o.id, name: o.id, issuer: o.issuer, audience: 'urn:damhub', jwksUrl: null, jwks: { keys: [o.key.publicJwk] },
    maxTokenAgeSec: 3600, rateLimitPerMin: o.rateLimitPerMin ?? 60, allowedOrigins: [], enabled: true,
  }, t.clock.now());
}

describe('partner JWT validation', () => {
  let t: TestHub;
  before(async () => {
    t = await startTestHub();
  });
  after(() => t.close());

  test('a valid JWT is exchanged for hub tokens', async () => {
    const res = await exchange(t, await t.jwt());
    assertTokens(res);
    assert.equal(res.headers['ratelimit-limit'], '60');
  });

  test('no Authorization → hub-sdk-token-missing 401', async () => {
    assertError(await exchange(t, null), 'hub-sdk-token-missing', 401);
  });

  test('Authorization that is not a bearer token → hub-sdk-token-missing', async () => {
    const res = await t.app.inject({ method: 'POST', url: EXCHANGE, headers: { authorization: 'Basic dXNlcjpwYXNz' } });
    assertError(res, 'hub-sdk-token-missing', 401);
  });

  test('garbage token → hub-sdk-token-invalid', async () => {
    assertError(await exchange(t, 'garbage'), 'hub-sdk-token-invalid', 401);
    assertError(await exchange(t, 'a.b.c'), 'hub-sdk-token-invalid', 401);
  });

  test('alg none → hub-sdk-token-invalid', async () => {
    const token = handMadeJwt({ alg: 'none', typ: 'JWT', kid: t.key.kid }, validClaims(t), () => '');
    const body = assertError(await exchange(t, token), 'hub-sdk-token-invalid', 401);
    assert.match(body.error.details, /RS256/);
  });

  test('HS256 signed with the partner public key PEM (algorithm confusion) → hub-sdk-token-invalid', async () => {
    const pem = createPublicKey({ key: t.key.publicJwk as any, format: 'jwk' }).export({ type: 'spki', format: 'pem' }) as string;
    for (const secret of [pem, pem.trim()]) {
      const token = handMadeJwt({ alg: 'HS256', typ: 'JWT', kid: t.key.kid }, validClaims(t), (input) => createHmac('sha256', secret).update(input).digest('base64url'));
      const body = assertError(await exchange(t, token), 'hub-sdk-token-invalid', 401);
      assert.match(body.error.details, /RS256/);
    }
  });

  test('another algorithm (RS512, PS256) → hub-sdk-token-invalid', async () => {
    for (const alg of ['RS512', 'PS256']) {
      const token = handMadeJwt({ alg, typ: 'JWT', kid: t.key.kid }, validClaims(t), () => 'c2lnbmF0dXJl');
      const body = assertError(await exchange(t, token), 'hub-sdk-token-invalid', 401);
      assert.match(body.error.details, new RegExp(alg));
    }
  });

  test('missing kid → hub-sdk-token-invalid', async () => {
    const body = assertError(await exchange(t, await t.jwt({ kid: null })), 'hub-sdk-token-invalid', 401);
    assert.match(body.error.details, /kid/);
  });

  test('kid not in the JWKS → hub-sdk-token-invalid', async () => {
    const body = assertError(await exchange(t, await t.jwt({ kid: 'no-such-kid' })), 'hub-sdk-token-invalid', 401);
    assert.match(body.error.details, /no-such-kid/);
  });

  test('issuer not registered → hub-sdk-partner-unknown 403', async () => {
    assertError(await exchange(t, await t.jwt({ issuer: 'https://stranger.example/' })), 'hub-sdk-partner-unknown', 403);
  });

  test('issuer differing only by the trailing slash → hub-sdk-partner-unknown', async () => {
    assert.equal(t.partner.issuer, 'https://partner.example/');
    assertError(await exchange(t, await t.jwt({ issuer: 'https://partner.example' })), 'hub-sdk-partner-unknown', 403);
    assertError(await exchange(t, await t.jwt({ issuer: 'https://partner.example//' })), 'hub-sdk-partner-unknown', 403);
  });

  test('missing iss → hub-sdk-token-invalid', async () => {
    const token = handMadeJwt({ alg: 'RS256', kid: t.key.kid }, { ...validClaims(t), iss: undefined }, () => 'c2ln');
    assertError(await exchange(t, token), 'hub-sdk-token-invalid', 401);
  });

  test('aud mismatch → hub-sdk-audience-invalid 403', async () => {
    assertError(await exchange(t, await t.jwt({ audience: 'urn:someone-else' })), 'hub-sdk-audience-invalid', 403);
    assertError(await exchange(t, await t.jwt({ audience: ['urn:a', 'urn:b'] })), 'hub-sdk-audience-invalid', 403);
  });

  test('aud array containing the registered audience is accepted', async () => {
    assertTokens(await exchange(t, await t.jwt({ audience: ['urn:other', 'urn:damhub'] })));
  });

  test('exp in the past → hub-sdk-token-expired', async () => {
    const now = Math.floor(t.clock.now() / 1000);
    assertError(await exchange(t, await t.jwt({ iat: now - 120, exp: now - 60 })), 'hub-sdk-token-expired', 401);
  });

  test('missing exp, iat, sub or aud → hub-sdk-token-invalid', async () => {
    for (const missing of ['exp', 'iat', 'sub', 'audience'] as const) {
      const res = await exchange(t, await t.jwt({ [missing]: null }));
      const body = assertError(res, 'hub-sdk-token-invalid', 401);
      assert.match(body.error.details, new RegExp(missing === 'audience' ? 'aud' : missing), `missing ${missing}`);
    }
  });

  test('sub that is not a string → hub-sdk-token-invalid', async () => {
    assertError(await exchange(t, await t.jwt({ sub: 42 as unknown as string })), 'hub-sdk-token-invalid', 401);
    assertError(await exchange(t, await t.jwt({ sub: '' })), 'hub-sdk-token-invalid', 401);
  });

  test('iat 29 s in the future is accepted, 31 s is not', async () => {
    const now = Math.floor(t.clock.now() / 1000);
    assertTokens(await exchange(t, await t.jwt({ iat: now + 29 })));
    assertTokens(await exchange(t, await t.jwt({ iat: now + 30 })));
    const body = assertError(await exchange(t, await t.jwt({ iat: now + 31 })), 'hub-sdk-token-invalid', 401);
    assert.match(body.error.details, /future/);
  });

  test('signature by another key with the same kid → hub-sdk-token-invalid', async () => {
    const impostor = await makeKey(t.key.kid);
    const token = await signPartnerJwt(t.clock.now(), { key: impostor, issuer: t.partner.issuer });
    const body = assertError(await exchange(t, token), 'hub-sdk-token-invalid', 401);
    assert.match(body.error.details, /signature/);
  });

  test('tampered payload → hub-sdk-token-invalid', async () => {
    const [h, , s] = (await t.jwt()).split('.');
    const token = `${h}.${b64url({ ...validClaims(t), sub: 'admin' })}.${s}`;
    assertError(await exchange(t, token), 'hub-sdk-token-invalid', 401);
  });

  test('replay with the same jti (different token) → hub-sdk-token-invalid', async () => {
    const jti = `jti-${Date.now()}`;
    const first = await t.jwt({ jti, sub: 'replay-a' });
    const second = await t.jwt({ jti, sub: 'replay-b' });
    assert.notEqual(first, second);
    assertTokens(await exchange(t, first));
    const body = assertError(await exchange(t, second), 'hub-sdk-token-invalid', 401);
    assert.match(body.error.details, /already used/);
    assertError(await exchange(t, first), 'hub-sdk-token-invalid', 401);
  });

  test('replay of the same token without jti → hub-sdk-token-invalid; distinct jti-less tokens still work', async () => {
    const token = await t.jwt({ jti: null, sub: 'no-jti' });
    assertTokens(await exchange(t, token));
    assertError(await exchange(t, token), 'hub-sdk-token-invalid', 401);
    assertTokens(await exchange(t, await t.jwt({ jti: null, sub: 'no-jti-2' })));
  });

  test('a re-spelt JWT (padding, a non-zero unused bit, in header, payload or signature) is refused, so a jti-less token cannot be replayed that way', async () => {
    const token = await t.jwt({ jti: null, sub: 'respelt' });
    const variants = respellings(token);
    // The signature (256 bytes: 342 characters, 4 unused bits) always has both re-spellings.
    assert.ok(variants.filter((v) => v.what.startsWith('part 2')).length === 2, variants.map((v) => v.what).join());
    assertTokens(await exchange(t, token));
    for (const v of variants) {
      const i = Number(v.what[5]);
      assert.ok(sameBytes(v.token.split('.')[i]!, token.split('.')[i]!), v.what);
      // Before the fix the re-spelt signatures were new tokens to the replay cache: a second session.
      const body = assertError(await exchange(t, v.token), 'hub-sdk-token-invalid', 401);
      assert.match(body.error.details, /canonical base64url/, v.what);
    }
    // Nor is a re-spelling a token of its own before the original was used.
    const fresh = await t.jwt({ jti: null, sub: 'respelt-2' });
    for (const v of respellings(fresh)) assertError(await exchange(t, v.token), 'hub-sdk-token-invalid', 401);
    assertTokens(await exchange(t, fresh));
    assertError(await exchange(t, token), 'hub-sdk-token-invalid', 401);
  });

  test('a jti-less token is single use by its claims: the same payload signed again under another of the partner\'s keys is a replay', async () => {
    const second = await makeKey();
    await t.hub.stores.partners.update(t.partner.id, { jwks: { keys: [t.key.publicJwk, second.publicJwk] } }, t.clock.now());
    const iat = Math.floor(t.clock.now() / 1000);
    const first = await t.jwt({ jti: null, sub: 'same-claims', iat });
    const other = await signPartnerJwt(t.clock.now(), { key: second, issuer: t.partner.issuer, jti: null, sub: 'same-claims', iat });
    assert.equal(first.split('.')[1], other.split('.')[1]);
    assert.notEqual(first.split('.')[0], other.split('.')[0]);
    assertTokens(await exchange(t, first));
    const body = assertError(await exchange(t, other), 'hub-sdk-token-invalid', 401);
    assert.match(body.error.details, /already used/);
  });

  test('replay-cache entries live until the token could no longer pass: min(exp, iat + maxTokenAge) + 30 s, even with exp years ahead', async () => {
    const seen: number[] = [];
    const replay = t.hub.stores.replay;
    const remember = replay.remember.bind(replay);
    replay.remember = (key, until, now) => {
      seen.push(until);
      return remember(key, until, now);
    };
    try {
      const iat = Math.floor(t.clock.now() / 1000);
      assertTokens(await exchange(t, await t.jwt({ sub: 'far-exp', iat, exp: iat + 10 * 365 * 86400 })));
      assertTokens(await exchange(t, await t.jwt({ jti: null, sub: 'far-exp-2', iat, exp: iat + 10 * 365 * 86400 })));
      assertTokens(await exchange(t, await t.jwt({ sub: 'near-exp', iat, exp: iat + 60 })));
    } finally {
      replay.remember = remember;
    }
    const iat = Math.floor(t.clock.now() / 1000);
    assert.deepEqual(seen, [(iat + 3600 + 30) * 1000, (iat + 3600 + 30) * 1000, (iat + 60 + 30) * 1000]);
  });

  test('a rejected request does not burn the JWT: a bad JSON body, then the same JWT works', async () => {
    const token = await t.jwt();
    const res = await exchange(t, token, '{"email": ');
    assertError(res, 'hub-validation-error', 400);
    assertTokens(await exchange(t, token));
  });

  test('email only in the JSON body works', async () => {
    const { access_token } = assertTokens(await exchange(t, await t.jwt({ email: null, sub: 'body-email' }), { email: 'body@example.com' }));
    assert.equal((await checkToken(t, access_token)).user.email, 'body@example.com');
  });

  test('the JWT email wins over the body email', async () => {
    const { access_token } = assertTokens(await exchange(t, await t.jwt({ email: 'jwt@example.com', sub: 'both-emails' }), { email: 'body@example.com' }));
    assert.equal((await checkToken(t, access_token)).user.email, 'jwt@example.com');
  });

  test('no email anywhere → hub-sdk-email-missing 400', async () => {
    assertError(await exchange(t, await t.jwt({ email: null })), 'hub-sdk-email-missing', 400);
    assertError(await exchange(t, await t.jwt({ email: null }), {}), 'hub-sdk-email-missing', 400);
    assertError(await exchange(t, await t.jwt({ email: null }), 'null'), 'hub-sdk-email-missing', 400);
  });

  test('malformed email → hub-sdk-email-missing', async () => {
    assertError(await exchange(t, await t.jwt({ email: 'not-an-email' })), 'hub-sdk-email-missing', 400);
    assertError(await exchange(t, await t.jwt({ email: null }), { email: 'two words@example.com' }), 'hub-sdk-email-missing', 400);
    assertError(await exchange(t, await t.jwt({ email: 42 as unknown as string })), 'hub-sdk-email-missing', 400);
  });

  test('body that is not JSON with content-type application/json → hub-validation-error 400', async () => {
    assertError(await exchange(t, await t.jwt(), 'this is not json'), 'hub-validation-error', 400);
  });

  test('a body email that is not a string → hub-validation-error', async () => {
    const body = assertError(await exchange(t, await t.jwt({ email: null }), { email: { address: 'a@example.com' } }), 'hub-validation-error', 400);
    assert.match(body.error.details, /email/);
  });

  test('the same sub twice → the same user; the profile follows the latest JWT', async () => {
    const a = assertTokens(await exchange(t, await t.jwt({ sub: 'stable', extra: { given_name: 'Ada', family_name: 'Lovelace' } })));
    const ca = await checkToken(t, a.access_token);
    assert.equal(ca.user.name, 'Ada Lovelace');
    assert.equal(ca.user.givenName, 'Ada');
    assert.equal(ca.user.email, 'user1@example.com');
    assert.equal(ca.account.id, t.partner.id);
    const b = assertTokens(await exchange(t, await t.jwt({ sub: 'stable', email: 'ada@example.com', extra: { name: 'Countess Lovelace' } })));
    const cb = await checkToken(t, b.access_token);
    assert.equal(cb.user.id, ca.user.id);
    assert.equal(cb.userHash, ca.userHash);
    assert.equal(cb.user.email, 'ada@example.com');
    assert.equal(cb.user.name, 'Countess Lovelace');
    const other = await checkToken(t, assertTokens(await exchange(t, await t.jwt({ sub: 'someone-else' }))).access_token);
    assert.notEqual(other.user.id, ca.user.id);
    assert.notEqual(other.userHash, ca.userHash);
  });

  test('another partner with the same sub → a different user', async () => {
    const keyB = await makeKey();
    const b = await addPartner(t, { id: 'p-same-sub', issuer: 'https://same-sub.example/', key: keyB });
    const fromA = await checkToken(t, assertTokens(await exchange(t, await t.jwt({ sub: 'shared-sub' }))).access_token);
    const tokenB = await signPartnerJwt(t.clock.now(), { key: keyB, issuer: b.issuer, sub: 'shared-sub' });
    const fromB = await checkToken(t, assertTokens(await exchange(t, tokenB)).access_token);
    assert.notEqual(fromA.user.id, fromB.user.id);
    assert.equal(fromA.account.id, t.partner.id);
    assert.equal(fromB.account.id, 'p-same-sub');
    assert.notEqual(fromA.userHash, fromB.userHash);
  });

  test('a token signed with partner A\'s key never works as partner B', async () => {
    const keyB = await makeKey();
    const b = await addPartner(t, { id: 'p-victim', issuer: 'https://victim.example/', key: keyB });
    // A's key and kid, B's issuer: the kid is not in B's JWKS.
    assertError(await exchange(t, await signPartnerJwt(t.clock.now(), { key: t.key, issuer: b.issuer })), 'hub-sdk-token-invalid', 401);
    // Even when B's key happens to carry the same kid as A's, the signature does not verify.
    const keyC = await makeKey(t.key.kid);
    const c = await addPartner(t, { id: 'p-kid-clash', issuer: 'https://kid-clash.example/', key: keyC });
    assertError(await exchange(t, await signPartnerJwt(t.clock.now(), { key: t.key, issuer: c.issuer })), 'hub-sdk-token-invalid', 401);
    // And B's own key works for B.
    assertTokens(await exchange(t, await signPartnerJwt(t.clock.now(), { key: keyC, issuer: c.issuer })));
  });
});

test('iat older than maxTokenAge → hub-sdk-token-invalid', async () => {
  const t = await startTestHub();
  try {
    const now = Math.floor(t.clock.now() / 1000);
    const atLimit = await t.jwt({ exp: now + 7200 });
    const tooOld = await t.jwt({ exp: now + 7200 });
    t.clock.advance(3600_000);
    assertTokens(await exchange(t, atLimit));
    t.clock.advance(1000);
    const body = assertError(await exchange(t, tooOld), 'hub-sdk-token-invalid', 401);
    assert.match(body.error.details, /maxTokenAge/);
  } finally {
    await t.close();
  }
});

test('maxTokenAge follows the partner registration', async () => {
  const t = await startTestHub({ partner: { maxTokenAgeSec: 60 } });
  try {
    const a = await t.jwt();
    const b = await t.jwt();
    t.clock.advance(60_000);
    assertTokens(await exchange(t, a));
    t.clock.advance(1000);
    assertError(await exchange(t, b), 'hub-sdk-token-invalid', 401);
  } finally {
    await t.close();
  }
});

test('a JWKS key that is not an RSA key (symmetric, EC, no modulus) → hub-sdk-token-invalid, never a 500', async () => {
  const t = await startTestHub();
  try {
    const { publicKey } = await generateKeyPair('ES256', { extractable: true });
    const keys = [
      { kty: 'oct', k: Buffer.from('a shared secret of sufficient length').toString('base64url'), kid: 'sym' },
      { ...(await exportJWK(publicKey)), kid: 'ec' },
      { kty: 'RSA', kid: 'no-modulus' },
    ];
    await t.hub.stores.partners.update(t.partner.id, { jwks: { keys: [t.key.publicJwk, ...keys] } }, t.clock.now());
    for (const { kid } of keys) {
      const body = assertError(await exchange(t, await t.jwt({ kid })), 'hub-sdk-token-invalid', 401);
      assert.match(body.error.details, new RegExp(`${kid} is not an RSA signing key`));
    }
    // HS256 with the symmetric key's own secret is still refused by alg.
    const hs = handMadeJwt({ alg: 'HS256', kid: 'sym' }, validClaims(t), (input) => createHmac('sha256', 'a shared secret of sufficient length').update(input).digest('base64url'));
    assertError(await exchange(t, hs), 'hub-sdk-token-invalid', 401);
    assertTokens(await exchange(t, await t.jwt()));
  } finally {
    await t.close();
  }
});

test('a disabled partner → hub-sdk-partner-unknown; re-enabled works again', async () => {
  const t = await startTestHub();
  try {
    assertTokens(await exchange(t, await t.jwt()));
    await t.hub.stores.partners.update(t.partner.id, { enabled: false }, t.clock.now());
    assertError(await exchange(t, await t.jwt()), 'hub-sdk-partner-unknown', 403);
    await t.hub.stores.partners.update(t.partner.id, { enabled: true }, t.clock.now());
    assertTokens(await exchange(t, await t.jwt()));
  } finally {
    await t.close();
  }
});

test('a removed partner: its existing access token → hub-access-token-invalid, its JWTs → partner-unknown', async () => {
  const t = await startTestHub();
  try {
    const { access_token } = await t.login();
    await checkToken(t, access_token);
    assert.equal(await t.hub.stores.partners.remove(t.partner.id), true);
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/auth/checkToken', headers: { authorization: bearer(access_token) } });
    assertError(res, 'hub-access-token-invalid', 401);
    assertError(await exchange(t, await t.jwt()), 'hub-sdk-partner-unknown', 403);
  } finally {
    await t.close();
  }
});

test('rate limit: 3/min → the 4th exchange is 429 with Retry-After and RateLimit headers; 60 s later it is restored', async () => {
  const t = await startTestHub({ partner: { rateLimitPerMin: 3 } });
  try {
    const burst = async () => {
      const results: LightMyRequestResponse[] = [];
      for (let i = 0; i < 4; i++) results.push(await exchange(t, await t.jwt()));
      return results;
    };
    const first = await burst();
    assert.deepEqual(first.map((r) => r.statusCode), [200, 200, 200, 429]);
    assert.deepEqual(first.slice(0, 3).map((r) => r.headers['ratelimit-remaining']), ['2', '1', '0']);
    for (const r of first.slice(0, 3)) assert.equal(r.headers['ratelimit-limit'], '3');
    const limited = first[3]!;
    const body = assertError(limited, 'hub-rate-limited', 429);
    assert.match(body.error.details, /limit of 3 per minute/);
    assert.equal(limited.headers['retry-after'], '20');
    assert.equal(limited.headers['ratelimit-limit'], '3');
    assert.equal(limited.headers['ratelimit-remaining'], '0');
    assert.equal(limited.headers['ratelimit-reset'], '60');

    // One slot comes back every 20 s.
    t.clock.advance(19_999);
    assertError(await exchange(t, await t.jwt()), 'hub-rate-limited', 429);
    t.clock.advance(1);
    assertTokens(await exchange(t, await t.jwt()));
    assertError(await exchange(t, await t.jwt()), 'hub-rate-limited', 429);

    // A full minute later the whole budget is back.
    t.clock.advance(60_000);
    const again = await burst();
    assert.deepEqual(again.map((r) => r.statusCode), [200, 200, 200, 429]);
  } finally {
    await t.close();
  }
});

test('rate limit 9/min (an interval that is not a whole number of ms) → exactly 9 exchanges in a burst', async () => {
  const t = await startTestHub({ partner: { rateLimitPerMin: 9 } });
  try {
    const statuses: number[] = [];
    const remaining: unknown[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await exchange(t, await t.jwt());
      statuses.push(res.statusCode);
      if (res.statusCode === 200) remaining.push(res.headers['ratelimit-remaining']);
    }
    assert.deepEqual(statuses, [...Array(9).fill(200), 429]);
    assert.deepEqual(remaining, ['8', '7', '6', '5', '4', '3', '2', '1', '0']);
  } finally {
    await t.close();
  }
});

test('rate limit is per partner', async () => {
  const t = await startTestHub({ partner: { rateLimitPerMin: 1 } });
  try {
    const keyB = await makeKey();
    const b = await addPartner(t, { id: 'p-other', issuer: 'https://other.example/', key: keyB, rateLimitPerMin: 1 });
    assertTokens(await exchange(t, await t.jwt()));
    assertError(await exchange(t, await t.jwt()), 'hub-rate-limited', 429);
    assertTokens(await exchange(t, await signPartnerJwt(t.clock.now(), { key: keyB, issuer: b.issuer })));
  } finally {
    await t.close();
  }
});

describe('JWKS by URL', () => {
  async function setup(config: Parameters<typeof startTestHub>[0] = {}) {
    const server = new JwksServer();
    const url = await server.start();
    const t = await startTestHub({ ...config, partner: { jwksUrl: url, jwks: null } });
    server.keys = [t.key.publicJwk];
    return { server, t, url };
  }

  test('keys are fetched on first use and cached', async () => {
    const { server, t } = await setup();
    try {
      assert.equal(server.fetches, 0);
      assertTokens(await exchange(t, await t.jwt()));
      assert.equal(server.fetches, 1);
      assertTokens(await exchange(t, await t.jwt()));
      assert.equal(server.fetches, 1);
    } finally {
      await t.close();
      await server.stop();
    }
  });

  test('an unknown kid triggers exactly one refetch (after the cooldown); a rotated key then works', async () => {
    const { server, t } = await setup();
    try {
      assertTokens(await exchange(t, await t.jwt()));
      assert.equal(server.fetches, 1);

      // The partner rotates its key.
      const next = await makeKey();
      server.keys = [next.publicJwk];
      const signNext = () => signPartnerJwt(t.clock.now(), { key: next, issuer: t.partner.issuer });

      // Within the 10 s cooldown after a fetch, an unknown kid does not refetch.
      assertError(await exchange(t, await signNext()), 'hub-sdk-token-invalid', 401);
      assert.equal(server.fetches, 1);

      t.clock.advance(10_000);
      assertTokens(await exchange(t, await signNext()));
      assert.equal(server.fetches, 2, 'exactly one refetch');
      assertTokens(await exchange(t, await signNext()));
      assert.equal(server.fetches, 2);

      // The retired key is gone; no new fetch right after the last one.
      assertError(await exchange(t, await t.jwt()), 'hub-sdk-token-invalid', 401);
      assert.equal(server.fetches, 2);

      // A kid the partner never had: one refetch per lookup, then the cooldown holds.
      t.clock.advance(10_000);
      assertError(await exchange(t, await t.jwt({ kid: 'never-existed' })), 'hub-sdk-token-invalid', 401);
      assert.equal(server.fetches, 3);
      for (let i = 0; i < 5; i++) assertError(await exchange(t, await t.jwt({ kid: `random-${i}` })), 'hub-sdk-token-invalid', 401);
      assert.equal(server.fetches, 3);
    } finally {
      await t.close();
      await server.stop();
    }
  });

  test('the cache expires after 10 minutes', async () => {
    const { server, t } = await setup();
    try {
      assertTokens(await exchange(t, await t.jwt()));
      assert.equal(server.fetches, 1);
      t.clock.advance(599_000);
      assertTokens(await exchange(t, await t.jwt()));
      assert.equal(server.fetches, 1);
      t.clock.advance(1_000);
      assertTokens(await exchange(t, await t.jwt()));
      assert.equal(server.fetches, 2);
      assertTokens(await exchange(t, await t.jwt()));
      assert.equal(server.fetches, 2);
    } finally {
      await t.close();
      await server.stop();
    }
  });

  test('editing the partner invalidates its cached JWKS', async () => {
    const { server, t, url } = await setup();
    try {
      assertTokens(await exchange(t, await t.jwt()));
      assert.equal(server.fetches, 1);
      t.clock.advance(1_000);
      await t.hub.stores.partners.update(t.partner.id, { jwksUrl: url }, t.clock.now());
      assertTokens(await exchange(t, await t.jwt()));
      assert.equal(server.fetches, 2);
    } finally {
      await t.close();
      await server.stop();
    }
  });

  test('a JWKS over 64 KiB → hub-unavailable 503', async () => {
    const { server, t } = await setup();
    try {
      server.mode = 'huge';
      const body = assertError(await exchange(t, await t.jwt()), 'hub-unavailable', 503);
      assert.match(body.error.details, /larger than 65536 bytes/);
    } finally {
      await t.close();
      await server.stop();
    }
  });

  test('a JWKS server answering 500 → hub-unavailable 503, and a later success is not blocked', async () => {
    const { server, t } = await setup();
    try {
      server.mode = 'error';
      const body = assertError(await exchange(t, await t.jwt()), 'hub-unavailable', 503);
      assert.match(body.error.details, /HTTP 500/);
      server.mode = 'ok';
      assertTokens(await exchange(t, await t.jwt()));
    } finally {
      await t.close();
      await server.stop();
    }
  });

  test('a JWKS that is not a key set → hub-unavailable 503', async () => {
    const { server, t } = await setup();
    try {
      server.keys = 'nope' as unknown as [];
      assertError(await exchange(t, await t.jwt()), 'hub-unavailable', 503);
    } finally {
      await t.close();
      await server.stop();
    }
  });

  test('a slow JWKS server → hub-unavailable 503 within the configured timeout', async () => {
    const { server, t } = await setup({ config: { jwksTimeoutMs: 300 } });
    try {
      server.mode = 'slow';
      const started = performance.now();
      const body = assertError(await exchange(t, await t.jwt()), 'hub-unavailable', 503);
      const elapsed = performance.now() - started;
      assert.match(body.error.details, /timed out/);
      assert.ok(elapsed >= 250, `gave up too early (${elapsed} ms)`);
      assert.ok(elapsed < 2_000, `took ${elapsed} ms, the timeout is 300 ms`);
    } finally {
      await t.close();
      await server.stop();
    }
  });

  test('an unreachable JWKS URL → hub-unavailable 503', async () => {
    const server = new JwksServer();
    const url = await server.start();
    await server.stop();
    const t = await startTestHub({ partner: { jwksUrl: url, jwks: null } });
    try {
      assertError(await exchange(t, await t.jwt()), 'hub-unavailable', 503);
    } finally {
      await t.close();
    }
  });
});
