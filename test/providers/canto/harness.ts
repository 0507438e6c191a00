/** Shared setup of the Canto tests: a hub serving the connector over its replay, signed in through the tenant's serverUrl. */
import { cantoConnector, type CantoOptions } from '../../../src/providers/canto/provider.js';
import type { ConnectorDeps } from '../../../src/providers/kit/define.js';
import type { UpstreamSettings } from '../../../src/providers/kit/http.js';
import type { TestHub } from '../../helpers/hub.js';
import { oauthBrowserSignIn } from '../../helpers/browser.js';
import { startConnectorHub } from '../../helpers/saas.js';

/** The connector as the catalog builds it with `DAMHUB_CANTO_ENDPOINTS={"oauth": <replay>}`: the replay is the US region's OAuth host and a tenant. */
export function connectorFor(replayUrl: string, extra: Partial<CantoOptions> = {}) {
  return cantoConnector({ clientId: 'canto-app', clientSecret: 'canto-secret', allowInsecureRequests: true, endpoints: { oauth: replayUrl }, ...extra });
}

export async function startCantoHub(replayUrl: string, upstream: Partial<UpstreamSettings> = {}, seams: Partial<ConnectorDeps> = {}) {
  const factory = connectorFor(replayUrl);
  return startConnectorHub((deps) => factory({ ...deps, ...seams }), upstream);
}

/** POST /auth/login with the tenant's serverUrl, the confirm page, the replay's consent, the callback, the poll (test/helpers/browser.ts). */
export async function cantoSignIn(t: TestHub, hubAccess: string, serverUrl: string): Promise<{ access_token: string; refresh_token?: string }> {
  return (await oauthBrowserSignIn({ t }, 'canto', hubAccess, { serverUrl })).tokens;
}
