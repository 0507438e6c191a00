/**
 * Canto connector: multi-tenant (the tenant's site `https://<account>.canto.com`, `.canto.global`,
 * `.canto.de`, `.ca.canto.com`, `.au.canto.com` through serverUrl), OAuth 2.0 authorization code
 * on Canto's OAuth host of that region (PKCE S256 sent; refresh), folders and albums as the
 * hierarchy, keyword search with scheme/approval filters, content details, version history.
 * Verified against documented responses, not against the live service (docs/connectors.md).
 */
import { hubError, integrationError } from '../../errors.js';
import { defineProvider, type CallContext, type ConnectorDeps, type DefinedConnector } from '../kit/define.js';
import { vendorEndpoints } from '../kit/endpoints.js';
import type { UpstreamClient } from '../kit/http.js';
import type { Asset, AssetPage, Filter, FolderPage, VersionList } from '../model.js';
import { OAuthFlow, oauthCredentials, type OAuthCredentials } from '../oauth/flow.js';
import { oauthLogin } from '../oauth/login.js';
import type { OAuthConnectorOptions } from '../oauth/options.js';
import { offsetOf } from '../saas/listing.js';
import { CantoApi, cantoErrorMessage, cantoTokenDialect, isScheme, SCHEMES, type CantoContent, type Scheme } from './api.js';
import { currentVersion, historyOf, toAsset, toFolder, versionToAsset } from './mapping.js';

const ID = 'canto';
const NAME = 'Canto';
/** Canto ids are short alphanumeric strings; anything else cannot exist there. */
const CANTO_ID = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * Canto's regions: the tenant's domain decides the OAuth host (longest suffix first). Endpoint
 * names for DAMHUB_CANTO_ENDPOINTS are these `oauth*` names.
 */
const REGIONS = [
  { endpoint: 'oauth-ca', domain: 'ca.canto.com' },
  { endpoint: 'oauth-au', domain: 'au.canto.com' },
  { endpoint: 'oauth', domain: 'canto.com' },
  { endpoint: 'oauth-global', domain: 'canto.global' },
  { endpoint: 'oauth-de', domain: 'canto.de' },
] as const;
type RegionEndpoint = (typeof REGIONS)[number]['endpoint'];
/** Labels under a Canto domain that are Canto's own hosts, not tenants. */
const RESERVED = new Set(['www', 'oauth', 'api', 'support', 'ca', 'au', 'static', 'cdn']);

/** Filters from the search's documented parameters: content scheme and approval status. */
const FACETS = {
  scheme: { name: 'Type', options: SCHEMES.map((s) => ({ value: s, name: s[0]!.toUpperCase() + s.slice(1) })) },
  approval: { name: 'Approval status', options: ['Approved', 'Pending', 'Restricted'].map((s) => ({ value: s, name: s })) },
} as const;
type FacetKey = keyof typeof FACETS;
/** Schemes Canto renders a preview image of (audio and "other" files have none to show). */
const PREVIEWED = new Set(['image', 'video', 'document', 'presentation']);

/** Inline, so the logo needs no route and no third-party host: a badge in Canto's red. */
const LOGO = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 64 64'%3E%3Crect width='64' height='64' rx='14' fill='%23f33b2d'/%3E%3Cpath d='M43 22.5A14 14 0 1 0 43 41.5' fill='none' stroke='%23fff' stroke-width='7' stroke-linecap='round'/%3E%3C/svg%3E";

export interface CantoOptions extends OAuthConnectorOptions {
  /** Scopes asked for; Canto documents none finer than its roles (the default asks for none). */
  scopes?: string[];
}

