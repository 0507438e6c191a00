/**
 * The library write suite (test/library/library-writes.test.ts), again, with the library index in
 * PostgreSQL (a fresh `cindex_` database; see test/helpers/cindex-env.ts).
 */
import { runSuiteOnPgIndex } from '../../helpers/cindex-env.js';

await runSuiteOnPgIndex('library-writes', () => import('../library-writes.test.js'));
