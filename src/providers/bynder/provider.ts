/**
 * Bynder connector: OAuth 2.0 authorization code (+ PKCE, refresh with the `offline` scope) on the
 * tenant's portal, the asset bank as the root folder with the portal's collections as its
 * folders, keyword search with filters from Bynder's facet counts, Similar Assets Search by image,
 * asset detail with metaproperties, versions from the original media items. Multi-tenant: the
 * portal comes through the login's serverUrl. Verified against documented responses, not against
 * the live service (docs/connectors.md, "Bynder").
 */
import { integrationError, validationError } from '../../errors.js';
import { defineProvider, type CallContext, type ConnectorDeps, type DefinedConnector } from '../kit/define.js';
import { vendorEndpoints } from '../kit/endpoints.js';
import { mimeTypeOfExtension, UNKNOWN_MIME_TYPE } from '../kit/mime.js';
import type { UpstreamClient } from '../kit/http.js';
import type { Asset, AssetPage, Filter, FolderPage, VersionList } from '../model.js';
import { OAuthFlow, oauthCredentials, type OAuthCredentials } from '../oauth/flow.js';
import { redirectSignIn } from '../oauth/login.js';
import type { OAuthConnectorOptions } from '../oauth/options.js';
import type { ListOptions } from '../contract.js';
import { byName } from '../saas/listing.js';
import { BynderApi, bynderErrorMessage, type BynderCollection, type BynderMedia, type BynderMetaproperty, type MediaQuery } from './api.js';
import { fileNameOf, filterParams, filtersOf, labelsOf, originals, parseFolderId, thumbnailSource, toAsset, toFolder, toVersion, v4Id } from './mapping.js';

/**
 * Endpoints (kit/endpoints.ts): `portal`, the portal the operator's OAuth app is registered in
 * (a Bynder OAuth app lives inside one portal). Empty by default: any public Bynder portal the
 * user names as serverUrl. When set, a login without serverUrl goes to it and a serverUrl naming
 * another portal is refused.
 */
export interface BynderOptions extends OAuthConnectorOptions {
  /** Most collections listed as the root's folders (read in pages of 1000). */
  maxCollections?: number;
  /** How long metaproperty labels are reused, ms. */
  labelsTtlMs?: number;
}

const ID = 'bynder';
const NAME = 'Bynder';
/** Read-only and minimal: refresh tokens, assets, collections, metaproperty labels, the user's id (docs/connectors.md). */
export const BYNDER_SCOPES = ['offline', 'asset:read', 'collection:read', 'meta.assetbank:read', 'current.user:read'];

/** Inline, so the logo needs no route and no third-party host: a badge in Bynder's blue. */
const LOGO = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 64 64'%3E%3Crect width='64' height='64' rx='14' fill='%230a2aff'/%3E%3Ctext x='32' y='44' font-family='Arial,sans-serif' font-size='34' font-weight='700' text-anchor='middle' fill='%23fff'%3Eb%3C/text%3E%3C/svg%3E";

/** The hub's `more` for Bynder's page-numbered listings: the offset of the next asset. */
const PAGE_CURSOR = /^o(\d{1,9})$/;
/** The hub's `more` for a similarity result: an offset into Bynder's ranked list. */
const OFFSET_CURSOR = /^s(\d{1,6})$/;

