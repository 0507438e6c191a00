/**
 * Cloudinary connector: a product environment behind the hub, read with the Admin API and the
 * Search API under the environment's API key and secret (a sign-in form: Cloudinary offers no
 * OAuth for its Admin API). Folders are Cloudinary's folders in either folder mode (read once at
 * sign-in from GET /config); a folder's assets and keyword searches are Search API queries, whose
 * total_count makes totals exact and whose next_cursor the hub seals into `more`. Filters come from
 * the Search API's aggregations, search by image from the visual search. Public (upload-type)
 * originals download from the CDN; private and authenticated ones, and backed-up versions, stream
 * through the hub's grant from the signed download endpoints. Verified against documented
 * responses, not against the live service (docs/connectors.md).
 */
import { integrationError, isHubError } from '../../errors.js';
import { defineProvider, type CallContext, type ConnectorDeps, type DefinedConnector } from '../kit/define.js';
import { vendorEndpoints } from '../kit/endpoints.js';
import { FormValueError } from '../kit/signin-form.js';
import type { Asset, AssetPage, FolderPage, VersionList } from '../model.js';
import { readAll } from '../saas/listing.js';
import { CloudinaryApi, cloudinaryErrorMessage, deliveryGet, PROVIDER_ID, type CldCred, type CldResource, type FolderMode, type SearchRequest, type SearchResult } from './api.js';
import { assetIdOf, FACETS, filterExpression, folderPathOf, inFolder, keywordExpression, nameOf, toAsset, toFilters, toFolder, underFolder } from './mapping.js';

export interface CloudinaryOptions {
  /** Replaced origins (`DAMHUB_CLOUDINARY_ENDPOINTS`): `api` (Admin and Search API), `res` (delivery). */
  endpoints?: Record<string, string>;
  /** Most subfolders one folder may list (all are read for its first page). */
  maxFolders?: number;
}

const ID = PROVIDER_ID;
/** Delivery types whose originals are not public: downloaded through the signed endpoint. */
const RESTRICTED = new Set(['private', 'authenticated']);
const CLOUD_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
/** The Media Library's page of one asset. */
const CONSOLE = 'https://console.cloudinary.com/console/media_library/asset';
/** The rendition asked of the delivery CDN for thumbnails: fit into 256×256, as JPEG. */
export const THUMB_TRANSFORMATION = 'c_limit,h_256,w_256';

const LOGO = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 64 64'%3E%3Crect width='64' height='64' rx='14' fill='%233448c5'/%3E%3Cpath d='M20 40a9 9 0 0 1 1-18 12 12 0 0 1 23 2 8 8 0 0 1-1 16z' fill='none' stroke='%23fff' stroke-width='4' stroke-linejoin='round'/%3E%3C/svg%3E";

function parseCred(raw: Record<string, unknown>): CldCred {
  const { cloud, key, secret, mode } = raw;
  if (typeof cloud !== 'string' || typeof key !== 'string' || typeof secret !== 'string' || (mode !== 'dynamic' && mode !== 'fixed')) throw new Error('not Cloudinary credentials');
  return { cloud, key, secret, mode };
}

/** The hub's `more` for a Search API page: Cloudinary's own cursor. */
function cursorOf(more: string | null): string | undefined {
  if (more === null) return undefined;
  if (!/^[A-Za-z0-9+/=_-]{1,2048}$/.test(more)) throw integrationError('integration-operation-failed', ID, 'the paging cursor is not one this connector issued');
  return more;
}

