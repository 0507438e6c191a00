/**
 * S3-compatible connector (AWS S3, MinIO, Cloudflare R2, Wasabi). Sign-in form: endpoint,
 * region, bucket, access key and secret, proved by a one-key listing. Prefixes are folders;
 * ListObjectsV2 continuation tokens are the `more` cursor (the hub seals them). The first page
 * of a folder counts the level once (1000 keys per request, nothing kept but the count and the
 * sub-prefixes), so totalAssetsCount is exact with bounded memory. Downloads are presigned URLs
 * straight to the bucket; one asset adds its object headers and, for images, metadata read from
 * the head of the object (the kit's imageHead). Image assets carry a hub thumbnail link (the kit
 * makes it from GetObject through the `download` hook). Writes (upload, new versions, rename,
 * move, delete, folders; no locks) are in writes.ts; every asset carries its ETag as CONTENT_TAG.
 */
import { integrationError } from '../../errors.js';
import type { Asset, AssetPage, FolderPage } from '../model.js';
import { tagAsset } from '../asset-state.js';
import { defineProvider, type CallContext } from '../kit/define.js';
import { getObject, headObject, listObjects, listVersions, presignGet, PROVIDER_ID, s3ErrorMessage, type S3Cred, type S3Object, type S3Version } from './api.js';
import { DEFAULT_BODY_LIMITS, type BodyLimits } from './body.js';
import { hasThumbnail, keyOf, prefixOf, toAsset, toFolder, withHeaders } from './mapping.js';
import { writeHooks } from './writes.js';
import { withImageHead } from '../kit/image-head.js';
import { FormValueError } from '../kit/signin-form.js';

/** Keys a first page or a search reads at most at one level; beyond it the answer says so. */
export const MAX_KEYS_SCANNED = 200_000;
/** Sub-folders listed at most on a folder's first page. */
export const MAX_PREFIXES = 10_000;
/** Matches a search keeps at most (they are paged from memory). */
export const MAX_SEARCH_HITS = 10_000;
const PRESIGN_SEC = 3600;

function parseCred(raw: Record<string, unknown>): S3Cred {
  const f = ['endpoint', 'region', 'bucket', 'accessKeyId', 'secretAccessKey'] as const;
  for (const k of f) if (typeof raw[k] !== 'string') throw new Error('not S3 credentials');
  return Object.fromEntries(f.map((k) => [k, raw[k]])) as S3Cred;
}

interface Cursor {
  /** The upstream's continuation token. */
  k: string;
  /** Total assets at this level, counted on the first page. */
  n: number;
}

function readCursor(more: string): Cursor {
  try {
    const c = JSON.parse(more) as Cursor;
    if (typeof c.k === 'string' && Number.isInteger(c.n)) return c;
  } catch { /* below */ }
  throw integrationError('integration-operation-failed', PROVIDER_ID, 'the paging cursor is not one this connector issued');
}

async function assets(ctx: CallContext<S3Cred>, objects: S3Object[]) {
  const now = ctx.now();
  return Promise.all(objects.map((o) => mapObject(ctx, o, now)));
}

/**
 * One object with its presigned download and, for a raster image, its hub thumbnail link. Its
 * ETag is the asset's CONTENT_TAG (src/providers/asset-state.ts): the hub's ETag of the asset
 * derives from it, and a write's If-Match is sent on to the bucket as that ETag.
 */
async function mapObject(ctx: CallContext<S3Cred>, o: S3Object & { contentType?: string }, now: number) {
  const name = o.key.split('/').at(-1)!;
  // The ETag names the content: an overwritten key gets a new thumbnail key.
  const thumb = hasThumbnail(o.key, o.contentType) ? await ctx.thumbnailUrl({ k: o.key }, `${name}.jpg`, o.etag ? { etag: o.etag } : { version: `${o.size}-${o.modified ?? ''}` }) : undefined;
  return tagAsset(toAsset(o, await presignGet(ctx.cred, o.key, name, PRESIGN_SEC, now), thumb), { contentTag: o.etag });
}

/** One asset in full: headers, the version number `assetversions` gives it, image metadata. */
async function readAsset(ctx: CallContext<S3Cred>, key: string): Promise<Asset> {
  const h = await headObject(ctx.http, ctx.cred, key);
  let a = await mapObject(ctx, { key, size: h.size, etag: h.etag, modified: h.modified, contentType: h.contentType }, ctx.now());
  // The asset's number must be the one `assetversions` gives its current content, or a client
  // comparing the two sees a version it cannot find: number it from the same listing.
  // Without versioning the object is its only version: 1, as `assetversions` says too.
  const n = Math.max(1, numbered(await listVersions(ctx.http, ctx.cred, key), null).findIndex((v) => v?.latest) + 1);
  a.version = n;
  a.displayVersion = n;
  a = withHeaders(a, h);
  // Pixel size and EXIF from a ranged read of the object's head, parsed as the library parses its files.
  if (hasThumbnail(key, h.contentType) && h.size > 0) withImageHead(a, await ctx.imageHead({ k: key }));
  return a;
}

