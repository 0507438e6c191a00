/**
 * The library behaviour suite (test/library.test.ts), again, with the library index in PostgreSQL
 * (cluster stores on a fresh `cindex_` database; see test/helpers/cindex-env.ts).
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import pg from 'pg';
import { useLibraryPgIndex } from './helpers/cindex-env.js';

const env = await useLibraryPgIndex();
if (env) {
  await import('./library.test.js');
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
} else {
  test('library suite over the PostgreSQL index', (t) => t.skip('PostgreSQL or Redis unreachable (reason printed above)'));
}
