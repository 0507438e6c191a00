/**
 * The library's index in cluster mode: PostgreSQL (index-store-pg.ts) on the cluster stores'
 * pool, with the indexer lease (indexer-lease.ts). With the embedded stores: null, and the
 * library keeps its SQLite file.
 */
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { Clock } from '../../clock.js';
import type { HubConfig } from '../../config.js';
import { ClusterStores } from '../../stores/index.js';
import type { Stores } from '../../stores/types.js';
import { PgLibraryIndex } from './index/postgres.js';
import { IndexerLease } from './indexer-lease.js';

export function sharedLibraryIndex(stores: Stores, clock: Clock, config: Pick<HubConfig, 'libraryLeaseSec' | 'libraryRescanSec'>) {
  if (!(stores instanceof ClusterStores)) return null;
  // Unique per process: a restarted node is a new holder and waits for its predecessor's lease.
  const holder = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  return {
    index: new PgLibraryIndex(stores.pg.pool),
    lease: new IndexerLease(stores.pg.pool, holder, clock, config.libraryLeaseSec * 1000),
    rescanMs: config.libraryRescanSec * 1000,
  };
}
