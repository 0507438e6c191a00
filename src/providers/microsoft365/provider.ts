/**
 * Microsoft 365 connector (OneDrive and SharePoint through Microsoft Graph): Microsoft identity
 * platform v2 sign-in (authorization code + PKCE, refresh tokens that rotate), the user's OneDrive
 * and the SharePoint sites they follow with their document libraries, drive search, file versions.
 * Built with the connector kit (defineProvider, its upstream client). Verified against documented
 * responses, not against the live service (docs/connectors.md, "Microsoft 365").
 */
import { integrationError, isHubError } from '../../errors.js';
import { defineProvider, type CallContext, type ConnectorDeps, type DefinedConnector } from '../kit/define.js';
import type { UpstreamClient } from '../kit/http.js';
import type { Asset, AssetPage, Filter, Folder, FolderPage, VersionList } from '../model.js';
import { OAuthFlow, oauthCredentials, staticServer, type OAuthCredentials } from '../oauth/flow.js';
import { redirectSignIn } from '../oauth/login.js';
import { byName, offsetOf, readAll, slice, type UpstreamPage } from '../saas/listing.js';
import { GraphApi, graphErrorMessage, type GraphItem } from './api.js';
import { isFile, isFolder, isImage, itemId, parseRef, siteId, toAsset, versionToAsset } from './mapping.js';
import { vendorEndpoints } from '../kit/endpoints.js';
import type { OAuthConnectorOptions } from '../oauth/options.js';

/** Endpoints (kit/endpoints.ts): `authorize`, `token` (the tenant or `common` is part of them), `graph` (with its version path). */
export interface Microsoft365Options extends OAuthConnectorOptions {
  /** Largest folder or search read in full (exact totals need the whole listing). */
  maxEntries?: number;
}

const ID = 'microsoft365';
const NAME = 'Microsoft 365';

/** Read-only delegated permissions: the user (for the account id), files, and sites (followed sites, libraries). */
export const SCOPES = ['offline_access', 'User.Read', 'Files.Read.All', 'Sites.Read.All'];

/** Inline, so the logo needs no route and no third-party host. */
const LOGO = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 64 64'%3E%3Crect width='64' height='64' rx='14' fill='%230364b8'/%3E%3Cpath d='M26 24a12 12 0 0 1 22 4 9 9 0 0 1 1 18H19a8 8 0 0 1-1-16 10 10 0 0 1 8-6z' fill='%23fff'/%3E%3C/svg%3E";

/** Graph's answers to `followedSites` for an account without SharePoint. */
const NO_SITES = new Set<string>(['integration-operation-failed', 'integration-forbidden', 'integration-not-found', 'integration-not-supported']);

