/**
 * /uploads: resumable uploads, tus 1.0 (core, creation, creation-with-upload, termination,
 * expiration, checksum sha1/sha256), served by the reference server @tus/server over the hub's
 * data store (src/content/uploads/). Same auth as the content calls; the hub's error envelope
 * with tus's statuses; the final request answers the Asset as JSON (200, or 201 on a creation
 * that carried every byte) with its id in Damhub-Asset-Id and its ETag.
 */
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import { Type } from '@sinclair/typebox';
import { ERRORS, Server, type Upload } from '@tus/server';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { PassThrough, Readable } from 'node:stream';
import { uploadDirOf } from '../config.js';
import { CHECKSUM_ALGORITHMS, HubTusStore } from '../content/uploads/tus-store.js';
import { currentCall, runCall, type TusCall } from '../content/uploads/context.js';
import { StoreLocker } from '../content/uploads/locker.js';
import { PartFiles } from '../content/uploads/part-files.js';
import { Uploads, type UploadWrites } from '../content/uploads/uploads.js';
import { hubError, isHubError, type HubError } from '../errors.js';
import type { Hub } from '../hub.js';
import { damOf } from '../http/auth.js';
import { toHubError } from '../http/errors.js';
import { ContentAuth, SHARED_SCHEMAS } from '../http/schemas.js';
import type { Asset } from '../providers/model.js';
import { assetWritesOf } from './content.js';

const UPLOADS_PATH = '/api/v1/uploads';

interface Built {
  uploads: Uploads;
  server: Server;
}

const built = new WeakMap<Hub, Built>();
/** Tests put a write engine of their own here (the hub's is the default). */
export const uploadWritesOverride = new WeakMap<Hub, UploadWrites>();

let assetJson: ((a: unknown) => string) | undefined;
/** The Asset as the REST routes send it: the response schema's serialiser, unknown fields dropped. */
function serializeAsset(a: Asset): string {
  assetJson ??= SerializerSelector()(Object.fromEntries(SHARED_SCHEMAS.map((s) => [s.$id, s])))({
    schema: Type.Ref('Asset'), method: 'PATCH', url: `${UPLOADS_PATH}/*`, httpStatus: '200',
  });
  return assetJson(a);
}

type Log = Parameters<typeof assetWritesOf>[1];
const logs = new WeakMap<Hub, Log>();

/** The hub's write engine (or a test's), logging to the app that serves the uploads. */
function writesOf(hub: Hub): UploadWrites {
  const own = uploadWritesOverride.get(hub);
  if (own) return own;
  // Set when the routes are registered, before any request can reach here.
  const log = logs.get(hub);
  if (!log) throw hubError('hub-internal-error', 'the upload routes are not registered');
  return assetWritesOf(hub, log);
}

/** The hub's resumable uploads (one per Hub): the periodic sweep calls uploadsOf(hub).sweep(). */
export function uploadsOf(hub: Hub): Uploads {
  return build(hub).uploads;
}

function build(hub: Hub): Built {
  let b = built.get(hub);
  if (b) return b;
  const parts = new PartFiles(uploadDirOf(hub.config));
  const locker = new StoreLocker(hub.stores.writeLocks, hub.clock);
  const uploads = new Uploads({ records: hub.stores.uploads, parts, clock: hub.clock, writes: () => writesOf(hub), locker, serializeAsset });
  const datastore = new HubTusStore({ records: hub.stores.uploads, parts, clock: hub.clock, expiryMs: hub.config.uploadExpirySec * 1000, checkHead: (r, head) => uploads.checkHead(r, head) });
  const publicUrl = hub.config.publicUrl.replace(/\/+$/, '');
  const server = new Server({
    path: UPLOADS_PATH,
    datastore,
    locker,
    maxSize: hub.config.maxUploadBytes,
    // Upload URLs from the configured public URL, never from the request's Host.
    generateUrl: (_req, { id }) => `${publicUrl}${UPLOADS_PATH}/${id}`,
    // The hub's CORS hook decides about origins (src/http/cors.ts); @tus/server's is answered away below.
    allowedOrigins: () => false,
    async onIncomingRequest(req, id) {
      if (req.method === 'POST') return;
      const call = currentCall();
      call.record = await uploads.open(call.dam, id);
    },
    async onUploadCreate(_req, upload: Upload) {
      await uploads.checkCreation(currentCall().dam, upload.metadata ?? {}, upload.size ?? null);
      return {};
    },
    async onUploadFinish(req, upload: Upload) {
      const call = currentCall();
      const result = await uploads.finish(call.dam, upload.id, call.requestId);
      call.finished = result.headers;
      // A creation that carried every byte stays 201 (tus clients need its Location); a final PATCH is 200.
      return { status_code: req.method === 'POST' ? 201 : 200, headers: result.headers, body: result.body };
    },
    onResponseError(_req, err) {
      const call = currentCallOrNull();
      if (call && call.error === null) call.error = err;
      return undefined;
    },
  });
  b = { uploads, server };
  built.set(hub, b);
  return b;
}

