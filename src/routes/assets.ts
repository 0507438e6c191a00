/**
 * /assets: browse, keyword search, search by image, one asset, versions, and the signed media
 * URLs. Handlers validate and clamp, check the provider's declared capability, call the provider
 * and seal its paging cursor; they never know which DAM they talk to.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fs from 'node:fs';
import rangeParser from 'range-parser';
import { AssetOps, idParam, type ListQuery as ListQueryT } from '../content/asset-ops.js';
import { PageCache } from '../content/page-cache.js';
import { hubError, integrationError } from '../errors.js';
import { damOf, principalOf } from '../http/auth.js';
import { ContentAuth, responses, UiLocaleSchema } from '../http/schemas.js';
import type { MediaFile } from '../providers/contract.js';
import type { AssetPage } from '../providers/model.js';
import { operation } from '../providers/capabilities.js';

const ListQuery = Type.Object({
  size: Type.Optional(Type.Integer({ minimum: 0, description: 'assets per page; clamped to the provider maximum; 0 = provider default' })),
  more: Type.Optional(Type.String({ maxLength: 4096, description: 'opaque cursor from the previous page' })),
  filters: Type.Optional(Type.Array(Type.String({ maxLength: 256 }), { maxItems: 50 })),
  timeZone: Type.Optional(Type.String({ maxLength: 64 })),
  dataLocale: Type.Optional(Type.String({ maxLength: 35 })),
  uiLocale: Type.Optional(UiLocaleSchema),
});

const SearchQuery = Type.Composite([ListQuery, Type.Object({
  query: Type.Optional(Type.String({ maxLength: 1024 })),
  parentId: Type.Optional(Type.String({ maxLength: 2048 })),
})]);

const FOLDER_CAPABILITIES = { canDeleteFolder: false, canAddFolder: false, canAddAsset: false, canRenameFolder: false };

const JSON_UTF8 = 'application/json; charset=utf-8';

export async function assetRoutes(app: FastifyInstance): Promise<void> {
  const hub = app.hub;
  const ops = new AssetOps(hub);
  const pages = app.pageCache;

  app.get('/assets/folder/*', {
    config: { auth: 'content' },
    schema: {
      tags: ['assets'],
      summary: 'Browse a folder: subfolders and a page of assets (folderId "root" for the top)',
      security: ContentAuth,
      params: Type.Object({ '*': Type.String({ description: 'folder id, URL-encoded' }) }),
      querystring: ListQuery,
      response: responses(Type.Ref('FolderResult')),
    },
  }, async (req, reply) => {
    const dam = damOf(req);
    const provider = ops.providerOf(dam);
    const browse = operation(provider, 'browse', 'folder browsing');
    const folderId = idParam((req.params as { '*': string })['*'], 'folderId');
    const { opts, binding } = ops.listOptions(dam.userId, provider, req.query as ListQueryT, ['folder', folderId]);
    // Repeated pages come from the page cache while the provider's view of this session, the
    // request and the media-URL validity are unchanged (see src/content/page-cache.ts).
    const viewVersion = provider.viewVersion?.bind(provider);
    const version = pages.enabled && viewVersion ? await ops.onSession(provider, dam, async (s) => viewVersion(s), 'any') : null;
    const key = version === null ? null : PageCache.key([
      principalOf(req).user.id, provider.descriptor.id, version, folderId, opts.size, (req.query as ListQueryT).more ?? null,
      opts.filters, opts.timeZone, opts.dataLocale, opts.uiLocale, hub.mediaUrls.validity(),
    ]);
    const hit = key === null ? undefined : pages.get(key);
    reply.type(JSON_UTF8);
    if (hit) return reply.send(hit);
    const page = await ops.onSession(provider, dam, (s) => browse(s, folderId, opts));
    const body = serialized(reply, { ...ops.sealPage(page, binding), capabilities: FOLDER_CAPABILITIES });
    if (key !== null) pages.set(key, body);
    return reply.send(body);
  });

  app.get('/assets/search', {
    config: { auth: 'content' },
    schema: {
      tags: ['assets'],
      summary: 'Keyword search (paged with more; filters from a previous response)',
      security: ContentAuth,
      querystring: SearchQuery,
      response: responses(Type.Ref('SearchResult')),
    },
  }, async (req, reply) => {
    const page = await ops.search(damOf(req), req.query as { query?: string; parentId?: string }, req.query as ListQueryT);
    return sendResults(reply, page);
  });

  app.post('/assets/search', {
    config: { auth: 'content' },
    schema: {
      tags: ['assets'],
      summary: 'Search by image: body {dataBase64} holds a data URI, an http(s) URL or a downloadUrl from a result',
      security: ContentAuth,
      querystring: ListQuery,
      body: Type.Object({ dataBase64: Type.String({ minLength: 1 }) }),
      response: responses(Type.Ref('SearchResult')),
    },
  }, async (req, reply) => {
    // The decode of the reference is killed if the client goes away before the answer.
    const gone = new AbortController();
    const onClose = () => {
      if (!reply.raw.writableFinished) gone.abort();
    };
    reply.raw.once('close', onClose);
    try {
      const page = await ops.searchByImage(damOf(req), (req.body as { dataBase64: string }).dataBase64, req.query as ListQueryT, gone.signal);
      return sendResults(reply, page);
    } finally {
      reply.raw.off('close', onClose);
    }
  });

  app.get('/assets/asset/*', {
    config: { auth: 'content' },
    schema: {
      tags: ['assets'],
      summary: 'One asset with its metadata, renditions and URLs',
      security: ContentAuth,
      params: Type.Object({ '*': Type.String() }),
      querystring: Type.Object({ uiLocale: Type.Optional(UiLocaleSchema), timeZone: Type.Optional(Type.String({ maxLength: 64 })) }),
      response: responses(Type.Ref('Asset')),
    },
  }, async (req) => ops.asset(damOf(req), (req.params as { '*': string })['*'], req.query as { uiLocale?: string; timeZone?: string }));

  app.get('/assets/assetversions/*', {
    config: { auth: 'content' },
    schema: {
      tags: ['assets'],
      summary: 'Version history of an asset (newest first; withMaster=true includes the current version)',
      security: ContentAuth,
      params: Type.Object({ '*': Type.String() }),
      querystring: Type.Object({ withMaster: Type.Optional(Type.Boolean()), uiLocale: Type.Optional(UiLocaleSchema) }),
      response: responses(Type.Ref('VersionsResult')),
    },
  }, async (req) => ops.versions(damOf(req), (req.params as { '*': string })['*'], req.query as { withMaster?: boolean; uiLocale?: string }));

  // Signed media URLs: the URL is the credential (an <img> cannot send headers).
  const originalParams = Type.Object({ provider: Type.String({ maxLength: 64 }), assetId: Type.String({ maxLength: 256 }), version: Type.Integer({ minimum: 1 }) });
  // The thumbnail route's own parameters: a `rendition` on the download route's schema was a path
  // parameter its path does not have (an error in the reference).
  const renditionParams = Type.Object({ provider: Type.String({ maxLength: 64 }), assetId: Type.String({ maxLength: 256 }), version: Type.Integer({ minimum: 1 }), rendition: Type.String({ maxLength: 32 }) });
  const mediaQuery = Type.Object({ exp: Type.Optional(Type.String()), p: Type.Optional(Type.String({ maxLength: 256 })), a: Type.Optional(Type.String({ maxLength: 256 })), k: Type.Optional(Type.String()), sig: Type.Optional(Type.String()) });
  const serveMedia = async (req: FastifyRequest, reply: FastifyReply) => {
    const p = req.params as { provider: string; assetId: string; version: number; rendition?: string };
    // Signature, expiry, and the partner and account it was made for still live (cached ≤ 30 s).
    await hub.mediaUrls.verify(req.url.split('?')[0]!, req.query as Record<string, string>, p.provider);
    const provider = hub.providers.get(p.provider);
    const serve = provider?.media?.bind(provider);
    if (!provider || !serve) throw integrationError('integration-not-available', p.provider, 'no media for this provider');
    const media = await ops.call(provider, () => serve({ assetId: p.assetId, version: p.version, rendition: p.rendition ?? 'original' }));
    return sendMedia(req, reply, media, p.rendition ? 'inline' : 'attachment');
  };
  app.get('/assets/download/:provider/:assetId/:version', { config: { auth: 'none' }, schema: { tags: ['assets'], summary: 'Original bytes (signed URL from downloadUrl)', params: originalParams, querystring: mediaQuery } }, serveMedia);
  app.get('/assets/thumbnail/:provider/:assetId/:version/:rendition', { config: { auth: 'none' }, schema: { tags: ['assets'], summary: 'Rendition bytes (signed URL from thumbnailUrl or conversions)', params: renditionParams, querystring: mediaQuery } }, serveMedia);
}

/**
 * A page (tens to hundreds of KB of JSON) as UTF-8 bytes, encoded once: sent as a string, Fastify
 * measures its byte length and the socket encodes it again, each ≈ 0.6 ms for a 50-asset page whose
 * string holds non-Latin-1 labels (the i18nName translations).
 */
