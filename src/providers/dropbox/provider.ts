/**
 * Dropbox connector: OAuth 2.0 code + PKCE sign-in with offline access (refreshable), folders and
 * files of the user's Dropbox, filename/content search, file revisions as versions. Built with the
 * connector kit (defineProvider, its upstream client). Verified against documented responses,
 * not against the live service (docs/connectors.md).
 */
import { integrationError } from '../../errors.js';
import { defineProvider, type CallContext, type ConnectorDeps, type DefinedConnector } from '../kit/define.js';
import type { Asset, AssetPage, FolderPage, VersionList } from '../model.js';
import { OAuthFlow, oauthCredentials, staticServer, type OAuthCredentials } from '../oauth/flow.js';
import { redirectSignIn } from '../oauth/login.js';
import { byName, offsetOf, readAll, slice } from '../saas/listing.js';
import { DropboxApi, dropboxErrorMessage, type DbxFile, type DbxFolder, type DbxMetadata } from './api.js';
import { hasThumbnail, toAsset, toFolder } from './mapping.js';
import { vendorEndpoints } from '../kit/endpoints.js';
import type { OAuthConnectorOptions } from '../oauth/options.js';

/** Endpoints (kit/endpoints.ts): `authorize`, `token`, `api` (RPC routes), `content` (content-download routes; when `api` is replaced and `content` is not, `api` serves both, as a stand-in does). */
export interface DropboxOptions extends OAuthConnectorOptions {
  /** Largest folder or search read in full (exact totals need the whole listing). */
  maxEntries?: number;
}

const ID = 'dropbox';
const FILE_ID = /^id:[A-Za-z0-9_-]+$/;

/** Inline, so the logo needs no route and no third-party host. */
const LOGO = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 64 64'%3E%3Crect width='64' height='64' rx='14' fill='%230061fe'/%3E%3Cpath d='M20 14l12 8-12 8-12-8zm24 0l12 8-12 8-12-8zM8 38l12-8 12 8-12 8zm36-8l12 8-12 8-12-8zM20 48l12-8 12 8-12 8z' fill='%23fff'/%3E%3C/svg%3E";

