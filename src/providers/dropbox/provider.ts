/**
 * Dropbox connector: OAuth 2.0 code + PKCE sign-in with offline access (refreshable), folders and
 * files of the user's Dropbox, filename/content search, file revisions as versions.
 * Verified against documented responses, not against the live service (docs/connectors.md).
 */
import { integrationError } from '../../errors.js';
import type { Provider, ProviderSession } from '../contract.js';
import type { Asset, AssetPage, FolderPage, VersionList } from '../model.js';
import { OAuthFlow, staticServer, type OAuthCredentials } from '../oauth/flow.js';
import { oauthLogin } from '../oauth/login.js';
import { byName, offsetOf, readAll, slice } from '../saas/listing.js';
import { DropboxApi, type DbxFile, type DbxFolder, type DbxMetadata } from './api.js';
import { toAsset, toFolder } from './mapping.js';

export interface DropboxOptions {
  clientId: string;
  clientSecret?: string;
  /** Shared by every node of a cluster (PKCE verifiers are derived from it). */
  pkceSecret?: string;
  now(): number;
  timeoutMs?: number;
  /** Largest folder or search read in full (exact totals need the whole listing). */
  maxEntries?: number;
  /** For tests against a loopback replay server. */
  endpoints?: { authorize: string; token: string; api: string };
  allowInsecureRequests?: boolean;
}

const ID = 'dropbox';
const FILE_ID = /^id:[A-Za-z0-9_-]+$/;

/** Inline, so the logo needs no route and no third-party host. */
const LOGO = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 64 64'%3E%3Crect width='64' height='64' rx='14' fill='#0061fe'/%3E%3Cpath d='M20 14l12 8-12 8-12-8zm24 0l12 8-12 8-12-8zM8 38l12-8 12 8-12 8zm36-8l12 8-12 8-12-8zM20 48l12-8 12 8-12 8z' fill='#fff'/%3E%3C/svg%3E";

export function dropboxProvider(o: DropboxOptions): Provider {
  const ep = o.endpoints ?? { authorize: 'https://www.dropbox.com/oauth2/authorize', token: 'https://api.dropboxapi.com/oauth2/token', api: 'https://api.dropboxapi.com' };
  const timeoutMs = o.timeoutMs ?? 20_000;
  const cap = o.maxEntries ?? 20_000;
  const api = new DropboxApi({ providerId: ID, apiBase: ep.api, timeoutMs });
  const flow = new OAuthFlow({
    providerId: ID, name: 'Dropbox', clientId: o.clientId, clientSecret: o.clientSecret, pkceSecret: o.pkceSecret,
    scopes: ['account_info.read', 'files.metadata.read', 'files.content.read'],
    // offline: a refresh token comes with the short-lived access token (Dropbox OAuth guide).
    authorizationParams: { token_access_type: 'offline' },
    server: staticServer({ issuer: 'https://www.dropbox.com', authorization_endpoint: ep.authorize, token_endpoint: ep.token }),
    // The token response names the account (account_id); Dropbox issues no ID token for this flow.
    accountId: async (t) => (typeof t.account_id === 'string' ? t.account_id : ''),
    timeoutMs, allowInsecureRequests: o.allowInsecureRequests, now: o.now,
  });
  const token = (s: ProviderSession) => (s.credentials as OAuthCredentials).at;
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

  return {
    descriptor: {
      id: ID, name: 'Dropbox', version: '1.0.0', logo: LOGO, glyph: 'D',
      capabilities: {
        browse: true, search: true, similarSearch: false, versions: true, refresh: true, filters: false,
        dataLocalization: false, timeZone: false, serverUrl: false, foldersOnEveryPage: false, assetHashAlgorithm: 'Sha256Split4MB',
      },
      paging: { defaultSize: 50, maxSize: 200 },
    },
    ...oauthLogin(flow),

    async browse(session, folderId, opts): Promise<FolderPage> {
      const path = folderPath(folderId);
      const offset = offsetOf(ID, opts.more);
      const at = token(session);
      const [self, entries] = await Promise.all([
        path === '' ? null : api.getMetadata(at, path),
        readAll(ID, cap, () => api.listFolder(at, path), (c) => api.listFolderContinue(at, c)),
      ]);
      if (self && self['.tag'] !== 'folder') throw integrationError('integration-not-found', ID, `${folderId} is not a folder`);
      const all = files(entries);
      const { page, more } = slice(all, offset, opts.size);
      return {
        id: folderId,
        name: self ? self.name : 'Dropbox',
        assets: page.map((f) => toAsset(f)),
        folders: offset === 0 ? entries.filter((e): e is DbxFolder => e['.tag'] === 'folder').sort(byName).map(toFolder) : [],
        filters: [],
        totalAssetsCount: all.length,
        ...(more ? { more } : {}),
      };
    },

    async search(session, q, opts): Promise<AssetPage> {
      const offset = offsetOf(ID, opts.more);
      const at = token(session);
      const scope = q.parentId && q.parentId !== 'root' ? folderPath(q.parentId) : null;
      const all = files(await readAll(ID, cap, () => api.search(at, q.query, scope), (c) => api.searchContinue(at, c)));
      const { page, more } = slice(all, offset, opts.size);
      return { assets: page.map((f) => toAsset(f)), folders: [], filters: [], totalAssetsCount: all.length, ...(more ? { more } : {}) };
    },

    async asset(session, id): Promise<Asset> {
      const at = token(session);
      const meta = await api.getMetadata(at, assetId(id));
      if (meta['.tag'] !== 'file') throw integrationError('integration-not-found', ID, `${id} is not a file`);
      const link = meta.is_downloadable === false ? null : (await api.temporaryLink(at, id)).link;
      return toAsset(meta, link ? { downloadUrl: link } : {});
    },

    async versions(session, id): Promise<VersionList> {
      const r = await api.listRevisions(token(session), assetId(id));
      if (!Array.isArray(r.entries) || r.entries.length === 0) throw integrationError('integration-not-found', ID, `no revisions of ${id}`);
      // Newest first, as Dropbox lists them; version numbers count up from the oldest listed revision.
      const n = r.entries.length;
      return { id, name: r.entries[0]!.name, versions: r.entries.map((f, i) => toAsset(f, { version: n - i })) };
    },
  };
}
