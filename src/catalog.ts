/**
 * Every provider this build knows, and the configuration that enables it: the one place a provider
 * is registered (as rclone registers each backend once). The hub builds what is enabled, registers
 * it in its ProviderRegistry and runs each one's optional start()/close(); nothing else builds a
 * provider. Adding a connector: its folder under src/providers/ and one entry here
 * (docs/connectors.md).
 */
import path from 'node:path';
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { Clock } from './clock.js';
import type { HubConfig } from './config.js';
import type { KeyRing } from './auth/keys.js';
import type { ImagePool } from './images/pool.js';
import type { ReadSlots } from './net/read-slots.js';
import type { MediaUrls, Provider } from './providers/contract.js';
import type { ProviderRegistry } from './providers/registry.js';
import type { ConnectorDeps, ConnectorsConfig, DefinedConnector, LinkAccess } from './providers/kit/define.js';
import { insecureEndpoints } from './providers/kit/endpoints.js';
import type { OAuthConnectorOptions } from './providers/oauth/options.js';
import type { UpstreamSettings } from './providers/kit/http.js';
import type { UpstreamLog } from './providers/kit/upstream-log.js';
import { webdavConnector } from './providers/webdav/provider.js';
import { s3Connector } from './providers/s3/provider.js';
import { dropboxConnector } from './providers/dropbox/provider.js';
import { googleDriveConnector } from './providers/gdrive/provider.js';
import { boxConnector } from './providers/box/provider.js';
import { frontifyConnector } from './providers/frontify/provider.js';
import { bynderConnector } from './providers/bynder/provider.js';
import { microsoft365Connector } from './providers/microsoft365/provider.js';
import { cloudinaryConnector } from './providers/cloudinary/provider.js';
import { cantoConnector } from './providers/canto/provider.js';
import { LibraryProvider } from './providers/library/provider.js';
import { PgLibraryIndex } from './providers/library/index/postgres.js';
import { IndexerLease } from './providers/library/indexer-lease.js';
import { ClusterStores } from './stores/index.js';
import type { Stores } from './stores/types.js';
import { isGeneratedDemoLibrary } from './providers/library/demo-marker.js';

/** The demo library account (demo mode only). */
export const DEMO_LIBRARY_ACCOUNT = { name: 'demo', password: 'demo-password' };

/** What the hub lends the catalog to build its providers. */
export interface CatalogDeps {
  config: HubConfig;
  clock: Clock;
  keys: KeyRing;
  stores: Stores;
  mediaUrls: MediaUrls;
  /** Whether a download link's partner and user are still live (src/content/media-access.ts). */
  access: LinkAccess;
  imagePool: ImagePool;
  /** The hub-wide bound on reads of originals the hub did not index (src/net/read-slots.ts). */
  reads: ReadSlots;
  /** Watch the library folder for changes (tests turn it off and rescan explicitly). */
  watchLibrary: boolean;
  /** A secret of the data directory, created on first use unless `configured` (src/auth/keys.ts). */
  secret(name: string, configured: string | null): string;
  /** The connectors' log (src/providers/kit/upstream-log.ts). */
  log?: UpstreamLog;
}

interface CatalogEntry {
  id: string;
  /**
   * How the configuration turns it on: `connectors` ids are listed in DAMHUB_CONNECTORS (they need
   * no registration at a vendor); the others have their own settings (a library folder, an OAuth app).
   */
  enabledBy: 'libraryDir' | 'connectors' | 'oauthApp';
  enabled(config: HubConfig): boolean;
  build(deps: CatalogDeps): Provider;
  /** It reaches a vendor at origins of its own (kit/endpoints.ts), which `DAMHUB_<ID>_ENDPOINTS` may replace. */
  vendorOrigins?: true;
}

const CATALOG: CatalogEntry[] = [
  { id: 'library', enabledBy: 'libraryDir', enabled: (c) => c.libraryDir !== null, build: embeddedLibraryProvider },
  { id: 'webdav', enabledBy: 'connectors', enabled: (c) => 'webdav' in c.connectors, build: (d) => webdavConnector(connectorDeps(d, 'webdav')) },
  { id: 's3', enabledBy: 'connectors', enabled: (c) => 's3' in c.connectors, build: (d) => s3Connector(connectorDeps(d, 's3')) },
  oauthConnector('dropbox', dropboxConnector),
  oauthConnector('gdrive', googleDriveConnector),
  oauthConnector('box', boxConnector),
  oauthConnector('frontify', frontifyConnector),
  oauthConnector('bynder', bynderConnector),
  oauthConnector('microsoft365', microsoft365Connector),
  { id: 'cloudinary', enabledBy: 'connectors', enabled: (c) => 'cloudinary' in c.connectors, vendorOrigins: true, build: (d) => cloudinaryConnector({ endpoints: d.config.connectorEndpoints.cloudinary })(connectorDeps(d, 'cloudinary')) },
  oauthConnector('canto', cantoConnector),
];

