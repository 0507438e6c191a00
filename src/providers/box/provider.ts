/**
 * Box connector: OAuth 2.0 authorization code sign-in (S256 PKCE sent, client secret required)
 * with Box's rotating refresh tokens, the user's folders and files ("All Files", folder 0), Box
 * search scoped to a folder's subtree, file versions, Box thumbnails, downloads streamed through
 * the hub's grant. Built with the connector kit (defineProvider, its upstream client). Verified
 * against documented responses, not against the live service (docs/connectors.md, "Box").
 */
import { integrationError } from '../../errors.js';
import { defineProvider, type CallContext, type ConnectorDeps, type DefinedConnector } from '../kit/define.js';
import { withImageHead } from '../kit/image-head.js';
import type { Asset, AssetPage, FolderPage, VersionList } from '../model.js';
import { OAuthFlow, oauthCredentials, staticServer, type OAuthCredentials } from '../oauth/flow.js';
import { redirectSignIn } from '../oauth/login.js';
import { byName, offsetOf, readAll, slice } from '../saas/listing.js';
import { BoxApi, boxErrorMessage, type BoxFile, type BoxFileVersion, type BoxFolder, type BoxItem } from './api.js';
import { isImage, toAsset, toFolder, versionNumber, versionToAsset } from './mapping.js';
import { vendorEndpoints } from '../kit/endpoints.js';
import type { OAuthConnectorOptions } from '../oauth/options.js';

/** Endpoints (kit/endpoints.ts): `authorize`, `token`, `api` (the 2.0 base), `app` (the web app, for assetDetailsExternalUrl). */
export interface BoxOptions extends OAuthConnectorOptions {
  /** Largest folder read in full (exact totals and name order need the whole listing). */
  maxEntries?: number;
}

const ID = 'box';
/** Box ids of files, folders and file versions are decimal numbers (sent as strings). */
const BOX_ID = /^\d{1,20}$/;

/** Inline, so the logo needs no route and no third-party host: a Box-blue badge with "box". */
const LOGO = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 64 64'%3E%3Crect width='64' height='64' rx='14' fill='%230061d5'/%3E%3Ctext x='32' y='40' font-family='Arial,Helvetica,sans-serif' font-size='22' font-weight='700' text-anchor='middle' fill='%23fff'%3Ebox%3C/text%3E%3C/svg%3E";

