/**
 * defineProvider: a connector as a declaration plus typed hooks. The kit supplies what every
 * remote DAM needs and no connector should write again: the upstream client (timeouts, retries,
 * Retry-After, circuit breaker, error mapping), typed credentials out of the DAM connection token,
 * a sign-in form on the hub's login state machine, encrypted download links streamed through the
 * hub. What the connector can do follows from the hooks it gives (src/providers/capabilities.ts).
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Clock } from '../../clock.js';
import type { KeyRing } from '../../auth/keys.js';
import type { ProviderCredentials } from '../../auth/provider-tokens.js';
import { hubError, integrationError } from '../../errors.js';
import type {
  ConflictMode, ListOptions, LoginHost, LoginStart, Provider, ProviderDescriptor, ProviderFeatures, ProviderInfo, ProviderSession, SearchQuery,
  UploadBody, WriteCondition, WriteDestination,
} from '../contract.js';
import type { Asset, AssetPage, Folder, FolderPage, VersionList } from '../model.js';
import { DEFAULT_UPSTREAM, discard, UpstreamClient, type UpstreamResponse, type UpstreamSettings } from './http.js';
import type { UpstreamLog } from './upstream-log.js';
import { MediaGrants } from './media-grants.js';
import { checkMediaLimits, type MediaLimitsConfig } from './media-limits.js';
import { ReadSlots, ReadsBusy, type ReadSlot } from '../../net/read-slots.js';
import { whileConnected } from '../../net/client-gone.js';
import { formSignInRoutes, signInPath, type FormSignIn } from './signin-form.js';
import { defaultImageWork, type ImageWork } from '../../images/pool.js';
import type { ReferenceImage } from '../../images/jobs.js';
import type { ExtractedMetadata } from '../metadata/index.js';
import { HEAD_BYTES, readImageHead } from './image-head.js';
import { ThumbCache, type ThumbCacheFs } from './thumb-cache.js';
import { cachedThumbnail, credentialScope, etagOf, iconSvg, normalEtag, renderUpstream, thumbnailKey, type Thumbnail } from './thumbnails.js';

/** Enabled connectors and their upstream overrides (timeouts, retries, allowHosts, ...), by id. */
export type ConnectorsConfig = Record<string, Partial<UpstreamSettings>>;

/**
 * Refuses a download link whose partner or user is no longer live (the hub's MediaAccess,
 * src/content/media-access.ts, implements it): the link ends with the access it came from.
 */
export interface LinkAccess {
  check(binding: { partnerId: string; userId: string }, what: string): void | Promise<void>;
}

/** What the hub hands a connector when it builds it (src/catalog.ts). */
export interface ConnectorDeps {
  clock: Clock;
  keys: KeyRing;
  /** Absent in unit tests of the kit. */
  access?: LinkAccess;
  /** The hub's public base URL, without trailing slash. */
  publicUrl: string;
  /** Overrides of the upstream settings from the hub config. */
  upstream?: Partial<UpstreamSettings>;
  /** Test seams of the upstream client (a recording sleep, a fixed random). */
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
  /** Thumbnails (thumbnails.ts): the image pool and budgets, the disk cache. Absent: no disk cache, the shared fallback pool. */
  thumbnails?: ThumbnailDeps;
  /**
   * The hub-wide bound on reads of originals the hub did not index (src/net/read-slots.ts), one
   * for every connector: hub-made thumbnails and head reads take a slot. Absent: one per connector.
   */
  reads?: ReadSlots;
  /** Rate limits of the media links (media-limits.ts); absent: none (unit tests of the kit). */
  mediaLimits?: MediaLimitsConfig;
  /** The connectors' log (upstream-log.ts): unreachable upstreams are reported there. Absent: not reported (unit tests of the kit). */
  log?: UpstreamLog;
}

export interface ThumbnailDeps {
  images: ImageWork;
  /** `<data>/thumbnails`, or null for no disk cache. */
  cacheDir: string | null;
  cacheBytes: number;
  /** Largest upstream body read for one thumbnail. */
  maxBytes: number;
  /** Longest wait for that body. */
  timeoutMs: number;
  /** Test seam of the cache's writes (a full disk). */
  fs?: ThumbCacheFs;
}

