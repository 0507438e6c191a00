/**
 * What the library needs from its index, whichever database holds it: the embedded SQLite file
 * (sqlite.ts, synchronous) or PostgreSQL shared by every hub node (postgres.ts, asynchronous).
 * Callers always `await`; a synchronous implementation simply returns values. The rows here are
 * the contract's own; how each database stores them is rows.ts and the schemas beside it.
 */
import type { ExtractedMetadata } from '../../metadata/index.js';
import type { FileHashes } from '../hashes.js';
import type { SearchEngine } from '../search/engine.js';
import type { ActiveFilters, EngineQuery, EngineResult, FacetKey } from '../search/types.js';
import type { DescriptorBackend } from '../similarity/backend.js';
import type { LargeMap } from '../large-map.js';

/** The facets are the search engine's (search/types.ts); a listing filters and counts the same ones. */
export type { ActiveFilters, FacetKey } from '../search/types.js';

export type Awaitable<T> = T | Promise<T>;

export interface AssetRow {
  id: string;
  relPath: string;
  folderPath: string;
  name: string;
  ext: string;
  size: number;
  mtimeMs: number;
  createdMs: number;
  mimeType: string;
  kind: string;
  width: number | null;
  height: number | null;
  version: number;
  versionComment: string | null;
  meta: Omit<ExtractedMetadata, 'warnings'>;
  hashes: FileHashes | null;
  /** Content address of the kept copy of this version (versions store), or null. */
  blob: string | null;
  indexedAt: number;
}

export interface VersionRow {
  assetId: string;
  version: number;
  size: number;
  mtimeMs: number;
  mimeType: string;
  width: number | null;
  height: number | null;
  hashes: FileHashes | null;
  meta: Omit<ExtractedMetadata, 'warnings'>;
  blob: string | null;
  comment: string;
  createdAt: number;
}

export interface AccountRow {
  id: string;
  name: string;
  passwordHash: string;
  /** Sub-folder paths the account is limited to; empty = the whole library. */
  folders: string[];
  /**
   * Folders the account may write in, with their sub-folders (write-rights.ts); empty = none
   * (the default), '' = the whole library. Writes also need the folder to be visible (`folders`).
   */
  writeFolders: string[];
  createdAt: number;
}

/**
 * A lock on an asset (lockAsset): kept in the index so that every node sharing it (cluster mode)
 * sees it. One per asset; `lockedBy` is the holder's account name, as the Asset's lockedBy shows it.
 */
export interface LockRow {
  assetId: string;
  accountId: string;
  lockedBy: string;
  lockedAt: number;
}

/** An asset that moves (rename, move, a folder's rename or move): its row before, and after with its new path and id. */
export interface AssetMove {
  from: AssetRow;
  to: AssetRow;
}

/** One page of a folder listing (LibraryIndexStore.list). */
export interface IndexListQuery {
  /** The folder whose own assets are listed (sub-folders are not descended into). */
  folderPath: string;
  filters: ActiveFilters;
  limit: number;
  /** Keyset position: the sort key and id of the last row of the previous page. */
  after: { key: number | string; id: string } | null;
}

export interface ListPage {
  rows: AssetRow[];
  total: number;
  sortKeys: (number | string)[];
  /** Shared between answers (memoised per index generation): read, never modify. */
  facets: Readonly<Record<FacetKey, readonly { readonly value: string; readonly count: number }[]>>;
}

/** One keyword search, as the provider asks the index for it (LibraryIndexStore.search). */
export interface IndexSearch {
  accountId: string;
  /** The folder the search names, whose existence is checked; null when it names none. */
  scope: string | null;
  /** How many of the engine's hits are read as rows (the page). */
  pageSize: number;
  /**
   * The engine query for the account (null: there is no such account) and whether the scope
   * exists (true without one). It throws to refuse the search; nothing more is read then.
   */
  query(account: AccountRow | null, scopeExists: boolean): EngineQuery;
}

export interface IndexSearchResult {
  result: EngineResult;
  /** The rows of the page's hits, in the engine's order. */
  rows: AssetRow[];
}

