/**
 * The library suites over the PostgreSQL index: a test file sets DAMHUB_TEST_LIBRARY_INDEX=postgres
 * and imports an existing library suite; every hub that suite starts (startTestHub) then runs on
 * cluster stores over one fresh database `cindex_…` (dropped at the end) and its own Redis key
 * prefix, so a second hub in the same suite is a second node on the same index.
 * Unreachable services: CI=true fails loudly, otherwise the suite skips with a printed reason.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import pg from 'pg';
import { ClusterStores } from '../../src/stores/index.js';
import { clusterEnv, type ClusterEnv } from './stores-env.js';

export type CindexEnv = ClusterEnv;

/** A fresh database `cindex_<random>` and Redis prefix, or null (reason printed) outside CI when unreachable. */
export function cindexEnv(): Promise<CindexEnv | null> {
  return clusterEnv({ what: 'the PostgreSQL library index tests', prefix: 'cindex' });
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

/**
 * Runs an existing suite again over the PostgreSQL index: `load` imports the suite's module once
 * the environment is set, then a last test checks that the suite's assets really are rows in
 * PostgreSQL (a suite that silently fell back to SQLite would otherwise pass here too).
 */
export async function runSuiteOnPgIndex(name: string, load: () => Promise<unknown>): Promise<void> {
  const env = await useLibraryPgIndex();
  if (!env) {
    test(`${name} suite over the PostgreSQL index`, (t) => t.skip('PostgreSQL or Redis unreachable (reason printed above)'));
    return;
  }
  await load();
  test('the suite above ran on the PostgreSQL index', async () => {
    const c = new pg.Client({ connectionString: env.databaseUrl });
    await c.connect();
    try {
      const n = (await c.query('SELECT count(*)::int AS n FROM library_assets')).rows[0].n as number;
      assert.ok(n > 0, 'the suite\'s assets are rows in PostgreSQL');
    } finally {
      await c.end();
    }
  });
  after(() => env.cleanup());
}
