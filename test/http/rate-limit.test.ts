/** The per-user limit on content calls: RateLimit-* headers, one 429 past the budget, refill by the clock. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertError, startTestHub } from '../helpers/hub.js';
import { testProvider } from '../helpers/test-provider.js';

test('content calls are limited per user, with headers, and the budget refills over time', async (t) => {
  const hub = await startTestHub({ providers: [testProvider()], config: { userRateLimitPerMin: 5 } });
  t.after(() => hub.close());
  const { access_token } = await hub.login();
  const start = (await hub.app.inject({ method: 'POST', url: '/api/v1/auth/login?provider=testdam&polling=true', headers: { authorization: `Bearer ${access_token}` } })).json();
  await hub.app.inject({ method: 'POST', url: '/api/v1/auth/testdam/signin', payload: { state: start.state, user: 'u', password: 'secret' } });
  const dam = (await hub.app.inject({ url: `/api/v1/auth/login?state=${start.state}&polling=true` })).json().access_token;
  const call = () => hub.app.inject({ url: '/api/v1/system/providerInfo', headers: { authorization: `Bearer ${access_token}`, 'provider-authorization': `Bearer ${dam}` } });

  const remaining: string[] = [];
  for (let i = 0; i < 5; i++) {
    const r = await call();
    assert.equal(r.statusCode, 200);
    assert.equal(r.headers['ratelimit-limit'], '5');
    remaining.push(String(r.headers['ratelimit-remaining']));
  }
  assert.deepEqual(remaining, ['4', '3', '2', '1', '0']);
  const limited = await call();
  assertError(limited, 'hub-rate-limited', 429);
  assert.equal(limited.headers['retry-after'], '12');
  assert.equal(limited.headers['ratelimit-remaining'], '0');

  // Another user has a budget of their own.
  const other = await hub.login({ sub: 'someone-else' });
  const r2 = await hub.app.inject({ url: '/api/v1/system/providerInfo', headers: { authorization: `Bearer ${other.access_token}` } });
  assert.equal(r2.statusCode, 403, 'limited only by their own missing DAM token, not by the first user\'s budget');

  hub.clock.advance(12_000);
  assert.equal((await call()).statusCode, 200, 'one request per 12 s refills');
  assertError(await call(), 'hub-rate-limited', 429);
});
