/**
 * Cross-cutting authentication: each route declares `config.auth` and one preHandler hook does
 * the rest, so no handler parses a header itself.
 *   none     — public (health, docs, login poll, signed media URLs check their own signature)
 *   access   — a live hub session (Authorization)
 *   content  — a hub session plus a DAM connection (provider-authorization), rate-limited per user
 *   admin    — the admin bearer key
 *   partner  — the exchange route verifies the partner JWT itself
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { HubPrincipal } from '../auth/sessions.js';
import { hubError } from '../errors.js';
import type { Hub } from '../hub.js';
import type { ProviderSession } from '../providers/contract.js';
import type { Partner, RateLimitDecision } from '../stores/types.js';
import { bearer } from '../auth/exchange.js';

export type AuthMode = 'none' | 'access' | 'content' | 'admin' | 'partner';

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: AuthMode;
  }
  interface FastifyRequest {
    principal: HubPrincipal | null;
    dam: ProviderSession | null;
  }
  interface FastifyInstance {
    hub: Hub;
  }
}

/** The principal of an `access`/`content` route; the hook guarantees it is set. */
export function principalOf(req: FastifyRequest): HubPrincipal {
  if (!req.principal) throw hubError('hub-internal-error', 'route is missing auth config');
  return req.principal;
}

export function damOf(req: FastifyRequest): ProviderSession {
  if (!req.dam) throw hubError('hub-internal-error', 'route is missing content auth config');
  return req.dam;
}

/** Compares secrets in constant time regardless of their lengths. */
export function secretEquals(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}

const hubOrigins = new WeakMap<Hub, string>();

/**
 * CORS per partner: a browser request (it carries Origin) made with a partner's credentials must
 * come from an origin that partner registered (or the hub's own pages). The CORS hook only knows
 * the union of all partners' origins; this check, once the partner is known, narrows it.
 */
export function checkOrigin(req: FastifyRequest, partner: Partner): void {
  const origin = req.headers.origin;
  if (!origin || partner.allowedOrigins.includes(origin)) return;
  const hub = req.server.hub;
  let own = hubOrigins.get(hub);
  if (own === undefined) hubOrigins.set(hub, (own = new URL(hub.config.publicUrl).origin));
  if (origin !== own) throw hubError('hub-access-denied', `origin check: ${origin} is not an origin partner ${partner.id} registered`);
}

export function applyRateLimitHeaders(reply: FastifyReply, d: RateLimitDecision): void {
  reply.header('RateLimit-Limit', String(d.limit));
  reply.header('RateLimit-Remaining', String(d.remaining));
  reply.header('RateLimit-Reset', String(d.resetSec));
}

export function rateLimited(d: RateLimitDecision, what: string) {
  return hubError('hub-rate-limited', `${what}: limit of ${d.limit} per minute reached; retry in ${d.retryAfterSec} s`, {
    headers: {
      'Retry-After': String(d.retryAfterSec),
      'RateLimit-Limit': String(d.limit),
      'RateLimit-Remaining': '0',
      'RateLimit-Reset': String(d.resetSec),
    },
  });
}

export function registerAuth(app: FastifyInstance): void {
  app.decorateRequest('principal', null);
  app.decorateRequest('dam', null);
  // The check is attached per route at definition time, so public routes pay nothing.
  app.addHook('onRoute', (route) => {
    const mode = route.config?.auth ?? 'none';
    if (mode === 'none' || mode === 'partner') return;
    const check = checks[mode];
    const existing = route.preHandler ? (Array.isArray(route.preHandler) ? route.preHandler : [route.preHandler]) : [];
    route.preHandler = [check, ...existing];
  });
}

type AsyncCheck = (this: FastifyInstance, req: FastifyRequest, reply: FastifyReply) => Promise<void>;
type CallbackCheck = (this: FastifyInstance, req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => void;

const checks: { admin: AsyncCheck; access: CallbackCheck; content: AsyncCheck } = {
  async admin(req) {
    const key = bearer(req.headers.authorization);
    if (!key) throw hubError('hub-access-token-missing', 'send "Authorization: Bearer <admin key>"');
    if (!secretEquals(key, req.server.hub.adminKey)) throw hubError('hub-access-denied', 'admin key check failed');
  },
  access(req, _reply, done) {
    // Synchronous on a cache hit: no promise per request on the most frequent call.
    const sessions = req.server.hub.sessions;
    const hit = sessions.cached(req.headers.authorization);
    const admit = (p: HubPrincipal) => {
      req.principal = p;
      if (req.headers.origin) {
        try {
          checkOrigin(req, p.partner);
        } catch (e) {
          return done(e as Error);
        }
      }
      done();
    };
    if (hit) return admit(hit);
    sessions.authenticate(req.headers.authorization).then(admit, done);
  },
  async content(req, reply) {
    const hub = req.server.hub;
    const principal = await hub.sessions.authenticate(req.headers.authorization);
    req.principal = principal;
    if (req.headers.origin) checkOrigin(req, principal.partner);
    const limit = hub.config.userRateLimitPerMin;
    if (limit > 0) {
      const d = await hub.stores.rateLimits.hit(`user:${principal.user.id}`, limit, 60_000, hub.clock.now());
      if (!d.allowed) throw rateLimited(d, 'content calls of this user');
      applyRateLimitHeaders(reply, d);
    }
    const auth = req.headers['provider-authorization'];
    req.dam = await hub.connections.open(Array.isArray(auth) ? auth[0] : auth, { userId: principal.user.id, partnerId: principal.partner.id, writes: principal.partner.writes });
  },
};
