/**
 * The library's index: folders, assets, versions, accounts and the searchable text of every asset,
 * in its own SQLite file (`<data>/library.sqlite`; schema in sqlite-schema.ts). Paths are relative
 * to the library root with forward slashes and no leading slash ('' is the root); nothing here
 * touches the file system.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { Database } from '../../../stores/sqlite/driver.js';
import { privateSqliteFile } from '../../../stores/private-files.js';
import { EngineFollower } from '../search/catch-up.js';
import { SearchEngine } from '../search/engine.js';
import { readSnapshot, writeSnapshot } from '../search/snapshot.js';
import { FACETS } from '../search/types.js';
import { DescriptorStore } from '../similarity/store.js';
import type { AccountRow, AssetMove, AssetRow, FacetKey, LockRow, IndexListQuery, IndexSearch, IndexSearchResult, FileState, LibraryIndexStore, ListPage, VersionRow } from './contract.js';
import { belowRange, inOrder, toLock, ASSET_COLUMNS, ASSET_COLUMNS_OF_A, FACET_COLUMN, orientationOf, searchDoc, searchText, toAccount, toAsset, toVersion, yearOf } from './rows.js';
import { migrateSqliteIndex } from './sqlite-schema.js';
import { LargeMap } from '../large-map.js';
import { FolderAggregates } from './folder-aggregates.js';

/** Libraries from this size on keep a search snapshot (search/snapshot.ts) for a fast start. */
export const SNAPSHOT_MIN_ASSETS = 20_000;

/** Removal log entries kept for other processes' engines to catch up with; older ones are pruned. */
const REMOVED_LOG_KEEP = 100_000;

export class LibraryIndex implements LibraryIndexStore {
  readonly kind = 'sqlite' as const;
  readonly db: BetterSqlite3.Database;
  private readonly stmts;

  constructor(
    readonly file: string,
    private readonly opts: { snapshotMinAssets?: number } = {},
  ) {
    privateSqliteFile(file);
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('foreign_keys = ON');
    this.db.pragma('busy_timeout = 5000');
    migrateSqliteIndex(this.db);
    const db = this.db;
    this.stmts = {
      folder: db.prepare('SELECT path, parent, name FROM folders WHERE path = ?'),
      childFolders: db.prepare('SELECT path, name FROM folders WHERE parent = ? ORDER BY name COLLATE NOCASE, path'),
      insertFolder: db.prepare('INSERT OR IGNORE INTO folders (path, parent, name) VALUES (?, ?, ?)'),
      assetById: db.prepare(`SELECT ${ASSET_COLUMNS} FROM assets WHERE id = ?`),
      // A page of rows by key in one prepared statement whatever its size (json_each of the keys).
      assetsByRowids: db.prepare(`SELECT ${ASSET_COLUMNS} FROM assets WHERE rowid IN (SELECT value FROM json_each(?))`),
      assetsByIds: db.prepare(`SELECT ${ASSET_COLUMNS} FROM assets WHERE id IN (SELECT value FROM json_each(?))`),
      assetByPath: db.prepare(`SELECT ${ASSET_COLUMNS} FROM assets WHERE rel_path = ?`),
      fileStates: db.prepare("SELECT rel_path, size, mtime_ms, mime = 'application/octet-stream' AS untyped FROM assets"),
      versions: db.prepare('SELECT * FROM versions WHERE asset_id = ? ORDER BY version DESC'),
      nextSeq: db.prepare("UPDATE index_meta SET value = value + 1 WHERE key = 'change_seq' RETURNING value").pluck(),
      changedSince: db.prepare('SELECT rowid, folder_path, kind, ext, year, orientation, mtime_ms, search_text FROM assets WHERE change_seq > ? ORDER BY change_seq'),
      removedSince: db.prepare('SELECT asset_rowid FROM removed_assets WHERE seq > ? ORDER BY seq').pluck(),
      metaValue: db.prepare('SELECT value FROM index_meta WHERE key = ?').pluck(),
      account: db.prepare('SELECT * FROM accounts WHERE id = ?'),
      accountByName: db.prepare('SELECT * FROM accounts WHERE name = ?'),
      generation: db.prepare('SELECT total_changes() AS c, (SELECT data_version FROM pragma_data_version) AS v'),
    };
  }

