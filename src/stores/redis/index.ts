/**
 * The short-lived half of the cluster stores, in Redis: DAM login states, the JWT replay cache,
 * rate-limit counters and the invalidation channel. Every operation that must agree across nodes
 * is one Lua script (atomic on the Redis server), so two nodes can never both consume a login,
 * both accept a replayed JWT, or both spend the last unit of a rate limit.
 *
 * Time is the caller's `now` (the hub's injected clock), as in the SQLite store; Redis TTLs only
 * garbage-collect keys some time after the rule itself has stopped caring about them.
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { Redis, type RedisOptions } from 'ioredis';
import {
  StoreConflictError,
  StoreUnavailableError,
  type LoginCaps,
  type LoginCreateResult,
  type LoginState,
  type LoginStateStore,
  type RateLimitDecision,
  type RateLimitStore,
  type ReplayStore,
  type JwksEntry,
  type SharedJwksCache,
  type WriteLockStore,
} from '../types.js';

export interface RedisStoreOptions {
  /** Prefix of every key and of the pub/sub channel (default `damhub:`); lets deployments and tests share a server. */
  keyPrefix?: string;
  connectTimeoutMs?: number;
  commandTimeoutMs?: number;
  /** CLIENT SETNAME of this node's connections (default `damhub`), to find them in CLIENT LIST. */
  connectionName?: string;
}

/** Login states stay an hour past expiry so a late poll still hears "expired" (as the SQLite sweep). */
const LOGIN_KEEP_MS = 3600_000;

/**
 * KEYS: the state, the user's pending set, the hub's pending set (sorted sets of state → expiresAt).
 * Entries past their expiry are dropped first, then the caps are checked (0: none), then the state
 * is written and, when pending, entered in both sets: one script, so concurrent starts on any
 * number of nodes cannot overshoot a cap. Answers {1}, {0} (exists), {2|3, earliest expiry}.
 */
