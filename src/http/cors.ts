/**
 * CORS for the origins enabled partners registered (plus the hub's own public origin).
 *
 * Hand-written rather than @fastify/cors because it runs on every request: a request without an
 * `Origin` header (every server-to-server call, every same-origin page load, every load test)
 * costs one property read here, where the plugin spreads its options object, reads the route's
 * options twice and allocates two closures per request. Semantics are the plugin's: `Vary: Origin`
 * on every response (set by the caller's header hook), the origin reflected only when allowed,
 * exposed headers on allowed requests, and allowed preflights answered 204 in the hook (before
 * auth, as browsers send no credentials on preflights); a preflight from any other origin falls
 * through to the `OPTIONS *` route, which answers the not-found envelope.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Hub } from '../hub.js';

// The tus headers (resumable uploads, src/routes/uploads.ts) are read and sent by browser clients too.
const TUS_EXPOSED = 'location, etag, damhub-asset-id, tus-resumable, tus-version, tus-extension, tus-max-size, tus-checksum-algorithm, upload-offset, upload-length, upload-metadata, upload-expires';
// The writes' headers (docs/writes.md): browsers send If-Match and Idempotency-Key, and read whether an answer was replayed.
const EXPOSED = `x-request-id, retry-after, ratelimit-limit, ratelimit-remaining, ratelimit-reset, idempotent-replayed, ${TUS_EXPOSED}`;
const PREFLIGHT = {
  'access-control-allow-methods': 'GET, HEAD, POST, PATCH, DELETE',
  'access-control-allow-headers': 'authorization, provider-authorization, content-type, x-request-id, if-match, idempotency-key, tus-resumable, upload-length, upload-offset, upload-metadata, upload-checksum, upload-defer-length',
  'access-control-max-age': '600',
};
/** How long the set of allowed origins is reused before the partner store is read again. */
const ORIGINS_TTL_MS = 2000;

interface OriginCache {
  at: number;
  set: Set<string>;
}
const caches = new WeakMap<Hub, OriginCache>();

async function loadOrigins(hub: Hub): Promise<Set<string>> {
  const set = new Set<string>([new URL(hub.config.publicUrl).origin]);
  for (const p of await hub.stores.partners.list()) if (p.enabled) for (const o of p.allowedOrigins) set.add(o);
  caches.set(hub, { at: Date.now(), set });
  return set;
}

/** The allowed origins: synchronously from a fresh cache, else a promise of a fresh read. */
function allowedOrigins(hub: Hub): Set<string> | Promise<Set<string>> {
  const c = caches.get(hub);
  return c && Date.now() - c.at < ORIGINS_TTL_MS ? c.set : loadOrigins(hub);
}

/**
 * Paths no browser origin is granted, not even a partner's: the admin API (its key must never sit
 * in a partner's page, so a cross-origin call is always a mistake or an attack) and /metrics. A
 * preflight for them falls through to the not-found answer. Lower-cased first: the router matches
 * case-insensitively only if configured so, but a grant must not hinge on that.
 */
const NO_CORS = /^\/(?:api\/v1\/admin(?:[/?]|$)|metrics(?:[/?]|$))/;

/** The path as the router matches it: percent-decoded (it decodes `%61dmin` too), lower-cased. */
function plainPath(url: string): string {
  const p = url.toLowerCase();
  if (!p.includes('%')) return p;
  try {
    return decodeURIComponent(p.split('?')[0]!);
  } catch {
    return p;
  }
}

/** Applies CORS for a request that carries an Origin header; `done` once decided (or the preflight answered). */
export function applyCors(req: FastifyRequest, reply: FastifyReply, origin: string, done: (err?: Error) => void): void {
  if (NO_CORS.test(plainPath(req.url))) return done();
  const decide = (set: Set<string>) => {
    if (!set.has(origin)) return done();
    reply.header('access-control-allow-origin', origin);
    reply.header('access-control-expose-headers', EXPOSED);
    if (req.raw.method === 'OPTIONS') {
      reply.headers(PREFLIGHT).code(204).header('content-length', '0').send();
      return;
    }
    done();
  };
  const set = allowedOrigins(req.server.hub);
  if (set instanceof Set) decide(set);
  else set.then(decide, done);
}

/** The route that lets Fastify accept preflights at all; allowed ones never reach it. */
export function registerCorsRoute(app: FastifyInstance): void {
  app.options('*', { schema: { hide: true } }, (_req, reply) => {
    reply.callNotFound();
  });
}
