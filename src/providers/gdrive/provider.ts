/**
 * Google Drive connector: OAuth 2.0 code + PKCE sign-in with offline access (refreshable), My
 * Drive and shared drives' folders, name and full-text search (within a folder and its
 * subfolders), file revisions as versions. Built with the connector kit (defineProvider, its
 * upstream client). Verified against documented responses, not against the live service
 * (docs/connectors.md).
 */
import { integrationError } from '../../errors.js';
import { defineProvider, type CallContext, type ConnectorDeps, type DefinedConnector } from '../kit/define.js';
import type { UpstreamClient } from '../kit/http.js';
import type { Asset, AssetPage, FolderPage, VersionList } from '../model.js';
import { OAuthFlow, oauthCredentials, staticServer, type OAuthCredentials } from '../oauth/flow.js';
import { redirectSignIn } from '../oauth/login.js';
import { byName, offsetOf, readAll, slice } from '../saas/listing.js';
import { DriveApi, downloadKind, driveErrorMessage, FOLDER_MIME, lit, type DriveFile } from './api.js';
import { revisionToAsset, toAsset, toFolder } from './mapping.js';
import { vendorEndpoints } from '../kit/endpoints.js';
import type { OAuthConnectorOptions } from '../oauth/options.js';

export interface GoogleDriveOptions extends OAuthConnectorOptions {
  /** Largest folder or search read in full (exact totals need the whole listing). */
  maxEntries?: number;
  /** Most folders a scoped search descends into. */
  maxSearchFolders?: number;
}

const ID = 'gdrive';
const DRIVE_ID = /^[A-Za-z0-9_-]{1,200}$/;
/** Parents OR'd into one files.list query of a scoped search (keeps the q parameter short). */
const PARENTS_PER_QUERY = 20;

/** Inline, so the logo needs no route and no third-party host. */
const LOGO = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 64 64'%3E%3Crect width='64' height='64' rx='14' fill='%23fff' stroke='%23d5d9e0'/%3E%3Cpath d='M24 12h16l16 28H40z' fill='%23fbbc04'/%3E%3Cpath d='M24 12L8 40l8 13 16-28z' fill='%230f9d58'/%3E%3Cpath d='M16 53h32l8-13H24z' fill='%234285f4'/%3E%3C/svg%3E";