export const DEFAULT_THUMBNAILS = { cacheBytes: 256 * 1024 * 1024, maxBytes: 50 * 1024 * 1024, timeoutMs: 20_000 } as const;
/** Reads of originals at once and waiting (HubConfig.originalReads, originalReadsQueue). */
export const DEFAULT_READS = { max: 4, queue: 16 } as const;

/** Everything a hook gets: the typed credentials of this connection and the kit's services. */
export interface CallContext<C> {
  session: ProviderSession;
  cred: C;
  http: UpstreamClient;
  /** The hub's clock (epoch ms): presigned URLs and other time-dependent rules read it. */
  now(): number;
  /** A hub URL that streams `item` through the connector's `download` hook. */
  downloadUrl(item: Record<string, unknown>, fileName: string): Promise<string>;
  /**
   * A hub URL serving a thumbnail of `item` (the vendor's rendition through the `thumbnail` hook,
   * else made by the hub from the `download` hook). `etag`/`version` name the content: a new one
   * is a new cache key, so a changed file never gets the old file's thumbnail.
   */
  thumbnailUrl(item: Record<string, unknown>, fileName: string, v: { etag?: string; version?: string | number }): Promise<string>;
  /**
   * Dimensions and EXIF/IPTC/XMP of an image item from a ranged read of its head through the
   * `download` hook (image-head.ts); null when unavailable. For asset details, not listings.
   */
  imageHead(item: Record<string, unknown>): Promise<ExtractedMetadata | null>;
}

export interface ThumbnailRequest<C> {
  cred: C;
  http: UpstreamClient;
  item: Record<string, unknown>;
}

export interface DownloadRequest<C> {
  cred: C;
  http: UpstreamClient;
  item: Record<string, unknown>;
  /** The client's Range header, to pass upstream. */
  range: string | undefined;
  ifNoneMatch: string | undefined;
}

export interface ConnectorHooks<C> {
  browse?(ctx: CallContext<C>, folderId: string, opts: ListOptions): Promise<FolderPage>;
  search?(ctx: CallContext<C>, q: SearchQuery, opts: ListOptions): Promise<AssetPage>;
  /**
   * Search by image, for a vendor that offers it (the reference passed through to its visual or
   * similarity search). `image` was checked and decoded once by the hub under the decode budget;
   * forward `image.bytes` (its `format`, `width`, `height` are known) rather than decoding again.
   */
  searchByImage?(ctx: CallContext<C>, image: ReferenceImage, opts: ListOptions): Promise<AssetPage>;
  asset?(ctx: CallContext<C>, assetId: string, opts: { uiLocale: string; timeZone: string | null }): Promise<Asset>;
  versions?(ctx: CallContext<C>, assetId: string, opts: { withMaster: boolean; uiLocale: string }): Promise<VersionList>;
  validate?(ctx: CallContext<C>): Promise<void>;
  providerInfo?(ctx: CallContext<C>, opts: { uiLocale: string }): Promise<ProviderInfo>;
  refresh?(cred: C, http: UpstreamClient): Promise<C>;
  /** Bytes of an item named in a download URL; the answer is relayed (status, length, type, etag). */
  download?(req: DownloadRequest<C>): Promise<UpstreamResponse>;
  /**
   * The vendor's own rendition of an item (its answer is decoded and re-encoded by the hub, never
   * relayed as is); null: none for this item, the hub makes one from `download`.
   */
  thumbnail?(req: ThumbnailRequest<C>): Promise<UpstreamResponse | null>;
  // Writes (Provider's write operations, src/providers/contract.ts; each given hook is a capability).
  upload?(ctx: CallContext<C>, target: { parentId: string; name: string; onConflict: ConflictMode }, body: UploadBody): Promise<{ asset: Asset; created: boolean }>;
  update?(ctx: CallContext<C>, assetId: string, body: UploadBody, cond: WriteCondition): Promise<Asset>;
  renameAsset?(ctx: CallContext<C>, assetId: string, name: string, cond: WriteCondition): Promise<Asset>;
  moveAsset?(ctx: CallContext<C>, assetId: string, to: WriteDestination, cond: WriteCondition): Promise<Asset>;
  deleteAsset?(ctx: CallContext<C>, assetId: string, cond: WriteCondition): Promise<void>;
  createFolder?(ctx: CallContext<C>, parentId: string, name: string): Promise<Folder>;
  updateFolder?(ctx: CallContext<C>, folderId: string, to: { parentId: string | null; name: string | null }): Promise<Folder>;
  deleteFolder?(ctx: CallContext<C>, folderId: string, opts: { recursive: boolean }): Promise<void>;
  lockAsset?(ctx: CallContext<C>, assetId: string): Promise<Asset>;
  unlockAsset?(ctx: CallContext<C>, assetId: string): Promise<Asset>;
  uploadExtensions?(ctx: CallContext<C>, folderId: string | null): string[] | null | Promise<string[] | null>;
}