  close(): void {
    if (!this.db.open) return;
    if (this.follower.current && this.follower.seq !== this.snapshotSeq) this.saveSnapshot();
    this.db.close();
  }

  /**
   * SQLite's total_changes() counts every row this connection wrote (scanner, accounts) and
   * data_version moves on every commit by another connection (`damhub index`, `damhub users`).
   */
  generation(): string {
    const g = this.stmts.generation.get() as { c: number; v: number };
    return `${g.c}.${g.v}`;
  }

  private descriptorStore: DescriptorStore | null = null;

  descriptors(): DescriptorStore {
    return (this.descriptorStore ??= new DescriptorStore(this.db));
  }

  private get snapshotFile(): string {
    return `${this.file}.search`;
  }

  /** Writes the engine's snapshot when the library is large enough for it to matter. */
  private saveSnapshot(): void {
    const engine = this.follower.current;
    if (!engine || engine.size < (this.opts.snapshotMinAssets ?? SNAPSHOT_MIN_ASSETS)) return;
    try {
      writeSnapshot(this.snapshotFile, engine.exportState(), this.stmts.metaValue.get('instance') as number, this.follower.seq);
      this.snapshotSeq = this.follower.seq;
    } catch {
      /* a snapshot is a cache: the next start builds from the index instead */
    }
  }

  // ── folders ──────────────────────────────────────────────────────────────────────────────
  folder(path: string): { path: string; name: string } | null {
    return (this.stmts.folder.get(path) as { path: string; name: string } | undefined) ?? null;
  }

  childFolders(path: string): { path: string; name: string }[] {
    return this.stmts.childFolders.all(path) as { path: string; name: string }[];
  }

  /** Creates the folder and its ancestors. */
  ensureFolder(path: string): void {
    if (path === '') {
      this.stmts.insertFolder.run('', null, '');
      return;
    }
    const parts = path.split('/');
    for (let i = 0; i <= parts.length; i++) {
      const p = parts.slice(0, i).join('/');
      const parent = i === 0 ? null : parts.slice(0, i - 1).join('/');
      this.stmts.insertFolder.run(p, parent, i === 0 ? '' : parts[i - 1]!);
    }
  }

  /** Drops folders that no longer hold assets or sub-folders with assets (after a scan). */
  pruneFolders(existing: Set<string>): void {
    const all = this.db.prepare('SELECT path FROM folders').all() as { path: string }[];
    const del = this.db.prepare('DELETE FROM folders WHERE path = ?');
    this.db.transaction(() => {
      for (const { path } of all) if (path !== '' && !existing.has(path)) del.run(path);
    })();
  }

  // ── assets ───────────────────────────────────────────────────────────────────────────────
  asset(id: string): AssetRow | null {
    const r = this.stmts.assetById.get(id) as Record<string, unknown> | undefined;
    return r ? toAsset(r) : null;
  }

  assetByPath(relPath: string): AssetRow | null {
    const r = this.stmts.assetByPath.get(relPath) as Record<string, unknown> | undefined;
    return r ? toAsset(r) : null;
  }

  /** rel_path → size/mtime of every indexed file: the cheap rescan compares against this. */
  fileStates(): LargeMap<string, FileState> {
    const m = new LargeMap<string, FileState>();
    for (const r of this.stmts.fileStates.iterate() as Iterable<{ rel_path: string; size: number; mtime_ms: number; untyped: number }>) m.set(r.rel_path, { size: r.size, mtimeMs: r.mtime_ms, untyped: r.untyped === 1 });
    return m;
  }

