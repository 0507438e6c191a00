/**
 * WebDAV connector (Nextcloud, ownCloud, SharePoint-compatible WebDAV, any RFC 4918 server).
 * Sign-in form: server URL, user, password or app token, proved by a depth-0 PROPFIND.
 * Browse is a depth-1 PROPFIND paged by offset over name order (WebDAV itself has no paging).
 * Search uses RFC 5323 SEARCH where the server advertises basicsearch (DASL), else walks the
 * tree breadth-first with depth-1 PROPFINDs, bounded, matching names.
 * Downloads stream through the hub with Range and ETag relayed.
 * Writes (writes.ts): PUT to a temp name then MOVE, MKCOL, MOVE, DELETE, LOCK/UNLOCK.
 */
import { integrationError, isHubError } from '../../errors.js';
import type { ListOptions } from '../contract.js';
import type { AssetPage, FolderPage } from '../model.js';
import { defineProvider, type CallContext } from '../kit/define.js';
import { withImageHead } from '../kit/image-head.js';
import { FormValueError } from '../kit/signin-form.js';
import { davErrorMessage, get, PROVIDER_ID, propfind, search as davSearch, supportsSearch, type DavEntry, type WebdavCred } from './api.js';
import { byName, hasThumbnail, parentOf, toFolder } from './mapping.js';
import { cleanPath, folderPermissions, isTemp, mapEntry } from './entries.js';
import { writeHooks } from './writes.js';

/** Folders a search visits at most; a search over a bigger tree says so instead of running on. */
export const SEARCH_MAX_FOLDERS = 500;
/** Matches a search keeps (they are paged from memory). */
export const SEARCH_MAX_HITS = 10_000;

/** Per server URL: does it take RFC 5323 SEARCH? Asked once (OPTIONS), remembered for an hour. */
const daslCache = new Map<string, { ok: boolean; at: number }>();
const DASL_TTL_MS = 3600_000;

async function canSearch(ctx: CallContext<WebdavCred>): Promise<boolean> {
  const hit = daslCache.get(ctx.cred.url);
  if (hit && ctx.now() - hit.at < DASL_TTL_MS) return hit.ok;
  let ok = false;
  try {
    ok = await supportsSearch(ctx.http, ctx.cred);
  } catch {
    ok = false; // OPTIONS refused: walk instead
  }
  if (daslCache.size > 1000) daslCache.clear();
  daslCache.set(ctx.cred.url, { ok, at: ctx.now() });
  return ok;
}

/** Breadth-first depth-1 PROPFINDs from `start`, at most SEARCH_MAX_FOLDERS folders. */
async function walkSearch(ctx: CallContext<WebdavCred>, start: string, matches: (e: DavEntry) => boolean, hits: DavEntry[]): Promise<void> {
  const queue = [start];
  let visited = 0;
  while (queue.length) {
    if (++visited > SEARCH_MAX_FOLDERS) {
      throw integrationError('integration-operation-failed', PROVIDER_ID, `the search visited ${SEARCH_MAX_FOLDERS} folders without finishing; search inside a sub-folder (parentId)`);
    }
    const dir = queue.shift()!;
    for (const e of await propfind(ctx.http, ctx.cred, dir, 1)) {
      if (e.path === dir) continue;
      if (e.collection) queue.push(e.path);
      else if (matches(e) && hits.length < SEARCH_MAX_HITS) hits.push(e);
    }
  }
}

function parseCred(raw: Record<string, unknown>): WebdavCred {
  const { url, user, pass } = raw;
  if (typeof url !== 'string' || typeof user !== 'string' || typeof pass !== 'string') throw new Error('not WebDAV credentials');
  return { url, user, pass };
}

function offsetOf(more: string | null): number {
  if (more === null) return 0;
  if (!/^\d{1,9}$/.test(more)) throw integrationError('integration-operation-failed', PROVIDER_ID, 'the paging cursor is not one this connector issued');
  return Number(more);
}

async function page(ctx: CallContext<WebdavCred>, files: DavEntry[], opts: ListOptions, parent?: Set<string>): Promise<{ assets: AssetPage['assets']; more?: string }> {
  const from = offsetOf(opts.more);
  const slice = files.slice(from, from + opts.size);
  const assets = await Promise.all(slice.map((e) => mapEntry(ctx, e, parent)));
  return from + opts.size < files.length ? { assets, more: String(from + opts.size) } : { assets };
}

