/**
 * Versioned schema of the library index in PostgreSQL (cluster mode; see postgres.ts and
 * docs/library.md). Kept apart from the auth store's migrations, in their own version table, so
 * the two evolve independently. The library applies it itself: the first use of its index or of
 * the indexer lease on a pool (LibraryDb), and `damhub migrate`. It runs under the stores'
 * migration advisory lock, so nodes starting together (or a node still on a release whose store
 * migrations carried these) apply each once.
 *
 * Text columns compared or sorted by the listings use the "C" collation: byte order of UTF-8,
 * which is what the SQLite index sorts by, so pages and cursors agree between the two stores.
 */
import type pg from 'pg';
import { Db } from '../../../stores/postgres/index.js';
import { MIGRATION_LOCK_KEY } from '../../../stores/postgres/migrations.js';

export const LIBRARY_PG_MIGRATIONS: { version: number; name: string; sql: string }[] = [
  {
    version: 1,
    name: 'library index, change sequence, accounts, image descriptors, indexer lease',
    sql: `
      CREATE TABLE library_folders (path TEXT COLLATE "C" PRIMARY KEY, parent TEXT COLLATE "C", name TEXT COLLATE "C" NOT NULL);
      CREATE INDEX library_folders_parent ON library_folders (parent);
      CREATE TABLE library_assets (
        rowid BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id TEXT COLLATE "C" NOT NULL UNIQUE,
        rel_path TEXT COLLATE "C" NOT NULL UNIQUE,
        folder_path TEXT COLLATE "C" NOT NULL,
        name TEXT COLLATE "C" NOT NULL,
        ext TEXT COLLATE "C" NOT NULL,
        size BIGINT NOT NULL,
        mtime_ms BIGINT NOT NULL,
        created_ms BIGINT NOT NULL,
        mime TEXT NOT NULL,
        kind TEXT COLLATE "C" NOT NULL,
        width INTEGER,
        height INTEGER,
        year INTEGER,
        orientation TEXT COLLATE "C",
        version INTEGER NOT NULL,
        version_comment TEXT,
        meta TEXT NOT NULL,
        hashes TEXT,
        blob TEXT,
        indexed_at BIGINT NOT NULL,
        search_text TEXT NOT NULL,
        change_seq BIGINT NOT NULL
      );
      CREATE INDEX library_assets_folder ON library_assets (folder_path, name, id);
      CREATE INDEX library_assets_change_seq ON library_assets (change_seq);
      CREATE TABLE library_asset_keywords (
        asset_rowid BIGINT NOT NULL REFERENCES library_assets(rowid) ON DELETE CASCADE,
        keyword TEXT COLLATE "C" NOT NULL,
        PRIMARY KEY (asset_rowid, keyword)
      );
      CREATE INDEX library_asset_keywords_kw ON library_asset_keywords (keyword);
      CREATE TABLE library_versions (
        asset_id TEXT NOT NULL,
        version INTEGER NOT NULL,
        size BIGINT NOT NULL,
        mtime_ms BIGINT NOT NULL,
        mime TEXT NOT NULL,
        width INTEGER,
        height INTEGER,
        hashes TEXT,
        meta TEXT NOT NULL,
        blob TEXT,
        comment TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (asset_id, version)
      );
      -- Removals for other nodes' search engines to apply; seq shares the change sequence.
      CREATE TABLE library_removed (seq BIGINT PRIMARY KEY, asset_rowid BIGINT NOT NULL);
      CREATE TABLE library_meta (key TEXT PRIMARY KEY, value BIGINT NOT NULL);
      INSERT INTO library_meta (key, value) VALUES ('change_seq', 0), ('removed_pruned_below', 0);
      CREATE TABLE library_accounts (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, password_hash TEXT NOT NULL, folders JSONB NOT NULL, created_at BIGINT NOT NULL);
      CREATE TABLE library_descriptors (
        asset_id TEXT PRIMARY KEY,
        blob TEXT,
        folder_path TEXT NOT NULL,
        vec BYTEA,
        phash BYTEA,
        computed_at BIGINT NOT NULL
      );
      CREATE TABLE library_descriptor_log (seq BIGINT PRIMARY KEY, asset_id TEXT NOT NULL);
      CREATE TABLE library_lease (name TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at BIGINT NOT NULL);
    `,
  },
  {
    version: 2,
    name: 'write folders of accounts, locks on assets',
    sql: `
      ALTER TABLE library_accounts ADD COLUMN write_folders JSONB NOT NULL DEFAULT '[]';
      CREATE TABLE library_locks (asset_id TEXT PRIMARY KEY, account_id TEXT NOT NULL, locked_by TEXT NOT NULL, locked_at BIGINT NOT NULL);
      CREATE INDEX library_locks_account ON library_locks (account_id);
    `,
  },
];

/** Applies pending library migrations, in one transaction under the migration lock; returns the versions applied. */
export async function migrateLibraryPg(pool: pg.Pool, now = Date.now()): Promise<number[]> {
  return new Db(pool).tx(async (client) => {
    // Migrations may take longer than a request's statement budget.
    await client.query('SET LOCAL statement_timeout = 0');
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    return applyMigrations(client, now);
  });
}

async function applyMigrations(client: pg.PoolClient, now: number): Promise<number[]> {
  await client.query('CREATE TABLE IF NOT EXISTS library_schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)');
  const done = new Set((await client.query<{ version: number }>('SELECT version FROM library_schema_migrations')).rows.map((r) => r.version));
  const applied: number[] = [];
  for (const m of LIBRARY_PG_MIGRATIONS) {
    if (done.has(m.version)) continue;
    await client.query(m.sql);
    await client.query('INSERT INTO library_schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [m.version, m.name, now]);
    applied.push(m.version);
  }
  return applied;
}

/** Per pool: the library schema is known to be current, or is being migrated. */
const schemas = new WeakMap<pg.Pool, { done: boolean; pending: Promise<unknown> | null }>();

/** Resolves once the library's migrations have run on this pool (once per pool and process; a failure is retried by the next call). */
export async function libraryPgSchema(pool: pg.Pool): Promise<void> {
  let s = schemas.get(pool);
  if (!s) schemas.set(pool, (s = { done: false, pending: null }));
  if (s.done) return;
  const state = s;
  state.pending ??= migrateLibraryPg(pool).then(
    () => {
      state.done = true;
    },
    (e: unknown) => {
      state.pending = null;
      throw e;
    },
  );
  await state.pending;
}

/** The stores' access layer for the library's tables: its first query on a pool applies the library's migrations. */
export class LibraryDb extends Db {
  override async query(text: string, params: unknown[] = [], idempotent = false): Promise<pg.QueryResult<Record<string, unknown>>> {
    await libraryPgSchema(this.pool);
    return super.query(text, params, idempotent);
  }

  override async tx<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    await libraryPgSchema(this.pool);
    return super.tx(fn);
  }
}
