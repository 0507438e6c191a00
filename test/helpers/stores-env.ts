/**
 * Backing services for the cluster-store tests: a fresh PostgreSQL database per suite (dropped at
 * the end) and a unique Redis key prefix (its keys deleted at the end). DAMHUB_TEST_DATABASE_URL
 * and DAMHUB_TEST_REDIS_URL point elsewhere than 127.0.0.1:5432 / :6379. When the services cannot
 * be reached: with CI=true the tests fail loudly; otherwise they skip with a printed reason.
 */
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import pg from 'pg';
import { Redis } from 'ioredis';

export const PG_ADMIN_URL = process.env.DAMHUB_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const REDIS_URL = process.env.DAMHUB_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/0';

export interface ClusterEnv {
  databaseUrl: string;
  redisUrl: string;
  keyPrefix: string;
  /** Drops the database and deletes the prefix's keys. */
  cleanup(): Promise<void>;
}

let reason: string | null | undefined;

/** null when both services answer; otherwise why not. */
export async function servicesUnavailable(): Promise<string | null> {
  if (reason !== undefined) return reason;
  const problems: string[] = [];
  const c = new pg.Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 3000 });
  c.on('error', () => {});
  try {
    await c.connect();
    await c.query('SELECT 1');
  } catch (e) {
    problems.push(`PostgreSQL at ${PG_ADMIN_URL}: ${(e as Error).message}`);
  } finally {
    await c.end().catch(() => {});
  }
  const r = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 3000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  r.on('error', () => {});
  try {
    await r.connect();
    await r.ping();
  } catch (e) {
    problems.push(`Redis at ${REDIS_URL}: ${(e as Error).message}`);
  } finally {
    r.disconnect();
  }
  reason = problems.length ? problems.join('; ') : null;
  return reason;
}

/**
 * A fresh environment, or null (after printing why) when the services are unreachable outside CI.
 * Under CI=true an unreachable service throws, so the suite fails.
 */
export async function clusterEnv(opts: { what?: string; prefix?: string } = {}): Promise<ClusterEnv | null> {
  const what = opts.what ?? 'cluster-store tests';
  const prefix = opts.prefix ?? 'damhub_test';
  const why = await servicesUnavailable();
  if (why) {
    if (process.env.CI === 'true' || process.env.CI === '1') throw new Error(`${what} need PostgreSQL and Redis (CI=true): ${why}`);
    process.stdout.write(`# skipping ${what}: ${why}\n`);
    return null;
  }
  const dbName = `${prefix}_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 3000 });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  await admin.end();
  const u = new URL(PG_ADMIN_URL);
  u.pathname = `/${dbName}`;
  const keyPrefix = `${prefix.replace(/_/g, '-')}:${randomUUID()}:`;
  return {
    databaseUrl: u.toString(),
    redisUrl: REDIS_URL,
    keyPrefix,
    async cleanup() {
      const adm = new pg.Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 3000 });
      await adm.connect();
      await adm.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
      await adm.end();
      const r = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
      r.on('error', () => {});
      try {
        let cursor = '0';
        do {
          const [next, keys] = await r.scan(cursor, 'MATCH', `${keyPrefix}*`, 'COUNT', 500);
          cursor = next;
          if (keys.length) await r.del(...keys);
        } while (cursor !== '0');
      } finally {
        r.disconnect();
      }
    },
  };
}

/** A TCP port on 127.0.0.1 that nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}
