/**
 * The versioned schema of the library's SQLite index file (sqlite.ts), in `PRAGMA user_version`.
 * Paths are relative to the library root with forward slashes and no leading slash ('' is the root).
 */
import { randomInt } from 'node:crypto';
import type BetterSqlite3 from 'better-sqlite3';
import { searchText } from './rows.js';

const MIGRATIONS: (string | ((db: BetterSqlite3.Database) => void))[] = [
  `
  CREATE TABLE folders (path TEXT PRIMARY KEY, parent TEXT, name TEXT NOT NULL) WITHOUT ROWID;
  CREATE INDEX folders_parent ON folders(parent, name);
  CREATE TABLE assets (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    rel_path TEXT NOT NULL UNIQUE,
    folder_path TEXT NOT NULL,
    name TEXT NOT NULL,
    ext TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ms INTEGER NOT NULL,
    created_ms INTEGER NOT NULL,
    mime TEXT NOT NULL,
    kind TEXT NOT NULL,
    width INTEGER,
    height INTEGER,
    year INTEGER,
    orientation TEXT,
    version INTEGER NOT NULL,
    version_comment TEXT,
    meta TEXT NOT NULL,
    hashes TEXT,
    blob TEXT,
    indexed_at INTEGER NOT NULL
  );
  CREATE INDEX assets_folder ON assets(folder_path, name, id);
  CREATE TABLE asset_keywords (asset_rowid INTEGER NOT NULL REFERENCES assets(rowid) ON DELETE CASCADE, keyword TEXT NOT NULL, PRIMARY KEY (asset_rowid, keyword)) WITHOUT ROWID;
  CREATE INDEX asset_keywords_kw ON asset_keywords(keyword);
  CREATE TABLE versions (
    asset_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    size INTEGER NOT NULL,
    mtime_ms INTEGER NOT NULL,
    mime TEXT NOT NULL,
    width INTEGER,
    height INTEGER,
    hashes TEXT,
    meta TEXT NOT NULL,
    blob TEXT,
    comment TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (asset_id, version)
  ) WITHOUT ROWID;
  CREATE VIRTUAL TABLE assets_fts USING fts5(
    name, path, title, caption, keywords, other,
    content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2', prefix='2 3'
  );
  CREATE TABLE accounts (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, password_hash TEXT NOT NULL, folders TEXT NOT NULL, created_at INTEGER NOT NULL);
  `,
  // 2: keyword search moves to the in-memory engine (search/engine.ts). Each asset keeps its
  // searchable text, and a change sequence lets every process's engine catch up incrementally.
  (db) => {
    db.exec(`
      DROP TABLE assets_fts;
      ALTER TABLE assets ADD COLUMN search_text TEXT NOT NULL DEFAULT '';
      ALTER TABLE assets ADD COLUMN change_seq INTEGER NOT NULL DEFAULT 0;
      CREATE INDEX assets_change_seq ON assets(change_seq);
      CREATE TABLE removed_assets (seq INTEGER PRIMARY KEY, asset_rowid INTEGER NOT NULL);
      CREATE TABLE index_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
      INSERT INTO index_meta (key, value) VALUES ('change_seq', 0), ('removed_pruned_below', 0);
    `);
    const rows = db.prepare('SELECT rowid, name, folder_path, meta FROM assets').all() as { rowid: number; name: string; folder_path: string; meta: string }[];
    const upd = db.prepare('UPDATE assets SET search_text = ?, change_seq = ? WHERE rowid = ?');
    let seq = 0;
    for (const r of rows) upd.run(searchText(r.name, r.folder_path, JSON.parse(r.meta)), ++seq, r.rowid);
    db.prepare("UPDATE index_meta SET value = ? WHERE key = 'change_seq'").run(seq);
  },
  // 3: an instance id, so a search snapshot is never applied to another index file.
  (db) => {
    db.prepare("INSERT INTO index_meta (key, value) VALUES ('instance', ?)").run(randomInt(1, 2 ** 47));
  },
  // 4: writes through the hub (issue 30): each account's write folders (none by default) and the
  // locks on assets.
  `
  ALTER TABLE accounts ADD COLUMN write_folders TEXT NOT NULL DEFAULT '[]';
  CREATE TABLE asset_locks (asset_id TEXT PRIMARY KEY, account_id TEXT NOT NULL, locked_by TEXT NOT NULL, locked_at INTEGER NOT NULL) WITHOUT ROWID;
  CREATE INDEX asset_locks_account ON asset_locks(account_id);
  `,
];

/** The schema version (`PRAGMA user_version`) this build migrates an index file to. */
export const SQLITE_INDEX_SCHEMA_VERSION = MIGRATIONS.length;

/** Applies the migrations the file has not seen yet, each in its own transaction. */
export function migrateSqliteIndex(db: BetterSqlite3.Database): void {
  const version = db.pragma('user_version', { simple: true }) as number;
  for (let v = version; v < MIGRATIONS.length; v++) {
    db.transaction(() => {
      const m = MIGRATIONS[v]!;
      if (typeof m === 'string') db.exec(m);
      else m(db);
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
}