export function cantoConnector(o: CantoOptions): (deps: ConnectorDeps) => DefinedConnector {
  const ep = vendorEndpoints<RegionEndpoint>(ID, {
    oauth: 'https://oauth.canto.com', 'oauth-ca': 'https://oauth.ca.canto.com', 'oauth-au': 'https://oauth.au.canto.com',
    'oauth-global': 'https://oauth.canto.global', 'oauth-de': 'https://oauth.canto.de',
  }, o.endpoints);
  /** An origin the operator named (a stand-in serving both OAuth and the API) is accepted as a tenant of that region. */
  const standIns = new Map(Object.entries(o.endpoints ?? {}).map(([name, url]) => [new URL(url).origin, name as RegionEndpoint]));
  const tokenEndpoints = new Set(Object.values(ep).map((base) => `${base}/oauth/api/oauth2/token`));
  const isTokenEndpoint = (u: URL) => tokenEndpoints.has(`${u.origin}${u.pathname}`.replace(/\/+$/, ''));

  /** The tenant of a serverUrl and its region, or a clear refusal: not a Canto site. */
  function tenant(serverUrl: string | null | undefined): { origin: string; region: RegionEndpoint } {
    if (!serverUrl) throw integrationError('integration-operation-failed', ID, 'Canto needs the address of your Canto site (serverUrl), e.g. https://acme.canto.com');
    let u: URL;
    try {
      u = new URL(serverUrl);
    } catch {
      throw integrationError('integration-operation-failed', ID, `serverUrl ${JSON.stringify(serverUrl.slice(0, 200))} is not a URL`, { message: 'The Canto site address is not a URL, e.g. https://acme.canto.com' });
    }
    const standIn = standIns.get(u.origin);
    if (standIn) return { origin: u.origin, region: standIn };
    const host = u.hostname.toLowerCase();
    const region = REGIONS.find((r) => host.endsWith(`.${r.domain}`));
    const label = region ? host.slice(0, -region.domain.length - 1) : '';
    const ok = region && u.protocol === 'https:' && !u.port && !u.username && !u.password && /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(label) && !RESERVED.has(label);
    if (!ok || !region) {
      throw integrationError('integration-operation-failed', ID, `${u.protocol}//${u.host} is not a Canto site (https://<account>.canto.com, .canto.global, .canto.de, .ca.canto.com or .au.canto.com)`, {
        message: 'This is not the address of a Canto site. Use your site\'s address, e.g. https://acme.canto.com.',
      });
    }
    return { origin: `https://${host}`, region: region.endpoint };
  }

  function parseFolder(folderId: string): { kind: 'root' } | { kind: 'folder' | 'album'; id: string } {
    if (folderId === 'root') return { kind: 'root' };
    const m = /^(folder|album):(.+)$/.exec(folderId);
    if (!m || !CANTO_ID.test(m[2]!)) throw integrationError('integration-not-found', ID, `no folder or album ${JSON.stringify(folderId.slice(0, 200))}`);
    return { kind: m[1] as 'folder' | 'album', id: m[2]! };
  }

  function parseAsset(assetId: string): { scheme: Scheme; id: string } {
    const m = /^([a-z]+):(.+)$/.exec(assetId);
    if (!m || !isScheme(m[1]) || !CANTO_ID.test(m[2]!)) throw integrationError('integration-not-found', ID, `no content ${JSON.stringify(assetId.slice(0, 200))}`);
    return { scheme: m[1], id: m[2]! };
  }

  /** Active filter ids (`scheme:image`, `approval:Approved`) by facet; an unknown id is the client's mistake. */
  function parseFilters(ids: string[]): Partial<Record<FacetKey, string[]>> {
    const out: Partial<Record<FacetKey, string[]>> = {};
    for (const id of ids) {
      const i = id.indexOf(':');
      const facet = id.slice(0, i) as FacetKey;
      const value = id.slice(i + 1);
      // Own keys only: `constructor:x` must be an unknown id, not a prototype's member.
      if (i < 1 || !Object.hasOwn(FACETS, facet) || !FACETS[facet].options.some((o) => o.value === value)) {
        throw hubError('hub-validation-error', `filters: unknown option id ${JSON.stringify(id.slice(0, 100))}; use ids from a previous response's filters`);
      }
      (out[facet] ??= []).push(value);
    }
    return out;
  }
  /** Several options of one facet are OR'd, as Canto's scheme parameter takes them (`image|video`). */
  const param = (values: string[] | undefined) => (values?.length ? values.join('|') : undefined);

  return (deps) => {
    const flow = new OAuthFlow({
      providerId: ID, name: NAME, clientId: o.clientId, clientSecret: o.clientSecret, pkceSecret: o.pkceSecret,
      clientAuth: 'client_secret_post',
      scopes: o.scopes ?? [],
      // Canto's OAuth page names the client app_id ("Canto OAuth page"); client_id is sent too.
      authorizationParams: { app_id: o.clientId },
      server: async (serverUrl) => {
        const base = ep[tenant(serverUrl).region];
        return { issuer: base, authorization_endpoint: `${base}/oauth/api/oauth2/authorize`, token_endpoint: `${base}/oauth/api/oauth2/token` };
      },
      // The signed-in user of the tenant ("Get current user info"), scoped by the tenant's host.
      accountId: async (t, { serverUrl, http }) => {
        if (!http) return '';
        const site = tenant(serverUrl);
        const u = await new CantoApi(http, site.origin, t.access_token).user();
        const who = ['userId', 'uuid', 'id', 'email'].map((k) => u[k]).find((v) => typeof v === 'string' && v.length > 0) as string | undefined;
        return who ? `${new URL(site.origin).host}/${who.toLowerCase()}` : '';
      },
      timeoutMs: deps.upstream?.timeoutMs, allowInsecureRequests: o.allowInsecureRequests, now: () => deps.clock.now(),
    });
    const login = oauthLogin(flow);
    const dialect = (http: UpstreamClient) => cantoTokenDialect(http, isTokenEndpoint);
    const api = (ctx: { http: UpstreamClient; cred: OAuthCredentials }) => new CantoApi(ctx.http, tenant(ctx.cred.srv).origin, ctx.cred.at);

    /** Content as an asset with hub links: thumbnails from Canto's preview, downloads through the hub's grant. */
    async function mapContent(ctx: CallContext<OAuthCredentials>, c: CantoContent, detail = false): Promise<Asset> {
      const origin = tenant(ctx.cred.srv).origin;
      const item = { s: c.scheme, id: c.id };
      const version = c.md5 ?? c.lastUploaded ?? c.time ?? '';
      return toAsset(c, {
        downloadUrl: await ctx.downloadUrl(item, c.name),
        thumbnailUrl: PREVIEWED.has(c.scheme) ? await ctx.thumbnailUrl(item, `${c.name}.jpg`, { version }) : undefined,
        externalUrl: `${origin}/library?viewIndex=0&column=${encodeURIComponent(c.scheme)}&id=${encodeURIComponent(c.id)}`,
      }, { detail });
    }

    const itemOf = (item: Record<string, unknown>) => {
      if (!isScheme(item.s) || typeof item.id !== 'string' || !CANTO_ID.test(item.id)) throw integrationError('integration-not-found', ID, 'the link names no Canto content');
      return { scheme: item.s, id: item.id };
    };

    /** One filter list (counts: one `limit=1` search per option, run together) for the first page of a search. */
    async function filtersFor(ctx: CallContext<OAuthCredentials>, query: string, active: Partial<Record<FacetKey, string[]>>): Promise<Filter[]> {
      const a = api(ctx);
      return Promise.all((Object.keys(FACETS) as FacetKey[]).map(async (f) => ({
        id: f,
        name: FACETS[f].name,
        options: await Promise.all(FACETS[f].options.map(async (opt) => {
          const scoped = { ...active, [f]: [opt.value] };
          const n = (await a.search(query, 0, 1, { scheme: param(scoped.scheme), approval: param(scoped.approval) })).found;
          return { id: `${f}:${opt.value}`, isActive: active[f]?.includes(opt.value) ?? false, name: opt.name, count: n };
        })),
      })));
    }

    return defineProvider<OAuthCredentials>({
      id: ID, name: NAME, version: '1.0.0', glyph: 'C', logo: LOGO,
      features: { serverUrl: true, filters: true, assetHashAlgorithm: 'Md5' },
      paging: { defaultSize: 50, maxSize: 100 },
      errorMessage: cantoErrorMessage,
      credentials: (raw) => {
        const c = oauthCredentials(raw);
        tenant(c.srv);
        return c;
      },
      // Thumbnails are cached per Canto user of a tenant, not per (rotating) access token.
      cacheScope: (c) => c.acct,
      signIn: {
        kind: 'redirect',
        // A serverUrl that is not a Canto site is refused here, before the user is sent anywhere.
        begin: (start, host, http) => {
          tenant(start.serverUrl);
          return login.beginLogin(start, host, dialect(http));
        },
        routes: (app, host, http) => login.routes(app, host, dialect(http)),
      },
      hooks: {
        refresh: (cred, http) => flow.refresh(cred, dialect(http)),

        /** The tenant's site (ids are Canto's) and the filters a library-wide search offers. */
        async providerInfo(ctx) {
          return {
            remoteSystemPrefix: tenant(ctx.cred.srv).origin,
            filters: (Object.keys(FACETS) as FacetKey[]).map((f) => ({ id: f, name: FACETS[f].name })),
          };
        },

        async browse(ctx, folderId, opts): Promise<FolderPage> {
          const f = parseFolder(folderId);
          if (opts.filters.length) throw integrationError('integration-not-supported', ID, 'Canto filters apply to search, not to browsing');
          const a = api(ctx);
          if (f.kind !== 'album') {
            // Folders hold folders and albums, never content: one answer, no paging.
            const nodes = await a.tree(f.kind === 'root' ? null : f.id);
            return {
              id: folderId, name: f.kind === 'root' ? NAME : 'Folder',
              folders: opts.more === null ? nodes.filter((n) => n.scheme === 'folder' || n.scheme === 'album').map(toFolder) : [],
              assets: [], filters: [], totalAssetsCount: 0,
            };
          }
          const start = offsetOf(ID, opts.more);
          const page = await a.album(f.id, start, opts.size);
          const next = start + page.served;
          return {
            id: folderId, name: 'Album',
            folders: [],
            assets: await Promise.all(page.results.map((c) => mapContent(ctx, c))),
            filters: [],
            totalAssetsCount: page.found,
            ...(page.served > 0 && next < page.found ? { more: String(next) } : {}),
          };
        },

        async search(ctx, q, opts): Promise<AssetPage> {
          const start = offsetOf(ID, opts.more);
          const active = parseFilters(opts.filters);
          const a = api(ctx);
          let page;
          let filters: Filter[] = [];
          const scope = q.parentId && q.parentId !== 'root' ? parseFolder(q.parentId) : null;
          if (scope && scope.kind === 'folder') {
            throw integrationError('integration-not-supported', ID, 'Canto searches the whole library or one album, not a folder', { message: 'Canto cannot search within a folder; search within one of its albums or everywhere.' });
          }
          if (scope && scope.kind === 'album') {
            if (opts.filters.length) throw integrationError('integration-not-supported', ID, 'Canto filters apply to a library-wide search, not within an album');
            page = await a.album(scope.id, start, opts.size, q.query);
          } else {
            [page, filters] = await Promise.all([
              a.search(q.query, start, opts.size, { scheme: param(active.scheme), approval: param(active.approval) }),
              // The counts are extra: a count Canto does not give (a rate limit, an outage) leaves
              // the page without filters rather than failing the search itself.
              start === 0 ? filtersFor(ctx, q.query, active).catch(() => []) : Promise.resolve([]),
            ]);
          }
          const next = start + page.served;
          return {
            assets: await Promise.all(page.results.map((c) => mapContent(ctx, c))),
            folders: [], filters, totalAssetsCount: page.found,
            ...(page.served > 0 && next < page.found ? { more: String(next) } : {}),
          };
        },

        async asset(ctx, assetId): Promise<Asset> {
          const { scheme, id } = parseAsset(assetId);
          const c = await api(ctx).content(scheme, id);
          if (c?.id !== id || !isScheme(c.scheme)) throw integrationError('integration-not-found', ID, `no content ${assetId}`);
          return mapContent(ctx, c, true);
        },

        async versions(ctx, assetId, opts): Promise<VersionList> {
          const { scheme, id } = parseAsset(assetId);
          const c = await api(ctx).content(scheme, id);
          if (c?.id !== id) throw integrationError('integration-not-found', ID, `no content ${assetId}`);
          // Content without a history is its only version.
          const history = historyOf(c).length ? historyOf(c) : [{ currentVersion: true }];
          const current = currentVersion(history)!;
          // Numbered oldest = 1 in the order Canto lists them (the asset detail carries the same
          // number, from the same function); newest first; the current version only with withMaster.
          const versions = history.map((v, i) => ({ v, n: i + 1 })).filter(({ n }) => opts.withMaster || n !== current).reverse();
          return { id: assetId, name: c.name, versions: versions.map(({ v, n }) => versionToAsset(c, v, n)) };
        },

        async download({ cred, http, item, range, ifNoneMatch }) {
          // The grant's own token is used as it is: Canto's live 30 days, a grant 4 hours. It is
          // not renewed here: Canto's refresh answer carries a refresh token, and if Canto rotates
          // them a renewal inside a link would end the user's connection.
          const { scheme, id } = itemOf(item);
          return new CantoApi(http, tenant(cred.srv).origin, cred.at).binary(`${scheme}/${encodeURIComponent(id)}`, `Canto api_binary ${scheme}/{id}`, range, ifNoneMatch);
        },

        /** Canto's own preview rendition (it needs the user's token); the kit checks and re-encodes it. */
        async thumbnail({ cred, http, item }) {
          const { scheme, id } = itemOf(item);
          return new CantoApi(http, tenant(cred.srv).origin, cred.at).binary(`${scheme}/${encodeURIComponent(id)}/preview`, `Canto api_binary ${scheme}/{id}/preview`);
        },
      },
    })(deps);
  };
}
