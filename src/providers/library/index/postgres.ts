/**
 * The library index in PostgreSQL, shared by every hub node (cluster mode). Same rows and rules
 * as the SQLite index (sqlite.ts); what differs is who may see a write: any node, at once. The
 * schema is postgres-schema.ts, applied by the first use of the index (or `damhub migrate`).
 *
 * - The change sequence is a counter row in library_meta taken with UPDATE … RETURNING inside the
 *   writing transaction. Its row lock is held to commit, so sequence numbers are handed out in
 *   commit order: a reader that has applied everything up to N never misses a later commit with
 *   a smaller number (a plain sequence object would not promise that).
 * - Every node keeps its own in-memory keyword engine (search/engine.ts) and catches it up from
 *   that sequence before each search (search/catch-up.ts), in one REPEATABLE READ snapshot; idle,
 *   that is one indexed read. Keyword search is not a tsvector/GIN query: docs/library.md
 *   ("Cluster mode") says why.
 * - Image descriptors and their change log live here too (DescriptorBackend), logged with the same
 *   counter, and are dropped in the transaction that removes an asset or changes its content.
 */
import type pg from 'pg';
import { EngineFollower } from '../search/catch-up.js';
import type { SearchEngine } from '../search/engine.js';
import { FACETS } from '../search/types.js';
import { fromRow, type DescriptorBackend, type PendingImage, type StoredDescriptor } from '../similarity/backend.js';
import { DIM, type Descriptor } from '../similarity/descriptor.js';
import type { AccountRow, AssetMove, AssetRow, FacetKey, LockRow, IndexListQuery, IndexSearch, IndexSearchResult, FileState, LibraryIndexStore, ListPage, VersionRow } from './contract.js';
import { LibraryDb } from './postgres-schema.js';
import { belowRange, inOrder, toLock, ASSET_COLUMNS, FACET_COLUMN, orientationOf, searchDoc, searchText, toAccount, toAsset, toVersion, yearOf } from './rows.js';
import { LargeMap } from '../large-map.js';

type Row = Record<string, unknown>;
type Q = Pick<pg.PoolClient, 'query'>;

/** Removal log entries kept for other nodes' engines to catch up with (as in SQLite). */
const REMOVED_LOG_KEEP = 100_000;
/** Bound on reading the whole index to build a node's engine. */
const BUILD_TIMEOUT_MS = 10 * 60_000;
/** Descriptor log entries kept after they were applied (as in SQLite). */
const DESCRIPTOR_LOG_KEEP = 10_000;

async function nextSeq(c: Q): Promise<number> {
  return Number((await c.query("UPDATE library_meta SET value = value + 1 WHERE key = 'change_seq' RETURNING value")).rows[0]!.value);
}

export class PgLibraryIndex implements LibraryIndexStore {
  readonly kind = 'postgres' as const;
  private readonly db: LibraryDb;

  /** The pool belongs to the caller (the cluster stores); close() does not end it. */
  constructor(readonly pool: pg.Pool) {
    this.db = new LibraryDb(pool);
  }

  close(): void {}

  private async one(text: string, params: unknown[] = []): Promise<Row | undefined> {
    return (await this.db.query(text, params, true)).rows[0];
  }

  // ── folders ──────────────────────────────────────────────────────────────────────────────
  async folder(path: string) {
    const r = await this.one('SELECT path, name FROM library_folders WHERE path = $1', [path]);
    return r ? { path: r.path as string, name: r.name as string } : null;
  }

  async childFolders(path: string) {
    // SQLite's NOCASE folds ASCII letters only; translate() does the same.
    const r = await this.db.query(
      `SELECT path, name FROM library_folders WHERE parent = $1
       ORDER BY translate(name, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz'), path`, [path], true);
    return r.rows.map((x) => ({ path: x.path as string, name: x.name as string }));
  }

  async ensureFolder(path: string): Promise<void> {
    await this.db.tx((c) => ensureFolders(c, path));
  }

  async pruneFolders(existing: Set<string>): Promise<void> {
    await this.db.tx(async (c) => {
      const gone = (await c.query<Row>('SELECT path FROM library_folders')).rows.map((r) => r.path as string).filter((p) => p !== '' && !existing.has(p));
      if (!gone.length) return;
      await c.query('DELETE FROM library_folders WHERE path = ANY($1::text[])', [gone]);
      await nextSeq(c); // the generation moves: cached folder pages drop
    });
  }

