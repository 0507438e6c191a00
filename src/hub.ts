/**
 * The composition root: one Hub per node, holding configuration, the clock, the stores and the
 * services built on them, and the providers the catalog (src/catalog.ts) builds from the
 * configuration. Routes receive it as `app.hub`; tests build it with their own clock.
 */
import path from 'node:path';
import type { Clock } from './clock.js';
import { systemClock } from './clock.js';
import type { HubConfig } from './config.js';
import { DamLogin } from './content/dam-login.js';
import { TokenExchange } from './auth/exchange.js';
import { HubTokens } from './auth/hub-tokens.js';
import { JwksCache } from './auth/jwks-cache.js';
import { KeyRing, loadOrCreateKeyRing, loadOrCreateSecret } from './auth/keys.js';
import { loadSharedSecrets, SharedKeyFollower } from './auth/cluster-secrets.js';
import { ClusterStores, openStores } from './stores/index.js';
import { ProviderConnections } from './content/provider-connections.js';
import { ProviderTokens } from './auth/provider-tokens.js';
import { SessionService } from './auth/sessions.js';
import { MediaAccess } from './content/media-access.js';
import { LOCAL_MCP_ISSUER } from './config.js';
import { SignedMediaUrls } from './content/media-urls.js';
import type { Provider } from './providers/contract.js';
import { ProviderRegistry } from './providers/registry.js';
import { SqliteStores } from './stores/sqlite/index.js';
import { ensurePrivateDir } from './stores/private-files.js';
import type { Stores } from './stores/types.js';
import { buildProviders } from './catalog.js';
import { ImagePool } from './images/pool.js';
import { ReadSlots } from './net/read-slots.js';
import { LogRelay } from './providers/kit/upstream-log.js';

export interface HubDeps {
  clock?: Clock;
  stores?: Stores;
  keys?: KeyRing;
  /** Secrets shared by every node (cluster mode); by default from the data dir. */
  adminKey?: string;
  userHashKey?: string;
  /** Providers besides the catalog's (tests register their own). */
  providers?: Provider[];
  /** Watch the library folder for changes (tests turn it off and rescan explicitly). */
  watchLibrary?: boolean;
}

/** The embedded store; a data directory that cannot be written (read-only volume, full disk) is named in the error. */
function openSqliteStores(dataDir: string): Stores {
  try {
    return SqliteStores.open(path.join(dataDir, 'hub.sqlite'));
  } catch (e) {
    throw new Error(`cannot open the hub database in ${dataDir} (is the data directory read-only or full?): ${(e as Error).message}`, { cause: e });
  }
}

export class Hub {
  readonly clock: Clock;
  readonly stores: Stores;
  readonly keys: KeyRing;
  readonly adminKey: string;
  readonly providers = new ProviderRegistry();
  readonly jwks: JwksCache;
  readonly hubTokens: HubTokens;
  readonly providerTokens: ProviderTokens;
  readonly exchange: TokenExchange;
  readonly sessions: SessionService;
  readonly damLogin: DamLogin;
  readonly connections: ProviderConnections;
  readonly mediaUrls: SignedMediaUrls;
  readonly mediaAccess: MediaAccess;
  /** Child processes that decode untrusted images, under a budget (src/images/pool.ts). */
  readonly imagePool: ImagePool;
  /** Reads of originals the hub did not index, bounded hub-wide (src/net/read-slots.ts). */
  readonly reads: ReadSlots;
  /** The connectors' log, connected to the app's logger by buildApp (src/providers/kit/upstream-log.ts). */
  readonly connectorLog = new LogRelay();

