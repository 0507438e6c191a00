/**
 * The write routes under /assets (docs/writes.md): upload, new version, rename/move, delete,
 * folders and locks. They parse and hand over; the rules live in the write engine
 * (src/content/asset-writes.ts), Idempotency-Key in ./idempotency.ts. Byte bodies are never
 * buffered: the upload routes take any Content-Type and stream the request into the provider.
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { validationError } from '../errors.js';
import { damOf } from '../http/auth.js';
import { ContentAuth, responses } from '../http/schemas.js';
import type { AssetResult } from '../content/asset-writes.js';
import { assetWritesOf } from './content.js';
import { idempotent, type WriteAnswer } from './idempotency.js';

const IdParam = Type.Object({ '*': Type.String({ description: 'id, URL-encoded' }) });
const IfMatch = Type.Object({ 'if-match': Type.Optional(Type.String({ description: 'the ETag of GET /assets/asset/{assetId}' })), 'idempotency-key': Type.Optional(Type.String({ maxLength: 300 })) });
const IdemHeader = Type.Object({ 'idempotency-key': Type.Optional(Type.String({ maxLength: 300, description: 'a new random key per write; reuse it to retry that write' })) });
const NameBody = Type.String({ minLength: 1, maxLength: 1024 });

function declaredLength(req: FastifyRequest): number | null {
  const raw = req.headers['content-length'];
  if (raw === undefined) return null;
  if (!/^\d{1,16}$/.test(raw)) throw validationError('Content-Length is not a number of bytes');
  return Number(raw);
}

function ifMatchOf(req: FastifyRequest): string | null {
  const v = req.headers['if-match'];
  return v === undefined ? null : v;
}

/** Aborts when the client goes away before the answer (the write discards what it wrote). */
function clientGone(req: FastifyRequest): AbortSignal {
  const c = new AbortController();
  req.raw.once('close', () => {
    if (!req.raw.complete) c.abort(new Error('the client went away'));
  });
  return c.signal;
}

function assetAnswer(r: AssetResult, status = 200): WriteAnswer {
  return { status, body: r.asset, headers: { etag: r.etag, 'damhub-asset-id': encodeURIComponent(r.asset.id) } };
}

