/**
 * The embedded library: a folder of media served as a DAM (provider id `library`). This file is
 * the provider contract; the index (index/: its contract, SQLite and PostgreSQL), its keyword
 * search engine (search/), the scanner, renditions, accounts and the sign-in page (signin.ts) each
 * live apart, and the mapping to the common asset shape is mapping.ts. Writes through the hub
 * are writes.ts, with who may write where in write-rights.ts and locks in locks.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Clock } from '../../clock.js';
import { integrationError, validationError } from '../../errors.js';
import type { ConflictMode, ListOptions, LoginHost, MediaFile, MediaRef, MediaUrls, Provider, ProviderDescriptor, ProviderSession, SearchQuery, UploadBody, WriteCondition, WriteDestination } from '../contract.js';
import type { Asset, AssetPage, Filter, Folder, FolderPage, VersionList } from '../model.js';
import { tagAsset } from '../asset-state.js';
import { addAccount } from './accounts.js';
import type { AccountRow, ActiveFilters, AssetRow, FacetKey, LibraryIndexStore, LockRow } from './index/contract.js';
import { LibraryIndex } from './index/sqlite.js';
import type { IndexerLease } from './indexer-lease.js';
import { label } from './labels.js';
import { HashLanes } from './hash-lanes.js';
import { toAsset, versionToAsset, type MappingContext } from './mapping.js';
import { nodeWriteFs, type WriteFs } from './disk.js';
import { assetPermissions, folderPermissions } from './write-rights.js';
import { contentTag, LibraryWrites } from './writes.js';
import { iconSvg, Renditions, RENDITIONS, type RenditionName } from './renditions.js';
import { isInside, LibraryScanner, type ScanReport } from './scanner.js';
import { tokenize } from './search/tokenize.js';
import { FACETS, type EngineQuery, type RankParams } from './search/types.js';
import { isWithin } from './paths.js';
import { librarySignInRoutes } from './signin.js';
import { signInPath } from '../kit/signin-form.js';
import { referenceOutputs, searchByImage } from './similarity/search.js';
import type { OutputSpec, ReferenceImage } from '../../images/jobs.js';
import { defaultImageWork, type ImageWork } from '../../images/pool.js';
import { ImageSimilarity, librarySources } from './similarity/index.js';
import { ImageEmbedder } from './similarity/embedder.js';

export const LIBRARY_ID = 'library';

export interface LibraryOptions {
  root: string;
  /** `<data>/library`: index, renditions, version store. */
  dataDir: string;
  clock: Clock;
  urls: MediaUrls;
  /** Shown on the sign-in page (demo mode only). */
  demoAccount?: { name: string; password: string; writeFolders?: string[] } | null;
  /** Keep the index current while running. */
  watch?: boolean;
  /**
   * The index when it is not the embedded SQLite file (PostgreSQL in cluster mode), and the lease
   * that makes one node at a time its indexer (indexer-lease.ts).
   */
  sharedIndex?: { index: LibraryIndexStore; lease: IndexerLease; rescanMs?: number } | null;
  /** A CLIP-style ONNX image model for search by image (similarity/embedder.ts); null: built-in descriptors only. */
  imageModel?: string | null;
  /** Weight of the model's cosine in the blended score, 0..1. */
  imageModelWeight?: number;
  /** Where scan warnings go (files indexed without renditions); default process.emitWarning. */
  warn?: (message: string) => void;
  /** The image pool and per-file decode budget of indexing (src/images/pool.ts); default a small shared one. */
  images?: ImageWork;
  /** Where uploads' bytes are written (disk.ts); tests pass one that fails like a full disk. */
  writeFs?: WriteFs;
}

const descriptor: ProviderDescriptor = {
  id: LIBRARY_ID,
  name: 'Library',
  version: '1.0.0',
  logo: '/api/v1/auth/library/logo.svg',
  glyph: 'L',
  // Browse, search, search by image, versions and refresh: the methods below (capabilities.ts).
  features: {
    filters: true,
    dataLocalization: false,
    timeZone: true,
    serverUrl: false,
    foldersOnEveryPage: false,
    assetHashAlgorithm: 'Sha256',
  },
  paging: { defaultSize: 50, maxSize: 200 },
  isDefault: true,
};

