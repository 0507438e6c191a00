/**
 * Fault injection, part 1: a provider that hangs, errors, is slow, is down or answers garbage
 * (test/helpers/fault-provider.ts, registered through the normal provider registry), and a clock
 * that jumps. After each fault the hub keeps serving what does not depend on it, answers the rest
 * with the right envelope quickly, loses nothing it committed and recovers by itself.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { faultProvider, type FaultMode, type FaultProvider } from '../helpers/fault-provider.js';
import { assertError, bearer, startTestHub, type TestHub } from '../helpers/hub.js';
import { recordFigure } from '../helpers/figures.js';

const TIMEOUT_MS = 150;
let t: TestHub;
let fp: FaultProvider;
let access: string;
let dam: string;
let damRefresh: string;
let faults = 0;

async function damLogin(h: TestHub, accessToken: string, providerId: string): Promise<{ access_token: string; refresh_token: string }> {
  const start = await h.app.inject({ method: 'POST', url: `/api/v1/auth/login?provider=${providerId}&polling=true`, headers: { authorization: bearer(accessToken) } });
  assert.equal(start.statusCode, 200, start.body);
  const { state } = start.json();
  const form = await h.app.inject({ method: 'POST', url: `/api/v1/auth/${providerId}/signin`, payload: { state, user: 'u1', password: 'secret' } });
  assert.equal(form.json().ok, true, form.body);
  const poll = await h.app.inject({ url: `/api/v1/auth/login?state=${encodeURIComponent(state)}&polling=true` });
  assert.ok(poll.json().access_token, poll.body);
  return poll.json();
}

before(async () => {
  fp = faultProvider();
  t = await startTestHub({ providers: [fp], config: { providerTimeoutMs: TIMEOUT_MS, userRateLimitPerMin: 0 }, partner: { rateLimitPerMin: 10_000 } });
  const pair = await t.login();
  access = pair.access_token;
  const d = await damLogin(t, access, fp.descriptor.id);
  dam = d.access_token;
  damRefresh = d.refresh_token;
});

after(async () => {
  await t?.close();
  recordFigure('faults', 'provider and clock faults injected', faults);
});

const content = (url: string) => t.app.inject({ url, headers: { authorization: bearer(access), 'provider-authorization': bearer(dam) } });
const CONTENT_URLS = ['/api/v1/assets/folder/root', '/api/v1/assets/search?query=x', '/api/v1/assets/asset/a1', '/api/v1/system/providerInfo'];

/** What does not depend on the provider keeps answering. */
async function hubStillServes(): Promise<void> {
  assert.equal((await t.app.inject({ url: '/healthz' })).statusCode, 200);
  assert.equal((await t.app.inject({ url: '/api/v1/auth/checkToken', headers: { authorization: bearer(access) } })).statusCode, 200);
  assert.equal((await t.app.inject({ url: '/api/v1/auth/providers', headers: { authorization: bearer(access) } })).statusCode, 200);
}

async function recovers(): Promise<void> {
  fp.mode = 'ok';
  for (const url of CONTENT_URLS) {
    const res = await content(url);
    assert.equal(res.statusCode, 200, `${url} after recovery: ${res.body}`);
  }
}

describe('a provider that misbehaves', () => {
  const expected: Record<Exclude<FaultMode, 'ok' | 'slow' | 'garbage'>, { code: string; status: number; source: 'hub' | 'integration' }> = {
    hang: { code: 'integration-unavailable', status: 504, source: 'integration' },
    down: { code: 'integration-unavailable', status: 503, source: 'integration' },
    error: { code: 'hub-internal-error', status: 500, source: 'hub' },
  };
  for (const [mode, want] of Object.entries(expected)) {
    test(`${mode}: every content call answers ${want.status} ${want.code}; the rest of the hub serves; it recovers by itself`, async () => {
      fp.mode = mode as FaultMode;
      for (const url of CONTENT_URLS) {
        faults++;
        const res = await content(url);
        const body = assertError(res, want.code, want.status, want.source);
        if (want.source === 'integration') assert.equal(body.error.provider, fp.descriptor.id);
        assert.ok(!res.body.includes('injected') || mode === 'down', 'a connector bug\'s message stays in the log');
        await hubStillServes();
      }
      await recovers();
    });
  }

  test('hang: requests do not pile up behind a hung provider (each one ends at the deadline)', async () => {
    fp.mode = 'hang';
    const before = fp.hanging;
    const answers = await Promise.all(Array.from({ length: 20 }, () => content('/api/v1/assets/folder/root')));
    faults += answers.length;
    for (const res of answers) assertError(res, 'integration-unavailable', 504, 'integration');
    assert.equal(fp.hanging - before, 20);
    await hubStillServes();
    await recovers();
  });

  test('hang during a DAM connection refresh: 504 integration-unavailable, the old connection token still works afterwards', async () => {
    fp.mode = 'hang';
    faults++;
    const res = await t.app.inject({ url: '/api/v1/auth/refreshToken', headers: { authorization: bearer(access), 'provider-authorization': bearer(damRefresh) } });
    assertError(res, 'integration-unavailable', 504, 'integration');
    await recovers();
    const again = await t.app.inject({ url: '/api/v1/auth/refreshToken', headers: { authorization: bearer(access), 'provider-authorization': bearer(damRefresh) } });
    assert.equal(again.statusCode, 200, again.body);
  });

  test('slow (under the deadline): answered normally', async () => {
    fp.mode = 'slow';
    for (const url of CONTENT_URLS) {
      faults++;
      assert.equal((await content(url)).statusCode, 200);
    }
  });

  test('garbage: a 5xx envelope (never 200 with a broken body, never a stack or the garbage itself); recovers', async () => {
    fp.mode = 'garbage';
    for (let i = 0; i < 12; i++) {
      for (const url of CONTENT_URLS.slice(0, 3)) {
        faults++;
        const res = await content(url);
        assert.ok(res.statusCode >= 500, `${url} with garbage answered ${res.statusCode}: ${res.body}`);
        const body = assertError(res, res.json().errorCode, res.statusCode, res.json().error.source);
        assert.ok(['hub-internal-error', 'integration-unavailable'].includes(body.errorCode), res.body);
        assert.ok(!res.body.includes('not a page') && !res.body.includes('deep'), res.body);
      }
    }
    await hubStillServes();
    await recovers();
  });
});