  /**
   * Writes an asset and everything derived from it (keywords, full-text row) in one transaction;
   * when `previous` is given it becomes a version row first.
   */
  upsertAsset(a: AssetRow, previous: VersionRow | null): void {
    this.db.transaction(() => {
      this.ensureFolder(a.folderPath);
      if (previous) {
        this.db.prepare(`INSERT OR REPLACE INTO versions (asset_id, version, size, mtime_ms, mime, width, height, hashes, meta, blob, comment, created_at)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(previous.assetId, previous.version, previous.size, previous.mtimeMs, previous.mimeType, previous.width, previous.height,
          previous.hashes ? JSON.stringify(previous.hashes) : null, JSON.stringify(previous.meta), previous.blob, previous.comment, previous.createdAt);
      }
      const old = this.db.prepare('SELECT rowid FROM assets WHERE id = ?').get(a.id) as { rowid: number } | undefined;
      if (old) this.db.prepare('DELETE FROM asset_keywords WHERE asset_rowid = ?').run(old.rowid);
      const year = yearOf(a);
      const orientation = orientationOf(a);
      const row = this.db.prepare(`INSERT INTO assets (id, rel_path, folder_path, name, ext, size, mtime_ms, created_ms, mime, kind, width, height, year, orientation, version, version_comment, meta, hashes, blob, indexed_at, search_text, change_seq)
        VALUES (@id, @relPath, @folderPath, @name, @ext, @size, @mtimeMs, @createdMs, @mimeType, @kind, @width, @height, @year, @orientation, @version, @versionComment, @meta, @hashes, @blob, @indexedAt, @searchText, @seq)
        ON CONFLICT (id) DO UPDATE SET rel_path=excluded.rel_path, folder_path=excluded.folder_path, name=excluded.name, ext=excluded.ext, size=excluded.size,
          mtime_ms=excluded.mtime_ms, created_ms=excluded.created_ms, mime=excluded.mime, kind=excluded.kind, width=excluded.width, height=excluded.height,
          year=excluded.year, orientation=excluded.orientation, version=excluded.version, version_comment=excluded.version_comment, meta=excluded.meta,
          hashes=excluded.hashes, blob=excluded.blob, indexed_at=excluded.indexed_at, search_text=excluded.search_text, change_seq=excluded.change_seq
        RETURNING rowid`).get({
        ...a, year, orientation, meta: JSON.stringify(a.meta), hashes: a.hashes ? JSON.stringify(a.hashes) : null,
        searchText: searchText(a.name, a.folderPath, a.meta), seq: this.stmts.nextSeq.get() as number,
      }) as { rowid: number };
      const kwIns = this.db.prepare('INSERT OR IGNORE INTO asset_keywords (asset_rowid, keyword) VALUES (?, ?)');
      for (const k of a.meta.keywords) kwIns.run(row.rowid, k.toLowerCase());
    })();
  }

  removeAsset(relPath: string): void {
    this.db.transaction(() => {
      const r = this.db.prepare('SELECT rowid FROM assets WHERE rel_path = ?').get(relPath) as { rowid: number } | undefined;
      if (r) this.removeRow(r.rowid);
    })();
  }

  /** Deletes an asset row and logs the removal for the search engines (inside a transaction). */
  private removeRow(rowid: number): void {
    this.db.prepare('DELETE FROM assets WHERE rowid = ?').run(rowid);
    this.db.prepare('INSERT INTO removed_assets (seq, asset_rowid) VALUES (?, ?)').run(this.stmts.nextSeq.get() as number, rowid);
  }

  /** Keeps the removal log bounded; an engine further behind than what is kept rebuilds. */
  pruneRemovalLog(): void {
    const seq = this.stmts.metaValue.get('change_seq') as number;
    const below = seq - REMOVED_LOG_KEEP;
    if (below <= 0) return;
    this.db.transaction(() => {
      if (this.db.prepare('DELETE FROM removed_assets WHERE seq < ?').run(below).changes > 0) {
        this.db.prepare("UPDATE index_meta SET value = max(value, ?) WHERE key = 'removed_pruned_below'").run(below);
      }
    })();
  }

  // ── keyword search ───────────────────────────────────────────────────────────────────────
  /** The engine and the change sequence it reflects (search/catch-up.ts). */
  private readonly follower = new EngineFollower();
  private snapshotSeq = -1;

  /**
   * The search engine, current with every committed change, including those of other processes
   * on the same index file (`damhub index` beside a running hub): built on first use, then caught
   * up from the change sequence on every call (an indexed lookup that finds nothing when idle).
   */
  searchEngine(): SearchEngine {
    let built = false;
    // One read transaction: the sequence, the removals and the changed rows are one snapshot.
    this.db.transaction(() => {
      const seq = this.stmts.metaValue.get('change_seq') as number;
      if (!this.follower.current) {
        const snap = readSnapshot(this.snapshotFile, this.stmts.metaValue.get('instance') as number, seq);
        if (snap) {
          this.follower.adopt(SearchEngine.fromState(snap.state), snap.seq);
          this.snapshotSeq = snap.seq;
        }
      }
      if (this.follower.isCurrent(seq)) return;
      const round = this.follower.begin(seq, this.stmts.metaValue.get('removed_pruned_below') as number);
      if (round.readsRemovals) for (const rowid of this.stmts.removedSince.iterate(round.from) as Iterable<number>) round.removed(rowid);
      for (const r of this.stmts.changedSince.iterate(round.from) as Iterable<Record<string, unknown>>) round.changed(searchDoc(r));
      round.finish();
      built = round.build;
    })();
    if (built) this.saveSnapshot();
    return this.follower.current!;
  }

  search(s: IndexSearch): IndexSearchResult {
    const account = this.account(s.accountId);
    const query = s.query(account, s.scope === null || this.folder(s.scope) !== null);
    const result = this.searchEngine().search(query);
    return { result, rows: this.assetsByRowids(result.rowids.slice(0, s.pageSize)) };
  }

  /** Asset rows by row id, in the order given (missing ones skipped). */
  assetsByRowids(rowids: number[]): AssetRow[] {
    if (!rowids.length) return [];
    return inOrder(rowids, this.stmts.assetsByRowids.all(JSON.stringify(rowids)) as Record<string, unknown>[], (r) => r.rowid as number);
  }

  assetsByIds(ids: string[]): AssetRow[] {
    if (!ids.length) return [];
    return inOrder(ids, this.stmts.assetsByIds.all(JSON.stringify(ids)) as Record<string, unknown>[], (r) => r.id as string);
  }

  versions(assetId: string): VersionRow[] {
    return (this.stmts.versions.all(assetId) as Record<string, unknown>[]).map(toVersion);
  }

  // ── listing and search ───────────────────────────────────────────────────────────────────
  /**
   * One page of a folder listing in keyset order (name, then id) plus the exact total and facet
   * counts. Keyword search is the search engine's (searchEngine()).
   */
  list(q: IndexListQuery): ListPage {
    const where = ['a.folder_path = @folder'];
    const params: Record<string, unknown> = { folder: q.folderPath };
    const facetWhere = (skip: FacetKey | null) => {
      const parts: string[] = [];
      for (const [facet, values] of Object.entries(q.filters) as [FacetKey, string[]][]) {
        if (!values?.length || facet === skip) continue;
        const names = values.map((v, i) => {
          const k = `f_${facet}_${i}`;
          params[k] = facet === 'year' ? Number(v) : v;
          return `@${k}`;
        });
        if (facet === 'keyword') parts.push(`a.rowid IN (SELECT asset_rowid FROM asset_keywords WHERE keyword IN (${names.join(',')}))`);
        else parts.push(`a.${FACET_COLUMN[facet]} IN (${names.join(',')})`);
      }
      return parts;
    };
    const from = 'assets a';
    const base = [...where, ...facetWhere(null)];
    const whereSql = base.length ? `WHERE ${base.join(' AND ')}` : '';
    const sortExpr = 'a.name';
    let pageWhere = whereSql;
    if (q.after) {
      params.afterKey = q.after.key;
      params.afterId = q.after.id;
      pageWhere += `${whereSql ? ' AND' : 'WHERE'} (${sortExpr} > @afterKey OR (${sortExpr} = @afterKey AND a.id > @afterId))`;
    }
    params.limit = q.limit;
    // One read transaction: the page, the generation its aggregates are keyed by and (when not
    // memoised) the aggregates are one snapshot.
    return this.db.transaction(() => {
      const rows = this.statement(`SELECT ${ASSET_COLUMNS_OF_A}, ${sortExpr} AS sort_key FROM ${from} ${pageWhere} ORDER BY sort_key, a.id LIMIT @limit`).all(params) as Record<string, unknown>[];
      const aggregates = this.folderAggregates.get(this.generation(), q, () => {
        const total = (this.statement(`SELECT count(*) AS n FROM ${from} ${whereSql}`).get(params) as { n: number }).n;
        // Facet counts: each facet counts under every other active filter (so options of the same facet stay selectable).
        const facets = {} as Record<FacetKey, { value: string; count: number }[]>;
        for (const facet of FACETS) {
          const fw = [...where, ...facetWhere(facet)];
          const w = fw.length ? `WHERE ${fw.join(' AND ')}` : '';
          const sql = facet === 'keyword'
            ? `SELECT k.keyword AS value, count(*) AS count FROM ${from} JOIN asset_keywords k ON k.asset_rowid = a.rowid ${w} GROUP BY k.keyword ORDER BY count DESC, value LIMIT 30`
            : `SELECT a.${FACET_COLUMN[facet]} AS value, count(*) AS count FROM ${from} ${w} ${w ? 'AND' : 'WHERE'} a.${FACET_COLUMN[facet]} IS NOT NULL GROUP BY value ORDER BY count DESC, value LIMIT 30`;
          facets[facet] = (this.statement(sql).all(params) as { value: string | number; count: number }[]).map((r) => ({ value: String(r.value), count: r.count }));
        }
        return { total, facets };
      });
      return { rows: rows.map(toAsset), total: aggregates.total, sortKeys: rows.map((r) => r.sort_key as number | string), facets: aggregates.facets };
    })();
  }

  /**
   * A folder's total and facet counts, the same for every page of it: memoised per index
   * generation (folder-aggregates.ts), so paging through a folder or coming back to it counts once
   * per change of the index rather than once per page.
   */
  private readonly folderAggregates = new FolderAggregates();

  /** Prepared listing statements by SQL text (their shape varies only with the active filters). */
  private readonly listStmts = new Map<string, BetterSqlite3.Statement>();

  private statement(sql: string): BetterSqlite3.Statement {
    let stmt = this.listStmts.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      if (this.listStmts.size >= 256) this.listStmts.delete(this.listStmts.keys().next().value!);
      this.listStmts.set(sql, stmt);
    }
    return stmt;
  }

  // ── accounts ─────────────────────────────────────────────────────────────────────────────
  addAccount(a: AccountRow): void {
    this.db.prepare('INSERT INTO accounts (id, name, password_hash, folders, write_folders, created_at) VALUES (?, ?, ?, ?, ?, ?)')
      .run(a.id, a.name, a.passwordHash, JSON.stringify(a.folders), JSON.stringify(a.writeFolders), a.createdAt);
  }

  account(id: string): AccountRow | null {
    const r = this.stmts.account.get(id) as Record<string, unknown> | undefined;
    return r ? toAccount(r) : null;
  }

  accountByName(name: string): AccountRow | null {
    const r = this.stmts.accountByName.get(name) as Record<string, unknown> | undefined;
    return r ? toAccount(r) : null;
  }

  removeAccount(name: string): boolean {
    // Its locks go with it: nobody else could release them.
    return this.db.transaction(() => {
      this.db.prepare('DELETE FROM asset_locks WHERE account_id IN (SELECT id FROM accounts WHERE name = ?)').run(name);
      return this.db.prepare('DELETE FROM accounts WHERE name = ?').run(name).changes > 0;
    })();
  }

  setAccountPassword(name: string, passwordHash: string): boolean {
    return this.db.prepare('UPDATE accounts SET password_hash = ? WHERE name = ?').run(passwordHash, name).changes > 0;
  }

  listAccounts(): AccountRow[] {
    return (this.db.prepare('SELECT * FROM accounts ORDER BY name').all() as Record<string, unknown>[]).map(toAccount);
  }

  // ── writes through the hub ───────────────────────────────────────────────────────────────
  assetsUnder(folderPath: string): AssetRow[] {
    const [lo, hi] = belowRange(folderPath);
    const sql = folderPath === ''
      ? `SELECT ${ASSET_COLUMNS} FROM assets`
      : `SELECT ${ASSET_COLUMNS} FROM assets WHERE folder_path = ? OR (folder_path >= ? AND folder_path < ?)`;
    return (this.db.prepare(sql).all(...(folderPath === '' ? [] : [folderPath, lo, hi])) as Record<string, unknown>[]).map(toAsset);
  }

  foldersUnder(folderPath: string): string[] {
    const [lo, hi] = belowRange(folderPath);
    if (folderPath === '') return this.db.prepare('SELECT path FROM folders').pluck().all() as string[];
    return this.db.prepare('SELECT path FROM folders WHERE path = ? OR (path >= ? AND path < ?)').pluck().all(folderPath, lo, hi) as string[];
  }

  relocate(moves: AssetMove[], folders: { from: string; to: string } | null): void {
    this.db.transaction(() => {
      if (folders) {
        const paths = this.foldersUnder(folders.from);
        const del = this.db.prepare('DELETE FROM folders WHERE path = ?');
        for (const p of paths) del.run(p);
        for (const p of paths) this.ensureFolder(folders.to + p.slice(folders.from.length));
      }
      const rowOf = this.db.prepare('SELECT rowid FROM assets WHERE id = ?');
      for (const { from, to } of moves) {
        // A stale row at the new path (its file gone, not yet rescanned) makes way, with its history.
        const stale = rowOf.get(to.id) as { rowid: number } | undefined;
        if (stale) this.removeRow(stale.rowid);
        this.db.prepare('DELETE FROM versions WHERE asset_id = ?').run(to.id);
        this.db.prepare('DELETE FROM asset_locks WHERE asset_id = ?').run(to.id);
        const old = rowOf.get(from.id) as { rowid: number } | undefined;
        if (old) this.removeRow(old.rowid);
        this.upsertAsset(to, null);
        this.db.prepare('UPDATE versions SET asset_id = ? WHERE asset_id = ?').run(to.id, from.id);
        this.db.prepare('UPDATE asset_locks SET asset_id = ? WHERE asset_id = ?').run(to.id, from.id);
      }
    })();
  }

  dropAssets(ids: string[], folders: string[]): void {
    this.db.transaction(() => {
      const rowOf = this.db.prepare('SELECT rowid FROM assets WHERE id = ?');
      for (const id of ids) {
        const r = rowOf.get(id) as { rowid: number } | undefined;
        if (r) this.removeRow(r.rowid);
        this.db.prepare('DELETE FROM versions WHERE asset_id = ?').run(id);
        this.db.prepare('DELETE FROM asset_locks WHERE asset_id = ?').run(id);
      }
      const del = this.db.prepare('DELETE FROM folders WHERE path = ?');
      for (const f of folders) for (const p of this.foldersUnder(f)) if (p !== '') del.run(p);
    })();
  }

  lock(assetId: string): LockRow | null {
    const r = this.db.prepare('SELECT * FROM asset_locks WHERE asset_id = ?').get(assetId) as Record<string, unknown> | undefined;
    return r ? toLock(r) : null;
  }

  locks(assetIds: string[]): Map<string, LockRow> {
    if (!assetIds.length) return new Map();
    const rows = this.db.prepare('SELECT * FROM asset_locks WHERE asset_id IN (SELECT value FROM json_each(?))').all(JSON.stringify(assetIds)) as Record<string, unknown>[];
    return new Map(rows.map((r) => [r.asset_id as string, toLock(r)]));
  }

  takeLock(l: LockRow): LockRow {
    return this.db.transaction(() => {
      this.db.prepare('INSERT OR IGNORE INTO asset_locks (asset_id, account_id, locked_by, locked_at) VALUES (?, ?, ?, ?)').run(l.assetId, l.accountId, l.lockedBy, l.lockedAt);
      return this.lock(l.assetId)!;
    })();
  }

  releaseLock(assetId: string, accountId: string): boolean {
    return this.db.prepare('DELETE FROM asset_locks WHERE asset_id = ? AND account_id = ?').run(assetId, accountId).changes > 0;
  }
}
