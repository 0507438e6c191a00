/**
 * The cluster stores (PostgreSQL + Redis): the shared suite with two ClusterStores instances
 * ("nodes") on one fresh database and one Redis key prefix, then what only the cluster has:
 * migrations, the factory's rules, fail-fast behaviour when a service is unreachable.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import pg from 'pg';
import { ClusterStores, clusterMode, openStores, StoreConfigError } from '../../src/stores/index.js';
import { createPgPool, migratePg } from '../../src/stores/postgres/index.js';
import { PG_MIGRATIONS } from '../../src/stores/postgres/migrations.js';
import { SqliteStores } from '../../src/stores/sqlite/index.js';
import { StoreUnavailableError } from '../../src/stores/types.js';
import { closedPort, clusterEnv, type ClusterEnv } from '../helpers/stores-env.js';
import { partnerInput, storeSuite } from '../helpers/stores-suite.js';
import { tempDir } from '../helpers/hub.js';

storeSuite('postgres + redis', async () => {
  const env = await clusterEnv();
  if (!env) return null;
  const opts = { databaseUrl: env.databaseUrl, redisUrl: env.redisUrl, keyPrefix: env.keyPrefix };
  const a = await ClusterStores.open(opts);
  const b = await ClusterStores.open(opts);
  return {
    a,
    b,
    crossInstanceInvalidation: true,
    async cleanup() {
      await a.close();
      await b.close();
      await env.cleanup();
    },
  };
});

describe('cluster stores: migrations, configuration, outages', () => {
  let env: ClusterEnv | null = null;
  before(async () => {
    env = await clusterEnv();
  });
  after(async () => {
    await env?.cleanup();
  });

  test('migrations are applied once, also by nodes starting together, and re-running is a no-op', async (t) => {
    if (!env) return t.skip('backing services unavailable');
    const pools = [createPgPool(env.databaseUrl), createPgPool(env.databaseUrl), createPgPool(env.databaseUrl)];
    try {
      const applied = await Promise.all(pools.map((p) => migratePg(p)));
      assert.deepEqual(applied.flat(), PG_MIGRATIONS.map((m) => m.version), 'each version applied by exactly one node');
      assert.deepEqual(await migratePg(pools[0]!), []);
      const rows = (await pools[0]!.query('SELECT version FROM schema_migrations ORDER BY version')).rows.map((r) => r.version);
      assert.deepEqual(rows, PG_MIGRATIONS.map((m) => m.version));
      // Opening the stores migrates too, and finds nothing to do.
      const s = await ClusterStores.open({ databaseUrl: env.databaseUrl, redisUrl: env.redisUrl, keyPrefix: env.keyPrefix });
      assert.deepEqual(await s.pg.migrate(), []);
      assert.deepEqual(Object.keys(s.probes()).sort(), ['postgres', 'redis']);
      await s.close();
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
  });

  test('the factory: SQLite by default, cluster with both URLs, one URL alone is a configuration error', async (t) => {
    const dataDir = tempDir();
    const sqlite = await openStores({ dataDir, databaseUrl: null, redisUrl: null });
    assert.ok(sqlite instanceof SqliteStores);
    await sqlite.close();
    assert.throws(() => clusterMode({ dataDir, databaseUrl: 'postgres://x/y', redisUrl: null }), StoreConfigError);
    assert.throws(() => clusterMode({ dataDir, databaseUrl: null, redisUrl: 'redis://x' }), StoreConfigError);
    await assert.rejects(openStores({ dataDir, databaseUrl: null, redisUrl: 'redis://x' }), StoreConfigError);
    if (!env) return t.skip('backing services unavailable');
    const cluster = await openStores({ dataDir, databaseUrl: env.databaseUrl, redisUrl: env.redisUrl }, { keyPrefix: env.keyPrefix });
    assert.ok(cluster instanceof ClusterStores);
    await cluster.ping();
    await cluster.close();
  });

  test('unreachable services fail fast with StoreUnavailableError (503 hub-unavailable), never hang', async () => {
    const pgPort = await closedPort();
    const redisPort = await closedPort();
    const bound = 15_000; // generous: "does not hang", not a timing assertion
    const within = <T>(p: Promise<T>) => Promise.race([p, new Promise<never>((_, rej) => setTimeout(() => rej(new Error('hung')), bound).unref())]);
    const isUnavailable = (service: string) => (e: unknown) => {
      assert.ok(e instanceof StoreUnavailableError, String(e));
      assert.equal(e.code, 'hub-unavailable');
      assert.equal(e.status, 503);
      assert.equal(e.service, service);
      return true;
    };

    const s = new ClusterStores({
      databaseUrl: `postgres://postgres@127.0.0.1:${pgPort}/damhub`,
      redisUrl: `redis://127.0.0.1:${redisPort}`,
      connectTimeoutMs: 1000,
      commandTimeoutMs: 1000,
    });
    try {
      await assert.rejects(within(s.probes().postgres()), isUnavailable('postgres'));
      await assert.rejects(within(s.probes().redis()), isUnavailable('redis'));
      await assert.rejects(within(s.ping()), StoreUnavailableError);
      await assert.rejects(within(s.partners.get('p1')), isUnavailable('postgres'));
      await assert.rejects(within(s.sessions.rotate('s', 'a', 'b', 0, 1)), isUnavailable('postgres'));
      await assert.rejects(within(s.partners.update('p1', { enabled: false }, 0)), isUnavailable('postgres'));
      await assert.rejects(within(s.logins.consume('x')), isUnavailable('redis'));
      await assert.rejects(within(s.rateLimits.hit('k', 1, 1000, 0)), isUnavailable('redis'));
      await assert.rejects(within(s.replay.remember('k', 1, 0)), isUnavailable('redis'));
    } finally {
      await within(s.close());
    }

    // Opening (serve, damhub migrate) fails the same way, and leaves nothing running.
    await assert.rejects(within(ClusterStores.open({ databaseUrl: `postgres://postgres@127.0.0.1:${pgPort}/damhub`, redisUrl: `redis://127.0.0.1:${redisPort}`, connectTimeoutMs: 1000 })), StoreUnavailableError);
    if (env) {
      // PostgreSQL up, Redis down: open connects PostgreSQL, then fails on Redis and closes the pool.
      await assert.rejects(within(ClusterStores.open({ databaseUrl: env.databaseUrl, redisUrl: `redis://127.0.0.1:${redisPort}`, connectTimeoutMs: 1000 })), isUnavailable('redis'));
    }
  });

  test('a connection killed by the server is replaced: reads retry once, the pool recovers', async (t) => {
    if (!env) return t.skip('backing services unavailable');
    const s = await ClusterStores.open({ databaseUrl: env.databaseUrl, redisUrl: env.redisUrl, keyPrefix: env.keyPrefix, maxConnections: 2 });
    const admin = new pg.Client({ connectionString: env.databaseUrl });
    try {
      await s.ping();
      await admin.connect();
      const dbName = new URL(env.databaseUrl).pathname.slice(1);
      const killed = await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND application_name = 'damhub'`, [dbName]);
      assert.ok(killed.rowCount! >= 1);
      // Idle connections died under the pool; reads succeed on fresh ones.
      for (let i = 0; i < 5; i++) assert.equal(await s.partners.get('nope'), null);
      await s.ping();
    } finally {
      await admin.end();
      await s.close();
    }
  });

  test('Redis connections cut under a node: quick 503s, then it recovers by itself, invalidation included', async (t) => {
    if (!env) return t.skip('backing services unavailable');
    const name = `damhub-test-${randomUUID().slice(0, 8)}`;
    const opts = { databaseUrl: env.databaseUrl, redisUrl: env.redisUrl, keyPrefix: env.keyPrefix };
    const a = await ClusterStores.open({ ...opts, connectionName: name });
    const b = await ClusterStores.open(opts);
    const admin = new Redis(env.redisUrl, { maxRetriesPerRequest: 1 });
    admin.on('error', () => {});
    try {
      let invalidated = 0;
      a.onInvalidate(() => invalidated++);
      // Kill both of a's connections (commands and subscription), found by their name.
      const list = (await admin.client('LIST')) as string;
      const ids = list.split('\n').filter((l) => l.includes(` name=${name} `)).map((l) => /^id=(\d+)/.exec(l)![1]!);
      assert.equal(ids.length, 2, list);
      for (const id of ids) await admin.client('KILL', 'ID', id);

      // Until the reconnect, calls fail fast with the unavailable error (or already succeed).
      const deadline = Date.now() + 10_000;
      let recovered = false;
      while (Date.now() < deadline) {
        try {
          await a.rateLimits.hit(`rl-${name}`, 100, 60_000, Date.now());
          recovered = true;
          break;
        } catch (e) {
          assert.ok(e instanceof StoreUnavailableError, String(e));
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      assert.ok(recovered, 'the node reconnected by itself');
      // The resubscribed node clears its caches (messages may have been missed) and hears b again.
      const until = Date.now() + 10_000;
      while (invalidated === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      assert.ok(invalidated > 0, 'a reconnect of the subscription invalidates the caches');
      const before = invalidated;
      const p = await b.partners.create(partnerInput(), Date.now());
      await b.partners.remove(p.id);
      while (invalidated === before && Date.now() < until + 5000) await new Promise((r) => setTimeout(r, 20));
      assert.ok(invalidated > before, 'invalidation from another node arrives after the reconnect');
    } finally {
      admin.disconnect();
      await a.close();
      await b.close();
    }
  });
});