export class LibraryProvider implements Provider {
  readonly descriptor = descriptor;
  readonly index: LibraryIndexStore;
  readonly scanner: LibraryScanner;
  readonly renditions: Renditions;
  /** Descriptors and the top-k index of search by image (similarity/). */
  readonly similarity: ImageSimilarity;
  private watcher: fs.FSWatcher | null = null;
  private debounce: NodeJS.Timeout | null = null;
  private rescanTimer: NodeJS.Timeout | null = null;
  private readonly writes: LibraryWrites;
  /** Hashes uploads while they are written (hash-lanes.ts). */
  private readonly lanes = new HashLanes();

  constructor(readonly opts: LibraryOptions) {
    fs.mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
    this.index = opts.sharedIndex?.index ?? new LibraryIndex(path.join(opts.dataDir, 'library.sqlite'));
    const images = opts.images ?? defaultImageWork();
    this.renditions = new Renditions(path.join(opts.dataDir, 'renditions'), images);
    this.scanner = new LibraryScanner(opts.root, this.index, this.renditions, opts.dataDir, opts.clock);
    this.similarity = new ImageSimilarity(this.index.descriptors(), librarySources(this.renditions, this.scanner), opts.clock, { images });
    this.writes = new LibraryWrites({
      root: opts.root,
      index: this.index,
      scanner: this.scanner,
      renditions: this.renditions,
      similarity: this.similarity,
      clock: opts.clock,
      fs: opts.writeFs ?? nodeWriteFs,
      lanes: this.lanes,
      warn: (m) => this.warn(m),
      account: (session) => this.account(session),
      present: async (session, acc, row) => this.present(row, acc, await this.index.lock(row.id), this.context(session, acc, { uiLocale: 'en', timeZone: null })),
      folderPath,
    });
  }

  private warn(message: string): void {
    (this.opts.warn ?? ((m: string) => process.emitWarning(m, 'DamhubLibraryWarning')))(message);
  }

  /** A scan, then the image descriptors of whatever it added or changed. */
  async rescan(): Promise<ScanReport> {
    const report = await this.scanner.scan();
    for (const w of report.warnings) this.warn(`library file ${w.path} is indexed without renditions: ${w.warning}`);
    await this.similarity.refresh();
    return report;
  }

  /**
   * Cheap rescan (size/mtime) after a restart, then a watcher that rescans on changes. With a
   * shared index only the node holding the indexer lease scans and watches (from whenever it
   * takes the lease); the others build their search engine and serve reads. The demo account
   * (demo mode) is made first.
   */
  async start(): Promise<ScanReport> {
    await this.ensureDemoAccount();
    if (this.opts.imageModel && !this.similarity.embedder) {
      // A missing, corrupt or unsuitable model stops the start here (EmbedderError), never a request.
      await this.similarity.useEmbedder(await ImageEmbedder.load(this.opts.imageModel), this.opts.imageModelWeight);
    }
    const shared = this.opts.sharedIndex;
    if (!shared) {
      const report = await this.rescan();
      await this.index.searchEngine(); // built now rather than on the first search
      this.watch();
      return report;
    }
    await this.similarity.ready();
    let first: Promise<ScanReport> | null = null;
    await shared.lease.start({
      // Not awaited by the heartbeat: a long scan must not hold up the lease's renewal.
      acquired: () => {
        const scan = this.rescan();
        scan.catch(() => undefined);
        first ??= scan;
        this.watch();
        if (shared.rescanMs) {
          this.rescanTimer = setInterval(() => this.scheduleRescan(), shared.rescanMs);
          this.rescanTimer.unref();
        }
      },
      lost: () => this.unwatch(),
    });
    const report = first ? await first : { added: 0, updated: 0, unchanged: 0, removed: 0, failed: [], warnings: [], files: 0 };
    await this.index.searchEngine();
    return report;
  }

  /** True when this node keeps the index current (always, with the embedded index). */
  get isIndexer(): boolean {
    return this.opts.sharedIndex ? this.opts.sharedIndex.lease.isHeld : true;
  }

