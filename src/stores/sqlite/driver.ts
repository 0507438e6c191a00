/**
 * The SQLite driver, chosen by the Node version that runs the hub.
 *
 * better-sqlite3 13 is a Node-API addon shipped prebuilt in its package (no compiler at install)
 * and the only line that runs on Node 24: 12.x aborts the process there (its Statement destructor
 * calls RemoveEnvironmentCleanupHook during garbage collection, and Node 24 asserts; upstream
 * closed the report without a 12.x fix). 13 needs Node 22 or later and crashes on Node 20, which
 * is past its end of life but still the reference machine's Node: there the 12.x line is used,
 * installed as the optional dependency `better-sqlite3-node20` (an npm alias, compiled at install).
 * Both lines have the same API; the types are @types/better-sqlite3's. Drop the alias with Node 20.
 */
import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

const require = createRequire(import.meta.url);
const NODE_MAJOR = Number(process.versions.node.split('.')[0]);

export const Database = require(NODE_MAJOR >= 22 ? 'better-sqlite3' : 'better-sqlite3-node20') as typeof BetterSqlite3;