/** The write hooks: each takes the call context where the Provider's operation takes the session. */
const WRITE_HOOKS = [
  'upload', 'update', 'renameAsset', 'moveAsset', 'deleteAsset', 'createFolder', 'updateFolder', 'deleteFolder', 'lockAsset', 'unlockAsset', 'uploadExtensions',
] as const satisfies readonly (keyof ConnectorHooks<never> & keyof Provider)[];

export interface ConnectorSpec<C extends ProviderCredentials> {
  id: string;
  name: string;
  version: string;
  glyph: string;
  /** Defaults to a glyph badge served by the kit. */
  logo?: string;
  /** Declared features (undeclared: false); operations are capabilities by being given as hooks. */
  features?: Partial<ProviderFeatures>;
  paging: { defaultSize: number; maxSize: number };
  /** Per-connector defaults for the upstream client (the hub config overrides them). */
  upstream?: Partial<UpstreamSettings>;
  /** Pulls the upstream's own message out of an error body. */
  errorMessage?(body: string, contentType: string): string;
  /** Reads the typed credentials back out of a DAM connection token; throw on a foreign shape. */
  credentials(raw: ProviderCredentials): C;
  /**
   * What tells two accounts apart for the thumbnail cache (an account id, a server and user).
   * Default: a hash of the whole credentials (strict; tokens that rotate only cost cache misses).
   */
  cacheScope?(cred: C): string;
  /** Sign-in: a form (kit-rendered) or a redirect with its own routes (OAuth, see docs/connectors.md). */
  signIn:
    | ({ kind: 'form' } & FormSignIn<C>)
    | { kind: 'redirect'; begin(start: LoginStart, host: LoginHost, http: UpstreamClient): Promise<{ redirectUri: string }>; routes(app: FastifyInstance, host: LoginHost, http: UpstreamClient): void | Promise<void> };
  hooks: ConnectorHooks<C>;
}

export type DefinedConnector = Provider & { readonly http: UpstreamClient; readonly thumbnailCache: ThumbCache; close(): Promise<void> };