  private watch(): void {
    if (!this.opts.watch || this.watcher) return;
    try {
      this.watcher = fs.watch(this.opts.root, { recursive: true }, () => this.scheduleRescan());
      this.watcher.on('error', () => this.scheduleRescan());
    } catch {
      /* no recursive watch on this platform: rescans happen at start and by `damhub index` */
    }
  }

  private unwatch(): void {
    this.watcher?.close();
    this.watcher = null;
    if (this.debounce) clearTimeout(this.debounce);
    if (this.rescanTimer) clearInterval(this.rescanTimer);
    this.rescanTimer = null;
  }

  private scheduleRescan(): void {
    if (this.debounce) clearTimeout(this.debounce);
    this.debounce = setTimeout(() => {
      if (this.isIndexer) void this.rescan().catch(() => undefined);
    }, 300);
    this.debounce.unref();
  }

  async close(): Promise<void> {
    this.unwatch();
    await this.opts.sharedIndex?.lease.stop();
    await this.similarity.close();
    await this.lanes.close();
    await this.index.close();
  }

  async ensureDemoAccount(): Promise<void> {
    const d = this.opts.demoAccount;
    if (!d || (await this.index.accountByName(d.name))) return;
    try {
      await addAccount(this.index, d.name, d.password, [], this.opts.clock.now(), { writeFolders: d.writeFolders ?? [] });
    } catch (e) {
      // Another node sharing the index added it first.
      if (!(await this.index.accountByName(d.name))) throw e;
    }
  }

  // ── login: the connector kit's sign-in form over the library's accounts (signin.ts) ──────
  async beginLogin({ state }: { state: string }, host: LoginHost) {
    return { redirectUri: `${host.publicUrl}/api/v1${signInPath(LIBRARY_ID)}?state=${encodeURIComponent(state)}` };
  }

  routes(app: import('fastify').FastifyInstance, host: LoginHost) {
    librarySignInRoutes(app, host, LIBRARY_ID, this.index, this.opts.demoAccount ?? null);
  }

  private async account(session: ProviderSession): Promise<AccountRow> {
    const id = session.credentials.acc;
    const acc = typeof id === 'string' ? await this.index.account(id) : null;
    if (!acc) throw accountGone();
    return acc;
  }

  async refresh(cred: Record<string, unknown>) {
    if (typeof cred.acc !== 'string' || !(await this.index.account(cred.acc))) throw accountGone();
    return { acc: cred.acc };
  }

  /** Media URLs bound to a removed account stop working (src/content/media-access.ts). */
  async accountLive(accountId: string): Promise<boolean> {
    return (await this.index.account(accountId)) !== null;
  }

  async validate(session: ProviderSession) {
    await this.account(session);
  }

  async providerInfo(session: ProviderSession, { uiLocale }: { uiLocale: string }) {
    await this.account(session);
    return {
      remoteSystemPrefix: 'library',
      dataLocales: [{ id: 'en', name: 'en', displayName: 'English', default: true }],
      filters: FACETS.map((f) => ({ id: f, name: label(f, uiLocale) })),
      renditions: Object.keys(RENDITIONS),
    };
  }

  // ── content ──────────────────────────────────────────────────────────────────────────────
  /**
   * Account, allowed folders and the index generation (LibraryIndexStore.generation): it moves on
   * every write by this process, another process or another node, and invalidates cached pages;
   * a change the index has not seen yet is not visible uncached either.
   */
  async viewVersion(session: ProviderSession): Promise<string> {
    const acc = await this.account(session);
    // The write folders too: a browse page states what the account may do there.
    return `${acc.id}\n${JSON.stringify(acc.folders)}\n${JSON.stringify(acc.writeFolders)}\n${await this.index.generation()}`;
  }

