/**
 * Frontify connector: multi-tenant (the tenant's Frontify domain as serverUrl), OAuth 2.0
 * authorization code + PKCE on the tenant (read-only `basic:read`), refreshable; brands →
 * libraries → folders → assets over Frontify's public GraphQL API, keyword search within
 * libraries and folders, asset revisions as versions. Built with the connector kit
 * (defineProvider, its upstream client). Verified against responses built from Frontify's
 * published GraphQL reference, not against the live service (docs/connectors.md).
 */
import type * as oauth from 'oauth4webapi';
import { integrationError, isHubError } from '../../errors.js';
import { defineProvider, type CallContext, type ConnectorDeps, type DefinedConnector } from '../kit/define.js';
import { vendorEndpoints } from '../kit/endpoints.js';
import type { UpstreamClient } from '../kit/http.js';
import type { Asset, AssetPage, Folder, FolderPage, VersionList } from '../model.js';
import { OAuthFlow, oauthCredentials, type OAuthCredentials, type OAuthSpec } from '../oauth/flow.js';
import { redirectSignIn } from '../oauth/login.js';
import type { OAuthConnectorOptions } from '../oauth/options.js';
import { offsetOf } from '../saas/listing.js';
import { FrontifyApi, frontifyErrorMessage, ID, itemsOf, type FyAsset, type FyFolderNode, type FyLibraryNode, type FyRevision, type Named, type Page } from './api.js';
import { ASSET_ID, brandFolder, fileName, hasThumbnail, libraryFolder, parsePlace, revisionAsset, subFolder, toAsset, type Place } from './mapping.js';

/**
 * Endpoints (kit/endpoints.ts): `tenant`, empty by default (every sign-in names its Frontify
 * domain as serverUrl); set, it pins the hub to one Frontify domain (a company's own, or a
 * stand-in) and sign-ins need no serverUrl.
 */
export interface FrontifyOptions extends OAuthConnectorOptions {
  /** Most subfolders, libraries or brands listed in one folder (each read in pages of 100). */
  maxFolders?: number;
  /** Most libraries one search spans (a search from the root or a brand asks each library). */
  maxSearchLibraries?: number;
}

/** Frontify's `limit` is 1..100 on every paged field. */
const MAX_LIMIT = 100;
const THUMB_SIZE = 256;
const SCOPES = ['basic:read'];

/** Inline, so the logo needs no route and no third-party host: a badge in Frontify's dark brand colour ('#' written %23: in a data: URL a bare '#' starts the fragment). */
const LOGO = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 64 64'%3E%3Crect width='64' height='64' rx='14' fill='%232d3232'/%3E%3Cpath d='M20 14h26v8H29v8h14v8H29v12h-9z' fill='%23fff'/%3E%3C/svg%3E";

/** A Frontify tenant's authorization server, as the official @frontify/frontify-authenticator uses it. */
interface TenantServer extends oauth.AuthorizationServer {
  refresh_endpoint: string;
}