/** An OAuth connector: served when its app is configured (`DAMHUB_<ID>_CLIENT_ID`), built from the app and the node's PKCE secret. */
function oauthConnector(id: string, factory: (o: OAuthConnectorOptions) => (deps: ConnectorDeps) => DefinedConnector): CatalogEntry {
  return {
    id, enabledBy: 'oauthApp', enabled: (c) => id in c.oauthApps, vendorOrigins: true,
    build: (d) => {
      const app = d.config.oauthApps[id]!;
      const endpoints = d.config.connectorEndpoints[id];
      return factory({
        clientId: app.clientId, clientSecret: app.clientSecret ?? undefined, pkceSecret: pkceSecret(d),
        // Replaced origins (a stand-in): plain http only where the operator named it.
        ...(endpoints ? { endpoints, allowInsecureRequests: insecureEndpoints(endpoints) } : {}),
      })(connectorDeps(d, id));
    },
  };
}

/** The ids DAMHUB_CONNECTORS takes. */
export function knownConnectors(): string[] {
  return CATALOG.filter((e) => e.enabledBy === 'connectors').map((e) => e.id).sort();
}

/** The ids of the OAuth connectors, each enabled by its app (`DAMHUB_<ID>_CLIENT_ID`). */
export function oauthConnectors(): string[] {
  return CATALOG.filter((e) => e.enabledBy === 'oauthApp').map((e) => e.id).sort();
}

/** The connectors with vendor origins of their own (the ones `DAMHUB_<ID>_ENDPOINTS` may name). */
export function vendorConnectors(): string[] {
  return CATALOG.filter((e) => e.vendorOrigins).map((e) => e.id).sort();
}

/** The environment variable prefix of a connector's settings: `DAMHUB_DROPBOX_`. */
export function connectorEnvPrefix(id: string): string {
  return `DAMHUB_${id.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_`;
}

/** Builds every enabled provider, in catalog order (the library first: it is the default). */
export function buildProviders(deps: CatalogDeps): Provider[] {
  for (const id of Object.keys(deps.config.connectors)) {
    if (!knownConnectors().includes(id)) throw new Error(`unknown connector ${JSON.stringify(id)}; known: ${knownConnectors().join(', ') || 'none'}`);
  }
  return CATALOG.filter((e) => e.enabled(deps.config)).map((e) => e.build(deps));
}

/** The embedded library among the registered providers, or null (the CLI's summary, tests). */
export function embeddedLibrary(providers: ProviderRegistry): LibraryProvider | null {
  const p = providers.get('library');
  return p instanceof LibraryProvider ? p : null;
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
  for (const id of ids) if (!knownConnectors().includes(id)) throw new Error(`DAMHUB_CONNECTORS: unknown connector ${JSON.stringify(id)}; known: ${knownConnectors().join(', ') || 'none'}`);
  return Object.fromEntries(ids.map((id) => [id, { ...shared }]));
}

/** The kit's deps of a connector; the hosts of replaced origins (HubConfig.connectorEndpoints) are reachable although not public. */
/** `DAMHUB_<ID>_CLIENT_ID` and `_CLIENT_SECRET` of every OAuth connector into HubConfig.oauthApps. */
export function oauthAppsFromEnv(env: NodeJS.ProcessEnv): HubConfig['oauthApps'] {
  const apps: HubConfig['oauthApps'] = {};
  for (const id of oauthConnectors()) {
    const prefix = connectorEnvPrefix(id);
    const clientId = env[`${prefix}CLIENT_ID`];
    if (clientId) apps[id] = { clientId, clientSecret: env[`${prefix}CLIENT_SECRET`] || null };
  }
  return apps;
}

/**
 * `DAMHUB_<ID>_ENDPOINTS` of every connector with vendor origins (`{"api": URL, ...}`, names the connector
 * knows) into HubConfig.connectorEndpoints; each value must be an http(s) URL.
 */