function currentCallOrNull(): TusCall | null {
  try {
    return currentCall();
  } catch {
    return null;
  }
}

/**
 * The request as @tus/server takes it (a fetch Request), its body streamed from the socket. A
 * client that goes away mid-body ends the stream instead of failing it, so the bytes that did
 * arrive are kept and tus resumes after them (what @tus/server's own Node adapter does).
 */
function webRequest(req: FastifyRequest): Request {
  const raw = req.raw;
  const headers = new Headers();
  for (let i = 0; i < raw.rawHeaders.length; i += 2) headers.append(raw.rawHeaders[i]!, raw.rawHeaders[i + 1]!);
  const url = `http://hub${raw.url ?? '/'}`;
  if (raw.method !== 'POST' && raw.method !== 'PATCH') return new Request(url, { method: raw.method, headers });
  const body = new PassThrough();
  const cut = () => {
    if (!raw.complete) body.end();
  };
  raw.once('close', cut);
  raw.once('error', cut);
  raw.pipe(body);
  return new Request(url, { method: raw.method, headers, body: Readable.toWeb(body) as ReadableStream, duplex: 'half' } as RequestInit);
}

/** Upload-Checksum: "<algorithm> <base64 digest>"; an unknown algorithm is 400 (tus checksum extension). */
function checksumOf(header: string | string[] | undefined): TusCall['checksum'] {
  if (header === undefined) return null;
  const m = /^\s*([A-Za-z0-9-]+) +([A-Za-z0-9+/]+={0,2})\s*$/.exec(Array.isArray(header) ? header[0]! : header);
  if (!m) throw hubError('hub-validation-error', 'Upload-Checksum must be "<algorithm> <base64 digest>"');
  const algorithm = m[1]!.toLowerCase();
  if (!CHECKSUM_ALGORITHMS[algorithm]) throw hubError('hub-validation-error', `Upload-Checksum: ${algorithm} is not supported; use ${Object.keys(CHECKSUM_ALGORITHMS).join(' or ')}`);
  return { algorithm, digest: Buffer.from(m[2]!, 'base64') };
}

/** tus's own refusals, in the hub's envelope with tus's statuses. */
function fromTus(err: unknown, status: number, text: string, maxBytes: number): HubError {
  if (isHubError(err)) return err;
  const tus = err as { status_code?: number; body?: string } | null;
  if (err && !(tus && typeof tus.status_code === 'number')) return toHubError(err);
  const said = (tus?.body ?? text).trim();
  switch (tus?.status_code ?? status) {
    case 404: return hubError('hub-not-found', 'no such upload', { message: 'This upload does not exist.' });
    case 410: return hubError('upload-expired', said);
    case 413: return hubError('hub-payload-too-large', err === ERRORS.ERR_MAX_SIZE_EXCEEDED ? `Upload-Length is over the limit of ${maxBytes} bytes (DAMHUB_MAX_UPLOAD_BYTES)` : said);
    case 500: return err === ERRORS.ERR_LOCK_TIMEOUT
      ? hubError('hub-unavailable', 'another request of this upload is still running', { headers: { 'retry-after': '1' } })
      : hubError('hub-internal-error', said);
    // tus's own statuses: 409 (Upload-Offset is not the upload's), 412 (no Tus-Resumable); its 403s
    // (no Upload-Offset, another Content-Type) and 501s (extensions not offered) are malformed requests.
    case 409: case 412: return hubError('hub-validation-error', said, { status: tus?.status_code ?? status });
    default: return hubError('hub-validation-error', said);
  }
}