  // ── assets ───────────────────────────────────────────────────────────────────────────────
  async asset(id: string) {
    const r = await this.one(`SELECT ${ASSET_COLUMNS} FROM library_assets WHERE id = $1`, [id]);
    return r ? toAsset(r) : null;
  }

  async fileStates() {
    const m = new LargeMap<string, FileState>();
    for (const r of (await this.db.query("SELECT rel_path, size, mtime_ms, mime = 'application/octet-stream' AS untyped FROM library_assets", [], true)).rows) {
      m.set(r.rel_path as string, { size: r.size as number, mtimeMs: r.mtime_ms as number, untyped: r.untyped === true });
    }
    return m;
  }

  async upsertAsset(a: AssetRow, previous: VersionRow | null): Promise<void> {
    await this.db.tx((c) => upsertWith(c, a, previous));
  }

  async removeAsset(relPath: string): Promise<void> {
    await this.db.tx((c) => removeWhere(c, 'rel_path', relPath));
  }

  async pruneRemovalLog(): Promise<void> {
    await this.db.tx(async (c) => {
      const seq = Number((await c.query<Row>("SELECT value FROM library_meta WHERE key = 'change_seq'")).rows[0]!.value);
      const below = seq - REMOVED_LOG_KEEP;
      if (below <= 0) return;
      if (((await c.query('DELETE FROM library_removed WHERE seq < $1', [below])).rowCount ?? 0) > 0) {
        await c.query("UPDATE library_meta SET value = greatest(value, $1) WHERE key = 'removed_pruned_below'", [below]);
      }
    });
  }

  async versions(assetId: string): Promise<VersionRow[]> {
    const r = await this.db.query('SELECT * FROM library_versions WHERE asset_id = $1 ORDER BY version DESC', [assetId], true);
    return r.rows.map(toVersion);
  }

  async generation(): Promise<string> {
    return String((await this.one("SELECT value FROM library_meta WHERE key = 'change_seq'"))!.value);
  }

  // ── keyword search ───────────────────────────────────────────────────────────────────────
  /** The engine and the change sequence it reflects (search/catch-up.ts). */
  private readonly follower = new EngineFollower();
  private running: Promise<SearchEngine> | null = null;
  private queued: Promise<SearchEngine> | null = null;

  /**
   * The engine, current with every change committed before the call. Concurrent callers share
   * catch-ups: one that arrives while another runs waits for it and then for one more round
   * (shared by everyone who arrived meanwhile), since the running one may predate their call.
   */
  searchEngine(): Promise<SearchEngine> {
    if (!this.running) {
      this.running = this.catchUp().finally(() => {
        this.running = null;
      });
      return this.running;
    }
    this.queued ??= this.running.catch(() => undefined).then(() => {
      this.queued = null;
      return this.searchEngine();
    });
    return this.queued;
  }

  private async catchUp(): Promise<SearchEngine> {
    const seq = Number((await this.one("SELECT value FROM library_meta WHERE key = 'change_seq'"))!.value);
    if (this.follower.isCurrent(seq)) return this.follower.current!;
    return this.db.tx(async (c) => {
      // One snapshot: the sequence, the removals and the changed rows agree.
      await c.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
      const meta = new Map((await c.query<Row>('SELECT key, value FROM library_meta')).rows.map((r) => [r.key as string, Number(r.value)]));
      const round = this.follower.begin(meta.get('change_seq')!, meta.get('removed_pruned_below')!);
      const from = round.from;
      if (round.readsRemovals) {
        for (const r of (await c.query<Row>('SELECT asset_rowid FROM library_removed WHERE seq > $1 ORDER BY seq', [from])).rows) round.removed(Number(r.asset_rowid));
      }
      if (from === 0) {
        // A build reads the whole table (a million assets: seconds), beyond a request's budget.
        await c.query('SET LOCAL statement_timeout = 0');
      }
      const changed = await c.query<Row>({
        text: 'SELECT rowid, folder_path, kind, ext, year, orientation, mtime_ms, search_text FROM library_assets WHERE change_seq > $1 ORDER BY change_seq',
        values: [from],
        ...(from === 0 ? { query_timeout: BUILD_TIMEOUT_MS } : {}),
      } as pg.QueryConfig);
      for (const r of changed.rows) round.changed(searchDoc({ ...r, rowid: Number(r.rowid) }));
      return round.finish();
    });
  }

