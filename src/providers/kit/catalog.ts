/**
 * The connectors this build knows, by id, and the hub config that enables them
 * (HubConfig.connectors: an entry per enabled connector, its upstream overrides as value).
 * Adding a connector: one import and one line in CATALOG (docs/connectors.md).
 */
import type { Clock } from '../../clock.js';
import type { KeyRing } from '../../auth/keys.js';
import type { ConnectorDeps, DefinedConnector } from './define.js';
import type { UpstreamSettings } from './http.js';
import { webdavConnector } from '../webdav/provider.js';
import { s3Connector } from '../s3/provider.js';

export type ConnectorFactory = (deps: ConnectorDeps) => DefinedConnector;

/** Enabled connectors and their upstream overrides (timeouts, retries, allowHosts, ...). */
export type ConnectorsConfig = Record<string, Partial<UpstreamSettings>>;

export const CATALOG: Record<string, ConnectorFactory> = {
  webdav: webdavConnector,
  s3: s3Connector,
};

export function knownConnectors(): string[] {
  return Object.keys(CATALOG).sort();
}

/** Builds the enabled connectors; an unknown id is a configuration error, said at start. */
export function buildConnectors(config: ConnectorsConfig, deps: { clock: Clock; keys: KeyRing; publicUrl: string }): DefinedConnector[] {
  const out: DefinedConnector[] = [];
  for (const [id, upstream] of Object.entries(config)) {
    const factory = CATALOG[id];
    if (!factory) throw new Error(`unknown connector ${JSON.stringify(id)}; known: ${knownConnectors().join(', ') || 'none'}`);
    out.push(factory({ ...deps, upstream }));
  }
  return out;
}

/** Parses DAMHUB_CONNECTORS ("webdav,s3") and the shared overrides into a ConnectorsConfig. */
export function connectorsFromEnv(env: NodeJS.ProcessEnv): ConnectorsConfig {
  const ids = (env.DAMHUB_CONNECTORS ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  const shared: Partial<UpstreamSettings> = {};
  if (env.DAMHUB_CONNECTOR_ALLOW_HOSTS) shared.allowHosts = env.DAMHUB_CONNECTOR_ALLOW_HOSTS.split(',').map((s) => s.trim()).filter(Boolean);
  if (env.DAMHUB_CONNECTOR_TIMEOUT_MS) {
    const n = Number(env.DAMHUB_CONNECTOR_TIMEOUT_MS);
    if (!Number.isInteger(n) || n < 100) throw new Error('DAMHUB_CONNECTOR_TIMEOUT_MS must be an integer of at least 100');
    shared.timeoutMs = n;
  }
  for (const id of ids) if (!CATALOG[id]) throw new Error(`DAMHUB_CONNECTORS: unknown connector ${JSON.stringify(id)}; known: ${knownConnectors().join(', ') || 'none'}`);
  return Object.fromEntries(ids.map((id) => [id, { ...shared }]));
}