export function googleDriveConnector(o: GoogleDriveOptions): (deps: ConnectorDeps) => DefinedConnector {
  const ep = vendorEndpoints(ID, { authorize: 'https://accounts.google.com/o/oauth2/v2/auth', token: 'https://oauth2.googleapis.com/token', api: 'https://www.googleapis.com' }, o.endpoints);
  const cap = o.maxEntries ?? 20_000;
  const maxFolders = o.maxSearchFolders ?? 500;
  const isFolder = (f: DriveFile) => f.mimeType === FOLDER_MIME;

  function driveId(id: string, what: string): string {
    if (id === 'root' || DRIVE_ID.test(id)) return id;
    throw integrationError('integration-not-found', ID, `no ${what} ${JSON.stringify(id)}`);
  }

  /**
   * A file as an asset with hub links: the download grant carries the user's Drive credentials, so
   * a partner's server fetches the bytes without a Google session (the link ends with the
   * partner's access, docs/security.md; a PDF export is named `<name>.pdf`); an image Drive has a
   * thumbnail of gets a hub thumbnail link, keyed by its version.
   */
  async function mapFile(ctx: CallContext<OAuthCredentials>, f: DriveFile): Promise<Asset> {
    const thumbnailUrl = f.thumbnailLink && f.mimeType.startsWith('image/') ? await ctx.thumbnailUrl({ id: f.id }, `${f.name}.jpg`, { version: f.md5Checksum ?? f.version ?? f.modifiedTime ?? '' }) : undefined;
    const kind = downloadKind(f.mimeType);
    if (!kind) return toAsset(f, { thumbnailUrl });
    const fileName = kind === 'pdf' && !/\.pdf$/i.test(f.name) ? `${f.name}.pdf` : f.name;
    return toAsset(f, { downloadUrl: await ctx.downloadUrl({ id: f.id, k: kind }, fileName), thumbnailUrl });
  }

  /** One call context: the Drive API over this connector's upstream client, for one access token. */
  function drive(http: UpstreamClient, at: string) {
    const api = new DriveApi(http, ep.api);
    const listAll = (q: string) => readAll(ID, cap, () => api.list(at, q), (c) => api.list(at, q, c));
    /** The folder and every folder below it, breadth first, at most maxFolders. */
    async function subtree(rootId: string): Promise<string[]> {
      const out = [rootId];
      for (let i = 0; i < out.length; i++) {
        for (const k of await listAll(`${lit(out[i]!)} in parents and mimeType = ${lit(FOLDER_MIME)} and trashed = false`)) {
          if (out.length >= maxFolders) {
            throw integrationError('integration-operation-failed', ID, `more than ${maxFolders} folders below ${rootId}`, { message: `This folder holds more than ${maxFolders} subfolders; search a smaller folder.` });
          }
          if (!out.includes(k.id)) out.push(k.id);
        }
      }
      return out;
    }
    return { api, listAll, subtree };
  }

  return (deps) => {
    const flow = new OAuthFlow({
      providerId: ID, name: 'Google Drive', clientId: o.clientId, clientSecret: o.clientSecret, clientAuth: 'client_secret_post', pkceSecret: o.pkceSecret,
      scopes: ['https://www.googleapis.com/auth/drive.readonly'],
      // offline + consent: Google returns a refresh token ("Using OAuth 2.0 for Web Server Applications").
      authorizationParams: { access_type: 'offline', prompt: 'consent' },
      server: staticServer({ issuer: 'https://accounts.google.com', authorization_endpoint: ep.authorize, token_endpoint: ep.token }),
      accountId: async (t, { http }) => (http ? (await new DriveApi(http, ep.api).about(t.access_token)).user?.permissionId ?? '' : ''),
      timeoutMs: deps.upstream?.timeoutMs, allowInsecureRequests: o.allowInsecureRequests, now: () => deps.clock.now(),
    });
    return defineProvider<OAuthCredentials>({
      id: ID, name: 'Google Drive', version: '1.0.0', glyph: 'G', logo: LOGO,
      // Google-native documents have no checksum, so no hash is always reported (assetHashAlgorithm null).
      features: {},
      paging: { defaultSize: 50, maxSize: 200 },
      errorMessage: driveErrorMessage,
      credentials: oauthCredentials,
      // Thumbnails are cached per Google account, not per (rotating) access token.
      cacheScope: (c) => c.acct,
      signIn: redirectSignIn(flow),
      hooks: {
        refresh: (cred, http) => flow.refresh(cred, http),

        async browse(ctx, folderId, opts): Promise<FolderPage> {
          const id = driveId(folderId, 'folder');
          const offset = offsetOf(ID, opts.more);
          const d = drive(ctx.http, ctx.cred.at);
          const [self, entries] = await Promise.all([d.api.getFile(ctx.cred.at, id), d.listAll(`${lit(id)} in parents and trashed = false`)]);
          if (!isFolder(self)) throw integrationError('integration-not-found', ID, `${folderId} is not a folder`);
          const all = entries.filter((f) => !isFolder(f)).sort(byName);
          const { page, more } = slice(all, offset, opts.size);
          return {
            id: folderId,
            name: self.name,
            assets: await Promise.all(page.map((f) => mapFile(ctx, f))),
            folders: offset === 0 ? entries.filter(isFolder).sort(byName).map(toFolder) : [],
            filters: [],
            totalAssetsCount: all.length,
            ...(more ? { more } : {}),
          };
        },

        async search(ctx, q, opts): Promise<AssetPage> {
          const offset = offsetOf(ID, opts.more);
          const d = drive(ctx.http, ctx.cred.at);
          const match = `(name contains ${lit(q.query)} or fullText contains ${lit(q.query)}) and mimeType != ${lit(FOLDER_MIME)} and trashed = false`;
          let found: DriveFile[];
          if (q.parentId && q.parentId !== 'root') {
            const folders = await d.subtree(driveId(q.parentId, 'folder'));
            const byId = new Map<string, DriveFile>();
            for (let i = 0; i < folders.length; i += PARENTS_PER_QUERY) {
              const parents = folders.slice(i, i + PARENTS_PER_QUERY).map((f) => `${lit(f)} in parents`).join(' or ');
              for (const f of await d.listAll(`(${parents}) and ${match}`)) byId.set(f.id, f);
              if (byId.size > cap) throw integrationError('integration-operation-failed', ID, `more than ${cap} matches`);
            }
            found = [...byId.values()];
          } else {
            found = await d.listAll(match);
          }
          const all = found.sort(byName);
          const { page, more } = slice(all, offset, opts.size);
          return { assets: await Promise.all(page.map((f) => mapFile(ctx, f))), folders: [], filters: [], totalAssetsCount: all.length, ...(more ? { more } : {}) };
        },

        async asset(ctx, id): Promise<Asset> {
          const f = await new DriveApi(ctx.http, ep.api).getFile(ctx.cred.at, driveId(id, 'file'));
          if (isFolder(f)) throw integrationError('integration-not-found', ID, `${id} is a folder`);
          return mapFile(ctx, f);
        },

        async download({ cred, http, item, range, ifNoneMatch }) {
          // The item comes out of an authenticated grant, but is still checked: the grant format may outlive this code.
          const kind = item.k === 'media' || item.k === 'pdf' ? item.k : null;
          if (typeof item.id !== 'string' || !DRIVE_ID.test(item.id) || !kind) throw integrationError('integration-not-found', ID, 'the download link names no Drive file');
          const rev = item.rev === undefined ? undefined : typeof item.rev === 'string' && DRIVE_ID.test(item.rev) && kind === 'media' ? item.rev : null;
          if (rev === null) throw integrationError('integration-not-found', ID, 'the download link names no Drive revision');
          // The grant lives 4 hours, a Google access token about one: past its expiry the grant's
          // refresh token renews it (Google does not rotate refresh tokens, so the user's
          // connection is untouched). A revoked grant is integration-auth-failed.
          const c = await flow.fresh(cred, http);
          return new DriveApi(http, ep.api).content(c.at, item.id, kind, range, ifNoneMatch, rev);
        },

        /**
         * Drive's rendition: a fresh thumbnailLink (it is short-lived), fetched with the user's token
         * — sent only to Google's content host or the API's own host, never to another a file names.
         */
        async thumbnail({ cred, http, item }) {
          if (typeof item.id !== 'string') throw integrationError('integration-not-found', ID, 'the thumbnail link names no file');
          const f = await new DriveApi(http, ep.api).getFile(cred.at, driveId(item.id, 'file'));
          let link: URL;
          try {
            link = new URL(f.thumbnailLink ?? '');
          } catch {
            return null;
          }
          if (!link.hostname.endsWith('.googleusercontent.com') && link.host !== new URL(ep.api).host) return null;
          return http.send({ method: 'GET', url: link, headers: { authorization: `Bearer ${cred.at}` }, what: 'Drive thumbnailLink' });
        },

        async versions(ctx, id, opts): Promise<VersionList> {
          const api = new DriveApi(ctx.http, ep.api);
          const at = ctx.cred.at;
          const fid = driveId(id, 'file');
          const [file, revs] = await Promise.all([
            api.getFile(at, fid),
            readAll(ID, cap, () => api.revisions(at, fid), (c) => api.revisions(at, fid, c)),
          ]);
          if (isFolder(file)) throw integrationError('integration-not-found', ID, `${id} is a folder`);
          // Drive lists revisions oldest first, the last being the current content: the hub shows
          // the newest first, the current one only with withMaster. A binary file's revisions
          // download through the hub's grant (revisions.get?alt=media); a native document's
          // revisions export only through per-revision links Drive does not promise, so they have none.
          const binary = downloadKind(file.mimeType) === 'media';
          const listed = opts.withMaster ? revs : revs.slice(0, -1);
          const versions = await Promise.all(listed.map(async (r, i) => revisionToAsset(file, r, i + 1,
            binary && DRIVE_ID.test(r.id) ? await ctx.downloadUrl({ id: file.id, k: 'media', rev: r.id }, r.originalFilename ?? file.name) : undefined)));
          return { id, name: file.name, versions: versions.reverse() };
        },
      },
    })(deps);
  };
}