export function connectorEndpointsFromEnv(env: NodeJS.ProcessEnv): HubConfig['connectorEndpoints'] {
  const out: HubConfig['connectorEndpoints'] = {};
  for (const id of vendorConnectors()) {
    const name = `${connectorEnvPrefix(id)}ENDPOINTS`;
    const raw = env[name];
    if (!raw) continue;
    let e: unknown;
    try {
      e = JSON.parse(raw);
    } catch {
      throw new Error(`${name} must be JSON: {"api": URL, ...}`);
    }
    if (typeof e !== 'object' || e === null || Array.isArray(e)) throw new Error(`${name} must be a JSON object: {"api": URL, ...}`);
    for (const [k, v] of Object.entries(e)) {
      if (typeof v !== 'string' || !/^https?:\/\/[^/]/.test(v)) throw new Error(`${name}: ${k} must be an http(s) URL`);
    }
    out[id] = Object.fromEntries(Object.entries(e as Record<string, string>).map(([k, v]) => [k, v.replace(/\/+$/, '')]));
  }
  return out;
}

function connectorDeps(d: CatalogDeps, id: string): ConnectorDeps {
  const c = d.config;
  const endpoints = c.connectorEndpoints[id];
  const hosts = endpoints ? [...new Set(Object.values(endpoints).map((u) => new URL(u).hostname))] : [];
  const upstream = hosts.length ? { ...c.connectors[id], allowHosts: [...(c.connectors[id]?.allowHosts ?? []), ...hosts] } : c.connectors[id];
  return {
    clock: d.clock, keys: d.keys, publicUrl: c.publicUrl, access: d.access, upstream, log: d.log,
    // One bound for every connector; the media links' limits in the hub's rate-limit store.
    reads: d.reads,
    mediaLimits: { store: d.stores.rateLimits, perLinkPerMin: c.mediaRateLimitPerLinkPerMin, perUserPerMin: c.mediaRateLimitPerUserPerMin, now: () => d.clock.now() },
    // Thumbnails decode in the same pool, under the same per-file budget, as the library's indexing;
    // one cache directory per connector (its keys already name the provider; this keeps budgets apart).
    thumbnails: {
      images: { pool: d.imagePool, budget: c.imageIndexDecodeBudget, timeoutMs: c.imageIndexDecodeTimeoutMs },
      cacheDir: c.thumbnailCacheBytes > 0 ? path.join(c.dataDir, 'thumbnails', id) : null,
      cacheBytes: c.thumbnailCacheBytes, maxBytes: c.thumbnailMaxBytes, timeoutMs: c.thumbnailTimeoutMs,
    },
  };
}

/** One PKCE sealing secret for every OAuth connector of the node (shared by the cluster when configured). */
function pkceSecret(d: CatalogDeps): string {
  return d.secret('oauth-pkce.key', d.config.oauthPkceSecret);
}

function embeddedLibraryProvider(d: CatalogDeps): LibraryProvider {
  const { config } = d;
  return new LibraryProvider({
    root: config.libraryDir!,
    dataDir: path.join(config.dataDir, 'library'),
    clock: d.clock,
    urls: d.mediaUrls,
    // The generated demo library is the demo's own: its account may write there (the /demo page
    // shows uploads). A demo over one's own folder (src/demo/leftovers.ts ephemeralDemo) only reads it.
    demoAccount: config.demo ? { ...DEMO_LIBRARY_ACCOUNT, writeFolders: config.libraryDir !== null && isGeneratedDemoLibrary(config.libraryDir) ? ['/'] : [] } : null,
    watch: d.watchLibrary,
    imageModel: config.imageModel,
    imageModelWeight: config.imageModelWeight,
    images: { pool: d.imagePool, budget: config.imageIndexDecodeBudget, timeoutMs: config.imageIndexDecodeTimeoutMs },
    sharedIndex: sharedLibraryIndex(d),
  });
}

/**
 * The library's index in cluster mode: PostgreSQL on the cluster stores' pool, with the indexer
 * lease (one indexing node at a time). With the embedded stores: null, and the library keeps its
 * SQLite file.
 */
function sharedLibraryIndex(d: CatalogDeps) {
  if (!(d.stores instanceof ClusterStores)) return null;
  // Unique per process: a restarted node is a new holder and waits for its predecessor's lease.
  const holder = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  return {
    index: new PgLibraryIndex(d.stores.pg.pool),
    lease: new IndexerLease(d.stores.pg.pool, holder, d.clock, d.config.libraryLeaseSec * 1000),
    rescanMs: d.config.libraryRescanSec * 1000,
  };
}