/** Walks a listing to its end, one request per 1000 keys, handing each page to `visit`. */
async function walk(ctx: CallContext<S3Cred>, prefix: string, delimiter: boolean, visit: (p: { objects: S3Object[]; prefixes: string[] }) => void): Promise<void> {
  let token: string | null = null;
  let scanned = 0;
  do {
    const p = await listObjects(ctx.http, ctx.cred, { prefix, delimiter, maxKeys: 1000, token });
    scanned += p.objects.length + p.prefixes.length;
    if (scanned > MAX_KEYS_SCANNED) throw integrationError('integration-operation-failed', PROVIDER_ID, `more than ${MAX_KEYS_SCANNED} keys under ${JSON.stringify(prefix || '/')}; narrow it down to a sub-folder`);
    visit(p);
    token = p.next;
  } while (token);
}

/**
 * A key's versions, oldest first. ListObjectVersions lists one key's versions newest first (the
 * API reference says so); that order is kept rather than re-sorting by LastModified, which ties
 * when two versions land in the same second (servers that report whole seconds). No listing, or
 * an empty one (no versioning at the server or on the bucket), gives `only` as the one version.
 */
function numbered<T extends S3Version | null>(found: S3Version[] | null, only: T): (S3Version | T)[] {
  if (found?.length) return [...found].reverse();
  return only === null ? [] : [only];
}

export interface S3Options {
  /** When a body goes in parts, and their size (tests lower them to keep their bytes small). */
  limits?: Partial<BodyLimits>;
}