export function defineProvider<C extends ProviderCredentials>(spec: ConnectorSpec<C>): (deps: ConnectorDeps) => DefinedConnector {
  if (!/^[a-z][a-z0-9-]{1,30}$/.test(spec.id)) throw new Error(`connector id ${JSON.stringify(spec.id)}: lower-case letters, digits and dashes`);
  if (spec.paging.defaultSize < 1 || spec.paging.maxSize < spec.paging.defaultSize) throw new Error(`connector ${spec.id}: paging sizes`);

  return (deps) => {
    const settings: UpstreamSettings = { ...DEFAULT_UPSTREAM, ...spec.upstream, ...deps.upstream };
    const http = new UpstreamClient(spec.id, settings, { clock: deps.clock, sleep: deps.sleep, random: deps.random, errorMessage: spec.errorMessage, log: deps.log });
    const grants = new MediaGrants(deps.keys, deps.clock);
    const base = deps.publicUrl.replace(/\/+$/, '');
    const thumbs = deps.thumbnails ?? { images: defaultImageWork(), cacheDir: null, ...DEFAULT_THUMBNAILS };
    const thumbCache = new ThumbCache(thumbs.cacheDir, thumbs.cacheBytes, thumbs.fs);
    const reads = deps.reads ?? new ReadSlots(DEFAULT_READS.max, DEFAULT_READS.queue);
    const descriptor: ProviderDescriptor = {
      id: spec.id, name: spec.name, version: spec.version, glyph: spec.glyph,
      logo: spec.logo ?? `/api/v1/connectors/${spec.id}/logo.svg`,
      features: { ...spec.features }, paging: spec.paging,
    };

    const cred = (session: ProviderSession): C => {
      try {
        return spec.credentials(session.credentials);
      } catch {
        throw hubError('provider-access-token-invalid', `the ${spec.name} connection token does not carry ${spec.name} credentials; sign in again`);
      }
    };
    /** A hub link to `route` carrying a sealed grant for `item` under this session's access. */
    const grantLink = async (session: ProviderSession, route: 'download' | 'thumbnail', item: Record<string, unknown>, fileName: string) => {
      const token = await grants.seal({ providerId: spec.id, partnerId: session.partnerId, userId: session.userId, credentials: session.credentials, item });
      // The grant rides in the query string: request logs carry paths, never query strings.
      return `${base}/api/v1/connectors/${spec.id}/${route}/${encodeURIComponent(fileName)}?g=${token}`;
    };
    const ctx = (session: ProviderSession): CallContext<C> => {
      const c = cred(session);
      // The call's requests end when the hub stops waiting for it (ProviderSession.signal).
      const callHttp = session.signal ? http.during(session.signal) : http;
      return {
        session, cred: c, http: callHttp,
        now: () => deps.clock.now(),
        downloadUrl: (item, fileName) => grantLink(session, 'download', item, fileName),
        // The content's version rides in the sealed item, so it is part of the cache key.
        thumbnailUrl: (item, fileName, v) =>
          grantLink(session, 'thumbnail', { ...item, [VERSION_KEY]: normalEtag(v.etag) ?? (v.version === undefined ? null : String(v.version)) }, fileName),
        async imageHead(item) {
          if (!spec.hooks.download) return null;
          // Optional work: with every read slot taken the detail is served as listed, never queued.
          const slot = reads.tryAcquire();
          if (!slot) return null;
          try {
            const up = await spec.hooks.download({ cred: c, http: callHttp, item, range: `bytes=0-${HEAD_BYTES - 1}`, ifNoneMatch: undefined });
            return await readImageHead(up, thumbs.images, thumbs.timeoutMs, session.signal);
          } catch {
            return null; // the detail is served as listed; the download link reports the real error
          } finally {
            slot.release();
          }
        },
      };
    };
    // Each hook given becomes the provider's operation (and so its capability: src/providers/capabilities.ts).
    const { refresh, validate, providerInfo, browse, search, searchByImage, asset, versions, download, thumbnail } = spec.hooks;

    /**
     * A media link's grant, checked: sealed by this hub for this provider, its access still live,
     * within its rate limits (their RateLimit-* headers set on `reply`).
     */
    const openGrant = async (query: unknown, what: string, reply: FastifyReply) => {
      const token = (query as { g?: unknown }).g;
      if (typeof token !== 'string' || !token) throw hubError('hub-access-denied', `${what} check failed: the link carries no grant`);
      const grant = await grants.open(token, spec.id);
      // The link ends with the access it came from: its partner disabled or removed, its user removed.
      await deps.access?.check({ partnerId: grant.partnerId, userId: grant.userId }, what);
      if (deps.mediaLimits) reply.headers(await checkMediaLimits(deps.mediaLimits, token, grant));
      try {
        return { grant, cred: spec.credentials(grant.credentials) };
      } catch {
        throw hubError('hub-access-denied', `${what} check failed: the link carries no usable credentials`);
      }
    };

    /**
     * Vendor rendition first (when the hook gives one), else the original through `download`.
     * Under a hub-wide read slot, taken before any upstream request: past the bound and its queue
     * the answer is 503 with nothing requested. `signal` fires when no client waits for this
     * production any more: the upstream request and body, and the decode, are aborted.
     */
    const makeThumbnail = async (c: C, item: Record<string, unknown>, signal: AbortSignal, owner: string): Promise<Thumbnail & { stale?: boolean }> => {
      const { [VERSION_KEY]: version, ...plain } = item;
      const budget = { maxBytes: thumbs.maxBytes, timeoutMs: thumbs.timeoutMs };
      let slot: ReadSlot;
      try {
        slot = await reads.acquire(signal);
      } catch (e) {
        if (e instanceof ReadsBusy) throw hubError('hub-unavailable', `thumbnail: ${e.message}; try again shortly`, { headers: { 'retry-after': '1' } });
        throw e;
      }
      try {
        const upstream = http.during(signal);
        const vendor = thumbnail ? await thumbnail({ cred: c, http: upstream, item: plain }) : null;
        if (vendor) return await renderUpstream(vendor, thumbs.images, budget, signal, owner);
        if (!download) return { kind: 'icon', reason: 'the connector offers no thumbnail and no download' };
        const up = await download({ cred: c, http: upstream, item: plain, range: undefined, ifNoneMatch: undefined });
        // The file changed since it was listed: its bytes are not the version the key names.
        const now = etagOf(up);
        const stale = typeof version === 'string' && now !== undefined && now !== version;
        return { ...(await renderUpstream(up, thumbs.images, budget, signal, owner)), stale };
      } finally {
        slot.release();
      }
    };

    const provider: DefinedConnector = {
      descriptor,
      http,
      thumbnailCache: thumbCache,
      close: () => http.close(),
      async beginLogin(start, host) {
        if (spec.signIn.kind === 'redirect') return spec.signIn.begin(start, host, http);
        return { redirectUri: `${host.publicUrl}/api/v1${signInPath(spec.id)}?state=${encodeURIComponent(start.state)}` };
      },
      async routes(app, host) {
        if (spec.signIn.kind === 'form') {
          const form = spec.signIn;
          formSignInRoutes(app, host, spec.id, { ...form, verify: (values) => form.verify(values, http) });
        }
        else await spec.signIn.routes(app, host, http);
        app.get(`/connectors/${spec.id}/logo.svg`, { config: { auth: 'none' }, schema: { hide: true } }, async (_req, reply) =>
          reply.type('image/svg+xml').header('cache-control', 'public, max-age=86400').send(badge(spec.glyph)));
        if (thumbnail || download) {
          app.get(`/connectors/${spec.id}/thumbnail/:name`, { config: { auth: 'none' }, schema: { hide: true } }, async (req, reply) => {
            const { grant, cred: c } = await openGrant(req.query, 'thumbnail link', reply);
            const scope = spec.cacheScope?.(c) || credentialScope(grant.credentials);
            const key = thumbnailKey(spec.id, scope, grant.item);
            const etag = `"${key.slice(0, 32)}"`;
            // The key names the content's version, so a client holding this ETag has these bytes:
            // answered before any cache read or production.
            if (req.headers['if-none-match'] === etag) return reply.code(304).header('etag', etag).header('cache-control', 'private, max-age=3600').send();
            // Concurrent requests share the one production (single-flight); it runs while at least
            // one of them still waits, and is aborted, upstream read included, when the last leaves.
            // The decode waits its turn among the pool's jobs fairly per partner + hub user (src/images/pool.ts).
            const owner = JSON.stringify([grant.partnerId, grant.userId]);
            const t = await whileConnected(reply.raw, (gone) =>
              cachedThumbnail(thumbCache, key, (production) => makeThumbnail(c, grant.item, production, owner), gone));
            const name = (req.params as { name: string }).name;
            if (t.kind === 'icon') {
              // A tile for the picker, not a cached answer: the next request tries again.
              reply.header('x-damhub-thumbnail', 'icon');
              reply.header('x-damhub-thumbnail-reason', t.reason.replace(/[^\x20-\x7e]/g, '?').slice(0, 200));
              return reply.type('image/svg+xml').header('cache-control', 'private, no-store').send(iconSvg(name));
            }
            reply.header('etag', etag).header('cache-control', 'private, max-age=3600');
            reply.header('x-damhub-thumbnail', t.cached ? 'cached' : 'made');
            return reply.type('image/jpeg').send(t.bytes);
          });
        }
        if (download) {
          app.get(`/connectors/${spec.id}/download/:name`, { config: { auth: 'none' }, schema: { hide: true } }, async (req, reply) => {
            const { grant, cred: c } = await openGrant(req.query, 'download link', reply);
            // The client leaving before the upstream answered aborts the upstream request; once the
            // body is relayed, Fastify destroys it (and so the upstream request) when the client leaves.
            const up = await whileConnected(reply.raw, (gone) =>
              download({ cred: c, http: http.during(gone), item: grant.item, range: req.headers.range, ifNoneMatch: req.headers['if-none-match'] }));
            reply.code(up.status);
            for (const name of ['content-type', 'content-length', 'content-range', 'etag', 'last-modified', 'accept-ranges']) {
              const v = up.headers[name];
              if (v !== undefined) reply.header(name, Array.isArray(v) ? v[0] : v);
            }
            reply.header('cache-control', 'private, max-age=3600');
            reply.header('content-disposition', `attachment; filename*=UTF-8''${encodeURIComponent((req.params as { name: string }).name)}`);
            if (up.status === 304 || req.method === 'HEAD') {
              discard(up.body);
              return reply.send();
            }
            // Streamed: the hub holds one chunk of the file at a time, whatever its size.
            return reply.send(up.body);
          });
        }
      },
      ...(refresh ? { refresh: async (raw: ProviderCredentials) => (await refresh(spec.credentials(raw), http)) as ProviderCredentials } : {}),
      ...(validate ? { validate: (s: ProviderSession) => validate(ctx(s)) } : {}),
      ...(providerInfo ? { providerInfo: (s: ProviderSession, o: { uiLocale: string }) => providerInfo(ctx(s), o) } : {}),
      ...(browse ? { browse: (s: ProviderSession, id: string, o: ListOptions) => browse(ctx(s), id, o) } : {}),
      ...(search ? { search: (s: ProviderSession, q: SearchQuery, o: ListOptions) => search(ctx(s), q, o) } : {}),
      ...(searchByImage ? { searchByImage: (s: ProviderSession, image: ReferenceImage, o: ListOptions) => searchByImage(ctx(s), image, o) } : {}),
      ...(asset
        ? { asset: (s: ProviderSession, id: string, o: { uiLocale: string; timeZone: string | null }) => asset(ctx(s), id, o) }
        : { asset: async () => { throw integrationError('integration-not-implemented', spec.id, `${spec.name}: reading one asset`); } }),
      ...(versions ? { versions: (s: ProviderSession, id: string, o: { withMaster: boolean; uiLocale: string }) => versions(ctx(s), id, o) } : {}),
    };
    // The write audit's DAM account: what tells accounts apart (cacheScope), else a hash of the credentials.
    provider.accountOf = (s: ProviderSession) => spec.cacheScope?.(cred(s)) || credentialScope(s.credentials);
    for (const name of WRITE_HOOKS) {
      const hook = spec.hooks[name] as ((c: CallContext<C>, ...rest: unknown[]) => unknown) | undefined;
      if (hook) (provider as unknown as Record<string, unknown>)[name] = (s: ProviderSession, ...rest: unknown[]) => hook.call(spec.hooks, ctx(s), ...rest);
    }
    return provider;
  };
}

/** The key of the content version inside a thumbnail grant's item (no connector uses it). */
const VERSION_KEY = '@v';

function badge(glyph: string): string {
  const g = glyph.replace(/[&<>"']/g, '').slice(0, 3);
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64" width="64" height="64"><rect width="64" height="64" rx="14" fill="#44546a"/><text x="32" y="42" font-family="system-ui,sans-serif" font-size="28" font-weight="700" text-anchor="middle" fill="#fff">${g}</text></svg>`;
}
