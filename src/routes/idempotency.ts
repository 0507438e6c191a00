/**
 * Idempotency-Key (IETF httpapi draft "The Idempotency-Key HTTP Header Field") on the write routes:
 * a retry with the same key and the same request answers the first answer again and writes
 * nothing; the same key with another request answers 422; a retry while the first is still
 * running answers 409 (retry later). Keys are scoped to the partner and hub user, kept 24 hours,
 * and shared by the nodes (the stores' IdempotencyStore).
 *
 * A request's fingerprint is its method, path, query, If-Match and body: a JSON body by its
 * canonical form; a byte body (uploads) by its SHA-256, taken as the bytes stream to the provider,
 * so a replayed upload's bytes are read (and hashed) once more before the first answer is replayed.
 */
import { createHash } from 'node:crypto';
import { PassThrough, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { HubError, hubError, type ErrorCode } from '../errors.js';
import { toHubError } from '../http/errors.js';
import { principalOf } from '../http/auth.js';
import type { IdempotencyStore, IdempotentResponse } from '../stores/types.js';
import type { Clock } from '../clock.js';

/** How long a key answers its first request's answer. */
export const IDEMPOTENCY_TTL_MS = 24 * 3600_000;
/** The stored answer's entry holding the byte body's digest (a name no real header can have). */
const DIGEST = ':body-sha256';
/**
 * A refused request is kept as its error, not its envelope: a replay renders it again, so it
 * carries the retry's own request id like every other answer.
 */
const ERROR = ':error';
interface StoredError { code: ErrorCode; message: string; details?: string; status: number; provider?: string }

/** Headers a replay repeats. */
const REPLAYED = ['etag', 'location', 'damhub-asset-id', 'retry-after'];

/** What a write handler answers: a status, a JSON body (or none) and headers. */
export interface WriteAnswer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface IdempotencyDeps {
  store: IdempotencyStore;
  clock: Clock;
}

/** The header's key: an RFC 8941 sf-string (quoted) or, leniently, a bare token; ≤ 255 printable characters. */
function keyOf(req: FastifyRequest): string | null {
  const raw = req.headers['idempotency-key'];
  if (raw === undefined) return null;
  const v = (Array.isArray(raw) ? raw[0]! : raw).trim();
  const key = v.startsWith('"') && v.endsWith('"') && v.length >= 2 ? v.slice(1, -1) : v;
  if (!key || key.length > 255 || !/^[\x20-\x7e]+$/.test(key)) throw hubError('hub-validation-error', 'Idempotency-Key must be 1 to 255 printable ASCII characters (a quoted string)');
  return key;
}

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`).join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

/** The request without its byte body, as one string's hash. */
function baseFingerprint(req: FastifyRequest, withJsonBody: boolean): string {
  const [path, query = ''] = req.url.split('?') as [string, string?];
  const params = [...new URLSearchParams(query)].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const h = createHash('sha256').update(JSON.stringify([req.method, path, params, req.headers['if-match'] ?? null]));
  if (withJsonBody) h.update(canonical(req.body ?? null));
  return h.digest('base64url');
}

/** A byte body passed through a SHA-256 on its way. */
function hashed(source: Readable): { stream: Readable; digest(): string } {
  const hash = createHash('sha256');
  const out = new PassThrough();
  source.on('data', (c: Buffer) => hash.update(c));
  source.on('error', (e) => out.destroy(e));
  source.pipe(out);
  let d: string | null = null;
  return { stream: out, digest: () => (d ??= hash.digest('base64url')) };
}

async function drainDigest(source: Readable): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(source, async function* (chunks) {
    for await (const c of chunks) hash.update(c as Buffer);
  });
  return hash.digest('base64url');
}

function send(reply: FastifyReply, a: WriteAnswer): FastifyReply {
  reply.code(a.status);
  for (const [k, v] of Object.entries(a.headers ?? {})) reply.header(k, v);
  if (a.body === undefined) return reply.send();
  return reply.type('application/json; charset=utf-8').send(typeof a.body === 'string' ? a.body : JSON.stringify(a.body));
}

/** Failures a retry may repair: the key is released for it instead of answering the failure again. */
function transient(status: number, code: string): boolean {
  return status >= 500 || status === 429 || code === 'asset-locked' || code === 'hub-idempotency-in-progress';
}

/**
 * Runs a write handler under the request's Idempotency-Key, if it has one. `bytes`: the route
 * streams the request body to the provider (uploads); the handler gets the stream to read.
 */
export async function idempotent(
  deps: IdempotencyDeps, req: FastifyRequest, reply: FastifyReply, bytes: boolean,
  run: (body: Readable) => Promise<WriteAnswer>,
): Promise<FastifyReply> {
  const key = keyOf(req);
  if (key === null) return send(reply, await run(req.raw));
  const p = principalOf(req);
  const scope = `${p.partner.id}\0${p.user.id}`;
  const base = baseFingerprint(req, !bytes);
  const now = deps.clock.now();
  const claim = await deps.store.claim(scope, key, base, now, now + IDEMPOTENCY_TTL_MS);
  if (claim.state === 'running') {
    throw hubError('hub-idempotency-in-progress', `a request with Idempotency-Key ${JSON.stringify(key)} is still running`, { headers: { 'retry-after': '1' } });
  }
  if (claim.state === 'done') {
    const reused = () => hubError('hub-idempotency-key-reused', `Idempotency-Key ${JSON.stringify(key)} was used for a different request; use a new key for a new request`);
    if (claim.fingerprint !== base) throw reused();
    if (bytes && (await drainDigest(req.raw)) !== claim.response.headers[DIGEST]) throw reused();
    const headers = Object.fromEntries(Object.entries(claim.response.headers).filter(([k]) => REPLAYED.includes(k) || k === 'content-type'));
    reply.header('idempotent-replayed', 'true');
    const stored = claim.response.headers[ERROR];
    if (stored !== undefined) {
      const e = JSON.parse(stored) as StoredError;
      throw new HubError(e.code, { message: e.message, details: e.details, status: e.status, headers }, e.provider);
    }
    return send(reply, { status: claim.response.status, headers, body: claim.response.body === '' ? undefined : claim.response.body });
  }
  const body = bytes ? hashed(req.raw) : null;
  let answer: WriteAnswer;
  try {
    answer = await run(body ? body.stream : req.raw);
  } catch (e) {
    const err = toHubError(e);
    // A byte body that failed may not have been read to its end (its digest would not be the
    // request's): the key is released, and a retry meets the same checks again.
    if (bytes || transient(err.status, err.code)) await deps.store.abandon(scope, key).catch(() => {});
    else {
      const kept: StoredError = { code: err.code, message: err.message, details: err.details, status: err.status, provider: err.provider };
      await finish(deps, scope, key, { status: err.status, headers: { ...err.headers, [ERROR]: JSON.stringify(kept) }, body: '' }, body);
    }
    throw e;
  }
  const stored: IdempotentResponse = {
    status: answer.status,
    headers: { ...answer.headers, ...(answer.body === undefined ? {} : { 'content-type': 'application/json; charset=utf-8' }) },
    body: answer.body === undefined ? '' : typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body),
  };
  await finish(deps, scope, key, stored, body);
  return send(reply, { ...answer, body: stored.body === '' ? undefined : stored.body });
}

async function finish(deps: IdempotencyDeps, scope: string, key: string, r: IdempotentResponse, body: { digest(): string } | null): Promise<void> {
  const headers = body ? { ...r.headers, [DIGEST]: body.digest() } : r.headers;
  // If the store fails here the write happened but the client hears 503; its retry writes again
  // (docs/writes.md "Idempotency" says so).
  await deps.store.finish(scope, key, { ...r, headers });
}