  async browse(session: ProviderSession, folderId: string, opts: ListOptions): Promise<FolderPage> {
    const acc = await this.account(session);
    const rel = folderPath(folderId);
    const roots = acc.folders.length ? acc.folders : null;
    // A limited account sees its allowed folders as the children of root, and nothing above them.
    if (roots && rel === '') {
      const present = await Promise.all(roots.map((r) => this.index.folder(r)));
      const folders = roots.filter((_, i) => present[i]).map((r) => ({ id: `/${r}`, name: r.split('/').pop()! }));
      // A made-up listing, not a folder: nothing can be added to it, nor can it be renamed.
      const capabilities = { canAddAsset: false, canAddFolder: false, canRenameFolder: false, canDeleteFolder: false };
      return { id: 'root', name: 'Library', folders, assets: [], filters: [], totalAssetsCount: 0, capabilities };
    }
    const folder = await this.index.folder(rel);
    if (!folder) throw integrationError('integration-not-found', LIBRARY_ID, `no folder ${folderId}`);
    if (roots && !roots.some((r) => isWithin(rel, r))) throw integrationError('integration-forbidden', LIBRARY_ID, `the account may not open ${folderId}`);
    const page = await this.page(rel, opts, session, acc);
    return {
      id: rel === '' ? 'root' : `/${rel}`,
      name: rel === '' ? 'Library' : folder.name,
      // Subfolders on the first page only (capabilities.foldersOnEveryPage = false).
      folders: opts.more ? [] : (await this.index.childFolders(rel)).map((f) => ({ id: `/${f.path}`, name: f.name })),
      ...page,
      capabilities: folderPermissions(acc, rel),
    };
  }

  async search(session: ProviderSession, q: SearchQuery, opts: ListOptions): Promise<AssetPage> {
    const accountId = session.credentials.acc;
    if (typeof accountId !== 'string') throw accountGone();
    // A malformed parent id is reported after the account check, as the checks below are ordered.
    let named: string | null = null;
    let badParent: unknown = null;
    if (q.parentId) {
      try {
        named = folderPath(q.parentId);
      } catch (e) {
        badParent = e;
      }
    }
    let acc!: AccountRow;
    let parsed: ActiveFilters = {};
    // One call to the index: it reads the account and whether the scope exists, this checks them
    // (throwing stops the search), and the engine's answer comes back with its page's rows.
    const { result: r, rows } = await this.index.search({
      accountId,
      scope: named,
      pageSize: opts.size,
      query: (account, scopeExists) => {
        if (!account) throw accountGone();
        acc = account;
        if (badParent) throw badParent;
        const scope = named ?? '';
        if (named !== null) {
          if (!scopeExists) throw integrationError('integration-not-found', LIBRARY_ID, `no folder ${q.parentId}`);
          if (acc.folders.length && scope !== '' && !acc.folders.some((f) => isWithin(scope, f))) throw integrationError('integration-forbidden', LIBRARY_ID, `the account may not search ${q.parentId}`);
        }
        const allowedRoots = acc.folders.length ? acc.folders.filter((f) => scope === '' || isWithin(f, scope)) : null;
        parsed = parseFilters(opts.filters);
        const words = searchWords(q.query);
        let after: EngineQuery['after'] = null;
        let params: RankParams | null = null;
        if (opts.more) {
          const c = parseSearchCursor(opts.more, words.length);
          after = { key: c.k, rowid: c.r };
          params = c.p ?? null;
        }
        return { words, folderPath: scope, allowedRoots, filters: parsed, limit: opts.size + 1, after, params };
      },
    });
    const hasMore = r.rowids.length > opts.size;
    const last = opts.size - 1;
    const cursor: SearchCursor = { k: r.keys[last]!, r: r.rowids[last]!, ...(r.params ? { p: r.params } : {}) };
    return {
      folders: [],
      assets: await this.presentAll(rows, acc, this.context(session, acc, opts)),
      filters: buildFilters(r.facets, parsed, opts.uiLocale),
      totalAssetsCount: r.total,
      ...(hasMore ? { more: JSON.stringify(cursor) } : {}),
    };
  }

