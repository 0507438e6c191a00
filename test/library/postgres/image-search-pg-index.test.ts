/**
 * The search-by-image suite (test/library/image-search.test.ts), again, with the library index in PostgreSQL
 * (cluster stores on a fresh `cindex_` database; see test/helpers/cindex-env.ts).
 */
import { runSuiteOnPgIndex } from '../../helpers/cindex-env.js';

await runSuiteOnPgIndex('image-search', () => import('../image-search.test.js'));