  constructor(readonly config: HubConfig, deps: HubDeps = {}) {
    // Created 0700, or tightened (the CLI's serve reports what it did before this runs).
    ensurePrivateDir(config.dataDir);
    this.clock = deps.clock ?? systemClock;
    if (!deps.stores && (config.databaseUrl || config.redisUrl)) {
      // The cluster stores connect and migrate asynchronously: src/stores/index.ts openStores().
      throw new Error('cluster mode: open the stores with openStores(config) and pass them as deps.stores');
    }
    this.stores = deps.stores ?? openSqliteStores(config.dataDir);
    this.keys = deps.keys ?? loadOrCreateKeyRing(config.dataDir, this.clock.now());
    this.adminKey = config.adminKey ?? deps.adminKey ?? loadOrCreateSecret(config.dataDir, 'admin.key', null);
    this.imagePool = new ImagePool({
      size: config.imagePoolSize, queueMax: config.imagePoolQueue, timeoutMs: config.imageDecodeTimeoutMs,
      memoryMb: config.imageDecoderMemoryMb, maxPixels: config.imageIndexMaxPixels,
    });
    this.reads = new ReadSlots(config.originalReads, config.originalReadsQueue);
    // Media URLs and download links end with the access they came from (docs/security.md).
    this.mediaAccess = new MediaAccess({
      partnerLive: async (id) => {
        const p = await this.stores.partners.get(id);
        // The row owning MCP users is disabled by design (an MCP token must not reach
        // /auth/exchangeToken); its users' URLs live while the hub still trusts that issuer.
        return p !== null && (p.enabled || p.issuer === (this.config.mcpIssuer ?? LOCAL_MCP_ISSUER));
      },
      userLive: async (id) => (await this.stores.users.get(id)) !== null,
      accountLive: async (providerId, id) => {
        const p = this.providers.get(providerId);
        return p?.accountLive ? p.accountLive(id) : null;
      },
    }, this.clock);
    this.stores.onInvalidate(() => this.mediaAccess.invalidate());
    this.mediaUrls = new SignedMediaUrls(this.keys, this.clock, config.publicUrl.replace(/\/+$/, ''), this.mediaAccess);
    const built = buildProviders({
      config, clock: this.clock, keys: this.keys, stores: this.stores, mediaUrls: this.mediaUrls, access: this.mediaAccess,
      imagePool: this.imagePool, reads: this.reads, watchLibrary: deps.watchLibrary ?? true, log: this.connectorLog,
      secret: (name, configured) => loadOrCreateSecret(config.dataDir, name, configured),
    });
    for (const p of [...built, ...(deps.providers ?? [])]) this.providers.register(p);

    this.jwks = new JwksCache(this.clock, { ttlMs: config.jwksCacheSec * 1000, timeoutMs: config.jwksTimeoutMs, maxBytes: config.jwksMaxBytes }, this.stores.jwksCache ?? null);
    this.hubTokens = new HubTokens(this.keys, this.clock, config.accessTokenTtlSec, config.refreshTokenTtlSec);
    this.providerTokens = new ProviderTokens(this.keys, this.clock);
    this.exchange = new TokenExchange(this.stores, this.jwks, this.hubTokens, this.clock, config.refreshTokenTtlSec);
    this.damLogin = new DamLogin(this.stores, this.providers, this.providerTokens, this.clock, {
      stateTtlSec: config.loginStateTtlSec,
      accessTtlSec: config.providerTokenTtlSec,
      refreshTtlSec: config.providerRefreshTtlSec,
      publicUrl: config.publicUrl,
      hashSecret: deps.userHashKey ?? loadOrCreateSecret(config.dataDir, 'user-hash.key', null),
      signIn: {
        accountFailures: config.signInAccountFailures,
        accountWindowSec: config.signInAccountWindowSec,
        userFailures: config.signInUserFailures,
        userWindowSec: config.signInUserWindowSec,
        perState: config.signInStateAttempts,
      },
      pendingCaps: { perUser: config.pendingLoginsPerUser, total: config.pendingLoginsTotal },
    });
    this.sessions = new SessionService(this.stores, this.hubTokens, this.clock, config.refreshTokenTtlSec, config.refreshGraceSec,
      (partnerId, sub) => this.damLogin.userHash(partnerId, 'hub', sub));
    this.connections = new ProviderConnections(this.providerTokens, this.providers, config.providerTokenTtlSec, config.providerRefreshTtlSec,
      { store: this.stores.sessions, clock: this.clock, graceSec: config.refreshGraceSec }, config.providerTimeoutMs);
  }

  /** Work that must finish before serving: each provider's start() (the library's demo account and cheap rescan). */
  async start(): Promise<void> {
    await this.providers.start();
  }

  async close(): Promise<void> {
    await this.providers.close();
    await this.stores.close();
    await this.imagePool.close();
  }
}

/** A node's hub on the configured stores, and whether its keys follow the cluster's. */
export interface OpenedHub {
  hub: Hub;
  /** Cluster mode: the shared key ring's follower (stop it on shutdown); null with the embedded stores. */
  follower: SharedKeyFollower | null;
}

/**
 * Opens the stores the configuration names (SQLite in the data dir, or PostgreSQL + Redis,
 * connected and migrated) and builds the hub on them. In cluster mode the key ring, the admin key
 * and the user-hash key come from PostgreSQL, so every node — `damhub serve` and `damhub mcp`
 * alike — verifies every node's tokens and opens every node's DAM connections.
 */
export async function openHub(config: HubConfig, deps: Pick<HubDeps, 'clock' | 'watchLibrary'> = {}): Promise<OpenedHub> {
  const stores = await openStores(config, { keyPrefix: config.redisKeyPrefix });
  let follower: SharedKeyFollower | null = null;
  try {
    if (stores instanceof ClusterStores) {
      const secrets = await loadSharedSecrets(stores.pg.pool, Date.now());
      const keys = new KeyRing(secrets.keys);
      const f = new SharedKeyFollower(stores.pg.pool, keys);
      follower = f;
      stores.onInvalidate(() => void f.reload());
      return { hub: new Hub(config, { ...deps, stores, keys, adminKey: secrets.adminKey, userHashKey: secrets.userHashKey }), follower };
    }
    return { hub: new Hub(config, { ...deps, stores }), follower: null };
  } catch (e) {
    follower?.close();
    await stores.close();
    throw e;
  }
}