  private async page(folderPath: string, opts: ListOptions, session: ProviderSession, acc: AccountRow): Promise<Omit<AssetPage, 'folders'>> {
    const filters = parseFilters(opts.filters);
    let after: { key: number | string; id: string } | null = null;
    if (opts.more) {
      try {
        const c = JSON.parse(opts.more) as { k: number | string; i: string };
        if ((typeof c.k !== 'number' && typeof c.k !== 'string') || typeof c.i !== 'string') throw new Error();
        after = { key: c.k, id: c.i };
      } catch {
        throw validationError('more: not a cursor of this listing');
      }
    }
    const r = await this.index.list({ folderPath, filters, limit: opts.size + 1, after });
    const rows = r.rows.slice(0, opts.size);
    const hasMore = r.rows.length > opts.size;
    return {
      assets: await this.presentAll(rows, acc, this.context(session, acc, opts)),
      filters: buildFilters(r.facets, filters, opts.uiLocale),
      totalAssetsCount: r.total,
      ...(hasMore ? { more: JSON.stringify({ k: r.sortKeys[opts.size - 1], i: rows[rows.length - 1]!.id }) } : {}),
    };
  }

  referenceOutputs(): OutputSpec[] {
    return referenceOutputs(this.similarity);
  }

  async searchByImage(session: ProviderSession, image: ReferenceImage, opts: ListOptions): Promise<AssetPage> {
    const acc = await this.account(session);
    const roots = acc.folders.length ? acc.folders : null;
    return searchByImage(this.similarity, image, opts, {
      folderAllowed: roots ? (folder) => roots.some((r) => isWithin(folder, r)) : null,
      toAssets: async (ids) => this.presentAll(await this.index.assetsByIds(ids), acc, this.context(session, acc, opts)),
    });
  }

  async asset(session: ProviderSession, assetId: string, opts: { uiLocale: string; timeZone: string | null }) {
    const { row, acc } = await this.visibleAsset(session, assetId);
    return this.present(row, acc, await this.index.lock(row.id), this.context(session, acc, opts));
  }

  async versions(session: ProviderSession, assetId: string, opts: { withMaster: boolean; uiLocale: string }): Promise<VersionList> {
    const { row, acc } = await this.visibleAsset(session, assetId);
    const ctx = this.context(session, acc, { uiLocale: opts.uiLocale, timeZone: null });
    // Older versions are history: nothing can be done to them, whatever the account may do to the asset.
    const older = (await this.index.versions(assetId)).map((v) => versionToAsset(row, v, ctx));
    return { id: row.id, name: row.name, versions: opts.withMaster ? [this.present(row, acc, await this.index.lock(row.id), ctx), ...older] : older };
  }

  private context(session: ProviderSession, acc: AccountRow, opts: { uiLocale: string; timeZone: string | null }): MappingContext {
    return { urls: this.opts.urls, bind: { partnerId: session.partnerId, accountId: acc.id }, uiLocale: opts.uiLocale, timeZone: opts.timeZone };
  }

  /**
   * An asset as this account sees it: what it may do there (write-rights.ts; the hub ANDs it with
   * the partner's opt-in), who holds a lock on it, and the hub's tags (asset-state.ts): the content
   * tag (version and SHA-256, new with every content) and whether the lock is someone else's.
   */
  private present(row: AssetRow, acc: AccountRow, lock: LockRow | null, ctx: MappingContext): Asset {
    const a = toAsset(row, ctx);
    a.capabilities = assetPermissions(acc, row.folderPath);
    if (lock) a.lockedBy = lock.lockedBy;
    return tagAsset(a, { contentTag: contentTag(row), lockedByOther: lock !== null && lock.accountId !== acc.id });
  }

  /** present() for a page of rows: their locks in one read. */
  private async presentAll(rows: AssetRow[], acc: AccountRow, ctx: MappingContext): Promise<Asset[]> {
    const locks = await this.index.locks(rows.map((r) => r.id));
    return rows.map((r) => this.present(r, acc, locks.get(r.id) ?? null, ctx));
  }

  private async visibleAsset(session: ProviderSession, assetId: string) {
    const acc = await this.account(session);
    const row = /^[A-Za-z0-9_-]{22}$/.test(assetId) ? await this.index.asset(assetId) : null;
    // An asset outside the account's folders is reported as absent, not as forbidden: its existence is not disclosed.
    if (!row || (acc.folders.length && !acc.folders.some((r) => isWithin(row.folderPath, r)))) {
      throw integrationError('integration-not-found', LIBRARY_ID, `no asset ${assetId}`);
    }
    return { row, acc };
  }

