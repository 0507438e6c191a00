/** Shared setup of the Canto tests: a hub serving the connector over its replay, signed in through the tenant's serverUrl. */
import assert from 'node:assert/strict';
import { cantoConnector, type CantoOptions } from '../../../src/providers/canto/provider.js';
import type { ConnectorDeps } from '../../../src/providers/kit/define.js';
import type { UpstreamSettings } from '../../../src/providers/kit/http.js';
import { bearer, type TestHub } from '../../helpers/hub.js';
import { startConnectorHub } from '../../helpers/saas.js';

/** The connector as the catalog builds it with `DAMHUB_CANTO_ENDPOINTS={"oauth": <replay>}`: the replay is the US region's OAuth host and a tenant. */
export function connectorFor(replayUrl: string, extra: Partial<CantoOptions> = {}) {
  return cantoConnector({ clientId: 'canto-app', clientSecret: 'canto-secret', allowInsecureRequests: true, endpoints: { oauth: replayUrl }, ...extra });
}

export async function startCantoHub(replayUrl: string, upstream: Partial<UpstreamSettings> = {}, seams: Partial<ConnectorDeps> = {}) {
  const factory = connectorFor(replayUrl);
  return startConnectorHub((deps) => factory({ ...deps, ...seams }), upstream);
}

/** POST /auth/login with the tenant's serverUrl, the popup through the replay's consent, the poll. */
export async function cantoSignIn(t: TestHub, hubAccess: string, serverUrl: string): Promise<{ access_token: string; refresh_token?: string }> {
  const start = await t.app.inject({ method: 'POST', url: `/api/v1/auth/login?provider=canto&polling=true&serverUrl=${encodeURIComponent(serverUrl)}`, headers: { authorization: bearer(hubAccess) } });
  assert.equal(start.statusCode, 200, start.body);
  const { state, redirect_uri } = start.json();
  const consent = await fetch(redirect_uri, { redirect: 'manual' });
  const back = new URL(consent.headers.get('location')!);
  assert.equal(back.pathname, '/api/v1/auth/callback/canto');
  const cb = await t.app.inject({ method: 'GET', url: `${back.pathname}${back.search}` });
  const poll = await t.app.inject({ method: 'GET', url: `/api/v1/auth/login?state=${encodeURIComponent(state)}&polling=true` });
  assert.equal(cb.statusCode, 200, poll.body);
  const tokens = poll.json();
  assert.equal(typeof tokens.access_token, 'string', poll.body);
  return tokens;
}