export async function writeRoutes(fastify: FastifyInstance): Promise<void> {
  const hub = fastify.hub;
  const engine = assetWritesOf(hub, fastify.log);
  const idem = { store: hub.stores.idempotency, clock: hub.clock };
  const meta = (req: FastifyRequest) => ({ requestId: String(req.id), signal: clientGone(req) });

  // Byte bodies: every Content-Type, left unread for the engine to stream.
  await fastify.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_req, _payload, done) => done(null, undefined));
    const app = scope.withTypeProvider<TypeBoxTypeProvider>();

    app.post('/assets/upload', {
      config: { auth: 'content' },
      schema: {
        tags: ['writes'],
        summary: 'Upload a new asset into a folder; the body is the file (any Content-Type, streamed)',
        security: ContentAuth,
        headers: IdemHeader,
        querystring: Type.Object({
          parentId: Type.String({ minLength: 1, maxLength: 2048, description: 'the folder to upload into' }),
          name: NameBody,
          onConflict: Type.Optional(Type.Union([Type.Literal('fail'), Type.Literal('rename'), Type.Literal('version')], { default: 'fail', description: 'when the name is taken: 409 asset-exists, keep both (a free name), or a new version of that asset (answers 200)' })),
        }),
        response: { ...responses(Type.Ref('Asset'), 201), 200: Type.Ref('Asset') },
      },
    }, (req, reply) => idempotent(idem, req, reply, true, async (body) => {
      const r = await engine.upload(damOf(req), req.query, { stream: body, length: declaredLength(req) }, meta(req));
      return assetAnswer(r, r.status);
    }));

    app.post('/assets/update/*', {
      config: { auth: 'content' },
      schema: {
        tags: ['writes'],
        summary: 'Save a new version of an asset; the body is the file, If-Match the ETag it replaces',
        security: ContentAuth,
        params: IdParam,
        headers: IfMatch,
        response: responses(Type.Ref('Asset')),
      },
    }, (req, reply) => idempotent(idem, req, reply, true, async (body) =>
      assetAnswer(await engine.update(damOf(req), req.params['*'], { stream: body, length: declaredLength(req) }, ifMatchOf(req), meta(req)))));
  });

  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.patch('/assets/asset/*', {
    config: { auth: 'content' },
    schema: {
      tags: ['writes'],
      summary: 'Rename and/or move an asset',
      security: ContentAuth,
      params: IdParam,
      headers: IfMatch,
      body: Type.Object({ name: Type.Optional(NameBody), parentId: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })) }, { additionalProperties: false }),
      response: responses(Type.Ref('Asset')),
    },
  }, (req, reply) => idempotent(idem, req, reply, false, async () =>
    assetAnswer(await engine.relocate(damOf(req), req.params['*'], req.body, ifMatchOf(req), meta(req)))));

  app.delete('/assets/asset/*', {
    config: { auth: 'content' },
    schema: { tags: ['writes'], summary: 'Delete an asset', security: ContentAuth, params: IdParam, headers: IfMatch, response: { 204: Type.Null(), '4xx': Type.Ref('ErrorEnvelope'), '5xx': Type.Ref('ErrorEnvelope') } },
  }, (req, reply) => idempotent(idem, req, reply, false, async () => {
    await engine.remove(damOf(req), req.params['*'], ifMatchOf(req), meta(req));
    return { status: 204 };
  }));

  app.post('/assets/folder', {
    config: { auth: 'content' },
    schema: {
      tags: ['writes'],
      summary: 'Create a folder',
      security: ContentAuth,
      headers: IdemHeader,
      body: Type.Object({ parentId: Type.String({ minLength: 1, maxLength: 2048 }), name: NameBody }, { additionalProperties: false }),
      response: responses(Type.Ref('Folder'), 201),
    },
  }, (req, reply) => idempotent(idem, req, reply, false, async () =>
    ({ status: 201, body: await engine.createFolder(damOf(req), req.body.parentId, req.body.name, meta(req)) })));

  app.patch('/assets/folder/*', {
    config: { auth: 'content' },
    schema: {
      tags: ['writes'],
      summary: 'Rename and/or move a folder',
      security: ContentAuth,
      params: IdParam,
      headers: IdemHeader,
      body: Type.Object({ name: Type.Optional(NameBody), parentId: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })) }, { additionalProperties: false }),
      response: responses(Type.Ref('Folder')),
    },
  }, (req, reply) => idempotent(idem, req, reply, false, async () =>
    ({ status: 200, body: await engine.updateFolder(damOf(req), req.params['*'], req.body, meta(req)) })));

  app.delete('/assets/folder/*', {
    config: { auth: 'content' },
    schema: {
      tags: ['writes'],
      summary: 'Delete a folder (409 folder-not-empty unless recursive=true)',
      security: ContentAuth,
      params: IdParam,
      headers: IdemHeader,
      querystring: Type.Object({ recursive: Type.Optional(Type.Boolean({ default: false })) }),
      response: { 204: Type.Null(), '4xx': Type.Ref('ErrorEnvelope'), '5xx': Type.Ref('ErrorEnvelope') },
    },
  }, (req, reply) => idempotent(idem, req, reply, false, async () => {
    await engine.removeFolder(damOf(req), req.params['*'], req.query.recursive === true, meta(req));
    return { status: 204 };
  }));

  app.post('/assets/lock/*', {
    config: { auth: 'content' },
    schema: { tags: ['writes'], summary: 'Lock an asset: others get 423 asset-locked until it is unlocked', security: ContentAuth, params: IdParam, headers: IdemHeader, response: responses(Type.Ref('Asset')) },
  }, (req, reply) => idempotent(idem, req, reply, false, async () => assetAnswer(await engine.lock(damOf(req), req.params['*'], meta(req)))));

  app.delete('/assets/lock/*', {
    config: { auth: 'content' },
    schema: { tags: ['writes'], summary: 'Unlock an asset this account locked', security: ContentAuth, params: IdParam, headers: IdemHeader, response: responses(Type.Ref('Asset')) },
  }, (req, reply) => idempotent(idem, req, reply, false, async () => assetAnswer(await engine.unlock(damOf(req), req.params['*'], meta(req)))));
}