export function bynderConnector(o: BynderOptions): (deps: ConnectorDeps) => DefinedConnector {
  const ep = vendorEndpoints(ID, { portal: '' }, o.endpoints);
  const configured = ep.portal ? new URL(ep.portal).origin : null;
  const maxCollections = o.maxCollections ?? 2000;
  const labelsTtl = o.labelsTtlMs ?? 5 * 60_000;

  /** The portal of a login or a connection: the user's serverUrl, held to the operator's `portal` when one is set. */
  function portalOf(serverUrl: string | null): string {
    if (!serverUrl) {
      if (configured) return configured;
      throw integrationError('integration-operation-failed', ID, 'no serverUrl: Bynder signs in on your portal', { message: 'Bynder needs the address of your portal as serverUrl (for example https://acme.bynder.com).' });
    }
    let u: URL;
    try {
      u = new URL(serverUrl);
    } catch {
      throw integrationError('integration-operation-failed', ID, `serverUrl ${JSON.stringify(serverUrl.slice(0, 100))} is not a URL`, { message: 'The serverUrl is not a URL of a Bynder portal.' });
    }
    if (u.username || u.password || (u.protocol !== 'https:' && u.protocol !== 'http:')) {
      throw integrationError('integration-operation-failed', ID, 'serverUrl must be the https address of a Bynder portal, without credentials', { message: 'The serverUrl is not a URL of a Bynder portal.' });
    }
    if (configured && u.origin !== configured) {
      // The operator's OAuth app is registered inside one portal: its client id means nothing elsewhere.
      throw integrationError('integration-operation-failed', ID, `this hub's Bynder app is registered in ${configured}; ${u.origin} is another portal`, { message: `This hub signs in to the Bynder portal ${new URL(configured).host} only.` });
    }
    return u.origin;
  }

  /** Portals that answered the probe (success only: a failed probe is asked again next time). */
  const portals = new Map<string, Promise<void>>();
  function checkPortal(portal: string, http: UpstreamClient): Promise<void> {
    let p = portals.get(portal);
    if (!p) {
      p = BynderApi.probePortal(http, portal).then((r) => {
        if (!r.ok) {
          throw integrationError('integration-operation-failed', ID, `${portal} did not answer Bynder's Retrieve scopes (/v6/authentication/oauth2/scopes) as a Bynder portal does: ${r.why}`, {
            message: `${new URL(portal).host} is not a Bynder portal.`,
          });
        }
      });
      portals.set(portal, p);
      p.catch(() => portals.delete(portal));
    }
    return p;
  }

  const portalFor = (cred: OAuthCredentials) => portalOf(cred.srv ?? null);
  const api = (ctx: { cred: OAuthCredentials; http: UpstreamClient }) => new BynderApi(ctx.http, portalFor(ctx.cred), ctx.cred.at);

  /** Metaproperties (labels, options, i18n) per account, reused for a few minutes: every first page and detail reads them. */
  const labelCache = new Map<string, { at: number; props: Promise<BynderMetaproperty[]> }>();

  function assetId(id: string): string {
    const v = v4Id(id);
    if (!v) throw integrationError('integration-not-found', ID, `no asset ${JSON.stringify(id.slice(0, 80))}`);
    return v;
  }

  /** A folder id as a Retrieve assets scope; `root` is the whole asset bank. */
  function scopeOf(id: string): { kind: 'root' } | { kind: 'brand' | 'subbrand' | 'collection'; id: string; query: MediaQuery } {
    if (id === 'root') return { kind: 'root' };
    const f = parseFolderId(id);
    if (!f) throw integrationError('integration-not-found', ID, `no folder ${JSON.stringify(id.slice(0, 80))}`);
    const query = f.kind === 'brand' ? { brandId: f.id } : f.kind === 'subbrand' ? { subBrandId: f.id } : { collectionId: f.id };
    return { ...f, query };
  }

  function cursorOffset(more: string | null): number {
    if (more === null) return 0;
    const m = PAGE_CURSOR.exec(more);
    // The hub sealed and bound it, so only a cursor of another kind can land here.
    if (!m) throw integrationError('integration-operation-failed', ID, `unreadable cursor ${JSON.stringify(more.slice(0, 40))}`);
    return Number(m[1]);
  }

  /**
   * A hook's parallel Bynder calls as one: the first failure abandons the others, so no sibling
   * keeps retrying (and spending the portal's per-IP budget) for an answer nobody reads.
   */
  async function together<T>(ctx: CallContext<OAuthCredentials>, run: (c: CallContext<OAuthCredentials>) => Promise<T>): Promise<T> {
    const ac = new AbortController();
    const signal = ctx.session.signal ? AbortSignal.any([ac.signal, ctx.session.signal]) : ac.signal;
    try {
      return await run({ ...ctx, http: ctx.http.during(signal) });
    } catch (e) {
      ac.abort();
      throw e;
    }
  }

  return (deps) => {
    const flow = new OAuthFlow({
      providerId: ID, name: NAME, clientId: o.clientId, clientSecret: o.clientSecret, pkceSecret: o.pkceSecret,
      // The token endpoint "requires authorization either in the body or by sending the Authorization header".
      clientAuth: 'client_secret_post',
      scopes: BYNDER_SCOPES,
      // Bynder publishes no RFC 8414 metadata: the endpoints sit at fixed paths on the portal.
      server: async (serverUrl, http) => {
        const portal = portalOf(serverUrl);
        if (http) await checkPortal(portal, http);
        return { issuer: portal, authorization_endpoint: `${portal}/v6/authentication/oauth2/auth`, token_endpoint: `${portal}/v6/authentication/oauth2/token` };
      },
      // Bynder's token response names no user: Retrieve current user does (scope current.user:read).
      accountId: async (t, at) => {
        const portal = portalOf(at.serverUrl);
        if (!at.http) return '';
        const u = await new BynderApi(at.http, portal, t.access_token).currentUser();
        // User ids are per portal: the portal's host keeps two portals' users apart.
        return `${new URL(portal).host}/${u.id}`;
      },
      timeoutMs: deps.upstream?.timeoutMs, allowInsecureRequests: o.allowInsecureRequests, now: () => deps.clock.now(),
    });

    const metaproperties = (ctx: CallContext<OAuthCredentials>): Promise<BynderMetaproperty[]> => {
      const now = deps.clock.now();
      const hit = labelCache.get(ctx.cred.acct);
      if (hit && now - hit.at < labelsTtl) return hit.props;
      const props = api(ctx).metaproperties();
      labelCache.set(ctx.cred.acct, { at: now, props });
      props.catch(() => labelCache.delete(ctx.cred.acct));
      if (labelCache.size > 1000) labelCache.delete(labelCache.keys().next().value!);
      return props;
    };

    const externalUrl = (cred: OAuthCredentials, id: string) => `${portalFor(cred)}/media/?mediaId=${encodeURIComponent(id)}`;

    /** An asset as listed: hub links for its bytes and its Bynder thumbnail, a link into the portal. */
    const mapMedia = async (ctx: CallContext<OAuthCredentials>, m: BynderMedia, detail = false, labels: BynderMetaproperty[] | null = null): Promise<Asset> => {
      const id = m.id.toUpperCase();
      const name = fileNameOf(m);
      const src = thumbnailSource(m);
      return toAsset(m, {
        downloadUrl: await ctx.downloadUrl({ id }, name),
        // The rendition's URL names its content, so it is the thumbnail's version too.
        thumbnailUrl: src ? await ctx.thumbnailUrl({ id, src }, `${name}.jpg`, { version: `${m.dateModified ?? ''} ${src}` }) : undefined,
        externalUrl: externalUrl(ctx.cred, id),
        detail, labels: labels ? labelsOf(labels) : null,
      });
    };

    /** Facets of a query as the hub's filters; an account without metaproperty access still gets type and tag facets. */
    const filtersFor = async (ctx: CallContext<OAuthCredentials>, q: MediaQuery, opts: ListOptions): Promise<Filter[]> => {
      const [counts, props] = await Promise.all([api(ctx).counts(q), metaproperties(ctx).catch(() => [])]);
      return filtersOf(counts, props, new Set(opts.filters), opts.uiLocale);
    };

    /** One page of Retrieve assets: Bynder's page/limit behind the hub's `more`, Bynder's exact total. */
    const mediaPage = async (ctx: CallContext<OAuthCredentials>, q: MediaQuery, opts: ListOptions): Promise<AssetPage> => {
      const filters = filterParams(opts.filters);
      if (!filters) throw validationError(`unknown filter option in ${JSON.stringify(opts.filters.slice(0, 5))}; use the option ids a listing's filters give`);
      const query = { ...q, filters };
      const offset = cursorOffset(opts.more);
      const size = opts.size;
      // Bynder pages by number: the page of this size holding the offset, and when a client changed
      // the size mid-listing (the offset is not on a page boundary) the next page for the rest.
      const page = Math.floor(offset / size) + 1;
      const skip = offset % size;
      const [first, facets] = await Promise.all([
        api(ctx).media(query, page, size),
        opts.more === null ? filtersFor(ctx, query, opts) : Promise.resolve([]),
      ]);
      let media = first.media.slice(skip, skip + size);
      if (skip > 0 && media.length < size && page * size < first.total) media = media.concat((await api(ctx).media(query, page + 1, size)).media).slice(0, size);
      const next = offset + media.length;
      const more = next < first.total && media.length > 0 ? `o${next}` : undefined;
      return {
        assets: await Promise.all(media.map((m) => mapMedia(ctx, m))),
        folders: [], filters: facets, totalAssetsCount: first.total, ...(more ? { more } : {}),
      };
    };

    /** The portal's collections, by name, in pages of 1000 up to the bound (the root's folders). */
    const allCollections = async (ctx: CallContext<OAuthCredentials>): Promise<BynderCollection[]> => {
      const out: BynderCollection[] = [];
      for (let page = 1; out.length < maxCollections; page++) {
        const limit = Math.min(1000, maxCollections - out.length);
        const got = await api(ctx).collections(page, limit);
        out.push(...got);
        if (got.length < limit) break;
      }
      return out.slice(0, maxCollections);
    };

    return defineProvider<OAuthCredentials>({
      id: ID, name: NAME, version: '1.0.0', glyph: 'b', logo: LOGO,
      features: { serverUrl: true, filters: true },
      paging: { defaultSize: 50, maxSize: 200 },
      // Bynder serves at most 15 requests a second per IP and answers 429 beyond, without a
      // Retry-After (its API v4 help page): back-off of up to 0.5 s, then 1 s, spans the window.
      upstream: { retryBaseMs: 500 },
      errorMessage: bynderErrorMessage,
      credentials: oauthCredentials,
      cacheScope: (c) => c.acct,
      signIn: redirectSignIn(flow),
      hooks: {
        refresh: (cred, http) => flow.refresh(cred, http),

        /** The portal, and the filters its listings can carry (asset type, filterable metaproperties, tags). */
        async providerInfo(ctx, o) {
          const lc = o.uiLocale.replace(/-/g, '_');
          const props = await metaproperties(ctx).catch(() => []);
          return {
            remoteSystemPrefix: portalFor(ctx.cred),
            filters: [
              { id: 'type', name: 'Asset type' },
              ...props.filter((p) => p.isFilterable !== false).map((p) => ({ id: `property_${p.name}`, name: p.labels?.[lc] ?? p.label ?? p.name })),
              { id: 'tags', name: 'Tags' },
            ],
          };
        },

        browse: (outer, id, opts): Promise<FolderPage> => together(outer, async (ctx) => {
          const scope = scopeOf(id);
          const first = opts.more === null;
          const brands = scope.kind === 'brand' || scope.kind === 'subbrand' || (scope.kind === 'root' && first) ? api(ctx).brands() : Promise.resolve([]);
          const [self, page, folders] = await Promise.all([
            (async () => {
              if (scope.kind === 'root') return NAME;
              if (scope.kind === 'collection') return (await api(ctx).collection(scope.id)).name;
              const all = await brands;
              const hit = scope.kind === 'brand'
                ? all.find((b) => b.id.toUpperCase() === scope.id)
                : all.flatMap((b) => b.subBrands ?? []).find((b) => b.id.toUpperCase() === scope.id);
              if (!hit) throw integrationError('integration-not-found', ID, `no ${scope.kind === 'brand' ? 'brand' : 'sub-brand'} ${scope.id}`);
              return hit.name;
            })(),
            mediaPage(ctx, scope.kind === 'root' ? {} : scope.query, opts),
            // Folders on the first page only (rule 2): the root's brands and collections, a brand's sub-brands.
            (async () => {
              if (!first) return [];
              if (scope.kind === 'root') {
                const [b, c] = await Promise.all([brands, allCollections(ctx)]);
                return [...b.sort(byName).map((x) => toFolder('brand', x)), ...c.sort(byName).map((x) => toFolder('collection', x))];
              }
              if (scope.kind === 'brand') return ((await brands).find((b) => b.id.toUpperCase() === scope.id)?.subBrands ?? []).sort(byName).map((x) => toFolder('subbrand', x));
              return [];
            })(),
          ]);
          return { id, name: self, ...page, folders };
        }),

        search: (outer, q, opts): Promise<AssetPage> => together(outer, (ctx) => {
          const scope = q.parentId ? scopeOf(q.parentId) : { kind: 'root' as const };
          return mediaPage(ctx, { keyword: q.query, ...(scope.kind === 'root' ? {} : scope.query) }, opts);
        }),

        /**
         * Similar Assets Search with the reference image as `imageData` (a base64 data URI), then
         * the ranked assets read by id. Bynder returns the whole ranking at once: the hub's `more`
         * is an offset into it.
         */
        async searchByImage(ctx, image, opts): Promise<AssetPage> {
          let offset = 0;
          if (opts.more !== null) {
            const m = OFFSET_CURSOR.exec(opts.more);
            if (!m) throw integrationError('integration-operation-failed', ID, `unreadable cursor ${JSON.stringify(opts.more.slice(0, 40))}`);
            offset = Number(m[1]);
          }
          // sharp's format names are extensions too (jpeg, png, webp, gif, tiff, heif, avif).
          const mime = mimeTypeOfExtension(image.format) ?? UNKNOWN_MIME_TYPE;
          const hits = await api(ctx).similar(`data:${mime};base64,${image.bytes.toString('base64')}`);
          const ranked = [...new Set(hits.map((h) => v4Id(h.assetId)).filter((x): x is string => x !== null))];
          const slice = ranked.slice(offset, offset + opts.size);
          const found = slice.length ? (await api(ctx).media({ ids: slice }, 1, slice.length)).media : [];
          const byId = new Map(found.map((m) => [m.id.toUpperCase(), m]));
          const assets = await Promise.all(slice.flatMap((i) => (byId.has(i) ? [mapMedia(ctx, byId.get(i)!)] : [])));
          const next = offset + opts.size;
          return { assets, folders: [], filters: [], totalAssetsCount: ranked.length, ...(next < ranked.length ? { more: `s${next}` } : {}) };
        },

        asset: (outer, id): Promise<Asset> => together(outer, async (ctx) => {
          const [m, props] = await Promise.all([api(ctx).asset(assetId(id)), metaproperties(ctx).catch(() => null)]);
          return mapMedia(ctx, m, true, props);
        }),

        async versions(ctx, id, opts): Promise<VersionList> {
          const m = await api(ctx).asset(assetId(id));
          const items = originals(m);
          const mid = m.id.toUpperCase();
          const ext = externalUrl(ctx.cred, mid);
          if (!items.length) {
            // No media items listed: the asset is its only version.
            return { id: mid, name: fileNameOf(m), versions: opts.withMaster ? [await mapMedia(ctx, m)] : [] };
          }
          const current = items.find((i) => i.active === true || i.active === 1) ?? items[0]!;
          const list = opts.withMaster ? items : items.filter((i) => i !== current);
          const versions = await Promise.all(list.map(async (i) => {
            const name = i.fileName || fileNameOf(m);
            // The current version downloads as the asset does; older ones by their version number.
            const item = i === current ? { id: mid } : { id: mid, v: i.version };
            return toVersion(m, i, { downloadUrl: await ctx.downloadUrl(item, name), externalUrl: ext });
          }));
          return { id: mid, name: fileNameOf(m), versions };
        },

        /** Bynder's own rendition (the `thumbnails` map, a public CDN URL sealed in the link); the kit checks and re-encodes it. */
        async thumbnail({ http, item }) {
          if (typeof item.src !== 'string' || !/^https?:\/\//.test(item.src)) return null;
          return BynderApi.rendition(http, item.src);
        },

        /**
         * The original (or one version) through the hub's grant: Retrieve asset download location
         * with the user's token, then its `s3_file`, a signed storage URL fetched without the token.
         */
        async download({ cred, http, item, range, ifNoneMatch }) {
          if (typeof item.id !== 'string' || !v4Id(item.id)) throw integrationError('integration-not-found', ID, 'the download link names no asset');
          const v = typeof item.v === 'number' && Number.isInteger(item.v) ? item.v : undefined;
          const url = await new BynderApi(http, portalFor(cred), cred.at).downloadLocation(item.id, v);
          return BynderApi.fetchSigned(http, url, range, ifNoneMatch);
        },
      },
    })(deps);
  };
}