  // ── writes (writes.ts; docs/writes.md) ───────────────────────────────────────────────────
  upload(session: ProviderSession, target: { parentId: string; name: string; onConflict: ConflictMode }, body: UploadBody): Promise<{ asset: Asset; created: boolean }> {
    return this.writes.upload(session, target, body);
  }

  update(session: ProviderSession, assetId: string, body: UploadBody, cond: WriteCondition): Promise<Asset> {
    return this.writes.update(session, assetId, body, cond);
  }

  renameAsset(session: ProviderSession, assetId: string, name: string, cond: WriteCondition): Promise<Asset> {
    return this.writes.renameAsset(session, assetId, name, cond);
  }

  moveAsset(session: ProviderSession, assetId: string, to: WriteDestination, cond: WriteCondition): Promise<Asset> {
    return this.writes.moveAsset(session, assetId, to, cond);
  }

  deleteAsset(session: ProviderSession, assetId: string, cond: WriteCondition): Promise<void> {
    return this.writes.deleteAsset(session, assetId, cond);
  }

  createFolder(session: ProviderSession, parentId: string, name: string): Promise<Folder> {
    return this.writes.createFolder(session, parentId, name);
  }

  updateFolder(session: ProviderSession, folderId: string, to: { parentId: string | null; name: string | null }): Promise<Folder> {
    return this.writes.updateFolder(session, folderId, to);
  }

  deleteFolder(session: ProviderSession, folderId: string, opts: { recursive: boolean }): Promise<void> {
    return this.writes.deleteFolder(session, folderId, opts);
  }

  lockAsset(session: ProviderSession, assetId: string): Promise<Asset> {
    return this.writes.lockAsset(session, assetId);
  }

  unlockAsset(session: ProviderSession, assetId: string): Promise<Asset> {
    return this.writes.unlockAsset(session, assetId);
  }

  /**
   * Any type: the library indexes every file (metadata and renditions where it can read them, an
   * icon otherwise), so it narrows nothing; the operator does (DAMHUB_UPLOAD_EXTENSIONS).
   */
  uploadExtensions(): null {
    return null;
  }

  async media(ref: MediaRef): Promise<MediaFile> {
    const row = await this.index.asset(ref.assetId);
    if (!row) throw integrationError('integration-not-found', LIBRARY_ID, `no asset ${ref.assetId}`);
    const v = ref.version === row.version ? row : (await this.index.versions(row.id)).find((x) => x.version === ref.version);
    if (!v) throw integrationError('integration-not-found', LIBRARY_ID, `asset ${ref.assetId} has no version ${ref.version}`);
    const sha = v.hashes?.sha256 ?? `${v.size}-${v.mtimeMs}`;
    if (ref.rendition === 'original') {
      const file = this.originalPath(row.relPath, v.blob);
      if (!file) throw integrationError('integration-not-available', LIBRARY_ID, `the content of version ${ref.version} is no longer kept`);
      const stat = fs.statSync(file);
      return { kind: 'file', path: file, mimeType: v.mimeType, size: stat.size, etag: `"${sha}"`, fileName: row.name, lastModified: v.mtimeMs };
    }
    if (!(ref.rendition in RENDITIONS)) throw integrationError('integration-not-available', LIBRARY_ID, `no rendition ${ref.rendition}`);
    const name = ref.rendition as RenditionName;
    let file = this.renditions.file(row.id, ref.version, name);
    if (!fs.existsSync(file) && v.blob) {
      await this.renditions.generate(row.id, ref.version, this.scanner.blobPath(v.blob), v.mimeType);
      file = this.renditions.file(row.id, ref.version, name);
    }
    const base = row.name.replace(/\.[^.]*$/, '');
    if (fs.existsSync(file)) {
      const stat = fs.statSync(file);
      return { kind: 'file', path: file, mimeType: 'image/jpeg', size: stat.size, etag: `"${sha}-${name}"`, fileName: `${base}-${name}.jpg`, lastModified: stat.mtimeMs };
    }
    return { kind: 'inline', body: Buffer.from(iconSvg(row.kind, row.ext)), mimeType: 'image/svg+xml', etag: `"icon-${row.kind}-${row.ext}"`, fileName: `${base}-${name}.svg` };
  }

