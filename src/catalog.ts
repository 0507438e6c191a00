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
import type { HubConfig, OAuthAppConfig } from './config.js';
import type { KeyRing } from './auth/keys.js';
import type { ImagePool } from './images/pool.js';
import type { MediaUrls, Provider } from './providers/contract.js';
import type { ProviderRegistry } from './providers/registry.js';
import type { ConnectorDeps, ConnectorsConfig, LinkAccess } from './providers/kit/define.js';
import type { UpstreamSettings } from './providers/kit/http.js';
import { webdavConnector } from './providers/webdav/provider.js';
import { s3Connector } from './providers/s3/provider.js';
import { dropboxConnector } from './providers/dropbox/provider.js';
import { googleDriveConnector } from './providers/gdrive/provider.js';
import { LibraryProvider } from './providers/library/provider.js';
import { PgLibraryIndex } from './providers/library/index/postgres.js';
import { IndexerLease } from './providers/library/indexer-lease.js';
import { ClusterStores } from './stores/index.js';
import type { Stores } from './stores/types.js';

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
  /** Watch the library folder for changes (tests turn it off and rescan explicitly). */
  watchLibrary: boolean;
  /** A secret of the data directory, created on first use unless `configured` (src/auth/keys.ts). */
  secret(name: string, configured: string | null): string;
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
}

const CATALOG: CatalogEntry[] = [
  { id: 'library', enabledBy: 'libraryDir', enabled: (c) => c.libraryDir !== null, build: embeddedLibraryProvider },
  { id: 'webdav', enabledBy: 'connectors', enabled: (c) => 'webdav' in c.connectors, build: (d) => webdavConnector(connectorDeps(d, 'webdav')) },
  { id: 's3', enabledBy: 'connectors', enabled: (c) => 's3' in c.connectors, build: (d) => s3Connector(connectorDeps(d, 's3')) },
  {
    id: 'dropbox', enabledBy: 'oauthApp', enabled: (c) => c.dropboxApp !== null,
    build: (d) => dropboxConnector({ ...oauthApp(d.config.dropboxApp!), pkceSecret: pkceSecret(d) })(oauthDeps(d, 'dropbox', d.config.dropboxApp!)),
  },
  {
    id: 'gdrive', enabledBy: 'oauthApp', enabled: (c) => c.googleDriveApp !== null,
    build: (d) => googleDriveConnector({ ...oauthApp(d.config.googleDriveApp!), pkceSecret: pkceSecret(d) })(oauthDeps(d, 'gdrive', d.config.googleDriveApp!)),
  },
];

/** The ids DAMHUB_CONNECTORS takes. */
export function knownConnectors(): string[] {
  return CATALOG.filter((e) => e.enabledBy === 'connectors').map((e) => e.id).sort();
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

function connectorDeps(d: CatalogDeps, id: string): ConnectorDeps {
  const c = d.config;
  return {
    clock: d.clock, keys: d.keys, publicUrl: c.publicUrl, access: d.access, upstream: c.connectors[id],
    // Thumbnails decode in the same pool, under the same per-file budget, as the library's indexing;
    // one cache directory per connector (its keys already name the provider; this keeps budgets apart).
    thumbnails: {
      images: { pool: d.imagePool, budget: c.imageIndexDecodeBudget, timeoutMs: c.imageIndexDecodeTimeoutMs },
      cacheDir: c.thumbnailCacheBytes > 0 ? path.join(c.dataDir, 'thumbnails', id) : null,
      cacheBytes: c.thumbnailCacheBytes, maxBytes: c.thumbnailMaxBytes, timeoutMs: c.thumbnailTimeoutMs,
    },
  };
}

function oauthApp(app: OAuthAppConfig): { clientId: string; clientSecret?: string; endpoints?: OAuthAppConfig['endpoints']; allowInsecureRequests?: boolean } {
  if (!app.endpoints) return { clientId: app.clientId, clientSecret: app.clientSecret ?? undefined };
  // Stand-in endpoints the operator named (DAMHUB_DROPBOX_ENDPOINTS, ...): plain http only there.
  const insecure = Object.values(app.endpoints).some((u) => u.startsWith('http:'));
  return { clientId: app.clientId, clientSecret: app.clientSecret ?? undefined, endpoints: app.endpoints, allowInsecureRequests: insecure };
}

/** The deps of an OAuth connector: the hosts of configured stand-in endpoints are reachable although not public. */
function oauthDeps(d: CatalogDeps, id: string, app: OAuthAppConfig): ConnectorDeps {
  const deps = connectorDeps(d, id);
  if (!app.endpoints) return deps;
  const hosts = [...new Set(Object.values(app.endpoints).map((u) => new URL(u).hostname))];
  return { ...deps, upstream: { ...deps.upstream, allowHosts: [...(deps.upstream?.allowHosts ?? []), ...hosts] } };
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
    demoAccount: config.demo ? DEMO_LIBRARY_ACCOUNT : null,
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
