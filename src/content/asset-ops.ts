/**
 * The content operations behind /assets, shared by the REST routes and the MCP tools: validation
 * and clamping of list options, the capability check, the provider call with its error rule, the
 * sealing of paging cursors, and the browse page cache. Both front ends call these, so a cursor
 * issued by one works in the other, a refusal reads the same whichever way it was asked, and a
 * page browsed by one is served from the cache to the other.
 *
 * They take what they use as arguments (AssetOpsDeps), not the Hub: the surfaces build them.
 */
import type { KeyRing } from '../auth/keys.js';
import type { Clock } from '../clock.js';
import { integrationError, validationError } from '../errors.js';
import { callOnSession, callProvider } from '../providers/deadline.js';
import type { ListOptions, Provider, ProviderSession } from '../providers/contract.js';
import type { Asset, AssetPage, FolderPage, VersionList } from '../providers/model.js';
import { capabilitiesOf, folderCapabilities, operation, uploadExtensionsFor, withAssetCapabilities } from '../providers/capabilities.js';
import { CursorSealer } from './cursors.js';
import { decodeImageReference, decodeReference, referenceBytes, type ReferenceDeps } from './image-reference.js';
import { PageCache } from './page-cache.js';
import { Turns } from './turns.js';

/** The list parameters of a request, as the client sent them (already schema-checked). */
export interface ListParams {
  size?: number;
  more?: string;
  filters?: string[];
  timeZone?: string;
  dataLocale?: string;
  uiLocale?: string;
}

/** The browse page cache and what its entries are made of (src/content/page-cache.ts). */
export interface FolderPages {
  /** Disabled (no entries kept) when its size is 0. */
  cache: PageCache;
  /**
   * A page's bytes, the ones the cache keeps: the REST answer's (its response schema's
   * serialisation), so that a cached page is sent as it is; MCP parses them back.
   */
  serialize(page: FolderPage): Buffer;
  /** The media-URL validity (expiry bucket and signing key) the page's URLs were made under. */
  validity(): string;
}

export interface AssetOpsDeps {
  providers: { get(id: string): Provider | undefined };
  /** Seal and unseal paging cursors. */
  keys: KeyRing;
  clock: Clock;
  /** The provider deadline (src/providers/deadline.ts). */
  providerTimeoutMs: number;
  /** Reference images of search by image, and the MCP tools' thumbnails. */
  references: ReferenceDeps;
  pages: FolderPages;
  /** DAMHUB_UPLOAD_EXTENSIONS (null: any): what the folder answers' uploadExtensions are narrowed to. */
  uploadExtensions: readonly string[] | null;
}

/** A browsed page: from the cache its bytes only; from the provider the page, and its bytes when they were made for the cache. */
type Browsed = { page: FolderPage; body: Buffer | null } | { page: null; body: Buffer };

const MAX_ID = 2048;

export class AssetOps {
  private readonly cursors: CursorSealer;
  /** Uncached browse pages and search pages are assembled one per event-loop turn, in arrival order (src/content/turns.ts). */
  private readonly assembly = new Turns();

  constructor(private readonly deps: AssetOpsDeps) {
    this.cursors = new CursorSealer(deps.keys, deps.clock);
  }

  /** The browse page cache (tests read its hits). */
  get pageCache(): PageCache {
    return this.deps.pages.cache;
  }

  /**
   * A provider operation under the hub's provider deadline (src/providers/deadline.ts); `fn` gets
   * the signal that aborts at the deadline; `answers: 'any'` for non-object results.
   */
  call<T>(provider: Provider, fn: (signal: AbortSignal) => Promise<T>, answers?: 'object' | 'any'): Promise<T> {
    return callProvider(provider, this.deps.providerTimeoutMs, fn, answers);
  }

  /** `call` for an operation on a DAM session: `fn` gets the session carrying the call's signal. */
  onSession<T>(provider: Provider, dam: ProviderSession, fn: (session: ProviderSession) => Promise<T>, answers?: 'object' | 'any'): Promise<T> {
    return callOnSession(provider, this.deps.providerTimeoutMs, dam, fn, answers);
  }

  providerOf(dam: ProviderSession): Provider {
    return this.deps.providers.get(dam.providerId)!;
  }

