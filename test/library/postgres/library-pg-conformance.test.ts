/**
 * The provider conformance suite over the library (test/library/library-conformance.test.ts), again, with the library index in PostgreSQL
 * (cluster stores on a fresh `cindex_` database; see test/helpers/cindex-env.ts).
 */
import { runSuiteOnPgIndex } from '../../helpers/cindex-env.js';

await runSuiteOnPgIndex('library-conformance', () => import('../library-conformance.test.js'));