  async search(s: IndexSearch): Promise<IndexSearchResult> {
    // The account and the scope in one statement (one round trip); JSONB and BIGINT come back as in account().
    const r = (await this.one(
      `SELECT (SELECT row_to_json(a) FROM library_accounts a WHERE a.id = $1) AS account,
         ($2::text IS NULL OR EXISTS (SELECT 1 FROM library_folders WHERE path = $2)) AS scope_exists`, [s.accountId, s.scope]))!;
    const query = s.query(r.account ? accountOf(r.account as Row) : null, r.scope_exists === true);
    const result = (await this.searchEngine()).search(query);
    return { result, rows: await this.assetsByRowids(result.rowids.slice(0, s.pageSize)) };
  }

  async assetsByRowids(rowids: number[]): Promise<AssetRow[]> {
    if (!rowids.length) return [];
    const rows = (await this.db.query(`SELECT ${ASSET_COLUMNS} FROM library_assets WHERE rowid = ANY($1::bigint[])`, [rowids], true)).rows;
    return inOrder(rowids, rows, (r) => Number(r.rowid));
  }

  async assetsByIds(ids: string[]): Promise<AssetRow[]> {
    if (!ids.length) return [];
    const rows = (await this.db.query(`SELECT ${ASSET_COLUMNS} FROM library_assets WHERE id = ANY($1::text[])`, [ids], true)).rows;
    return inOrder(ids, rows, (r) => r.id as string);
  }

  // ── listing ──────────────────────────────────────────────────────────────────────────────
  /**
   * One page, its total and the facet counts in ONE statement: one round trip and one snapshot,
   * so the rows, the total and the counts always agree.
   */
  async list(q: IndexListQuery): Promise<ListPage> {
    const params: unknown[] = [q.folderPath];
    const p = (v: unknown) => {
      params.push(v);
      return `$${params.length}`;
    };
    const facetWhere = (skip: FacetKey | null) => {
      const parts = ['a.folder_path = $1'];
      for (const [facet, values] of Object.entries(q.filters) as [FacetKey, string[]][]) {
        if (!values?.length || facet === skip) continue;
        if (facet === 'keyword') parts.push(`a.rowid IN (SELECT asset_rowid FROM library_asset_keywords WHERE keyword = ANY(${p(values)}::text[]))`);
        else if (facet === 'year') parts.push(`a.year = ANY(${p(values.map(Number))}::int[])`);
        else parts.push(`a.${FACET_COLUMN[facet]} = ANY(${p(values)}::text[])`);
      }
      return parts.join(' AND ');
    };
    const where = facetWhere(null);
    let pageWhere = where;
    if (q.after) {
      const k = p(String(q.after.key));
      pageWhere += ` AND (a.name > ${k} OR (a.name = ${k} AND a.id > ${p(q.after.id)}))`;
    }
    const facetSql = FACETS.map((facet) => {
      const w = facetWhere(facet);
      const inner = facet === 'keyword'
        ? `SELECT k.keyword AS value, count(*) AS count FROM library_assets a JOIN library_asset_keywords k ON k.asset_rowid = a.rowid WHERE ${w} GROUP BY k.keyword ORDER BY count DESC, value LIMIT 30`
        : `SELECT a.${FACET_COLUMN[facet]} AS value, count(*) AS count FROM library_assets a WHERE ${w} AND a.${FACET_COLUMN[facet]} IS NOT NULL GROUP BY value ORDER BY count DESC, value LIMIT 30`;
      return `(SELECT coalesce(json_agg(f ORDER BY f.count DESC, f.value), '[]') FROM (${inner}) f) AS "f_${facet}"`;
    });
    const sql = `SELECT
      (SELECT coalesce(json_agg(r ORDER BY r.name, r.id), '[]') FROM (SELECT ${ASSET_COLUMNS} FROM library_assets a WHERE ${pageWhere} ORDER BY a.name, a.id LIMIT ${p(q.limit)}) r) AS rows,
      (SELECT count(*) FROM library_assets a WHERE ${where}) AS total,
      ${facetSql.join(',\n      ')}`;
    const r = (await this.db.query(sql, params, true)).rows[0]!;
    const rows = r.rows as Row[];
    const facets = {} as Record<FacetKey, { value: string; count: number }[]>;
    for (const f of FACETS) facets[f] = (r[`f_${f}`] as { value: string | number; count: number }[]).map((o) => ({ value: String(o.value), count: Number(o.count) }));
    return { rows: rows.map(toAsset), total: Number(r.total), sortKeys: rows.map((x) => x.name as string), facets };
  }