  /** Validated, clamped options and the provider cursor unsealed against this exact query. */
  private listOptions(userId: string, provider: Provider, q: ListParams, bindingParts: (string | null)[]): { opts: ListOptions; binding: string } {
    const { defaultSize, maxSize } = provider.descriptor.paging;
    const size = !q.size ? defaultSize : Math.min(q.size, maxSize);
    if (q.timeZone && !validTimeZone(q.timeZone)) throw validationError(`timeZone ${JSON.stringify(q.timeZone)} is not an IANA time zone name`);
    const filters = [...new Set(q.filters ?? [])].sort();
    const binding = CursorSealer.binding([userId, provider.descriptor.id, ...bindingParts, filters, q.dataLocale ?? null]);
    const more = q.more ? this.cursors.unseal(q.more, binding) : null;
    return { opts: { size, more, filters, timeZone: q.timeZone ?? null, dataLocale: q.dataLocale ?? null, uiLocale: q.uiLocale ?? 'en' }, binding };
  }

  private sealPage<T extends AssetPage>(page: T, binding: string): T {
    const out = { ...page };
    if (page.more === undefined || page.more === null || page.more === '') delete out.more;
    else out.more = this.cursors.seal(page.more, binding);
    return out;
  }

  /**
   * A folder page (the MCP tools): from the page cache while unchanged, parsed back from the REST
   * answer's bytes. `signal` (here and below): the client went away; a page not yet begun is not
   * assembled (src/content/turns.ts).
   */
  async browse(dam: ProviderSession, folderId: string, q: ListParams, signal?: AbortSignal): Promise<FolderPage> {
    const b = await this.browsed(dam, folderId, q, signal);
    return b.page !== null ? b.page : (JSON.parse(b.body.toString('utf8')) as FolderPage);
  }

  /** A folder page as the REST answer's bytes (the browse route, the hot path): cached bytes are sent as they are. */
  async browseBody(dam: ProviderSession, folderId: string, q: ListParams, signal?: AbortSignal): Promise<Buffer> {
    const b = await this.browsed(dam, folderId, q, signal);
    if (b.page === null) return b.body;
    return b.body ?? this.deps.pages.serialize(b.page);
  }

  /**
   * Repeated pages come from the page cache while the provider's view of this session, the
   * request and the media-URL validity are unchanged (see src/content/page-cache.ts).
   */
  private async browsed(dam: ProviderSession, folderId: string, q: ListParams, signal?: AbortSignal): Promise<Browsed> {
    const provider = this.providerOf(dam);
    const browse = operation(provider, 'browse', 'folder browsing');
    const id = idParam(folderId, 'folderId');
    const { opts, binding } = this.listOptions(dam.userId, provider, q, ['folder', id]);
    const pages = this.deps.pages;
    const viewVersion = provider.viewVersion?.bind(provider);
    const version = pages.cache.enabled && viewVersion ? await this.onSession(provider, dam, async (s) => viewVersion(s), 'any') : null;
    const key = version === null ? null : PageCache.key([
      dam.userId, provider.descriptor.id, version, dam.writes ? 'w' : 'r', id, opts.size, q.more ?? null,
      opts.filters, opts.timeZone, opts.dataLocale, opts.uiLocale, pages.validity(),
    ]);
    const hit = key === null ? undefined : pages.cache.get(key);
    if (hit) return { page: null, body: hit };
    await this.assembly.turn(signal);
    const page = await this.presentFolder(dam, provider, id, this.sealPage(await this.onSession(provider, dam, (s) => browse(s, id, opts)), binding));
    if (key === null) return { page, body: null };
    const body = pages.serialize(page);
    pages.cache.set(key, body);
    return { page, body };
  }

  async search(dam: ProviderSession, s: { query?: string; parentId?: string }, q: ListParams, signal?: AbortSignal): Promise<AssetPage> {
    const provider = this.providerOf(dam);
    const search = operation(provider, 'search', 'keyword search');
    const query = (s.query ?? '').trim();
    const parentId = s.parentId ? idParam(s.parentId, 'parentId') : null;
    const { opts, binding } = this.listOptions(dam.userId, provider, q, ['search', query, parentId]);
    await this.assembly.turn(signal);
    return this.presentPage(dam, provider, this.sealPage(await this.onSession(provider, dam, (s) => search(s, { query, parentId }, opts)), binding));
  }

  /**
   * `reference`: a data URI, an http(s) URL or a media URL this hub issued (image-reference.ts).
   * The image is decoded once, in the image pool, inside the provider call: when the provider
   * deadline passes or `signal` fires (the client went away), the decode is killed with the call.
   */
  async searchByImage(dam: ProviderSession, reference: string, q: ListParams, signal?: AbortSignal): Promise<AssetPage> {
    const provider = this.providerOf(dam);
    const searchByImage = operation(provider, 'similarSearch', 'search by image');
    const bytes = await referenceBytes(reference, this.deps.references, signal);
    const { opts, binding } = this.listOptions(dam.userId, provider, q, ['image', CursorSealer.binding([bytes.toString('base64')])]);
    const outputs = provider.referenceOutputs?.() ?? [];
    return this.presentPage(dam, provider, this.sealPage(await this.onSession(provider, dam, async (s) => {
      const stop = signal && s.signal ? AbortSignal.any([s.signal, signal]) : (s.signal ?? signal);
      // The pool's fair share is per partner + hub user: one account looping costly references
      // waits behind its own jobs, not in front of everybody else's.
      const owner = JSON.stringify([dam.partnerId, dam.userId]);
      const image = await decodeReference(bytes, this.deps.references, { outputs, signal: stop, owner });
      return searchByImage(s, image, opts);
    }), binding));
  }