export function cloudinaryConnector(o: CloudinaryOptions = {}): (deps: ConnectorDeps) => DefinedConnector {
  const ep = vendorEndpoints(ID, { api: 'https://api.cloudinary.com', res: 'https://res.cloudinary.com' }, o.endpoints);
  const maxFolders = o.maxFolders ?? 10_000;
  /** Clouds whose plan refused `aggregate` (Search API Tier 2): asked without it from then on. */
  const noAggregate = new Set<string>();

  return (deps) => {
    const now = () => deps.clock.now();
    const api = (ctx: { http: CallContext<CldCred>['http']; cred: CldCred }) => new CloudinaryApi(ctx.http, ep.api, ctx.cred, now);

    /** The delivery URL of a public rendition: resource type, `upload`, transformation, version, public id. */
    const deliveryUrl = (c: CldCred, r: { rt: string; p: string; v?: number }, transformation: string, ext: string) =>
      `${ep.res}/${encodeURIComponent(c.cloud)}/${encodeURIComponent(r.rt)}/upload/${transformation ? `${transformation}/` : ''}${r.v ? `v${r.v}/` : ''}${r.p.split('/').map(encodeURIComponent).join('/')}${ext ? `.${ext}` : ''}`;

    /**
     * Links of one asset: a public original (every delivery type but private and authenticated:
     * upload, fetch, ...) is its secure_url on the CDN; the others go through the hub's grant.
     */
    async function mapResource(ctx: CallContext<CldCred>, r: CldResource, detail = false): Promise<Asset> {
      const name = nameOf(r);
      const isPublic = !RESTRICTED.has(r.type) && typeof r.secure_url === 'string';
      const item = { p: r.public_id, f: r.format ?? '', t: r.type, rt: r.resource_type, ...(isPublic ? { s: r.secure_url } : {}) };
      const downloadUrl = isPublic ? r.secure_url! : await ctx.downloadUrl({ k: 'o', ...item }, name);
      // Images (and, public, videos: the CDN renders their frame) get a thumbnail.
      const thumbable = r.resource_type === 'image' || (r.resource_type === 'video' && r.type === 'upload');
      const thumbnailUrl = thumbable ? await ctx.thumbnailUrl({ k: 'o', ...item, v: r.version ?? 0 }, `${name}.jpg`, r.etag ? { etag: r.etag } : { version: r.version ?? 0 }) : undefined;
      return toAsset(r, ctx.cred.mode, { downloadUrl, thumbnailUrl, externalUrl: `${CONSOLE}/${r.asset_id}/manage` }, detail);
    }

    /**
     * One Search API page: the expression, the facets (when the plan has aggregations; a plan
     * without them answers 400, and the call is made again without) and the hub's filters.
     */
    async function searchPage(ctx: CallContext<CldCred>, base: string[], filterIds: string[], size: number, more: string | null): Promise<AssetPage> {
      const { clauses, active } = filterExpression(filterIds);
      const expression = [...base, ...clauses].join(' AND ');
      const req: SearchRequest = {
        // No expression: every asset (the Search API lists all when none is given).
        ...(expression ? { expression } : {}), max_results: size, sort_by: [{ public_id: 'asc' }], with_field: ['tags', 'context'],
        ...(cursorOf(more) ? { next_cursor: more! } : {}),
      };
      const aggregate = more === null && !noAggregate.has(ctx.cred.cloud);
      const cld = api(ctx);
      let r: SearchResult;
      try {
        r = await cld.search(aggregate ? { ...req, aggregate: [...FACETS] } : req);
      } catch (e) {
        if (!aggregate || !isHubError(e) || e.code !== 'integration-operation-failed' || !/aggregat/i.test(e.details ?? '')) throw e;
        if (noAggregate.size > 10_000) noAggregate.clear();
        noAggregate.add(ctx.cred.cloud);
        r = await cld.search(req);
      }
      return {
        assets: await Promise.all(r.resources.map((x) => mapResource(ctx, x))),
        folders: [],
        filters: toFilters(r.aggregations, active),
        totalAssetsCount: r.total_count,
        ...(r.next_cursor && r.resources.length ? { more: r.next_cursor } : {}),
      };
    }

    /** Reads the credentials' product environment: its folder mode, which decides the expressions. */
    async function folderMode(http: CallContext<CldCred>['http'], c: { cloud: string; key: string; secret: string }): Promise<FolderMode> {
      const cfg = await new CloudinaryApi(http, ep.api, { ...c, mode: 'fixed' }, now).config();
      // Environments created before dynamic folders answer without settings: fixed folders.
      return cfg.settings?.folder_mode === 'dynamic' ? 'dynamic' : 'fixed';
    }

    return defineProvider<CldCred>({
      id: ID, name: 'Cloudinary', version: '1.0.0', glyph: 'C', logo: LOGO,
      features: { filters: true },
      // 500 is the Search API's largest max_results.
      paging: { defaultSize: 50, maxSize: 500 },
      errorMessage: cloudinaryErrorMessage,
      credentials: parseCred,
      // Thumbnails are the same for everyone reading one product environment.
      cacheScope: (c) => c.cloud,
      signIn: {
        kind: 'form',
        title: 'cloudinaryTitle',
        fields: [
          { name: 'cloud', label: 'cloudName', placeholder: 'my-cloud', autocomplete: 'username' },
          { name: 'key', label: 'apiKey' },
          { name: 'secret', label: 'apiSecret', type: 'password' },
        ],
        rejectedText: 'cloudinaryRejected',
        async verify(v, http) {
          if (!CLOUD_NAME.test(v.cloud!)) throw new FormValueError('cloudNameInvalid');
          const c = { cloud: v.cloud!, key: v.key!, secret: v.secret! };
          const mode = await folderMode(http, c);
          return { credentials: { ...c, mode }, accountId: `${c.cloud}#${c.key}`, displayName: `${c.cloud} (Cloudinary, ${mode} folders)` };
        },
      },
      hooks: {
        async validate(ctx) {
          await api(ctx).ping();
        },

        /** Keys do not expire: renewing re-checks them (a revoked key fails here) and re-reads the folder mode. */
        async refresh(cred, http) {
          return { ...cred, mode: await folderMode(http, cred) };
        },

        async browse(ctx, folderId, opts): Promise<FolderPage> {
          const path = folderPathOf(folderId);
          const name = path ? path.split('/').at(-1)! : ctx.cred.cloud;
          const cld = api(ctx);
          // Subfolders on the first page only (rule 2); all of them, up to a bound.
          const [folders, page] = await Promise.all([
            opts.more === null ? readAll(ID, maxFolders, () => cld.folders(path, null), (c) => cld.folders(path, c)) : Promise.resolve([]),
            searchPage(ctx, [inFolder(ctx.cred.mode, path)], opts.filters, opts.size, opts.more),
          ]);
          return { ...page, id: folderId, name, folders: folders.map(toFolder).sort((a, b) => a.name.localeCompare(b.name) || (a.id < b.id ? -1 : 1)) };
        },

        async search(ctx, q, opts): Promise<AssetPage> {
          const scope = q.parentId && q.parentId !== 'root' ? folderPathOf(q.parentId) : '';
          const base = [keywordExpression(q.query), scope ? underFolder(ctx.cred.mode, scope) : null].filter((x): x is string => x !== null);
          return searchPage(ctx, base, opts.filters, opts.size, opts.more);
        },

        /** Visual search: the top matches, most similar first, as one page (the reference image is not resent for a second). */
        async searchByImage(ctx, image, opts): Promise<AssetPage> {
          const r = await api(ctx).visualSearch(image.bytes, image.format);
          const hits = r.resources.filter((x) => typeof x.asset_id === 'string').slice(0, opts.size);
          return { assets: await Promise.all(hits.map((x) => mapResource(ctx, x))), folders: [], filters: [], totalAssetsCount: hits.length };
        },

        async asset(ctx, id): Promise<Asset> {
          const r = await api(ctx).resource(assetIdOf(id));
          const a = await mapResource(ctx, r, true);
          const n = numbered(r).findIndex((v) => v.current);
          if (n >= 0) {
            a.version = n + 1;
            a.displayVersion = n + 1;
          }
          return a;
        },

        /** Backed-up versions (the product environment's backup setting); without backups the asset is its only version. */
        async versions(ctx, id, opts): Promise<VersionList> {
          const r = await api(ctx).resource(assetIdOf(id));
          const current = await mapResource(ctx, r, true);
          const list = await Promise.all(numbered(r).map(async (v, i): Promise<{ a: Asset; current: boolean }> => {
            const a: Asset = v.current ? { ...current } : {
              ...current,
              // Old bytes: only the backup endpoint has them; their size and date are the version's.
              downloadUrl: await ctx.downloadUrl({ k: 'b', a: r.asset_id, v: v.id! }, current.name),
              fileSize: v.size, modified: v.time,
            };
            if (!v.current) {
              delete a.thumbnailUrl;
              delete a.downloadHashMd5;
              delete a.conversions;
              if (a.fileSize === undefined) delete a.fileSize;
              if (a.modified === undefined) delete a.modified;
            }
            a.version = i + 1;
            a.displayVersion = i + 1;
            if (v.id) a.versionComment = `Cloudinary version ${v.id}`;
            return { a, current: v.current };
          }));
          return { id: r.asset_id, name: current.name, versions: list.filter((x) => opts.withMaster || !x.current).map((x) => x.a).reverse() };
        },

        /** The CDN's rendition of a public asset; private and authenticated ones are made by the hub from `download`. */
        async thumbnail({ cred, http, item }) {
          if (item.k !== 'o' || item.t !== 'upload' || typeof item.p !== 'string' || typeof item.rt !== 'string') return null;
          return deliveryGet(http, deliveryUrl(cred, { rt: item.rt, p: item.p, v: typeof item.v === 'number' ? item.v : undefined }, THUMB_TRANSFORMATION, 'jpg'));
        },

        /** Originals of private/authenticated assets and backed-up versions, from the signed download endpoints. */
        async download({ cred, http, item, range }) {
          const cld = new CloudinaryApi(http, ep.api, cred, now);
          if (item.k === 'b' && typeof item.a === 'string' && typeof item.v === 'string') return cld.backupDownload(item.a, item.v, range);
          if (item.k === 'o' && typeof item.p === 'string' && typeof item.t === 'string' && typeof item.rt === 'string') {
            // A public original (the kit's thumbnail fallback): the CDN's own URL, unsigned.
            if (typeof item.s === 'string') return deliveryGet(http, item.s);
            if (!RESTRICTED.has(item.t)) throw integrationError('integration-not-found', ID, 'the link names no downloadable Cloudinary asset');
            return cld.privateDownload({ p: item.p, f: typeof item.f === 'string' ? item.f : '', t: item.t, rt: item.rt }, range);
          }
          throw integrationError('integration-not-found', ID, 'the link names no Cloudinary asset');
        },
      },
    })(deps);
  };
}

/** Versions oldest first, the current one marked; none listed: the asset alone. */
function numbered(r: CldResource): { id?: string; size?: number; time?: number; current: boolean }[] {
  const vs = Array.isArray(r.versions) ? [...r.versions].sort((a, b) => a.version - b.version) : [];
  if (!vs.length) return [{ current: true }];
  const out: ReturnType<typeof numbered> = vs.map((v) => ({ id: v.version_id, size: v.size, time: v.time ? Date.parse(v.time) || undefined : undefined, current: v.version === r.version }));
  // The live asset is always a version, even when the backup list lags behind it.
  if (!out.some((v) => v.current)) out.push({ ...(r.bytes !== undefined ? { size: r.bytes } : {}), current: true });
  return out;
}