/** What a scan compares a file on disk with. */
export interface FileState {
  size: number;
  mtimeMs: number;
  /**
   * Indexed as application/octet-stream. Earlier versions indexed every Markdown, CSV or SVG file
   * so (the type was sniffed from a snapshot without the file's name; issue 29): a scan reads
   * such a file again when its name now gives it a type.
   */
  untyped: boolean;
}

export interface LibraryIndexStore {
  /** 'sqlite' or 'postgres': what `damhub serve` prints and the provider decides the indexer by. */
  readonly kind: 'sqlite' | 'postgres';
  folder(path: string): Awaitable<{ path: string; name: string } | null>;
  childFolders(path: string): Awaitable<{ path: string; name: string }[]>;
  ensureFolder(path: string): Awaitable<void>;
  pruneFolders(existing: Set<string>): Awaitable<void>;
  asset(id: string): Awaitable<AssetRow | null>;
  /** A LargeMap: a library may hold more files than one Map can (2^24). */
  fileStates(): Awaitable<LargeMap<string, FileState>>;
  /** The asset, its keywords and (when given) its previous version, in one transaction. */
  upsertAsset(a: AssetRow, previous: VersionRow | null): Awaitable<void>;
  removeAsset(relPath: string): Awaitable<void>;
  pruneRemovalLog(): Awaitable<void>;
  /** The keyword engine, caught up with every change committed before the call (by any process or node). */
  searchEngine(): Awaitable<SearchEngine>;
  /**
   * Everything one keyword search needs, in one call: the account, whether the scope exists, the
   * engine's answer (caught up as by searchEngine()) and the rows of its page.
   */
  search(s: IndexSearch): Awaitable<IndexSearchResult>;
  assetsByRowids(rowids: number[]): Awaitable<AssetRow[]>;
  /** Asset rows by id, in the order given, missing ones skipped: one query for a page of hits (search by image). */
  assetsByIds(ids: string[]): Awaitable<AssetRow[]>;
  versions(assetId: string): Awaitable<VersionRow[]>;
  list(q: IndexListQuery): Awaitable<ListPage>;
  /** Moves whenever what a listing shows may have changed (page cache key, Provider.viewVersion). */
  generation(): Awaitable<string>;
  /** Where the image descriptors of search by image (and, for SQLite, model embeddings) live (similarity/). */
  descriptors(): DescriptorBackend;
  addAccount(a: AccountRow): Awaitable<void>;
  account(id: string): Awaitable<AccountRow | null>;
  accountByName(name: string): Awaitable<AccountRow | null>;
  removeAccount(name: string): Awaitable<boolean>;
  /** Replaces an account's password hash; false when there is no such account. */
  setAccountPassword(name: string, passwordHash: string): Awaitable<boolean>;
  listAccounts(): Awaitable<AccountRow[]>;

  // ── writes through the hub (writes.ts) ──────────────────────────────────────────────────
  /** The assets of `folderPath` and of every folder below it. */
  assetsUnder(folderPath: string): Awaitable<AssetRow[]>;
  /** The folder and every folder below it. */
  foldersUnder(folderPath: string): Awaitable<string[]>;
  /**
   * Moves assets to new paths (and so new ids: ids are derived from paths) in one transaction:
   * each old row is removed (logged for the search engines), the new one written, its versions
   * and its lock carried to the new id; `folders` (a folder's rename or move) moves the folder
   * rows below `from` to `to`. Whatever the index held at a new id before is dropped first.
   */
  relocate(moves: AssetMove[], folders: { from: string; to: string } | null): Awaitable<void>;
  /**
   * Drops assets for good (a delete through the hub), with their versions and locks, and the
   * folder rows at and below each of `folders`, in one transaction.
   */
  dropAssets(ids: string[], folders: string[]): Awaitable<void>;
  /** The lock on the asset, or null. */
  lock(assetId: string): Awaitable<LockRow | null>;
  /** The locks on these assets (a page's worth), by asset id. */
  locks(assetIds: string[]): Awaitable<Map<string, LockRow>>;
  /** Takes the lock unless someone holds it; answers the lock as it now is (possibly another's). */
  takeLock(l: LockRow): Awaitable<LockRow>;
  /** Releases the account's lock on the asset; false when it held none. */
  releaseLock(assetId: string, accountId: string): Awaitable<boolean>;
  close(): Awaitable<void>;
}
