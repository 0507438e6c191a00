/**
 * The content operations (src/content/asset-ops.ts) as the surfaces get them: built from the Hub,
 * one per Hub, so that the REST routes and the MCP tools of a node share one page cache.
 */
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import { Type } from '@sinclair/typebox';
import { AssetOps } from '../content/asset-ops.js';
import { AssetWrites, type AssetWritesDeps } from '../content/asset-writes.js';
import { WriteLocks } from '../content/write-locks.js';
import { PageCache } from '../content/page-cache.js';
import type { Hub } from '../hub.js';
import { SHARED_SCHEMAS } from '../http/schemas.js';
import type { FolderPage } from '../providers/model.js';

/** What a folder answer says when nothing may be done there (a page made without its capabilities). */
export const NO_FOLDER_CAPABILITIES = { canDeleteFolder: false, canAddFolder: false, canAddAsset: false, canRenameFolder: false };

let folderResult: ((doc: unknown) => string) | undefined;

/**
 * A browse answer's bytes, as the browse route sends them: the 200 response schema compiled the
 * way Fastify compiles a route's (its default serialiser compiler, fast-json-stringify, over the
 * schemas the app adds), so a cached page and a fresh one are the same bytes whoever asked first.
 * UTF-8 encoded once: sent as a string, Fastify measures its byte length and the socket encodes it
 * again, each ≈ 0.6 ms for a 50-asset page whose string holds non-Latin-1 labels (i18nName).
 */
export function folderResultBytes(page: FolderPage): Buffer {
  folderResult ??= SerializerSelector()(Object.fromEntries(SHARED_SCHEMAS.map((s) => [s.$id, s])))({
    schema: Type.Ref('FolderResult'), method: 'GET', url: '/api/v1/assets/folder/*', httpStatus: '200',
  });
  return Buffer.from(folderResult({ ...page, capabilities: { ...NO_FOLDER_CAPABILITIES, ...page.capabilities } }), 'utf8');
}

const built = new WeakMap<Hub, AssetOps>();

/** The hub's content operations, with its page cache (DAMHUB_PAGE_CACHE_MB; 0 turns it off). */
export function assetOpsOf(hub: Hub): AssetOps {
  let ops = built.get(hub);
  if (!ops) {
    const c = hub.config;
    ops = new AssetOps({
      providers: hub.providers,
      keys: hub.keys,
      clock: hub.clock,
      providerTimeoutMs: c.providerTimeoutMs,
      references: {
        publicUrl: c.publicUrl,
        mediaUrls: hub.mediaUrls,
        providers: hub.providers,
        imagePool: hub.imagePool,
        reads: hub.reads,
        maxBytes: c.imageMaxBytes,
        decode: { maxPixels: c.imageMaxPixels, budget: c.imageDecodeBudget, timeoutMs: c.imageDecodeTimeoutMs },
        fetch: { allow: c.imageFetchAllow, connectTimeoutMs: c.imageFetchConnectTimeoutMs, totalTimeoutMs: c.imageFetchTimeoutMs, maxRedirects: c.imageFetchMaxRedirects },
      },
      pages: { cache: new PageCache(hub.clock, c.pageCacheBytes), serialize: folderResultBytes, validity: () => hub.mediaUrls.validity() },
      uploadExtensions: c.uploadExtensions,
    });
    built.set(hub, ops);
  }
  return ops;
}

const writes = new WeakMap<Hub, AssetWrites>();

/** The hub's write engine (src/content/asset-writes.ts), shared by REST, tus and MCP. */
export function assetWritesOf(hub: Hub, log: AssetWritesDeps['log']): AssetWrites {
  let w = writes.get(hub);
  if (!w) {
    const c = hub.config;
    w = new AssetWrites({
      providers: hub.providers,
      locks: new WriteLocks(hub.stores.writeLocks, hub.clock),
      audit: hub.stores.audit,
      clock: hub.clock,
      providerTimeoutMs: c.providerTimeoutMs,
      maxUploadBytes: c.maxUploadBytes,
      uploadExtensions: c.uploadExtensions,
      log,
    });
    writes.set(hub, w);
  }
  return w;
}
