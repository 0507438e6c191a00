/**
 * The provider conformance suite over the library (test/library-conformance.test.ts), again, with the library index in PostgreSQL
 * (cluster stores on a fresh `cindex_` database; see test/helpers/cindex-env.ts).
 */
import { after, test } from 'node:test';
import { useLibraryPgIndex } from './helpers/cindex-env.js';

const env = await useLibraryPgIndex();
if (env) {
  await import('./library-conformance.test.js');
  after(() => env.cleanup());
} else {
  test('library-conformance suite over the PostgreSQL index', (t) => t.skip('PostgreSQL or Redis unreachable (reason printed above)'));
}
