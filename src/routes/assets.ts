/**
 * /assets: browse, keyword search, search by image, one asset, versions, and the signed media
 * URLs. Handlers validate and clamp, check the provider's declared capability, call the provider
 * and seal its paging cursor; they never know which DAM they talk to.
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fs from 'node:fs';
import rangeParser from 'range-parser';
import { hubError, integrationError } from '../errors.js';
import { whileConnected } from '../net/client-gone.js';
import { damOf } from '../http/auth.js';
import { ContentAuth, responses, UiLocaleSchema } from '../http/schemas.js';
import type { MediaFile } from '../providers/contract.js';
import { etagOf } from '../providers/asset-state.js';
import type { AssetPage } from '../providers/model.js';
import { assetOpsOf } from './content.js';

/** The list parameters' schema (querystring of browse and both searches); what it admits is ListParams (content/asset-ops.ts). */
const ListQuerySchema = Type.Object({
  size: Type.Optional(Type.Integer({ minimum: 0, description: 'assets per page; clamped to the provider maximum; 0 = provider default' })),
  more: Type.Optional(Type.String({ maxLength: 4096, description: 'opaque cursor from the previous page' })),
  filters: Type.Optional(Type.Array(Type.String({ maxLength: 256 }), { maxItems: 50 })),
  timeZone: Type.Optional(Type.String({ maxLength: 64 })),
  dataLocale: Type.Optional(Type.String({ maxLength: 35 })),
  uiLocale: Type.Optional(UiLocaleSchema),
});

const SearchQuerySchema = Type.Composite([ListQuerySchema, Type.Object({
  query: Type.Optional(Type.String({ maxLength: 1024 })),
  parentId: Type.Optional(Type.String({ maxLength: 2048 })),
})]);

const JSON_UTF8 = 'application/json; charset=utf-8';

export async function assetRoutes(fastify: FastifyInstance): Promise<void> {
  // Handlers get req.params, req.query and req.body typed from their schemas.
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const hub = app.hub;
  const ops = assetOpsOf(hub);

  app.get('/assets/folder/*', {
    config: { auth: 'content' },
    schema: {
      tags: ['assets'],
      summary: 'Browse a folder: subfolders and a page of assets (folderId "root" for the top)',
      security: ContentAuth,
      params: Type.Object({ '*': Type.String({ description: 'folder id, URL-encoded' }) }),
      querystring: ListQuerySchema,
      response: responses(Type.Ref('FolderResult')),
    },
  }, async (req, reply) => {
    // The answer's bytes, from the page cache while unchanged (AssetOps.browseBody).
    const body = await whileConnected(reply.raw, (signal) => ops.browseBody(damOf(req), req.params['*'], req.query, signal));
    return reply.type(JSON_UTF8).send(body);
  });

  app.get('/assets/search', {
    config: { auth: 'content' },
    schema: {
      tags: ['assets'],
      summary: 'Keyword search (paged with more; filters from a previous response)',
      security: ContentAuth,
      querystring: SearchQuerySchema,
      response: responses(Type.Ref('SearchResult')),
    },
  }, async (req, reply) => {
    const page = await whileConnected(reply.raw, (signal) => ops.search(damOf(req), req.query, req.query, signal));
    return sendResults(reply, page);
  });

  app.post('/assets/search', {
    config: { auth: 'content' },
    schema: {
      tags: ['assets'],
      summary: 'Search by image: body {dataBase64} holds a data URI, an http(s) URL or a downloadUrl from a result',
      security: ContentAuth,
      querystring: ListQuerySchema,
      body: Type.Object({ dataBase64: Type.String({ minLength: 1 }) }),
      response: responses(Type.Ref('SearchResult')),
    },
  }, async (req, reply) => {
    // The decode of the reference is killed if the client goes away before the answer.
    const page = await whileConnected(reply.raw, (signal) => ops.searchByImage(damOf(req), req.body.dataBase64, req.query, signal));
    return sendResults(reply, page);
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
  }, async (req, reply) => {
    // The metadata head read of a connector asset (kit/image-head.ts) stops when the client leaves.
    const asset = await whileConnected(reply.raw, (signal) => ops.asset(damOf(req), req.params['*'], req.query, signal));
    // The value If-Match takes on a write (docs/writes.md). No 304 on If-None-Match: the answer's
    // signed URLs expire, so a client must not keep using an old body because the content is the same.
    reply.header('etag', etagOf(asset));
    return asset;
  });

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
  }, async (req) => ops.versions(damOf(req), req.params['*'], req.query));

  // Signed media URLs: the URL is the credential (an <img> cannot send headers).
  const originalParams = Type.Object({ provider: Type.String({ maxLength: 64 }), assetId: Type.String({ maxLength: 256 }), version: Type.Integer({ minimum: 1 }) });
  // The thumbnail route's own parameters: a `rendition` on the download route's schema was a path
  // parameter its path does not have (an error in the reference).
  const renditionParams = Type.Object({ provider: Type.String({ maxLength: 64 }), assetId: Type.String({ maxLength: 256 }), version: Type.Integer({ minimum: 1 }), rendition: Type.String({ maxLength: 32 }) });
  const mediaQuery = Type.Object({ exp: Type.Optional(Type.String()), p: Type.Optional(Type.String({ maxLength: 256 })), a: Type.Optional(Type.String({ maxLength: 256 })), k: Type.Optional(Type.String()), sig: Type.Optional(Type.String()) });
  const serveMedia = async (req: FastifyRequest, reply: FastifyReply, p: MediaParams, query: Static<typeof mediaQuery>) => {
    // Signature, expiry, and the partner and account it was made for still live (cached ≤ 30 s).
    await hub.mediaUrls.verify(req.url.split('?')[0]!, query, p.provider);
    const provider = hub.providers.get(p.provider);
    const serve = provider?.media?.bind(provider);
    if (!provider || !serve) throw integrationError('integration-not-available', p.provider, 'no media for this provider');
    const media = await ops.call(provider, () => serve({ assetId: p.assetId, version: p.version, rendition: p.rendition ?? 'original' }));
    return sendMedia(req, reply, media, p.rendition ? 'inline' : 'attachment');
  };
  app.get('/assets/download/:provider/:assetId/:version', { config: { auth: 'none' }, schema: { tags: ['assets'], summary: 'Original bytes (signed URL from downloadUrl)', params: originalParams, querystring: mediaQuery } },
    (req, reply) => serveMedia(req, reply, req.params, req.query));
  app.get('/assets/thumbnail/:provider/:assetId/:version/:rendition', { config: { auth: 'none' }, schema: { tags: ['assets'], summary: 'Rendition bytes (signed URL from thumbnailUrl or conversions)', params: renditionParams, querystring: mediaQuery } },
    (req, reply) => serveMedia(req, reply, req.params, req.query));
}

/** A media route's path parameters: the original's, or a rendition's. */
type MediaParams = { provider: string; assetId: string; version: number; rendition?: string };

/**
 * A page of search results (keyword or image): nothing can be added to it. Sent as UTF-8 bytes,
 * encoded once (see folderResultBytes in ./content.ts).
 */
function sendResults(reply: FastifyReply, page: AssetPage): FastifyReply {
  // reply.serialize is typed as returning unknown; with the route's response schema it is a string.
  return reply.type(JSON_UTF8).send(Buffer.from(reply.serialize({ ...page, capabilities: { canAddAsset: false } }) as string, 'utf8'));
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