export const webdavConnector = defineProvider<WebdavCred>({
  id: PROVIDER_ID,
  name: 'WebDAV',
  version: '1.0.0',
  glyph: 'W',
  features: { serverUrl: true },
  paging: { defaultSize: 50, maxSize: 500 },
  errorMessage: davErrorMessage,
  credentials: parseCred,
  signIn: {
    kind: 'form',
    title: 'webdavTitle',
    fields: [
      { name: 'serverUrl', label: 'serverUrl', type: 'url', placeholder: 'https://cloud.example.com/remote.php/dav/files/me/', fromServerUrl: true },
      { name: 'username', label: 'userName' },
      { name: 'password', label: 'passwordOrToken', type: 'password' },
    ],
    async verify(v, http) {
      let url: URL;
      try {
        url = new URL(v.serverUrl!);
      } catch {
        throw new FormValueError('serverUrlInvalid');
      }
      if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new FormValueError('serverUrlScheme');
      url.hash = '';
      url.search = '';
      if (!url.pathname.endsWith('/')) url.pathname += '/';
      const cred: WebdavCred = { url: url.href, user: v.username!, pass: v.password! };
      const [top] = await propfind(http, cred, '/', 0);
      if (!top?.collection) throw new FormValueError('notWebdavFolder');
      return { credentials: cred, accountId: `${url.origin}${url.pathname}#${cred.user}`, displayName: `${cred.user} at ${url.host}` };
    },
  },
  hooks: {
    async validate(ctx) {
      await propfind(ctx.http, ctx.cred, '/', 0);
    },

    /** The credentials do not expire by themselves: renewing re-checks them with the server. */
    async refresh(cred, http) {
      await propfind(http, cred, '/', 0);
      return cred;
    },

    async browse(ctx, folderId, opts): Promise<FolderPage> {
      const p = cleanPath(folderId);
      const entries = await propfind(ctx.http, ctx.cred, p, 1).catch(async (e: unknown) => {
        // A folder is asked for with a trailing slash; Apache's mod_dav answers that for a file
        // with 400 Bad Request rather than 404. Asked once more without the slash, a file
        // there is "not a folder" (404), as other servers say; anything else stays the error.
        if (!isHubError(e) || e.code !== 'integration-operation-failed' || p === '/') throw e;
        const self = await propfind(ctx.http, ctx.cred, p, 0).catch(() => []);
        if (self.some((x) => x.path === p && !x.collection)) throw integrationError('integration-not-found', PROVIDER_ID, `${p} is not a folder`);
        throw e;
      });
      const self = entries.find((e) => e.path === p);
      if (!self?.collection) throw integrationError('integration-not-found', PROVIDER_ID, `${p} is not a folder`);
      // An upload in progress (its temp name) is not content yet.
      const members = entries.filter((e) => e.path !== p && !isTemp(e)).sort(byName);
      const files = members.filter((e) => !e.collection);
      const { assets, more } = await page(ctx, files, opts, self.privileges);
      // Deleting or renaming this folder is up to its parent's privileges, where the server reports them.
      const parent = self.privileges !== undefined && p !== '/' ? (await propfind(ctx.http, ctx.cred, parentOf(p), 0))[0]?.privileges : undefined;
      return {
        id: folderId === 'root' ? 'root' : p,
        name: p === '/' ? 'WebDAV' : self.name,
        folders: opts.more === null ? members.filter((e) => e.collection).map(toFolder) : [],
        assets, filters: [], totalAssetsCount: files.length,
        capabilities: folderPermissions(self, parent),
        ...(more ? { more } : {}),
      };
    },

    async search(ctx, q, opts): Promise<AssetPage> {
      const terms = q.query.toLowerCase().split(/\s+/).filter(Boolean);
      const start = cleanPath(q.parentId ?? '/');
      const matches = (e: DavEntry) => !e.collection && !isTemp(e) && terms.every((t) => e.name.toLowerCase().includes(t));
      let hits: DavEntry[] = [];
      if (terms.length && await canSearch(ctx)) {
        // The server searches; its answer is checked again here (a server may ignore caseless).
        hits = (await davSearch(ctx.http, ctx.cred, start, terms, SEARCH_MAX_HITS)).filter(matches);
      } else await walkSearch(ctx, start, matches, hits);
      hits.sort(byName);
      const { assets, more } = await page(ctx, hits, opts);
      return { assets, folders: [], filters: [], totalAssetsCount: hits.length, ...(more ? { more } : {}) };
    },

    async asset(ctx, assetId) {
      const p = cleanPath(assetId);
      const [e] = await propfind(ctx.http, ctx.cred, p, 0);
      if (!e || e.collection) throw integrationError('integration-not-found', PROVIDER_ID, `${p} is not a file`);
      // Deleting or renaming it is up to its folder's privileges, where the server reports them.
      const parent = e.privileges !== undefined ? (await propfind(ctx.http, ctx.cred, parentOf(p), 0))[0]?.privileges : undefined;
      const a = await mapEntry(ctx, e, parent);
      // The detail adds what only the file itself says: its pixel size and EXIF, from its head.
      if (hasThumbnail(e)) withImageHead(a, await ctx.imageHead({ p: e.path }));
      return a;
    },

    async download({ cred, http, item, range, ifNoneMatch }) {
      if (typeof item.p !== 'string') throw integrationError('integration-not-found', PROVIDER_ID, 'the download link names no file');
      return get(http, cred, cleanPath(item.p), range, ifNoneMatch);
    },

    ...writeHooks,
  },
});