  /** The bytes of an image reference, decoded and verified (the MCP tools' thumbnails). */
  imageBytes(reference: string, opts: { signal?: AbortSignal } = {}): Promise<Buffer> {
    return decodeImageReference(reference, this.deps.references, opts);
  }

  async asset(dam: ProviderSession, assetId: string, q: { uiLocale?: string; timeZone?: string }, signal?: AbortSignal): Promise<Asset> {
    const provider = this.providerOf(dam);
    const asset = provider.asset?.bind(provider);
    if (!asset) throw integrationError('integration-not-implemented', provider.descriptor.id, 'reading one asset');
    const id = idParam(assetId, 'assetId');
    if (q.timeZone && !validTimeZone(q.timeZone)) throw validationError(`timeZone ${JSON.stringify(q.timeZone)} is not an IANA time zone name`);
    // The client leaving ends the call as the deadline does (a connector's head read of the original).
    const a = await this.onSession(provider, dam, (s) => asset(signal && s.signal ? { ...s, signal: AbortSignal.any([s.signal, signal]) } : s, id, { uiLocale: q.uiLocale ?? 'en', timeZone: q.timeZone ?? null }));
    return this.presentAsset(dam, provider, a);
  }

  async versions(dam: ProviderSession, assetId: string, q: { withMaster?: boolean; uiLocale?: string }): Promise<VersionList> {
    const provider = this.providerOf(dam);
    const versions = operation(provider, 'versions', 'asset versions');
    const id = idParam(assetId, 'assetId');
    const list = await this.onSession(provider, dam, (s) => versions(s, id, { withMaster: q.withMaster ?? false, uiLocale: q.uiLocale ?? 'en' }));
    const caps = capabilitiesOf(provider);
    // Old versions are history: nothing can be done to them but reading.
    const history = { ...dam, writes: false };
    return { ...list, versions: list.versions.map((v) => this.presentAsset(history, provider, v, caps)) };
  }

  /**
   * An asset as this session sees it: its capability fields true exactly when the provider
   * implements the operation, the partner writes, and the provider says the account may
   * (capabilities.ts assetCapabilities). Its ETag: etagOf (src/providers/asset-state.ts).
   */
  presentAsset<T extends Asset>(dam: ProviderSession, provider: Provider, a: T, caps = capabilitiesOf(provider)): T {
    return withAssetCapabilities(caps, dam.writes === true, a, this.deps.uploadExtensions);
  }

  /** A page's assets as this session sees them; the provider's capabilities derived once for the page. */
  private presentPage<T extends AssetPage>(dam: ProviderSession, provider: Provider, page: T): T {
    const caps = capabilitiesOf(provider);
    return { ...page, assets: page.assets.map((a) => this.presentAsset(dam, provider, a, caps)) };
  }

  /** A folder page with its assets' and its own capability fields as this session sees them. */
  private async presentFolder(dam: ProviderSession, provider: Provider, folderId: string, page: FolderPage): Promise<FolderPage> {
    const caps = capabilitiesOf(provider);
    const extensions = dam.writes && caps.upload ? await this.onSession(provider, dam, (s) => uploadExtensionsFor(provider, s, folderId, this.deps.uploadExtensions), 'any') : null;
    return { ...this.presentPage(dam, provider, page), capabilities: folderCapabilities(caps, dam.writes === true, page.capabilities, extensions) };
  }
}

/** A client-given id: present, bounded, no NUL (reads and writes alike). */
export function idParam(raw: string, name: string): string {
  if (!raw) throw validationError(`${name} is required`);
  if (raw.length > MAX_ID) throw validationError(`${name} is longer than ${MAX_ID} characters`);
  if (raw.includes('\0')) throw validationError(`${name} contains a NUL byte`);
  return raw;
}

const tzCache = new Map<string, boolean>();
function validTimeZone(tz: string): boolean {
  let ok = tzCache.get(tz);
  if (ok === undefined) {
    try {
      new Intl.DateTimeFormat('en', { timeZone: tz });
      ok = true;
    } catch {
      ok = false;
    }
    if (tzCache.size < 1000) tzCache.set(tz, ok);
  }
  return ok;
}
