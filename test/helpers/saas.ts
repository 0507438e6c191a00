/**
 * Signs a hub user in to an OAuth connector whose authorization endpoint (a loopback replay
 * server) consents at once: POST /auth/login, the hub's confirm page and its Continue, the vendor,
 * the callback, the poll (test/helpers/browser.ts).
 */
import { after } from 'node:test';
import { loadOrCreateKeyRing } from '../../src/auth/keys.js';
import { ManualClock } from '../../src/clock.js';
import type { HubConfig } from '../../src/config.js';
import type { ConnectorDeps, DefinedConnector } from '../../src/providers/kit/define.js';
import type { UpstreamSettings } from '../../src/providers/kit/http.js';
import { runProviderConformance } from './provider-conformance.js';
import { bearer, startTestHub, tempDir, type TestHub } from './hub.js';
import { oauthBrowserSignIn } from './browser.js';

export async function oauthSignIn(t: TestHub, providerId: string, hubAccess: string): Promise<{ access_token: string; refresh_token?: string }> {
  // As a browser does it (test/helpers/browser.ts): the confirm page, Continue, the vendor, the callback.
  return (await oauthBrowserSignIn({ t }, providerId, hubAccess)).tokens;
}

/**
 * A test hub serving one kit connector built the way the hub builds it (same data dir, so the
 * same key ring; the hub's clock), reaching its loopback replay server.
 */
export async function startConnectorHub(factory: (deps: ConnectorDeps) => DefinedConnector, upstream: Partial<UpstreamSettings> = {}, opts: { config?: Partial<HubConfig>; clock?: ManualClock } = {}): Promise<{ t: TestHub; connector: DefinedConnector }> {
  const dataDir = tempDir();
  const clock = opts.clock ?? new ManualClock(Date.UTC(2026, 5, 1, 12));
  // Download links are checked against the hub's MediaAccess as the catalog wires it; the hub
  // exists only after the connector, so the check reaches it through `t`.
  let t: TestHub | undefined;
  const access = { check: (b: { partnerId: string; userId: string }, what: string) => t!.hub.mediaAccess.check(b, what) };
  const connector = factory({ clock, keys: loadOrCreateKeyRing(dataDir, clock.now()), publicUrl: opts.config?.publicUrl ?? 'http://hub.test', access, upstream: { allowHosts: ['127.0.0.1'], ...upstream } });
  // The hub closes every provider it registered, this one included.
  t = await startTestHub({ dataDir, clock, providers: [connector], ...(opts.config ? { config: opts.config } : {}) });
  return { t, connector };
}

/** A replay server of one vendor: its base URL, the ids it gave the tree's paths, and a close. */
interface Replay {
  url: string;
  ids: Record<string, string>;
  close(): Promise<void>;
}

/**
 * The provider conformance suite for an OAuth connector over its replay server: 23 assets in one
 * folder (three pages of 7), two subfolders, one asset with two revisions, signed in through the
 * connector's own OAuth flow.
 */
export function runSaasConformance(id: string, startReplay: (tree: string[], revisions: Record<string, number>) => Promise<Replay>, connectorFor: (replayUrl: string) => (deps: ConnectorDeps) => DefinedConnector): void {
  let replay: Replay | undefined;
  let t: TestHub | undefined;
  after(async () => {
    await t?.close();
    await replay?.close();
  });
  runProviderConformance(id, async () => {
    const tree = Array.from({ length: 23 }, (_, i) => `Photos/photo ${String(i).padStart(2, '0')}.jpg`);
    tree.push('Photos/Trips/photo beach.jpg', 'Photos/Sub/photo sub.jpg', 'Docs/readme.txt');
    const r = (replay = await startReplay(tree, { 'Photos/photo 03.jpg': 2 }));
    const built = await startConnectorHub(connectorFor(r.url));
    const hub = (t = built.t);
    const access = (await hub.login()).access_token;
    const dam = (await oauthSignIn(hub, id, access)).access_token;
    return {
      provider: built.connector,
      bigFolderId: r.ids['Photos']!,
      knownAssetId: r.ids['Photos/photo 03.jpg']!,
      pageSize: 7,
      commonTerm: 'photo',
      async request(method, p, body) {
        const res = await hub.app.inject({ method, url: `/api/v1${p}`, headers: { authorization: bearer(access), 'provider-authorization': bearer(dam) }, ...(body ? { payload: body as object } : {}) });
        return { status: res.statusCode, body: res.json() };
      },
    };
  });
}