export function boxConnector(o: BoxOptions): (deps: ConnectorDeps) => DefinedConnector {
  const ep = vendorEndpoints(ID, {
    authorize: 'https://account.box.com/api/oauth2/authorize', token: 'https://api.box.com/oauth2/token',
    api: 'https://api.box.com/2.0', app: 'https://app.box.com',
  }, o.endpoints);
  const cap = o.maxEntries ?? 20_000;
  const api = (http: CallContext<OAuthCredentials>['http']) => new BoxApi(http, ep.api);
  const externalUrl = (id: string) => `${ep.app}/file/${encodeURIComponent(id)}`;

  /** The hub's `root` is Box's "All Files", folder 0. */
  function folderId(id: string): string {
    if (id === 'root') return '0';
    if (BOX_ID.test(id)) return id;
    throw integrationError('integration-not-found', ID, `no folder ${JSON.stringify(id.slice(0, 100))}`);
  }

  function fileId(id: string): string {
    if (!BOX_ID.test(id)) throw integrationError('integration-not-found', ID, `no file ${JSON.stringify(id.slice(0, 100))}`);
    return id;
  }

  /**
   * A file as an asset with hub links: a download grant (Box's own download URL needs the user's
   * token and lives 15 minutes) and, for an image, a thumbnail link keyed by its content (SHA-1).
   */
  async function mapFile(ctx: CallContext<OAuthCredentials>, f: BoxFile): Promise<Asset> {
    const version = f.sha1 ?? f.file_version?.id ?? f.etag ?? '';
    return toAsset(f, {
      downloadUrl: await ctx.downloadUrl({ id: f.id }, f.name),
      thumbnailUrl: isImage(f) ? await ctx.thumbnailUrl({ id: f.id }, `${f.name}.jpg`, { version }) : undefined,
      externalUrl: externalUrl(f.id),
    });
  }

  const isFile = (e: BoxItem): e is BoxFile => e.type === 'file';
  const isFolder = (e: BoxItem): e is BoxFolder => e.type === 'folder';

  return (deps) => {
    const flow = new OAuthFlow({
      providerId: ID, name: 'Box', clientId: o.clientId, clientSecret: o.clientSecret, clientAuth: 'client_secret_post', pkceSecret: o.pkceSecret,
      // Read-only: "Read all files and folders stored in Box" is Box's root_readonly scope. Scopes
      // are configured on the app in the Box console; naming one here narrows the grant to it.
      scopes: ['root_readonly'],
      server: staticServer({ issuer: 'https://account.box.com', authorization_endpoint: ep.authorize, token_endpoint: ep.token }),
      // Box issues no ID token: the account is GET /users/me's id.
      accountId: async (t, { http }) => (http ? (await new BoxApi(http, ep.api).me(t.access_token)).id ?? '' : ''),
      timeoutMs: deps.upstream?.timeoutMs, allowInsecureRequests: o.allowInsecureRequests, now: () => deps.clock.now(),
    });
    return defineProvider<OAuthCredentials>({
      id: ID, name: 'Box', version: '1.0.0', glyph: 'B', logo: LOGO,
      // Box reports a SHA-1 for every file and file version.
      features: { assetHashAlgorithm: 'Sha1' },
      // 200: Box search's largest page (its `limit` maximum), so one hub page is one Box search call.
      paging: { defaultSize: 50, maxSize: 200 },
      errorMessage: boxErrorMessage,
      credentials: oauthCredentials,
      // Thumbnails are cached per Box user, not per (rotating) access token.
      cacheScope: (c) => c.acct,
      signIn: redirectSignIn(flow),
      hooks: {
        // Box rotates refresh tokens: the flow keeps the new one the token response carries.
        refresh: (cred, http) => flow.refresh(cred, http),

        async browse(ctx, id, opts): Promise<FolderPage> {
          const fid = folderId(id);
          const offset = offsetOf(ID, opts.more);
          const box = api(ctx.http);
          const at = ctx.cred.at;
          const [self, entries] = await Promise.all([
            box.folder(at, fid),
            readAll(ID, cap, () => box.items(at, fid), (m) => box.items(at, fid, m)),
          ]);
          if (self.type !== 'folder') throw integrationError('integration-not-found', ID, `${id} is not a folder`);
          const all = entries.filter(isFile).sort(byName);
          const { page, more } = slice(all, offset, opts.size);
          return {
            id,
            name: self.name,
            assets: await Promise.all(page.map((f) => mapFile(ctx, f))),
            folders: offset === 0 ? entries.filter(isFolder).sort(byName).map(toFolder) : [],
            filters: [],
            totalAssetsCount: all.length,
            ...(more ? { more } : {}),
          };
        },

        /** Box search (type=file) within the folder's subtree; Box's own offset is the hub's `more`, its total_count the total. */
        async search(ctx, q, opts): Promise<AssetPage> {
          const offset = offsetOf(ID, opts.more);
          const ancestor = q.parentId && q.parentId !== 'root' ? folderId(q.parentId) : null;
          const r = await api(ctx.http).search(ctx.cred.at, q.query, ancestor, offset, opts.size);
          const next = offset + opts.size;
          return {
            assets: await Promise.all(r.entries.filter(isFile).map((f) => mapFile(ctx, f))),
            folders: [],
            filters: [],
            totalAssetsCount: r.total,
            ...(next < r.total && r.entries.length > 0 ? { more: String(next) } : {}),
          };
        },

        async asset(ctx, id): Promise<Asset> {
          const f = await api(ctx.http).file(ctx.cred.at, fileId(id));
          if (f.type !== 'file') throw integrationError('integration-not-found', ID, `${id} is not a file`);
          const a = await mapFile(ctx, f);
          if (isImage(f)) {
            // Box reports no pixel dimensions: they (and EXIF/IPTC/XMP) come from a ranged read of the head.
            withImageHead(a, await ctx.imageHead({ id: f.id }));
            // Box tags are what the user set in Box: they win over keywords the file embeds.
            if (f.tags?.length) a.keywords = [...f.tags];
          }
          return a;
        },

        async download({ cred, http, item, range, ifNoneMatch }) {
          // The item comes out of an authenticated grant, but is still checked: the grant format may outlive this code.
          if (typeof item.id !== 'string' || !BOX_ID.test(item.id)) throw integrationError('integration-not-found', ID, 'the download link names no Box file');
          const version = item.v === undefined ? undefined : typeof item.v === 'string' && BOX_ID.test(item.v) ? item.v : null;
          if (version === null) throw integrationError('integration-not-found', ID, 'the download link names no Box file version');
          // No refresh here: Box refresh tokens are single-use, so renewing with the grant's copy
          // would end the user's own connection. A link used after its access token expired
          // answers Box's 401 as integration-auth-failed (docs/connectors.md, "Box").
          return new BoxApi(http, ep.api).content(cred.at, item.id, version, range, ifNoneMatch);
        },

        /** Box's rendition (thumbnail.jpg); null while Box makes it or when it has none: the hub makes one from the original. */
        async thumbnail({ cred, http, item }) {
          if (typeof item.id !== 'string' || !BOX_ID.test(item.id)) throw integrationError('integration-not-found', ID, 'the thumbnail link names no Box file');
          return new BoxApi(http, ep.api).thumbnail(cred.at, item.id);
        },

        async versions(ctx, id, opts): Promise<VersionList> {
          const box = api(ctx.http);
          const at = ctx.cred.at;
          const fid = fileId(id);
          const [file, older] = await Promise.all([
            box.file(at, fid),
            readAll(ID, cap, () => box.versions(at, fid), (next) => box.versions(at, fid, Number(next))),
          ]);
          if (file.type !== 'file') throw integrationError('integration-not-found', ID, `${id} is not a file`);
          // Trashed versions cannot be downloaded; newest first.
          const live = older.filter((v) => !v.trashed_at).sort(newestFirst);
          // The current version's number is the file's version_number (as in the asset detail);
          // Box counts every upload, so without it the count of versions stands in.
          const current = versionNumber(file) ?? live.length + 1;
          const versions = await Promise.all(live.map(async (v, i) => versionToAsset(file, v, versionNumber(v) ?? current - 1 - i, {
            downloadUrl: await ctx.downloadUrl({ id: file.id, v: v.id }, v.name ?? file.name),
            externalUrl: externalUrl(file.id),
          })));
          return { id, name: file.name, versions: opts.withMaster ? [{ ...(await mapFile(ctx, file)), version: current, displayVersion: current }, ...versions] : versions };
        },
      },
    })(deps);
  };
}

function newestFirst(a: BoxFileVersion, b: BoxFileVersion): number {
  const na = Number(a.version_number ?? NaN);
  const nb = Number(b.version_number ?? NaN);
  if (Number.isFinite(na) && Number.isFinite(nb) && na !== nb) return nb - na;
  const ta = Date.parse(a.created_at ?? '') || 0;
  const tb = Date.parse(b.created_at ?? '') || 0;
  return tb - ta || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
}