  // ── accounts ─────────────────────────────────────────────────────────────────────────────
  async addAccount(a: AccountRow): Promise<void> {
    // Two nodes may add the same name at once (the demo account at start): one insert wins.
    const r = await this.db.query('INSERT INTO library_accounts (id, name, password_hash, folders, write_folders, created_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (name) DO NOTHING',
      [a.id, a.name, a.passwordHash, JSON.stringify(a.folders), JSON.stringify(a.writeFolders), a.createdAt]);
    if (r.rowCount === 0) throw new Error(`user ${a.name} already exists`);
  }

  async account(id: string) {
    const r = await this.one('SELECT * FROM library_accounts WHERE id = $1', [id]);
    return r ? accountOf(r) : null;
  }

  async accountByName(name: string) {
    const r = await this.one('SELECT * FROM library_accounts WHERE name = $1', [name]);
    return r ? accountOf(r) : null;
  }

  async removeAccount(name: string): Promise<boolean> {
    // Its locks go with it: nobody else could release them.
    return this.db.tx(async (c) => {
      const locks = await c.query('DELETE FROM library_locks WHERE account_id IN (SELECT id FROM library_accounts WHERE name = $1)', [name]);
      if (locks.rowCount) await nextSeq(c);
      return ((await c.query('DELETE FROM library_accounts WHERE name = $1', [name])).rowCount ?? 0) > 0;
    });
  }

  async setAccountPassword(name: string, passwordHash: string): Promise<boolean> {
    return ((await this.db.query('UPDATE library_accounts SET password_hash = $1 WHERE name = $2', [passwordHash, name])).rowCount ?? 0) > 0;
  }

  async listAccounts(): Promise<AccountRow[]> {
    return (await this.db.query('SELECT * FROM library_accounts ORDER BY name', [], true)).rows.map(accountOf);
  }

  // ── writes through the hub ───────────────────────────────────────────────────────────────
  async assetsUnder(folderPath: string): Promise<AssetRow[]> {
    const [lo, hi] = belowRange(folderPath);
    const r = folderPath === ''
      ? await this.db.query(`SELECT ${ASSET_COLUMNS} FROM library_assets`, [], true)
      : await this.db.query(`SELECT ${ASSET_COLUMNS} FROM library_assets WHERE folder_path = $1 OR (folder_path >= $2 AND folder_path < $3)`, [folderPath, lo, hi], true);
    return r.rows.map(toAsset);
  }

  async foldersUnder(folderPath: string): Promise<string[]> {
    return this.db.tx((c) => foldersUnderWith(c, folderPath));
  }

  async relocate(moves: AssetMove[], folders: { from: string; to: string } | null): Promise<void> {
    await this.db.tx(async (c) => {
      await lockAssetRows(c, moves.flatMap((m) => [m.from.id, m.to.id]));
      if (folders) {
        const paths = await foldersUnderWith(c, folders.from);
        await c.query('DELETE FROM library_folders WHERE path = ANY($1::text[])', [paths]);
        for (const p of paths) await ensureFolders(c, folders.to + p.slice(folders.from.length));
        await nextSeq(c);
      }
      for (const { from, to } of moves) {
        // A stale row at the new path (its file gone, not yet rescanned) makes way, with its history.
        await removeWhere(c, 'id', to.id);
        await c.query('DELETE FROM library_versions WHERE asset_id = $1', [to.id]);
        await c.query('DELETE FROM library_locks WHERE asset_id = $1', [to.id]);
        await removeWhere(c, 'id', from.id);
        await upsertWith(c, to, null);
        await c.query('UPDATE library_versions SET asset_id = $1 WHERE asset_id = $2', [to.id, from.id]);
        await c.query('UPDATE library_locks SET asset_id = $1 WHERE asset_id = $2', [to.id, from.id]);
      }
    });
  }