/** The hub's file-type filter over what Graph reports (file.mimeType, the image facet). */
const KINDS = [
  { id: 'type:image', name: 'Images', test: (m: string) => m.startsWith('image/') },
  { id: 'type:video', name: 'Videos', test: (m: string) => m.startsWith('video/') },
  { id: 'type:audio', name: 'Audio', test: (m: string) => m.startsWith('audio/') },
  { id: 'type:document', name: 'Documents', test: (m: string) => !/^(image|video|audio)\//.test(m) },
];

function typeFilter(items: GraphItem[], active: string[]): { filters: Filter[]; kept: GraphItem[] } {
  const mime = (it: GraphItem) => (isImage(it) ? 'image/' : it.file?.mimeType ?? '');
  const on = KINDS.filter((k) => active.includes(k.id));
  const kept = on.length ? items.filter((it) => on.some((k) => k.test(mime(it)))) : items;
  const options = KINDS.map((k) => ({ id: k.id, name: k.name, isActive: active.includes(k.id), count: items.filter((it) => k.test(mime(it))).length }))
    .filter((o) => o.count > 0 || o.isActive);
  return { filters: options.length ? [{ id: 'type', name: 'Type', options }] : [], kept };
}

export function microsoft365Connector(o: Microsoft365Options): (deps: ConnectorDeps) => DefinedConnector {
  const ep = vendorEndpoints(ID, {
    authorize: 'https://login.microsoftonline.com/common/oauth2/v2.0/authorize',
    token: 'https://login.microsoftonline.com/common/oauth2/v2.0/token',
    graph: 'https://graph.microsoft.com/v1.0',
  }, o.endpoints);
  const cap = o.maxEntries ?? 20_000;
  const graph = (http: UpstreamClient) => new GraphApi(http, ep.graph);

  /** Every page of a Graph collection, at most `cap` entries (saas/listing.ts). */
  const all = <T>(api: GraphApi, at: string, what: string, first: () => Promise<UpstreamPage<T>>) =>
    readAll<T>(ID, cap, first, (link) => api.more<T>(at, link, what));

  /** A file with hub links: downloads through the hub's grant, thumbnails of images through the `thumbnail` hook. */
  async function mapFile(ctx: CallContext<OAuthCredentials>, it: GraphItem, driveId: string, version?: number): Promise<Asset> {
    const d = it.parentReference?.driveId ?? driveId;
    const thumbnailUrl = isImage(it) ? await ctx.thumbnailUrl({ d, i: it.id }, `${it.name}.jpg`, { etag: it.cTag ?? it.eTag ?? it.lastModifiedDateTime ?? '' }) : undefined;
    return toAsset(it, driveId, { downloadUrl: await ctx.downloadUrl({ d, i: it.id }, it.name), thumbnailUrl, version });
  }

  /** The item a `i.` id names, which must be a folder; for `me`, the user's OneDrive root. */
  async function folderItem(api: GraphApi, at: string, ref: { driveId: string; itemId: string }): Promise<GraphItem> {
    const self = await api.item(at, ref.driveId, ref.itemId);
    if (!isFolder(self)) throw integrationError('integration-not-found', ID, 'this OneDrive or SharePoint item is not a folder');
    return self;
  }

  /** A folder's display name: a library's or OneDrive's top item is called "root" by Graph. */
  function folderName(self: GraphItem): string {
    if (!self.root) return self.name;
    const last = self.webUrl?.split('/').filter(Boolean).pop();
    try {
      return last ? decodeURIComponent(last) : self.name;
    } catch {
      return self.name;
    }
  }

  return (deps) => {
    const flow = new OAuthFlow({
      providerId: ID, name: NAME, clientId: o.clientId, clientSecret: o.clientSecret, clientAuth: 'client_secret_post', pkceSecret: o.pkceSecret,
      scopes: SCOPES,
      // The issuer of `common` tokens is tenant-specific and no `openid` scope is asked, so there is
      // no ID token to validate: the account is the user GET /me names.
      server: staticServer({ issuer: new URL(ep.authorize).origin, authorization_endpoint: ep.authorize, token_endpoint: ep.token }),
      accountId: async (t, { http }) => (http ? (await graph(http).me(t.access_token)).id ?? '' : ''),
      timeoutMs: deps.upstream?.timeoutMs, allowInsecureRequests: o.allowInsecureRequests, now: () => deps.clock.now(),
    });

    const grantItem = (item: Record<string, unknown>) => {
      const { d, i, v } = item;
      if (typeof d !== 'string' || typeof i !== 'string' || (v !== undefined && typeof v !== 'string')) {
        throw integrationError('integration-not-found', ID, 'the link names no OneDrive or SharePoint file');
      }
      return { d, i, v: (v as string | undefined) ?? null };
    };

    return defineProvider<OAuthCredentials>({
      id: ID, name: NAME, version: '1.0.0', glyph: 'M', logo: LOGO,
      // SharePoint and OneDrive for work or school report only quickXorHash: no seed hash is always there.
      // Filters: the search's Type filter (over Graph's file facets).
      features: { filters: true },
      paging: { defaultSize: 50, maxSize: 200 },
      errorMessage: graphErrorMessage,
      credentials: oauthCredentials,
      // Thumbnails are cached per Microsoft account, not per (rotating) access token.
      cacheScope: (c) => c.acct,
      signIn: redirectSignIn(flow),
      hooks: {
        // Microsoft rotates refresh tokens: flow.refresh keeps the new one in the DAM token.
        refresh: (cred, http) => flow.refresh(cred, http),

        async browse(ctx, folderId, opts): Promise<FolderPage> {
          const ref = parseRef(ID, folderId);
          const offset = offsetOf(ID, opts.more);
          const api = graph(ctx.http);
          const at = ctx.cred.at;
          const page = (name: string, folders: Folder[], assets: Asset[] = [], total = 0, more?: string): FolderPage =>
            ({ id: folderId, name, assets, folders: offset === 0 ? folders : [], filters: [], totalAssetsCount: total, ...(more ? { more } : {}) });

          if (ref.kind === 'root') {
            // Followed sites exist for work or school accounts only ("personal Microsoft account: not
            // supported"): Graph's refusal means no sites. Auth failures and outages still surface.
            const sites = await all<{ id: string; displayName?: string; name?: string }>(api, at, 'me/followedSites', () => api.followedSites(at))
              .catch((e: unknown) => (isHubError(e) && NO_SITES.has(e.code) ? [] : Promise.reject(e)));
            const folders = sites.map((s) => ({ id: siteId(s.id), name: s.displayName || s.name || s.id }))
              .sort((a, b) => byName(a, b));
            return page(NAME, [{ id: 'me', name: 'My files' }, ...folders]);
          }
          if (ref.kind === 'site') {
            const [site, drives] = await Promise.all([api.site(at, ref.siteId), all<{ id: string; name?: string }>(api, at, 'sites/drives', () => api.siteDrives(at, ref.siteId))]);
            return page(site.displayName || site.name || ref.siteId, drives.map((d) => ({ id: itemId(d.id, 'root'), name: d.name || d.id })).sort(byName));
          }
          const { driveId, itemId: iid } = ref.kind === 'me' ? { driveId: (await api.myDrive(at)).id, itemId: 'root' } : ref;
          const self = await folderItem(api, at, { driveId, itemId: iid });
          // childCount counts folders and files alike: a folder bigger than the bound is refused before any listing call.
          const count = self.folder?.childCount;
          if (typeof count === 'number' && count > cap) {
            throw integrationError('integration-operation-failed', ID, `the folder holds ${count} items, more than ${cap}`, { message: `This folder holds more than ${cap} items; narrow it down (search within a subfolder).` });
          }
          const entries = await all<GraphItem>(api, at, 'driveItem children', () => api.children(at, driveId, iid));
          const files = entries.filter(isFile).sort(byName);
          const { page: part, more } = slice(files, offset, opts.size);
          const folders = entries.filter(isFolder).sort(byName).map((f) => ({ id: itemId(f.parentReference?.driveId ?? driveId, f.id), name: f.name }));
          return page(ref.kind === 'me' ? 'My files' : folderName(self), folders, await Promise.all(part.map((f) => mapFile(ctx, f, driveId))), files.length, more);
        },

        async search(ctx, q, opts): Promise<AssetPage> {
          const offset = offsetOf(ID, opts.more);
          const api = graph(ctx.http);
          const at = ctx.cred.at;
          const scope = q.parentId && q.parentId !== 'root' ? parseRef(ID, q.parentId) : { kind: 'me' as const };
          /** Matches below one folder of one drive; re-checked against the folder's path where Graph gives both. */
          const inFolder = async (driveId: string, iid: string) => {
            const self = iid === 'root' ? null : await folderItem(api, at, { driveId, itemId: iid });
            const base = self?.parentReference?.path ? `${self.parentReference.path}/${self.name}` : null;
            const hits = await all<GraphItem>(api, at, 'driveItem search', () => api.search(at, driveId, iid, q.query));
            return hits.filter(isFile)
              .filter((h) => !base || typeof h.parentReference?.path !== 'string' || h.parentReference.path === base || h.parentReference.path.startsWith(`${base}/`))
              .map((h) => ({ h, driveId }));
          };
          let found: { h: GraphItem; driveId: string }[];
          if (scope.kind === 'me') found = await inFolder((await api.myDrive(at)).id, 'root');
          else if (scope.kind === 'item') found = await inFolder(scope.driveId, scope.itemId);
          else if (scope.kind === 'site') {
            const drives = await all<{ id: string }>(api, at, 'sites/drives', () => api.siteDrives(at, scope.siteId));
            found = [];
            for (const d of drives) {
              found.push(...await inFolder(d.id, 'root'));
              if (found.length > cap) throw integrationError('integration-operation-failed', ID, `more than ${cap} matches`, { message: `This search matches more than ${cap} items; narrow it down.` });
            }
          } else found = [];
          const byKey = new Map(found.map((f) => [itemId(f.h.parentReference?.driveId ?? f.driveId, f.h.id), f]));
          const unique = [...byKey.values()].sort((a, b) => byName(a.h, b.h));
          const { filters, kept } = typeFilter(unique.map((f) => f.h), opts.filters);
          const keptSet = new Set(kept);
          const list = unique.filter((f) => keptSet.has(f.h));
          const { page, more } = slice(list, offset, opts.size);
          return { assets: await Promise.all(page.map((f) => mapFile(ctx, f.h, f.driveId))), folders: [], filters, totalAssetsCount: list.length, ...(more ? { more } : {}) };
        },

        async asset(ctx, id): Promise<Asset> {
          const ref = parseRef(ID, id);
          if (ref.kind !== 'item') throw integrationError('integration-not-found', ID, `${id} is not a file`);
          const api = graph(ctx.http);
          const at = ctx.cred.at;
          const it = await api.item(at, ref.driveId, ref.itemId);
          if (!isFile(it)) throw integrationError('integration-not-found', ID, `${id} is not a file`);
          // The version number the versions list gives the current version (their count); none when Graph keeps none.
          const versions = await all<{ id: string }>(api, at, 'driveItem versions', () => api.versions(at, ref.driveId, ref.itemId)).catch(() => []);
          const a = await mapFile(ctx, it, ref.driveId, versions.length || undefined);
          // Graph's large rendition (800 px on its longest side) as a conversion, streamed through the hub's grant.
          if (isImage(it)) {
            const d = it.parentReference?.driveId ?? ref.driveId;
            a.conversions = [{ id: 'large', name: 'Preview (800 px)', extension: 'jpg', url: await ctx.downloadUrl({ d, i: it.id, t: 'large' }, `${it.name.replace(/\.[^.]*$/, '')}-800.jpg`) }];
          }
          return a;
        },

        async versions(ctx, id, opts): Promise<VersionList> {
          const ref = parseRef(ID, id);
          if (ref.kind !== 'item') throw integrationError('integration-not-found', ID, `${id} is not a file`);
          const api = graph(ctx.http);
          const at = ctx.cred.at;
          const [it, list] = await Promise.all([
            api.item(at, ref.driveId, ref.itemId),
            all<{ id: string; lastModifiedDateTime?: string; size?: number }>(api, at, 'driveItem versions', () => api.versions(at, ref.driveId, ref.itemId)),
          ]);
          if (!isFile(it)) throw integrationError('integration-not-found', ID, `${id} is not a file`);
          const n = list.length;
          const d = it.parentReference?.driveId ?? ref.driveId;
          // Newest first, as Graph lists them; the newest is the current file (its bytes come from
          // /content: Graph does not serve the current version through /versions/{id}/content).
          const versions = await Promise.all(list.map(async (v, k) => versionToAsset(it, ref.driveId, v, n - k,
            await ctx.downloadUrl(k === 0 ? { d, i: it.id } : { d, i: it.id, v: v.id }, it.name))));
          return { id, name: it.name, versions: opts.withMaster ? versions : versions.slice(1) };
        },

        async download({ cred, http, item, range, ifNoneMatch }) {
          const { d, i, v } = grantItem(item);
          const c = await flow.fresh(cred, http);
          if (item.t === 'large') {
            // A rendition: its pre-authenticated URL from the item's ThumbnailSet, fetched without the token.
            const api = graph(http);
            const url = (await api.thumbnails(c.at, d, i)).items.map((s) => s.large?.url).find((u): u is string => typeof u === 'string');
            const r = url ? api.fetchPreauthenticated(url, 'Microsoft Graph thumbnail (large)') : null;
            if (!r) throw integrationError('integration-not-available', ID, 'Microsoft Graph lists no large rendition of this file');
            return r;
          }
          return graph(http).content(c.at, d, i, v, range, ifNoneMatch);
        },

        /**
         * Graph's own rendition (the `medium` thumbnail, 176 px on its longest side): its URL is
         * pre-authenticated and fetched without the user's token. None listed: the hub makes one.
         */
        async thumbnail({ cred, http, item }) {
          const { d, i } = grantItem(item);
          const c = await flow.fresh(cred, http);
          const api = graph(http);
          const sets = await api.thumbnails(c.at, d, i);
          const url = sets.items.map((s) => s.medium?.url ?? s.large?.url).find((u): u is string => typeof u === 'string');
          return url ? api.fetchPreauthenticated(url, 'Microsoft Graph thumbnail') : null;
        },
      },
    })(deps);
  };
}