export function dropboxConnector(o: DropboxOptions): (deps: ConnectorDeps) => DefinedConnector {
  const standInContent: Record<string, string> = o.endpoints?.api && !o.endpoints.content ? { content: o.endpoints.api } : {};
  const ep = vendorEndpoints(ID, {
    authorize: 'https://www.dropbox.com/oauth2/authorize', token: 'https://api.dropboxapi.com/oauth2/token',
    api: 'https://api.dropboxapi.com', content: 'https://content.dropboxapi.com',
  }, { ...o.endpoints, ...standInContent });
  const cap = o.maxEntries ?? 20_000;
  const content = ep.content;
  const api = (ctx: { http: CallContext<OAuthCredentials>['http'] }) => new DropboxApi(ctx.http, ep.api, content);
  /** A file as an asset; an image gets a hub thumbnail link (Dropbox's rendition, keyed by its rev). */
  const mapFile = async (ctx: CallContext<OAuthCredentials>, f: DbxFile, extra: { downloadUrl?: string } = {}) =>
    toAsset(f, { ...extra, thumbnailUrl: hasThumbnail(f) ? await ctx.thumbnailUrl({ id: f.id }, `${f.name}.jpg`, { version: f.rev }) : undefined });
  const files = (items: DbxMetadata[]) => items.filter((e): e is DbxFile => e['.tag'] === 'file').sort(byName);

  /** Folder ids are Dropbox ids ("id:..."), paths, or root. Anything else cannot exist there. */
  function folderPath(folderId: string): string {
    if (folderId === 'root') return '';
    if (FILE_ID.test(folderId) || folderId.startsWith('/')) return folderId;
    throw integrationError('integration-not-found', ID, `no folder ${JSON.stringify(folderId)}`);
  }

  function assetId(id: string): string {
    if (!FILE_ID.test(id)) throw integrationError('integration-not-found', ID, `no file ${JSON.stringify(id)}`);
    return id;
  }

  return (deps) => {
    const flow = new OAuthFlow({
      providerId: ID, name: 'Dropbox', clientId: o.clientId, clientSecret: o.clientSecret, pkceSecret: o.pkceSecret,
      scopes: ['account_info.read', 'files.metadata.read', 'files.content.read'],
      // offline: a refresh token comes with the short-lived access token (Dropbox OAuth guide).
      authorizationParams: { token_access_type: 'offline' },
      server: staticServer({ issuer: 'https://www.dropbox.com', authorization_endpoint: ep.authorize, token_endpoint: ep.token }),
      // The token response names the account (account_id); Dropbox issues no ID token for this flow.
      accountId: async (t) => (typeof t.account_id === 'string' ? t.account_id : ''),
      timeoutMs: deps.upstream?.timeoutMs, allowInsecureRequests: o.allowInsecureRequests, now: () => deps.clock.now(),
    });
    return defineProvider<OAuthCredentials>({
      id: ID, name: 'Dropbox', version: '1.0.0', glyph: 'D', logo: LOGO,
      features: { assetHashAlgorithm: 'Sha256Split4MB' },
      paging: { defaultSize: 50, maxSize: 200 },
      errorMessage: dropboxErrorMessage,
      credentials: oauthCredentials,
      // Thumbnails are cached per Dropbox account, not per (rotating) access token.
      cacheScope: (c) => c.acct,
      signIn: redirectSignIn(flow),
      hooks: {
        refresh: (cred, http) => flow.refresh(cred, http),

        async browse(ctx, folderId, opts): Promise<FolderPage> {
          const path = folderPath(folderId);
          const offset = offsetOf(ID, opts.more);
          const at = ctx.cred.at;
          const dbx = api(ctx);
          const [self, entries] = await Promise.all([
            path === '' ? null : dbx.getMetadata(at, path),
            readAll(ID, cap, () => dbx.listFolder(at, path), (c) => dbx.listFolderContinue(at, c)),
          ]);
          if (self && self['.tag'] !== 'folder') throw integrationError('integration-not-found', ID, `${folderId} is not a folder`);
          const all = files(entries);
          const { page, more } = slice(all, offset, opts.size);
          return {
            id: folderId,
            name: self ? self.name : 'Dropbox',
            assets: await Promise.all(page.map((f) => mapFile(ctx, f))),
            folders: offset === 0 ? entries.filter((e): e is DbxFolder => e['.tag'] === 'folder').sort(byName).map(toFolder) : [],
            filters: [],
            totalAssetsCount: all.length,
            ...(more ? { more } : {}),
          };
        },

        async search(ctx, q, opts): Promise<AssetPage> {
          const offset = offsetOf(ID, opts.more);
          const dbx = api(ctx);
          const scope = q.parentId && q.parentId !== 'root' ? folderPath(q.parentId) : null;
          const all = files(await readAll(ID, cap, () => dbx.search(ctx.cred.at, q.query, scope), (c) => dbx.searchContinue(ctx.cred.at, c)));
          const { page, more } = slice(all, offset, opts.size);
          return { assets: await Promise.all(page.map((f) => mapFile(ctx, f))), folders: [], filters: [], totalAssetsCount: all.length, ...(more ? { more } : {}) };
        },

        async asset(ctx, id): Promise<Asset> {
          const dbx = api(ctx);
          const meta = await dbx.getMetadata(ctx.cred.at, assetId(id));
          if (meta['.tag'] !== 'file') throw integrationError('integration-not-found', ID, `${id} is not a file`);
          const link = meta.is_downloadable === false ? null : (await dbx.temporaryLink(ctx.cred.at, id)).link;
          return mapFile(ctx, meta, link ? { downloadUrl: link } : {});
        },

        /** Dropbox's own rendition (files/get_thumbnail_v2); the kit checks and re-encodes it. */
        async thumbnail({ cred, http, item }) {
          if (typeof item.id !== 'string' || !FILE_ID.test(item.id)) throw integrationError('integration-not-found', ID, 'the thumbnail link names no file');
          return new DropboxApi(http, ep.api, content).thumbnail(cred.at, item.id);
        },

        async versions(ctx, id, opts): Promise<VersionList> {
          const r = await api(ctx).listRevisions(ctx.cred.at, assetId(id));
          if (!Array.isArray(r.entries) || r.entries.length === 0) throw integrationError('integration-not-found', ID, `no revisions of ${id}`);
          // Newest first, as Dropbox lists them (the first is the current content, listed only with
          // withMaster); version numbers count up from the oldest listed revision.
          const n = r.entries.length;
          const all = r.entries.map((f, i) => toAsset(f, { version: n - i }));
          return { id, name: r.entries[0]!.name, versions: opts.withMaster ? all : all.slice(1) };
        },
      },
    })(deps);
  };
}