  async dropAssets(ids: string[], folders: string[]): Promise<void> {
    await this.db.tx(async (c) => {
      await lockAssetRows(c, ids);
      for (const id of ids) await removeWhere(c, 'id', id);
      await c.query('DELETE FROM library_versions WHERE asset_id = ANY($1::text[])', [ids]);
      await c.query('DELETE FROM library_locks WHERE asset_id = ANY($1::text[])', [ids]);
      for (const f of folders) {
        const paths = (await foldersUnderWith(c, f)).filter((p) => p !== '');
        await c.query('DELETE FROM library_folders WHERE path = ANY($1::text[])', [paths]);
      }
      await nextSeq(c); // the generation moves: cached folder pages drop
    });
  }

  async lock(assetId: string): Promise<LockRow | null> {
    const r = await this.one('SELECT * FROM library_locks WHERE asset_id = $1', [assetId]);
    return r ? toLock(r) : null;
  }

  async locks(assetIds: string[]): Promise<Map<string, LockRow>> {
    if (!assetIds.length) return new Map();
    const r = await this.db.query('SELECT * FROM library_locks WHERE asset_id = ANY($1::text[])', [assetIds], true);
    return new Map(r.rows.map((x) => [x.asset_id as string, toLock(x)]));
  }

  async takeLock(l: LockRow): Promise<LockRow> {
    return this.db.tx(async (c) => {
      // Of two nodes locking at once, one insert wins; both read the winner.
      const ins = await c.query('INSERT INTO library_locks (asset_id, account_id, locked_by, locked_at) VALUES ($1, $2, $3, $4) ON CONFLICT (asset_id) DO NOTHING',
        [l.assetId, l.accountId, l.lockedBy, l.lockedAt]);
      if (ins.rowCount) await nextSeq(c); // listings show lockedBy: cached pages drop
      return toLock((await c.query<Row>('SELECT * FROM library_locks WHERE asset_id = $1', [l.assetId])).rows[0]!);
    });
  }

  async releaseLock(assetId: string, accountId: string): Promise<boolean> {
    return this.db.tx(async (c) => {
      const gone = ((await c.query('DELETE FROM library_locks WHERE asset_id = $1 AND account_id = $2', [assetId, accountId])).rowCount ?? 0) > 0;
      if (gone) await nextSeq(c);
      return gone;
    });
  }

  // ── image descriptors ────────────────────────────────────────────────────────────────────
  private descriptorBackend: DescriptorBackend | null = null;

  descriptors(): DescriptorBackend {
    return (this.descriptorBackend ??= new PgDescriptors(this.db));
  }
}

/** JSONB arrives parsed; the shared mapper expects the SQLite store's JSON text. */
function accountOf(r: Row): AccountRow {
  return toAccount({ ...r, folders: JSON.stringify(r.folders), write_folders: JSON.stringify(r.write_folders ?? []) });
}

/** Removes the asset whose `column` is `value`, logs the removal and drops its descriptor (inside the caller's transaction). */
async function removeWhere(c: Q, column: 'rel_path' | 'id', value: string): Promise<void> {
  const r = (await c.query<Row>(`DELETE FROM library_assets WHERE ${column} = $1 RETURNING rowid, id`, [value])).rows[0];
  if (!r) return;
  await c.query('INSERT INTO library_removed (seq, asset_rowid) VALUES ($1, $2)', [await nextSeq(c), r.rowid]);
  await dropDescriptor(c, r.id as string);
}

/**
 * Locks the rows of many assets before anything else: the lock order of upsertWith (asset rows,
 * then the sequence row) holds for a transaction that touches several, so none deadlocks with a scan.
 */
async function lockAssetRows(c: Q, ids: string[]): Promise<void> {
  if (ids.length) await c.query('SELECT 1 FROM library_assets WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE', [[...new Set(ids)]]);
}

async function foldersUnderWith(c: Q, folderPath: string): Promise<string[]> {
  const [lo, hi] = belowRange(folderPath);
  const r = folderPath === ''
    ? await c.query<Row>('SELECT path FROM library_folders')
    : await c.query<Row>('SELECT path FROM library_folders WHERE path = $1 OR (path >= $2 AND path < $3)', [folderPath, lo, hi]);
  return r.rows.map((x) => x.path as string);
}

