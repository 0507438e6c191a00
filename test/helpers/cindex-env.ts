/**
 * The library suites over the PostgreSQL index: a test file sets DAMHUB_TEST_LIBRARY_INDEX=postgres
 * and imports an existing library suite; every hub that suite starts (startTestHub) then runs on
 * cluster stores over one fresh database `cindex_…` (dropped at the end) and its own Redis key
 * prefix, so a second hub in the same suite is a second node on the same index.
 * Unreachable services: CI=true fails loudly, otherwise the suite skips with a printed reason.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { Redis } from 'ioredis';
import { ClusterStores } from '../../src/stores/index.js';
import { PG_ADMIN_URL, REDIS_URL, servicesUnavailable } from '../stores-env.js';

export interface CindexEnv {
  databaseUrl: string;
  redisUrl: string;
  keyPrefix: string;
  cleanup(): Promise<void>;
}

/** A fresh database `cindex_<random>` and Redis prefix, or null (reason printed) outside CI when unreachable. */
export async function cindexEnv(): Promise<CindexEnv | null> {
  const why = await servicesUnavailable();
  if (why) {
    if (process.env.CI === 'true' || process.env.CI === '1') throw new Error(`the PostgreSQL library index tests need PostgreSQL and Redis (CI=true): ${why}`);
    process.stdout.write(`# skipping PostgreSQL library index tests: ${why}\n`);
    return null;
  }
  const dbName = `cindex_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 3000 });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  await admin.end();
  const u = new URL(PG_ADMIN_URL);
  u.pathname = `/${dbName}`;
  const keyPrefix = `cindex-test:${randomUUID()}:`;
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

let shared: CindexEnv | null = null;

/** Called by the wrapper test file before it imports the suite; null: skip (reason printed). */
export async function useLibraryPgIndex(): Promise<CindexEnv | null> {
  shared = await cindexEnv();
  if (shared) process.env.DAMHUB_TEST_LIBRARY_INDEX = 'postgres';
  return shared;
}

/** Cluster stores on the shared database when a wrapper asked for the PostgreSQL index, else undefined. */
export async function libraryTestStores(): Promise<ClusterStores | undefined> {
  if (process.env.DAMHUB_TEST_LIBRARY_INDEX !== 'postgres' || !shared) return undefined;
  return ClusterStores.open({ databaseUrl: shared.databaseUrl, redisUrl: shared.redisUrl, keyPrefix: shared.keyPrefix });
}