/** Copies @tus/server's answer onto the reply; failures become the hub's envelope (thrown to the error handler). */
async function send(req: FastifyRequest, reply: FastifyReply, call: TusCall | null, res: Response, hub: Hub): Promise<FastifyReply> {
  reply.header('tus-resumable', '1.0.0');
  if (res.status >= 400) {
    throw fromTus(call?.error ?? null, res.status, await res.text(), hub.config.maxUploadBytes);
  }
  for (const [k, v] of res.headers) {
    if (k.startsWith('access-control-') || k === 'content-length' || k === 'tus-resumable') continue;
    if (k === 'content-type' && !call?.finished) continue;
    reply.header(k, v);
  }
  const record = call?.record;
  if (record && record.result === null && !call?.finished && req.method !== 'DELETE') {
    reply.header('upload-expires', new Date(record.expiresAt).toUTCString());
  }
  // A finished upload's HEAD still says what it became.
  if (req.method === 'HEAD' && record?.result) {
    reply.header('etag', record.result.headers.etag).header('damhub-asset-id', record.result.headers['damhub-asset-id']);
  }
  if (req.method === 'OPTIONS') reply.header('tus-checksum-algorithm', Object.keys(CHECKSUM_ALGORITHMS).join(','));
  reply.code(res.status);
  const body = res.status === 204 || req.method === 'HEAD' ? '' : await res.text();
  return body ? reply.send(body) : reply.send();
}

export async function uploadRoutes(app: FastifyInstance): Promise<void> {
  const hub = app.hub;
  logs.set(hub, app.log);
  // The body is @tus/server's to stream into the part file; Fastify leaves it unread. Any other
  // type reaches tus too (in this plugin only), which refuses it in its own terms.
  app.addContentTypeParser('*', (_req, _payload, done) => done(null));

  const tus = async (req: FastifyRequest, reply: FastifyReply) => {
    const { server } = build(hub);
    const call: TusCall = { dam: damOf(req), requestId: String(req.id), checksum: checksumOf(req.headers['upload-checksum']), record: null, error: null, finished: null };
    const request = webRequest(req);
    const res = await runCall(call, () => server.handleWeb(request));
    return send(req, reply, call, res, hub);
  };
  const errors = { '4xx': Type.Ref('ErrorEnvelope'), '5xx': Type.Ref('ErrorEnvelope') };
  const idParams = Type.Object({ id: Type.String({ maxLength: 64, description: 'the upload id: the last segment of the creation\'s Location' }) });
  // Documented for the reference; @tus/server checks them (a missing Tus-Resumable is its 412).
  const tusHeaders = (h: Record<string, string>) => Type.Object(Object.fromEntries(Object.entries(h).map(([k, d]) => [k, Type.Optional(Type.String({ description: d }))])));
  const TUS_RESUMABLE = { 'tus-resumable': '`1.0.0` on every request but OPTIONS' };
  const BODY = { 'content-type': '`application/offset+octet-stream` with a body', 'upload-offset': 'where the body goes: the offset HEAD reports', 'upload-checksum': '`sha1 <base64>` or `sha256 <base64>` of this body; a mismatch is 460 and the body is discarded' };
  const config = { auth: 'content' as const };
  app.post('/uploads', { config, schema: {
    tags: ['uploads'], summary: 'tus: create an upload', security: ContentAuth,
    headers: tusHeaders({ ...TUS_RESUMABLE, 'upload-length': 'the file\'s size in bytes (at most Tus-Max-Size)', 'upload-metadata': 'tus metadata: `parentId`, `name`, `onConflict` for a new asset, or `assetId`, `ifMatch` for a new version', 'content-type': '`application/offset+octet-stream` to send bytes with the creation' }),
    response: { 201: Type.Union([Type.Ref('Asset'), Type.Null()]), ...errors },
  } }, tus);
  app.head('/uploads/:id', { config, schema: {
    tags: ['uploads'], summary: 'tus: the offset to resume from', security: ContentAuth, params: idParams, headers: tusHeaders(TUS_RESUMABLE),
    response: { 200: Type.Null(), ...errors },
  } }, tus);
  app.patch('/uploads/:id', { config, schema: {
    tags: ['uploads'], summary: 'tus: append bytes; the last ones answer the Asset', security: ContentAuth, params: idParams, headers: tusHeaders({ ...TUS_RESUMABLE, ...BODY }),
    response: { 200: Type.Ref('Asset'), 204: Type.Null(), ...errors },
  } }, tus);
  app.delete('/uploads/:id', { config, schema: {
    tags: ['uploads'], summary: 'tus: terminate an upload', security: ContentAuth, params: idParams, headers: tusHeaders(TUS_RESUMABLE),
    response: { 204: Type.Null(), ...errors },
  } }, tus);
  // Capability discovery (Tus-Version, Tus-Extension, Tus-Max-Size); public, as tus has it.
  app.options('/uploads', { schema: { hide: true } }, async (req, reply) => {
    const res = await build(hub).server.handleWeb(webRequest(req));
    return send(req, reply, null, res, hub);
  });
}