/** The connector with its write limits; `s3Connector` is it with the defaults. */
export const s3ConnectorWith = (opts: S3Options = {}) => defineProvider<S3Cred>({
  id: PROVIDER_ID,
  name: 'S3',
  version: '1.0.0',
  glyph: 'S3',
  features: { serverUrl: true },
  paging: { defaultSize: 50, maxSize: 1000 },
  errorMessage: s3ErrorMessage,
  credentials: parseCred,
  signIn: {
    kind: 'form',
    title: 's3Title',
    fields: [
      { name: 'endpoint', label: 'endpoint', type: 'url', placeholder: 'https://s3.eu-central-1.amazonaws.com', fromServerUrl: true },
      { name: 'region', label: 'region', placeholder: 'eu-central-1' },
      { name: 'bucket', label: 'bucket' },
      { name: 'accessKeyId', label: 'accessKey' },
      { name: 'secretAccessKey', label: 'secretKey', type: 'password' },
    ],
    async verify(v, http) {
      let ep: URL;
      try {
        ep = new URL(v.endpoint!);
      } catch {
        throw new FormValueError('endpointInvalid');
      }
      if (ep.protocol !== 'https:' && ep.protocol !== 'http:') throw new FormValueError('endpointScheme');
      const cred: S3Cred = { endpoint: ep.origin + ep.pathname.replace(/\/+$/, ''), region: v.region!, bucket: v.bucket!, accessKeyId: v.accessKeyId!, secretAccessKey: v.secretAccessKey! };
      await listObjects(http, cred, { prefix: '', delimiter: true, maxKeys: 1, token: null });
      return { credentials: cred, accountId: `${cred.endpoint}/${cred.bucket}#${cred.accessKeyId}`, displayName: `${cred.bucket} at ${ep.host}` };
    },
  },
  hooks: {
    async validate(ctx) {
      await listObjects(ctx.http, ctx.cred, { prefix: '', delimiter: true, maxKeys: 1, token: null });
    },

    /** Keys do not expire by themselves: renewing re-checks them with the bucket. */
    async refresh(cred, http) {
      await listObjects(http, cred, { prefix: '', delimiter: true, maxKeys: 1, token: null });
      return cred;
    },

    async browse(ctx, folderId, opts): Promise<FolderPage> {
      const prefix = prefixOf(folderId);
      const name = prefix ? prefix.split('/').filter(Boolean).at(-1)! : ctx.cred.bucket;
      // The bucket itself cannot be renamed or deleted through the hub (writes.ts refuses it).
      const base = { id: folderId === 'root' ? 'root' : prefix, name, filters: [], ...(prefix ? {} : { capabilities: { canDeleteFolder: false, canRenameFolder: false } }) };
      if (opts.more !== null) {
        const c = readCursor(opts.more);
        const p = await listObjects(ctx.http, ctx.cred, { prefix, delimiter: true, maxKeys: opts.size, token: c.k });
        const objects = p.objects.filter((o) => o.key !== prefix);
        return { ...base, folders: [], assets: await assets(ctx, objects), totalAssetsCount: c.n, ...(p.next ? { more: JSON.stringify({ k: p.next, n: c.n }) } : {}) };
      }
      let total = 0;
      // A folder made empty (or created) by the hub holds only its marker object, "prefix/".
      let marker = false;
      const prefixes: string[] = [];
      await walk(ctx, prefix, true, (p) => {
        total += p.objects.filter((o) => o.key !== prefix).length;
        marker ||= p.objects.some((o) => o.key === prefix);
        for (const x of p.prefixes) if (prefixes.length < MAX_PREFIXES) prefixes.push(x);
      });
      if (prefix && total === 0 && prefixes.length === 0 && !marker) throw integrationError('integration-not-found', PROVIDER_ID, `no folder ${JSON.stringify(prefix)} in bucket ${ctx.cred.bucket}`);
      // The folder's marker object ("prefix/") sorts before every key under it: starting after it
      // keeps it from taking a place on the first page.
      const p = await listObjects(ctx.http, ctx.cred, { prefix, delimiter: true, maxKeys: opts.size, token: null, startAfter: prefix || undefined });
      const objects = p.objects.filter((o) => o.key !== prefix);
      return { ...base, folders: prefixes.map(toFolder), assets: await assets(ctx, objects), totalAssetsCount: total, ...(p.next ? { more: JSON.stringify({ k: p.next, n: total }) } : {}) };
    },

    async search(ctx, q, opts): Promise<AssetPage> {
      const terms = q.query.toLowerCase().split(/\s+/).filter(Boolean);
      const hits: S3Object[] = [];
      await walk(ctx, prefixOf(q.parentId ?? 'root'), false, (p) => {
        for (const o of p.objects) {
          const n = o.key.split('/').at(-1)!.toLowerCase();
          if (n && terms.every((t) => n.includes(t)) && hits.length < MAX_SEARCH_HITS) hits.push(o);
        }
      });
      const from = opts.more === null ? 0 : /^\d{1,9}$/.test(opts.more) ? Number(opts.more) : -1;
      if (from < 0) throw integrationError('integration-operation-failed', PROVIDER_ID, 'the paging cursor is not one this connector issued');
      const slice = hits.slice(from, from + opts.size);
      return { assets: await assets(ctx, slice), folders: [], filters: [], totalAssetsCount: hits.length, ...(from + opts.size < hits.length ? { more: String(from + opts.size) } : {}) };
    },

    async versions(ctx, assetId, opts) {
      const key = keyOf(assetId);
      const h = await headObject(ctx.http, ctx.cred, key);
      const name = key.split('/').at(-1)!;
      const oldestFirst = numbered(await listVersions(ctx.http, ctx.cred, key), { key, versionId: '', latest: true, size: h.size, etag: h.etag, modified: h.modified });
      const list = await Promise.all(oldestFirst.map(async (v, i) => {
        const a = tagAsset(toAsset(v, await presignGet(ctx.cred, key, name, PRESIGN_SEC, ctx.now(), v.versionId && v.versionId !== 'null' ? v.versionId : undefined)), { contentTag: v.etag });
        a.version = i + 1;
        a.displayVersion = i + 1;
        if (v.versionId) a.versionComment = `S3 version ${v.versionId}`;
        return { a, latest: v.latest };
      }));
      const versions = list.filter((v) => opts.withMaster || !v.latest).map((v) => v.a).reverse();
      return { id: key, name, versions };
    },

    async asset(ctx, assetId) {
      return readAsset(ctx, keyOf(assetId));
    },

    /** The thumbnail and head reads of the kit (clients download through presigned URLs). */
    async download({ cred, http, item, range, ifNoneMatch }) {
      if (typeof item.k !== 'string' || !item.k) throw integrationError('integration-not-found', PROVIDER_ID, 'the link names no object');
      return getObject(http, cred, keyOf(item.k), range, ifNoneMatch);
    },

    // Writes (writes.ts); no lockAsset/unlockAsset: S3 has no locks, so the `lock` capability is false.
    ...writeHooks({ limits: { ...DEFAULT_BODY_LIMITS, ...opts.limits }, readAsset }),
  },
});

export const s3Connector = s3ConnectorWith();