  /** The kept snapshot of a version, else (current version without a snapshot) the file itself. */
  private originalPath(relPath: string, blob: string | null): string | null {
    if (blob) {
      const p = this.scanner.blobPath(blob);
      if (fs.existsSync(p)) return p;
    }
    const abs = path.join(this.opts.root, relPath);
    try {
      const real = fs.realpathSync(abs);
      return isInside(fs.realpathSync(this.opts.root), real) ? real : null;
    } catch {
      return null;
    }
  }
}

function accountGone() {
  return integrationError('integration-auth-failed', LIBRARY_ID, 'the library account no longer exists');
}

/** 'root' or '/a/b' → 'a/b'; anything else (traversal, empty segments) is a client error. */
export function folderPath(folderId: string): string {
  if (folderId === 'root' || folderId === '/') return '';
  if (!folderId.startsWith('/')) throw integrationError('integration-not-found', LIBRARY_ID, `no folder ${folderId} (folder ids start with / or are "root")`);
  const rel = folderId.slice(1);
  if (rel.split('/').some((s) => s === '' || s === '.' || s === '..') || /[\0\\]/.test(rel)) {
    throw validationError('folder ids are opaque: pass them back exactly as the hub gave them');
  }
  return rel;
}

/** The query's words, folded like indexed text; each must match as a prefix. At most 16 count. */
export function searchWords(q: string): string[] {
  return [...new Set(tokenize(q))].slice(0, 16);
}

/** A search page's position: sort key and row id of its last asset, and the ranking parameters. */
interface SearchCursor {
  k: number;
  r: number;
  p?: RankParams;
}

function parseSearchCursor(more: string, words: number): SearchCursor {
  const bad = () => validationError('more: not a cursor of this search; start again from the first page');
  let c: SearchCursor;
  try {
    c = JSON.parse(more) as SearchCursor;
  } catch {
    throw bad();
  }
  if (typeof c !== 'object' || c === null || !Number.isFinite(c.k) || !Number.isInteger(c.r)) throw bad();
  if (words > 0) {
    const p = c.p;
    if (!p || !Number.isFinite(p.avgdl) || !Array.isArray(p.idf) || p.idf.length !== words || !p.idf.every(Number.isFinite)) throw bad();
  }
  return c;
}

function parseFilters(ids: string[]): ActiveFilters {
  const out: ActiveFilters = {};
  for (const id of ids) {
    const i = id.indexOf(':');
    const facet = id.slice(0, i) as FacetKey;
    const value = id.slice(i + 1);
    if (i < 1 || !FACETS.includes(facet) || !value) throw validationError(`filters: unknown option id ${JSON.stringify(id)}; use ids from a previous response's filters`);
    if (facet === 'year' && !/^\d{1,4}$/.test(value)) throw validationError(`filters: ${JSON.stringify(id)} is not a year`);
    (out[facet] ??= []).push(facet === 'keyword' ? value.toLowerCase() : value);
  }
  return out;
}

function buildFilters(facets: Readonly<Record<FacetKey, readonly { readonly value: string; readonly count: number }[]>>, active: ActiveFilters, uiLocale: string): Filter[] {
  return FACETS.map((f) => {
    const opts = facets[f].map((o) => ({ id: `${f}:${o.value}`, isActive: active[f]?.includes(o.value) ?? false, name: optionName(f, o.value, uiLocale), count: o.count }));
    for (const v of active[f] ?? []) if (!opts.some((o) => o.id === `${f}:${v}`)) opts.push({ id: `${f}:${v}`, isActive: true, name: optionName(f, v, uiLocale), count: 0 });
    return { id: f, name: label(f, uiLocale), options: opts };
  });
}

function optionName(facet: FacetKey, value: string, uiLocale: string): string {
  if (facet === 'type' || facet === 'orientation') return label(value as 'image', uiLocale);
  if (facet === 'ext') return value.toUpperCase();
  return value;
}
