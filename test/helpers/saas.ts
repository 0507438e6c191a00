/**
 * Signs a hub user in to an OAuth connector whose authorization endpoint (a loopback replay
 * server) consents at once: POST /auth/login, follow the popup to the callback, poll the tokens.
 */
import assert from 'node:assert/strict';
import { bearer, type TestHub } from './hub.js';

export async function oauthSignIn(t: TestHub, providerId: string, hubAccess: string): Promise<{ access_token: string; refresh_token?: string }> {
  const start = await t.app.inject({ method: 'POST', url: `/api/v1/auth/login?provider=${providerId}&polling=true`, headers: { authorization: bearer(hubAccess) } });
  assert.equal(start.statusCode, 200, start.body);
  const { state, redirect_uri } = start.json();
  const consent = await fetch(redirect_uri, { redirect: 'manual' });
  const back = new URL(consent.headers.get('location')!);
  assert.equal(back.pathname, `/api/v1/auth/callback/${providerId}`);
  const cb = await t.app.inject({ method: 'GET', url: `${back.pathname}${back.search}` });
  assert.equal(cb.statusCode, 200, cb.body);
  const poll = await t.app.inject({ method: 'GET', url: `/api/v1/auth/login?state=${encodeURIComponent(state)}&polling=true` });
  const tokens = poll.json();
  assert.equal(typeof tokens.access_token, 'string', poll.body);
  return tokens;
}
