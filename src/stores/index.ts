/**
 * Chooses the hub's stores from configuration: the embedded SQLite store by default, or the
 * cluster stores (PostgreSQL for durable state, Redis for short-lived shared state and
 * invalidation) when both --database-url and --redis-url are given. One of the two alone is a
 * usage error: half-shared state (e.g. shared sessions with per-node rate limits and login
 * states) would look like a cluster and behave like separate hubs.
 */
import { EventEmitter } from 'node:events';
import path from 'node:path';
import { createPgPool, PgDurableStores, type PgOptions } from './postgres/index.js';
import { createRedis, RedisShortLivedStores, type RedisStoreOptions } from './redis/index.js';
import { SqliteStores } from './sqlite/index.js';
import { ensurePrivateDir } from './private-files.js';
import type { AuditStore, IdempotencyStore, LoginStateStore, McpConnectionStore, SharedJwksCache, PartnerStore, RateLimitStore, ReplayStore, SessionStore, Stores, UploadStore, UserStore, WriteLockStore } from './types.js';

export class StoreConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StoreConfigError';
  }
}

export interface ClusterOptions extends PgOptions, RedisStoreOptions {
  databaseUrl: string;
  redisUrl: string;
}

/** PostgreSQL + Redis behind the one Stores interface. */
export class ClusterStores implements Stores {
  readonly partners: PartnerStore;
  readonly users: UserStore;
  readonly sessions: SessionStore;
  readonly replay: ReplayStore;
  readonly logins: LoginStateStore;
  readonly rateLimits: RateLimitStore;
  readonly mcpConnections: McpConnectionStore;
  readonly jwksCache: SharedJwksCache;
  readonly writeLocks: WriteLockStore;
  readonly idempotency: IdempotencyStore;
  readonly audit: AuditStore;
  readonly uploads: UploadStore;
  readonly pg: PgDurableStores;
  readonly redis: RedisShortLivedStores;
  private readonly events = new EventEmitter();

  /** Builds without connecting; open() connects, migrates and subscribes. */
  constructor(o: ClusterOptions) {
    this.events.setMaxListeners(0);
    const changed = () => {
      // This node's caches drop at once; the others hear it through Redis.
      this.events.emit('invalidate');
      void this.redis.publishInvalidate();
    };
    this.pg = new PgDurableStores(createPgPool(o.databaseUrl, o), changed);
    this.redis = new RedisShortLivedStores(createRedis(o.redisUrl, o), o.keyPrefix ?? 'damhub:');
    this.redis.onRemoteInvalidate(() => this.events.emit('invalidate'));
    this.partners = this.pg.partners;
    this.users = this.pg.users;
    this.sessions = this.pg.sessions;
    this.mcpConnections = this.pg.mcpConnections;
    this.replay = this.redis.replay;
    this.logins = this.redis.logins;
    this.rateLimits = this.redis.rateLimits;
    this.jwksCache = this.redis.jwks;
    // The write engine (docs/writes.md): locks are short-lived and shared (Redis); idempotency
    // records, the audit and unfinished uploads must outlive a Redis restart (PostgreSQL).
    this.writeLocks = this.redis.writeLocks;
    this.idempotency = this.pg.idempotency;
    this.audit = this.pg.audit;
    this.uploads = this.pg.uploads;
  }

  /** Connects to both services and applies pending migrations; closes everything on failure. */
  static async open(o: ClusterOptions & { migrate?: boolean }): Promise<ClusterStores> {
    const s = new ClusterStores(o);
    try {
      if (o.migrate !== false) await s.pg.migrate();
      else await s.pg.ping();
      await s.redis.connect();
      return s;
    } catch (e) {
      await s.close().catch(() => {});
      throw e;
    }
  }

  onInvalidate(listener: () => void) {
    this.events.on('invalidate', listener);
  }

  async ping() {
    await Promise.all([this.pg.ping(), this.redis.ping()]);
  }

  probes() {
    return { postgres: () => this.pg.ping(), redis: () => this.redis.ping() };
  }

  async sweep(now: number) {
    // Redis keys (write locks included) expire by themselves; PostgreSQL keeps dead sessions and
    // expired Idempotency-Key records until swept.
    await this.pg.sweep(now);
  }

  async close() {
    await Promise.allSettled([this.pg.close(), this.redis.close()]);
  }
}

export interface StoreSelection {
  dataDir: string;
  databaseUrl: string | null;
  redisUrl: string | null;
}

export function clusterMode(c: StoreSelection): boolean {
  if (!!c.databaseUrl !== !!c.redisUrl) {
    throw new StoreConfigError(
      c.databaseUrl
        ? '--database-url needs --redis-url too: cluster mode keeps durable state in PostgreSQL and shared short-lived state in Redis'
        : '--redis-url needs --database-url too: cluster mode keeps durable state in PostgreSQL and shared short-lived state in Redis',
    );
  }
  return !!c.databaseUrl;
}

/** The stores a node runs on: SQLite in the data directory, or PostgreSQL + Redis. */
export async function openStores(c: StoreSelection, o: Partial<ClusterOptions> & { migrate?: boolean } = {}): Promise<Stores> {
  if (clusterMode(c)) return ClusterStores.open({ ...o, databaseUrl: c.databaseUrl!, redisUrl: c.redisUrl! });
  ensurePrivateDir(c.dataDir);
  return SqliteStores.open(path.join(c.dataDir, 'hub.sqlite'));
}