function serialized(reply: FastifyReply, body: unknown): Buffer {
  return Buffer.from(reply.serialize(body) as string, 'utf8');
}

/** A page of search results (keyword or image): nothing can be added to it. */
function sendResults(reply: FastifyReply, page: AssetPage): FastifyReply {
  return reply.type(JSON_UTF8).send(serialized(reply, { ...page, capabilities: { canAddAsset: false } }));
}

/** Streams a media file with ETag, conditional GET and single byte ranges (RFC 9110). */
function sendMedia(req: FastifyRequest, reply: FastifyReply, m: MediaFile, disposition: 'inline' | 'attachment') {
  reply.header('etag', m.etag);
  reply.header('cache-control', 'private, max-age=3600');
  reply.header('accept-ranges', 'bytes');
  reply.header('content-disposition', `${disposition}; filename*=UTF-8''${encodeURIComponent(m.fileName)}`);
  reply.type(m.mimeType);
  const inm = req.headers['if-none-match'];
  if (inm && inm.split(',').some((t) => t.trim() === m.etag || t.trim() === '*')) return reply.code(304).send();
  const size = m.kind === 'file' ? m.size : m.body.length;
  if (m.kind === 'file') reply.header('last-modified', new Date(m.lastModified).toUTCString());
  let start = 0;
  let end = size - 1;
  const range = req.headers.range;
  const ifRange = req.headers['if-range'];
  if (range && (!ifRange || ifRange === m.etag)) {
    const r = rangeParser(size, range, { combine: true });
    if (r === -1) {
      reply.header('content-range', `bytes */${size}`);
      throw hubError('hub-validation-error', `range not satisfiable for a ${size}-byte file`, { status: 416, message: 'The requested range is not satisfiable.' });
    }
    if (r !== -2 && r.length === 1) {
      start = r[0]!.start;
      end = r[0]!.end;
      reply.code(206).header('content-range', `bytes ${start}-${end}/${size}`);
    }
  }
  reply.header('content-length', String(size === 0 ? 0 : end - start + 1));
  if (req.method === 'HEAD') return reply.send();
  if (m.kind === 'inline') return reply.send(m.body.subarray(start, end + 1));
  if (size === 0) return reply.send('');
  return reply.send(fs.createReadStream(m.path, { start, end }));
}
