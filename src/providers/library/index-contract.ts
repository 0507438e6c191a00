/**
 * What the library needs from its index, whichever database holds it: the embedded SQLite file
 * (index-store.ts, synchronous) or PostgreSQL shared by every hub node (index-store-pg.ts,
 * asynchronous). Callers always `await`; a synchronous implementation simply returns values.
 */
import type { AccountRow, AssetRow, FacetKey, ListQuery, VersionRow } from './index-store.js';
import type { SearchEngine } from './search-engine.js';
import type { DescriptorBackend } from './similarity/store.js';

export type Awaitable<T> = T | Promise<T>;

export interface ListPage {
  rows: AssetRow[];
  total: number;
  sortKeys: (number | string)[];
  facets: Record<FacetKey, { value: string; count: number }[]>;
}

export interface LibraryIndexStore {
  /** 'sqlite' or 'postgres': what `damhub serve` prints and the provider decides the indexer by. */
  readonly kind: 'sqlite' | 'postgres';
  folder(path: string): Awaitable<{ path: string; name: string } | null>;
  childFolders(path: string): Awaitable<{ path: string; name: string }[]>;
  ensureFolder(path: string): Awaitable<void>;
  pruneFolders(existing: Set<string>): Awaitable<void>;
  asset(id: string): Awaitable<AssetRow | null>;
  fileStates(): Awaitable<Map<string, { size: number; mtimeMs: number }>>;
  /** The asset, its keywords and (when given) its previous version, in one transaction. */
  upsertAsset(a: AssetRow, previous: VersionRow | null): Awaitable<void>;
  removeAsset(relPath: string): Awaitable<void>;
  pruneRemovalLog(): Awaitable<void>;
  /** The keyword engine, caught up with every change committed before the call (by any process or node). */
  searchEngine(): Awaitable<SearchEngine>;
  assetsByRowids(rowids: number[]): Awaitable<AssetRow[]>;
  versions(assetId: string): Awaitable<VersionRow[]>;
  list(q: ListQuery): Awaitable<ListPage>;
  /** Moves whenever what a listing shows may have changed (page cache key, Provider.viewVersion). */
  generation(): Awaitable<string>;
  /** Where the image descriptors of search by image live (similarity/). */
  descriptors(): DescriptorBackend;
  addAccount(a: AccountRow): Awaitable<void>;
  account(id: string): Awaitable<AccountRow | null>;
  accountByName(name: string): Awaitable<AccountRow | null>;
  removeAccount(name: string): Awaitable<boolean>;
  /** Replaces an account's password hash; false when there is no such account. */
  setAccountPassword(name: string, passwordHash: string): Awaitable<boolean>;
  listAccounts(): Awaitable<AccountRow[]>;
  close(): Awaitable<void>;
}