const LUA_LOGIN_CREATE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return {0} end
local now = tonumber(ARGV[8])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
local perUser = tonumber(ARGV[9])
local total = tonumber(ARGV[10])
if perUser > 0 and redis.call('ZCARD', KEYS[2]) >= perUser then
  return {2, redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')[2]}
end
if total > 0 and redis.call('ZCARD', KEYS[3]) >= total then
  return {3, redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')[2]}
end
redis.call('HSET', KEYS[1], 'meta', ARGV[1], 'status', ARGV[2], 'result', ARGV[3], 'error', ARGV[4], 'user', ARGV[11])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
if ARGV[2] == 'pending' then
  local keep = math.max(1, math.ceil(tonumber(ARGV[7]) - now)) + 1000
  for i = 2, 3 do
    redis.call('ZADD', KEYS[i], ARGV[7], ARGV[6])
    if redis.call('PTTL', KEYS[i]) < keep then redis.call('PEXPIRE', KEYS[i], keep) end
  end
end
return {1}`;

/** KEYS: the state, the user's and the hub's pending sets; a settled state no longer takes a slot. */
const LUA_LOGIN_SETTLE = `
if redis.call('HGET', KEYS[1], 'status') ~= 'pending' then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'result', ARGV[2], 'error', ARGV[3])
redis.call('ZREM', KEYS[2], ARGV[4])
redis.call('ZREM', KEYS[3], ARGV[4])
return 1`;

const LUA_LOGIN_CONSUME = `
if redis.call('HGET', KEYS[1], 'status') ~= 'completed' then return false end
local r = redis.call('HGET', KEYS[1], 'result')
redis.call('HSET', KEYS[1], 'status', 'consumed', 'result', 'null')
return r`;

/** Insert-if-absent, where a key past its (caller-clock) expiry counts as absent. */
const LUA_REPLAY = `
local v = redis.call('GET', KEYS[1])
if v and tonumber(v) > tonumber(ARGV[2]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
return 1`;

/**
 * src/stores/gcra.ts, line for line, in Lua (doubles in both, so the same arithmetic). The TAT is
 * stored with %.17g: Lua's tostring would keep only 14 digits and lose the 1/1024 ms grid.
 */
const LUA_GCRA = `
local GRID = 1024
local limit = tonumber(ARGV[1])
local period = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local v = redis.call('GET', KEYS[1])
local tat = now
if v then tat = tonumber(v) end
local interval = math.max(1, math.floor((period / limit) * GRID)) / GRID
local burst = interval * limit
local base = math.floor(math.max(math.min(tat, now + burst), now) * GRID + 0.5) / GRID
local newTat = base + interval
local allowAt = newTat - burst
if allowAt > now then
  if tat > now + burst then redis.call('SET', KEYS[1], string.format('%.17g', now + burst), 'PX', math.ceil(burst) + 1000) end
  return {0, 0, math.ceil((base - now) / 1000), math.max(1, math.ceil((allowAt - now) / 1000))}
end
local remaining = math.max(0, math.floor((now + burst - newTat) / interval))
redis.call('SET', KEYS[1], string.format('%.17g', newTat), 'PX', math.max(1, math.ceil(newTat - now)) + 1000)
return {1, remaining, math.ceil((newTat - now) / 1000), 0}`;

/** src/stores/gcra.ts gcraRefund in Lua: the TAT one interval back, or no key once that is not after now. */
const LUA_GCRA_REFUND = `
local GRID = 1024
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local limit = tonumber(ARGV[1])
local period = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local interval = math.max(1, math.floor((period / limit) * GRID)) / GRID
local back = math.floor((tonumber(v) - interval) * GRID + 0.5) / GRID
if back > now then
  redis.call('SET', KEYS[1], string.format('%.17g', back), 'PX', math.max(1, math.ceil(back - now)) + 1000)
else
  redis.call('DEL', KEYS[1])
end
return 1`;

/**
 * Write locks (docs/writes.md). The value is `<expiresAt> <token>`: the lock is free when the key
 * is absent or its expiry (the caller's clock, as everywhere here) has passed, and it is taken by
 * SET with PX, whose TTL drops the key of a node that died holding it. Take, renew and release are
 * each one script, so a lock is only ever changed by the one holder whose token it carries.
 */
const LUA_LOCK_ACQUIRE = `
local v = redis.call('GET', KEYS[1])
if v and tonumber(string.match(v, '^(%S+)')) > tonumber(ARGV[2]) then return 0 end
redis.call('SET', KEYS[1], ARGV[3] .. ' ' .. ARGV[1], 'PX', ARGV[4])
return 1`;

const LUA_LOCK_RENEW = `
local v = redis.call('GET', KEYS[1])
if not v or string.match(v, '^%S+ (.*)$') ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2] .. ' ' .. ARGV[1], 'PX', ARGV[3])
return 1`;

const LUA_LOCK_RELEASE = `
local v = redis.call('GET', KEYS[1])
if v and string.match(v, '^%S+ (.*)$') == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1`;

type Scripted = Redis & {
  damhubLockAcquire(key: string, token: string, now: string, expiresAt: string, ttl: number): Promise<number>;
  damhubLockRenew(key: string, token: string, expiresAt: string, ttl: number): Promise<number>;
  damhubLockRelease(key: string, token: string): Promise<number>;
  damhubLoginCreate(key: string, userSet: string, allSet: string, meta: string, status: string, result: string, error: string, ttl: number,
    state: string, expiresAt: string, now: string, perUser: string, total: string, userId: string): Promise<(number | string)[]>;
  damhubLoginSettle(key: string, userSet: string, allSet: string, status: string, result: string, error: string, state: string): Promise<number>;
  damhubLoginConsume(key: string): Promise<string | null>;
  damhubReplay(key: string, expiresAt: string, now: string, ttl: number): Promise<number>;
  damhubGcra(key: string, limit: string, periodMs: string, now: string): Promise<number[]>;
  damhubGcraRefund(key: string, limit: string, periodMs: string, now: string): Promise<number>;
};

/** Errors Redis answers about its own state (still loading, read-only replica...) mean "unavailable". */
const UNAVAILABLE_REPLY = /^(LOADING|BUSY|READONLY|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|NOREPLICAS)/;

function wrap(e: unknown): unknown {
  const err = e as Error;
  if (err?.name === 'ReplyError' && !UNAVAILABLE_REPLY.test(err.message)) return e;
  return new StoreUnavailableError('redis', e);
}

async function call<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (e) {
    throw wrap(e);
  }
}

export function createRedis(url: string, o: RedisStoreOptions = {}): Scripted {
  const options: RedisOptions = {
    lazyConnect: true,
    connectionName: o.connectionName ?? 'damhub',
    connectTimeout: o.connectTimeoutMs ?? 2000,
    commandTimeout: o.commandTimeoutMs ?? 2000,
    // Fail fast while disconnected (503 at once) instead of queueing requests behind an outage.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    // Reconnect forever, at most a second apart, so a node recovers by itself.
    retryStrategy: (times) => Math.min(times * 100, 1000),
  };
  const redis = new Redis(url, options) as Scripted;
  // Connection errors surface through the commands that fail; the event needs a listener so it
  // does not crash the process.
  redis.on('error', () => {});
  redis.defineCommand('damhubLoginCreate', { numberOfKeys: 3, lua: LUA_LOGIN_CREATE });
  redis.defineCommand('damhubLoginSettle', { numberOfKeys: 3, lua: LUA_LOGIN_SETTLE });
  redis.defineCommand('damhubLoginConsume', { numberOfKeys: 1, lua: LUA_LOGIN_CONSUME });
  redis.defineCommand('damhubReplay', { numberOfKeys: 1, lua: LUA_REPLAY });
  redis.defineCommand('damhubGcra', { numberOfKeys: 1, lua: LUA_GCRA });
  redis.defineCommand('damhubGcraRefund', { numberOfKeys: 1, lua: LUA_GCRA_REFUND });
  redis.defineCommand('damhubLockAcquire', { numberOfKeys: 1, lua: LUA_LOCK_ACQUIRE });
  redis.defineCommand('damhubLockRenew', { numberOfKeys: 1, lua: LUA_LOCK_RENEW });
  redis.defineCommand('damhubLockRelease', { numberOfKeys: 1, lua: LUA_LOCK_RELEASE });
  return redis;
}

class RedisLogins implements LoginStateStore {
  constructor(private readonly redis: Scripted, private readonly prefix: string) {}
  private key(state: string) {
    return `${this.prefix}login:${state}`;
  }
  private userSet(userId: string) {
    return `${this.prefix}login-pending:user:${userId}`;
  }
  private get allSet() {
    return `${this.prefix}login-pending`;
  }
  async create(s: LoginState, caps?: LoginCaps): Promise<LoginCreateResult> {
    const meta = JSON.stringify({ userId: s.userId, partnerId: s.partnerId, providerId: s.providerId, serverUrl: s.serverUrl, uiLocale: s.uiLocale ?? null, createdAt: s.createdAt, expiresAt: s.expiresAt });
    const ttl = Math.max(1, Math.ceil(s.expiresAt - s.createdAt + LOGIN_KEEP_MS));
    const [code, first] = await call(this.redis.damhubLoginCreate(this.key(s.state), this.userSet(s.userId), this.allSet, meta, s.status, JSON.stringify(s.result), JSON.stringify(s.error), ttl,
      s.state, String(s.expiresAt), String(s.createdAt), String(caps?.perUser ?? 0), String(caps?.total ?? 0), s.userId));
    if (code === 0) throw new StoreConflictError(`login state ${s.state} already exists`);
    if (code === 2 || code === 3) return { created: false, limit: code === 2 ? 'user' : 'total', retryAt: Number(first) };
    return { created: true };
  }
  async get(state: string): Promise<LoginState | null> {
    const h = await call(this.redis.hgetall(this.key(state)));
    if (!h.meta) return null;
    const m = JSON.parse(h.meta) as Omit<LoginState, 'state' | 'status' | 'result' | 'error'>;
    return {
      state,
      userId: m.userId,
      partnerId: m.partnerId,
      providerId: m.providerId,
      serverUrl: m.serverUrl ?? null,
      // A state written by a node from before issue 29 has none: its pages follow the browser.
      uiLocale: m.uiLocale ?? null,
      status: h.status as LoginState['status'],
      result: h.result ? JSON.parse(h.result) : null,
      error: h.error ? JSON.parse(h.error) : null,
      createdAt: m.createdAt,
      expiresAt: m.expiresAt,
    };
  }
  async settle(state: string, status: 'completed' | 'failed' | 'cancelled', result: Record<string, unknown> | null, error: string | null) {
    // The owner never changes, so reading it first is safe; the script then settles and frees the slot atomically.
    const userId = (await call(this.redis.hget(this.key(state), 'user'))) ?? '';
    return (await call(this.redis.damhubLoginSettle(this.key(state), this.userSet(userId), this.allSet, status, JSON.stringify(result), JSON.stringify(error), state))) === 1;
  }
  async consume(state: string) {
    const r = await call(this.redis.damhubLoginConsume(this.key(state)));
    if (r === null || r === undefined) return null;
    return (JSON.parse(r) as Record<string, unknown> | null) ?? {};
  }
}

class RedisReplay implements ReplayStore {
  constructor(private readonly redis: Scripted, private readonly prefix: string) {}
  async remember(key: string, expiresAt: number, now: number) {
    const ttl = Math.max(1, Math.ceil(expiresAt - now));
    return (await call(this.redis.damhubReplay(`${this.prefix}replay:${key}`, String(expiresAt), String(now), ttl))) === 1;
  }
}

class RedisRateLimits implements RateLimitStore {
  constructor(private readonly redis: Scripted, private readonly prefix: string) {}
  async hit(key: string, limit: number, periodMs: number, now: number): Promise<RateLimitDecision> {
    const [allowed, remaining, resetSec, retryAfterSec] = await call(this.redis.damhubGcra(`${this.prefix}rl:${key}`, String(limit), String(periodMs), String(now)));
    return { allowed: allowed === 1, limit, remaining: remaining!, resetSec: resetSec!, retryAfterSec: retryAfterSec! };
  }
  async refund(key: string, limit: number, periodMs: number, now: number): Promise<void> {
    await call(this.redis.damhubGcraRefund(`${this.prefix}rl:${key}`, String(limit), String(periodMs), String(now)));
  }
}

class RedisWriteLocks implements WriteLockStore {
  constructor(private readonly redis: Scripted, private readonly prefix: string) {}
  private key(key: string) {
    return `${this.prefix}lock:${key}`;
  }
  async acquire(key: string, ttlMs: number, now: number) {
    const token = randomUUID();
    const ttl = Math.max(1, Math.ceil(ttlMs));
    return (await call(this.redis.damhubLockAcquire(this.key(key), token, String(now), String(now + ttlMs), ttl))) === 1 ? token : null;
  }
  async renew(key: string, token: string, ttlMs: number, now: number) {
    return (await call(this.redis.damhubLockRenew(this.key(key), token, String(now + ttlMs), Math.max(1, Math.ceil(ttlMs))))) === 1;
  }
  async release(key: string, token: string) {
    await call(this.redis.damhubLockRelease(this.key(key), token));
  }
}

class RedisJwks implements SharedJwksCache {
  constructor(private readonly redis: Scripted, private readonly prefix: string) {}
  async get(partnerId: string): Promise<JwksEntry | null> {
    const v = await call(this.redis.get(`${this.prefix}jwks:${partnerId}`));
    return v ? (JSON.parse(v) as JwksEntry) : null;
  }
  async set(partnerId: string, entry: JwksEntry, ttlMs: number): Promise<void> {
    await call(this.redis.set(`${this.prefix}jwks:${partnerId}`, JSON.stringify(entry), 'PX', Math.max(1, Math.ceil(ttlMs))));
  }
}

/**
 * Login states, replay keys, rate limits, partner JWKS, write locks and cross-node invalidation. Invalidation: a node
 * publishes its id on `<prefix>invalidate`; every other node's subscriber calls its listeners.
 * After a subscriber reconnect the listeners are called too, since messages may have been missed.
 */
export class RedisShortLivedStores {
  readonly logins: LoginStateStore;
  readonly replay: ReplayStore;
  readonly rateLimits: RateLimitStore;
  readonly jwks: SharedJwksCache;
  readonly writeLocks: WriteLockStore;
  readonly nodeId = randomUUID();
  private readonly events = new EventEmitter();
  private readonly channel: string;
  private sub: Redis | null = null;
  private closed = false;

  constructor(readonly redis: Scripted, readonly prefix = 'damhub:') {
    this.logins = new RedisLogins(redis, prefix);
    this.replay = new RedisReplay(redis, prefix);
    this.rateLimits = new RedisRateLimits(redis, prefix);
    this.jwks = new RedisJwks(redis, prefix);
    this.writeLocks = new RedisWriteLocks(redis, prefix);
    this.channel = `${prefix}invalidate`;
  }

  /** Connects both connections; rejects with StoreUnavailableError when Redis cannot be reached. */
  async connect(): Promise<void> {
    try {
      if (this.redis.status === 'wait') await this.redis.connect();
      const sub = this.redis.duplicate({ enableOfflineQueue: true, lazyConnect: true });
      sub.on('error', () => {});
      this.sub = sub;
      await sub.connect();
      await sub.subscribe(this.channel);
      // A reconnect may have missed messages: drop caches then (the first connect is done above).
      sub.on('ready', () => this.events.emit('invalidate'));
      sub.on('message', (channel: string, message: string) => {
        if (channel === this.channel && message !== this.nodeId) this.events.emit('invalidate');
      });
    } catch (e) {
      throw wrap(e);
    }
  }

  onRemoteInvalidate(listener: () => void): void {
    this.events.on('invalidate', listener);
  }

  /** Tells the other nodes; a failure is tolerated (their principal caches expire within a second anyway). */
  async publishInvalidate(): Promise<void> {
    try {
      await this.redis.publish(this.channel, this.nodeId);
    } catch {
      /* best effort */
    }
  }

  async ping(): Promise<void> {
    await call(this.redis.ping());
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const c of [this.sub, this.redis]) {
      if (!c) continue;
      if (c.status === 'ready') await c.quit().catch(() => c.disconnect());
      else c.disconnect();
    }
  }
}