export function frontifyConnector(o: FrontifyOptions): (deps: ConnectorDeps) => DefinedConnector {
  const ep = vendorEndpoints(ID, { tenant: '' }, o.endpoints);
  const pinned = ep.tenant ? new URL(ep.tenant).origin : null;
  const maxFolders = o.maxFolders ?? 1000;
  const maxLibraries = o.maxSearchLibraries ?? 25;

  /** The tenant origin of a sign-in: its serverUrl (scheme and host only), or the pinned tenant. */
  function tenantOf(serverUrl: string | null | undefined): string {
    if (!serverUrl) {
      if (pinned) return pinned;
      throw integrationError('integration-operation-failed', ID, 'Frontify needs the domain of your Frontify (serverUrl), for example https://acme.frontify.com', {
        message: 'Enter the address of your Frontify (for example https://acme.frontify.com).',
      });
    }
    let u: URL;
    try {
      u = new URL(serverUrl);
    } catch {
      throw integrationError('integration-operation-failed', ID, `not a URL: ${JSON.stringify(serverUrl.slice(0, 200))}`);
    }
    if (u.protocol !== 'https:' && !(o.allowInsecureRequests && u.protocol === 'http:')) {
      throw integrationError('integration-operation-failed', ID, `Frontify is reached over https, not ${u.protocol}`, { message: 'The Frontify address must start with https://' });
    }
    if (pinned && u.origin !== pinned) throw integrationError('integration-operation-failed', ID, `this hub serves the Frontify at ${pinned} only, not ${u.origin}`);
    return u.origin;
  }

  /**
   * Whether an origin is a Frontify tenant: its GraphQL endpoint answers an unauthenticated
   * `{ __typename }` with Frontify's root query type, RootQuery (introspection needs no sign-in
   * there). A private address is refused by the kit's address policy before any connection; a
   * site that is not Frontify fails here, before the user is sent to it to sign in.
   */
  const checked = new Map<string, Promise<TenantServer>>();
  function tenantServer(serverUrl: string | null, http?: UpstreamClient): Promise<TenantServer> {
    let origin: string;
    try {
      origin = tenantOf(serverUrl);
    } catch (e) {
      return Promise.reject(e);
    }
    let p = checked.get(origin);
    if (!p) {
      p = (async () => {
        if (http) {
          let root: unknown;
          try {
            root = (await new FrontifyApi(http, origin, null).run<{ __typename?: unknown }>('DamhubProbe')).__typename;
          } catch (e) {
            const refused = isHubError(e) && /refused to connect/.test(e.details ?? '');
            if (refused) throw e;
            throw integrationError('integration-operation-failed', ID, `${origin} is not a Frontify: ${isHubError(e) ? e.details ?? e.message : String(e)}`.slice(0, 2000), {
              message: `${new URL(origin).host} does not answer like a Frontify; check the address.`,
            });
          }
          if (root !== 'RootQuery') {
            throw integrationError('integration-operation-failed', ID, `${origin} is not a Frontify: its GraphQL root type is ${JSON.stringify(root)}, not RootQuery`, {
              message: `${new URL(origin).host} does not answer like a Frontify; check the address.`,
            });
          }
        }
        return {
          issuer: origin,
          authorization_endpoint: `${origin}/api/oauth/authorize`,
          token_endpoint: `${origin}/api/oauth/accesstoken`,
          refresh_endpoint: `${origin}/api/oauth/refresh`,
        };
      })();
      checked.set(origin, p);
      // A failed check is not kept: the address may answer on the next sign-in.
      p.catch(() => checked.delete(origin));
    }
    return p;
  }

  const api = (http: UpstreamClient, cred: OAuthCredentials) => new FrontifyApi(http, tenantOf(cred.srv), cred.at);

  function assetId(id: string): string {
    if (!ASSET_ID.test(id)) throw integrationError('integration-not-found', ID, `no asset ${JSON.stringify(id.slice(0, 200))}`);
    return id;
  }

  function place(id: string): Place {
    const p = parsePlace(id);
    if (!p) throw integrationError('integration-not-found', ID, `no folder ${JSON.stringify(id.slice(0, 200))}`);
    return p;
  }

  /** Every page of a paged list up to `maxFolders`; more is a clear refusal, not an unbounded read. */
  async function allPages<T>(what: string, first: Page<T> | undefined, next: (page: number) => Promise<Page<T> | undefined>): Promise<T[]> {
    const out = itemsOf(first);
    let p = first;
    for (let page = 2; p?.hasNextPage; page++) {
      if (out.length >= maxFolders) {
        throw integrationError('integration-operation-failed', ID, `more than ${maxFolders} ${what}`, { message: `This folder holds more than ${maxFolders} ${what}; the hub lists at most that many.` });
      }
      p = await next(page);
      out.push(...itemsOf(p));
    }
    return out;
  }

  /** The Frontify page holding hub offset `offset` at `size` per page, and how many of its items precede the offset. */
  const pageAt = (offset: number, size: number) => ({ limit: size, page: Math.floor(offset / size) + 1, skip: offset % size });

  async function mapAsset(ctx: CallContext<OAuthCredentials>, a: FyAsset): Promise<Asset> {
    const thumb = hasThumbnail(a) ? await ctx.thumbnailUrl({ id: a.id }, `${fileName(a)}.jpg`, { version: a.modifiedAt ?? a.createdAt }) : undefined;
    return toAsset(a, { thumbnailUrl: thumb });
  }

  /** One page of a library's or folder's assets with exact totals, plus (on the first page) all its subfolders. */
  async function browseContainer(ctx: CallContext<OAuthCredentials>, p: Extract<Place, { kind: 'library' | 'folder' }>, offset: number, size: number): Promise<{ name: string; folders: Folder[]; assets: FyAsset[]; total: number }> {
    const fy = api(ctx.http, ctx.cred);
    const w = pageAt(offset, size);
    const library = p.kind === 'library' ? p.id : p.library;
    const vars = (folderPage: number, withAssets: boolean) => ({
      id: p.id, limit: w.limit, page: w.page, folderLimit: MAX_LIMIT, folderPage, withFolders: offset === 0, withAssets,
    });
    const read = async (folderPage: number, withAssets: boolean): Promise<Named & { folders?: Page<Named>; assets?: Page<FyAsset> }> => {
      if (p.kind === 'library') {
        const d = await fy.run<{ library: FyLibraryNode | null }>('DamhubLibraryBrowse', vars(folderPage, withAssets));
        if (!d.library) throw integrationError('integration-not-found', ID, `no library ${p.id}`);
        return { ...d.library, folders: d.library.browse?.folders, assets: d.library.browse?.assets };
      }
      const d = await fy.run<{ node: FyFolderNode | null }>('DamhubFolderBrowse', vars(folderPage, withAssets));
      if (!d.node || typeof d.node.name !== 'string') throw integrationError('integration-not-found', ID, `no folder ${p.id}`);
      return d.node;
    };
    const first = await read(1, true);
    const folders = offset === 0 ? await allPages('subfolders', first.folders, async (page) => (await read(page, false)).folders) : [];
    return {
      name: first.name,
      folders: folders.map((f) => subFolder(library, f)),
      assets: itemsOf(first.assets).slice(w.skip),
      total: first.assets?.total ?? 0,
    };
  }

  /** The libraries a search from the root or a brand spans, in a stable order (brands as Frontify lists them, then their libraries). */
  async function librariesOf(ctx: CallContext<OAuthCredentials>, brandIds: string[] | null): Promise<string[]> {
    const fy = api(ctx.http, ctx.cred);
    const brands = brandIds ?? (await fy.run<{ brands: (Named | null)[] | null }>('DamhubBrands')).brands?.filter((b): b is Named => !!b).map((b) => b.id) ?? [];
    const out: string[] = [];
    for (const b of brands) {
      const libs = await brandLibraries(ctx, b);
      out.push(...libs.items.map((l) => l.id));
      if (out.length > maxLibraries) {
        throw integrationError('integration-operation-failed', ID, `a search here spans more than ${maxLibraries} libraries`, {
          message: `Search within a library or a folder: this search would span more than ${maxLibraries} Frontify libraries.`,
        });
      }
    }
    return out;
  }

  async function brandLibraries(ctx: CallContext<OAuthCredentials>, id: string): Promise<{ name: string; items: Named[] }> {
    const fy = api(ctx.http, ctx.cred);
    const read = async (page: number) => {
      const d = await fy.run<{ brand: (Named & { libraries?: Page<Named> | null }) | null }>('DamhubBrandLibraries', { id, limit: MAX_LIMIT, page });
      if (!d.brand) throw integrationError('integration-not-found', ID, `no brand ${id}`);
      return d.brand;
    };
    const first = await read(1);
    const items = await allPages('libraries', first.libraries ?? undefined, async (page) => (await read(page)).libraries ?? undefined);
    return { name: first.name, items };
  }

  async function searchLibrary(ctx: CallContext<OAuthCredentials>, library: string, query: Record<string, unknown>, limit: number, page: number): Promise<Page<FyAsset>> {
    const d = await api(ctx.http, ctx.cred).run<{ library: FyLibraryNode | null }>('DamhubLibrarySearch', { id: library, limit, page, query });
    if (!d.library) throw integrationError('integration-not-found', ID, `no library ${library}`);
    return d.library.assets ?? { total: 0, page, limit, hasNextPage: false, items: [] };
  }

  return (deps) => {
    const spec = (server: OAuthSpec['server']): OAuthSpec => ({
      providerId: ID, name: 'Frontify', clientId: o.clientId, clientSecret: o.clientSecret, pkceSecret: o.pkceSecret,
      clientAuth: 'client_secret_post', scopes: SCOPES, server,
      // Frontify's token answer names no user: the account is the GraphQL currentUser.
      accountId: async (t, at) => {
        if (!at.http) return '';
        const d = await new FrontifyApi(at.http, tenantOf(at.serverUrl), t.access_token).run<{ currentUser?: { id?: unknown } | null }>('DamhubCurrentUser');
        return typeof d.currentUser?.id === 'string' ? d.currentUser.id : '';
      },
      timeoutMs: deps.upstream?.timeoutMs, allowInsecureRequests: o.allowInsecureRequests, now: () => deps.clock.now(),
    });
    const flow = new OAuthFlow(spec((srv, http) => tenantServer(srv, http)));
    // Frontify renews tokens at its own refresh endpoint (the official authenticator's /api/oauth/refresh), not at the code endpoint.
    const refreshFlow = new OAuthFlow(spec(async (srv, http) => {
      const as = await tenantServer(srv, http);
      return { ...as, token_endpoint: as.refresh_endpoint };
    }));

    return defineProvider<OAuthCredentials>({
      id: ID, name: 'Frontify', version: '1.0.0', glyph: 'F', logo: LOGO,
      features: { serverUrl: true },
      paging: { defaultSize: 50, maxSize: MAX_LIMIT },
      errorMessage: frontifyErrorMessage,
      credentials: oauthCredentials,
      // Thumbnails are cached per Frontify user and tenant, not per (rotating) access token.
      cacheScope: (c) => `${c.srv ?? pinned ?? ''} ${c.acct}`,
      signIn: redirectSignIn(flow),
      hooks: {
        refresh: (cred, http) => refreshFlow.refresh(cred, http),

        async browse(ctx, folderId, opts): Promise<FolderPage> {
          const p = place(folderId);
          const offset = offsetOf(ID, opts.more);
          const empty = { assets: [], filters: [], totalAssetsCount: 0 };
          if (p.kind === 'root') {
            const d = await api(ctx.http, ctx.cred).run<{ brands: (Named | null)[] | null }>('DamhubBrands');
            const brands = (d.brands ?? []).filter((b): b is Named => !!b);
            return { id: folderId, name: 'Frontify', folders: offset === 0 ? brands.map(brandFolder) : [], ...empty };
          }
          if (p.kind === 'brand') {
            const b = await brandLibraries(ctx, p.id);
            return { id: folderId, name: b.name, folders: offset === 0 ? b.items.map(libraryFolder) : [], ...empty };
          }
          const c = await browseContainer(ctx, p, offset, opts.size);
          const next = offset + c.assets.length;
          return {
            id: folderId, name: c.name, folders: c.folders, filters: [],
            assets: await Promise.all(c.assets.map((a) => mapAsset(ctx, a))),
            totalAssetsCount: c.total,
            // A page that moved nothing on (the folder shrank under us) ends the traversal rather than looping.
            ...(c.assets.length > 0 && next < c.total ? { more: String(next) } : {}),
          };
        },

        async search(ctx, q, opts): Promise<AssetPage> {
          const scope = q.parentId && q.parentId !== 'root' ? place(q.parentId) : ({ kind: 'root' } as Place);
          const offset = offsetOf(ID, opts.more);
          const query = { search: q.query, ...(scope.kind === 'folder' ? { inFolder: { id: scope.id } } : {}) };
          let libraries: string[];
          if (scope.kind === 'library' || scope.kind === 'folder') libraries = [scope.kind === 'library' ? scope.id : scope.library];
          else libraries = await librariesOf(ctx, scope.kind === 'brand' ? [scope.id] : null);
          // Exact totals: each library's match count (one item asked for), then the libraries' results one after another.
          const totals = libraries.length === 1 ? null : await Promise.all(libraries.map(async (l) => (await searchLibrary(ctx, l, query, 1, 1)).total));
          let start = offset;
          let i = 0;
          if (totals) {
            while (i < totals.length && start >= totals[i]!) start -= totals[i++]!;
          }
          let items: FyAsset[] = [];
          let total = totals ? totals.reduce((s, n) => s + n, 0) : 0;
          if (i < libraries.length) {
            const w = pageAt(start, opts.size);
            const r = await searchLibrary(ctx, libraries[i]!, query, w.limit, w.page);
            items = itemsOf(r).slice(w.skip);
            if (!totals) total = r.total;
          }
          const next = offset + items.length;
          return {
            assets: await Promise.all(items.map((a) => mapAsset(ctx, a))), folders: [], filters: [], totalAssetsCount: total,
            ...(items.length > 0 && next < total ? { more: String(next) } : {}),
          };
        },

        async asset(ctx, id): Promise<Asset> {
          const d = await api(ctx.http, ctx.cred).run<{ asset: FyAsset | null }>('DamhubAsset', { id: assetId(id) });
          if (!d.asset) throw integrationError('integration-not-found', ID, `no asset ${id}`);
          return mapAsset(ctx, d.asset);
        },

        /** Frontify's own preview (Image/Document `previewUrl(width, height)`, else the asset's thumbnailUrl): a public CDN URL, fetched without the user's token. */
        async thumbnail({ cred, http, item }) {
          if (typeof item.id !== 'string' || !ASSET_ID.test(item.id)) throw integrationError('integration-not-found', ID, 'the thumbnail link names no asset');
          const d = await api(http, cred).run<{ asset: { previewUrl?: string | null; thumbnailUrl?: string | null } | null }>('DamhubAssetPreview', { id: item.id, size: THUMB_SIZE });
          if (!d.asset) throw integrationError('integration-not-found', ID, `no asset ${item.id}`);
          const url = d.asset.previewUrl ?? d.asset.thumbnailUrl;
          if (!url || !/^https?:\/\//.test(url)) return null;
          return http.send({ method: 'GET', url, what: 'Frontify preview' });
        },

        /**
         * Frontify keeps revisions (Asset.revisions, newest first); it reports when and by whom
         * each was made, not its file. The newest is the current file: with `withMaster` it is
         * the full current asset, and older revisions follow numbered down to 1.
         */
        async versions(ctx, id, opts): Promise<VersionList> {
          const d = await api(ctx.http, ctx.cred).run<{ asset: (FyAsset & { revisions?: Page<FyRevision> }) | null }>('DamhubRevisions', { id: assetId(id), limit: MAX_LIMIT, page: 1 });
          if (!d.asset) throw integrationError('integration-not-found', ID, `no asset ${id}`);
          const revs = itemsOf(d.asset.revisions);
          const n = Math.max(d.asset.revisions?.total ?? revs.length, revs.length, 1);
          const current = await mapAsset(ctx, d.asset);
          const master = { ...current, version: n, displayVersion: n, ...(revs[0] ? { versionComment: `revision ${revs[0].id}${revs[0].creator?.name ? ` by ${revs[0].creator.name}` : ''}` } : {}) };
          const older = revs.slice(1).map((r, k) => revisionAsset(d.asset!, r, n - 1 - k));
          return { id, name: current.name, versions: opts.withMaster ? [master, ...older] : older };
        },
      },
    })(deps);
  };
}