/** upsertAsset's work inside the caller's transaction. */
async function upsertWith(c: Q, a: AssetRow, previous: VersionRow | null): Promise<void> {
  // Lock order everywhere: the asset's row, then the sequence row (PgDescriptors.put and
  // removeAsset take them in the same order), so concurrent writers cannot deadlock.
  const old = (await c.query<Row>('SELECT rowid, blob FROM library_assets WHERE id = $1 FOR UPDATE', [a.id])).rows[0];
  await ensureFolders(c, a.folderPath);
  if (previous) {
    await c.query(
      `INSERT INTO library_versions (asset_id, version, size, mtime_ms, mime, width, height, hashes, meta, blob, comment, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
       ON CONFLICT (asset_id, version) DO UPDATE SET size = EXCLUDED.size, mtime_ms = EXCLUDED.mtime_ms, mime = EXCLUDED.mime, width = EXCLUDED.width,
         height = EXCLUDED.height, hashes = EXCLUDED.hashes, meta = EXCLUDED.meta, blob = EXCLUDED.blob, comment = EXCLUDED.comment, created_at = EXCLUDED.created_at`,
      [previous.assetId, previous.version, previous.size, previous.mtimeMs, previous.mimeType, previous.width, previous.height,
        previous.hashes ? JSON.stringify(previous.hashes) : null, JSON.stringify(previous.meta), previous.blob, previous.comment, previous.createdAt],
    );
  }
  if (old) await c.query('DELETE FROM library_asset_keywords WHERE asset_rowid = $1', [old.rowid]);
  const seq = await nextSeq(c);
  const row = (await c.query<Row>(
    `INSERT INTO library_assets (id, rel_path, folder_path, name, ext, size, mtime_ms, created_ms, mime, kind, width, height, year, orientation,
       version, version_comment, meta, hashes, blob, indexed_at, search_text, change_seq)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)
     ON CONFLICT (id) DO UPDATE SET rel_path = EXCLUDED.rel_path, folder_path = EXCLUDED.folder_path, name = EXCLUDED.name, ext = EXCLUDED.ext,
       size = EXCLUDED.size, mtime_ms = EXCLUDED.mtime_ms, created_ms = EXCLUDED.created_ms, mime = EXCLUDED.mime, kind = EXCLUDED.kind,
       width = EXCLUDED.width, height = EXCLUDED.height, year = EXCLUDED.year, orientation = EXCLUDED.orientation, version = EXCLUDED.version,
       version_comment = EXCLUDED.version_comment, meta = EXCLUDED.meta, hashes = EXCLUDED.hashes, blob = EXCLUDED.blob,
       indexed_at = EXCLUDED.indexed_at, search_text = EXCLUDED.search_text, change_seq = EXCLUDED.change_seq
     RETURNING rowid`,
    [a.id, a.relPath, a.folderPath, a.name, a.ext, a.size, a.mtimeMs, a.createdMs, a.mimeType, a.kind, a.width, a.height, yearOf(a), orientationOf(a),
      a.version, a.versionComment, JSON.stringify(a.meta), a.hashes ? JSON.stringify(a.hashes) : null, a.blob, a.indexedAt,
      searchText(a.name, a.folderPath, a.meta), seq],
  )).rows[0]!;
  const keywords = [...new Set(a.meta.keywords.map((k) => k.toLowerCase()))];
  if (keywords.length) {
    await c.query('INSERT INTO library_asset_keywords (asset_rowid, keyword) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING', [row.rowid, keywords]);
  }
  // New content: the descriptor of the old one is stale (SQLite does this with a trigger).
  if (old && old.blob !== a.blob) await dropDescriptor(c, a.id);
}

async function ensureFolders(c: Q, path: string): Promise<void> {
  const parts = path === '' ? [] : path.split('/');
  const paths: string[] = [];
  const parents: (string | null)[] = [];
  const names: string[] = [];
  for (let i = 0; i <= parts.length; i++) {
    paths.push(parts.slice(0, i).join('/'));
    parents.push(i === 0 ? null : parts.slice(0, i - 1).join('/'));
    names.push(i === 0 ? '' : parts[i - 1]!);
  }
  const r = await c.query('INSERT INTO library_folders (path, parent, name) SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) ON CONFLICT DO NOTHING', [paths, parents, names]);
  if ((r.rowCount ?? 0) > 0) await nextSeq(c); // a new folder moves the generation
}