describe('a clock jump', () => {
  test('forward 2 days: access tokens and DAM connections expire cleanly (401/403), refresh and a new exchange work', async () => {
    faults++;
    const h = await startTestHub({ providers: [faultProvider()], partner: { rateLimitPerMin: 10_000 } });
    try {
      const pair = await h.login();
      const d = await damLogin(h, pair.access_token, 'faulty');
      h.clock.advance(2 * 24 * 3600_000);
      assertError(await h.app.inject({ url: '/api/v1/auth/checkToken', headers: { authorization: bearer(pair.access_token) } }), 'hub-access-token-invalid', 401);
      const ref = await h.app.inject({ url: '/api/v1/auth/refreshToken', headers: { authorization: bearer(pair.access_token), 'provider-authorization': bearer(pair.refresh_token) } });
      assert.equal(ref.statusCode, 200, ref.body);
      const fresh = ref.json().access_token;
      assertError(await h.app.inject({ url: '/api/v1/assets/folder/root', headers: { authorization: bearer(fresh), 'provider-authorization': bearer(d.access_token) } }), 'provider-access-token-invalid', 403);
      assert.equal((await h.app.inject({ url: '/api/v1/auth/checkToken', headers: { authorization: bearer(fresh) } })).statusCode, 200);
      await h.login({ sub: 'after-jump' });
    } finally {
      await h.close();
    }
  });

  test('backwards 1 day: tokens issued "in the future" still verify, exchange and refresh work, rate limits do not lock anyone out', async () => {
    faults++;
    const h = await startTestHub({ providers: [faultProvider()], partner: { rateLimitPerMin: 5 } });
    try {
      const pair = await h.login();
      for (let i = 0; i < 3; i++) await h.login({ sub: `u${i}` });
      h.clock.advance(-24 * 3600_000);
      assert.equal((await h.app.inject({ url: '/api/v1/auth/checkToken', headers: { authorization: bearer(pair.access_token) } })).statusCode, 200);
      const ref = await h.app.inject({ url: '/api/v1/auth/refreshToken', headers: { authorization: bearer(pair.access_token), 'provider-authorization': bearer(pair.refresh_token) } });
      assert.equal(ref.statusCode, 200, ref.body);
      // The jump may cost at most one period (a limiter cannot tell a jump from a burst), never its length.
      const limited = await h.app.inject({ method: 'POST', url: '/api/v1/auth/exchangeToken', headers: { authorization: bearer(await h.jwt({ sub: 'back-2' })) } });
      if (limited.statusCode !== 200) {
        assertError(limited, 'hub-rate-limited', 429);
        assert.ok(Number(limited.headers['retry-after']) <= 60, `Retry-After ${limited.headers['retry-after']} must not grow by the jump`);
      }
      h.clock.advance(60_000);
      await h.login({ sub: 'back-3' });
    } finally {
      await h.close();
    }
  });
});

test('gcra: a theoretical arrival time a day ahead (clock jumped back) refuses for at most one period', async () => {
  const { gcra } = await import('../../src/stores/gcra.js');
  const now = Date.UTC(2026, 0, 1);
  const r = gcra(now + 24 * 3600_000, 5, 60_000, now);
  assert.equal(r.decision.allowed, false);
  assert.ok(r.decision.retryAfterSec <= 60, `retry after ${r.decision.retryAfterSec} s`);
  assert.equal(gcra(r.tat, 5, 60_000, now + 60_000).decision.allowed, true);
});