async function dropDescriptor(c: Q, assetId: string): Promise<void> {
  const gone = (await c.query('DELETE FROM library_descriptors WHERE asset_id = $1', [assetId])).rowCount ?? 0;
  if (gone) await c.query('INSERT INTO library_descriptor_log (seq, asset_id) VALUES ($1, $2)', [await nextSeq(c), assetId]);
}

/** The descriptor store of similarity/store.ts, in PostgreSQL (without model embeddings). */
class PgDescriptors implements DescriptorBackend {
  constructor(private readonly db: LibraryDb) {}

  async put(img: PendingImage, d: Descriptor | null, now: number): Promise<void> {
    await this.db.tx(async (c) => {
      const cur = (await c.query<Row>('SELECT blob FROM library_assets WHERE id = $1 FOR SHARE', [img.id])).rows[0];
      if (!cur || cur.blob !== img.blob) return; // changed or removed meanwhile: the next refresh sees it
      await c.query(
        `INSERT INTO library_descriptors (asset_id, blob, folder_path, vec, phash, computed_at) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (asset_id) DO UPDATE SET blob = EXCLUDED.blob, folder_path = EXCLUDED.folder_path, vec = EXCLUDED.vec, phash = EXCLUDED.phash, computed_at = EXCLUDED.computed_at`,
        [img.id, img.blob, img.folderPath, d ? Buffer.from(d.vector.buffer, d.vector.byteOffset, DIM) : null, d ? Buffer.from(d.phash) : null, now],
      );
      await c.query('INSERT INTO library_descriptor_log (seq, asset_id) VALUES ($1, $2)', [await nextSeq(c), img.id]);
    });
  }

  async pending(): Promise<PendingImage[]> {
    const r = await this.db.query(
      `SELECT a.id, a.folder_path AS "folderPath", a.version, a.blob FROM library_assets a
       LEFT JOIN library_descriptors d ON d.asset_id = a.id
       WHERE a.kind = 'image' AND (d.asset_id IS NULL OR d.blob IS DISTINCT FROM a.blob)`, [], true);
    return r.rows as unknown as PendingImage[];
  }

  async loadAll(each: (s: StoredDescriptor) => void): Promise<number> {
    return this.db.tx(async (c) => {
      await c.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
      const seq = Number((await c.query<Row>('SELECT coalesce(max(seq), 0) AS s FROM library_descriptor_log')).rows[0]!.s);
      for (const r of (await c.query('SELECT asset_id, folder_path, vec, phash FROM library_descriptors WHERE vec IS NOT NULL')).rows) each(fromRow(r));
      return seq;
    });
  }

  async changesSince(seq: number): Promise<{ seq: number; changes: StoredDescriptor[] }> {
    // Idle (the common case for a search by image): one indexed read, no transaction.
    const head = Number((await this.db.query('SELECT coalesce(max(seq), 0) AS s FROM library_descriptor_log', [], true)).rows[0]!.s);
    if (head <= seq) return { seq, changes: [] };
    return this.db.tx(async (c) => {
      await c.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
      const tail = (await c.query<Row>('SELECT seq, asset_id FROM library_descriptor_log WHERE seq > $1 ORDER BY seq', [seq])).rows;
      if (!tail.length) return { seq, changes: [] };
      const ids = [...new Set(tail.map((r) => r.asset_id as string))];
      const found = new Map((await c.query<Row>('SELECT asset_id, folder_path, vec, phash FROM library_descriptors WHERE asset_id = ANY($1::text[])', [ids])).rows
        .map((r) => [r.asset_id as string, fromRow(r as never)]));
      const changes = ids.map((id) => found.get(id) ?? { assetId: id, folderPath: '', descriptor: null });
      return { seq: Number(tail[tail.length - 1]!.seq), changes };
    });
  }

  async pruneLog(): Promise<void> {
    await this.db.query('DELETE FROM library_descriptor_log WHERE seq <= (SELECT max(seq) FROM library_descriptor_log) - $1', [DESCRIPTOR_LOG_KEEP]);
  }

  /** Cluster mode keeps no model embeddings (docs/image-search.md). */
  embeddings(): null {
    return null;
  }
}
