import type { FastifyInstance, FastifyReply } from 'fastify';
import { applyCors } from './cors.js';

const CSP = "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'";

/**
 * Every response: its request id, nosniff, no referrer leaks and `Vary: Origin` (the CORS answer
 * depends on it), set in the one onRequest hook every request runs (the hottest path: one hook
 * runner step instead of two, no per-request allocations besides the headers themselves). CORS
 * work happens only for requests that carry an Origin header. HTML pages go through sendHtml,
 * which adds the strict CSP.
 */
export function registerSecurityHeaders(app: FastifyInstance): void {
  app.addHook('onRequest', (req, reply, done) => {
    reply.header('x-request-id', req.id);
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'no-referrer');
    reply.header('vary', 'Origin');
    const origin = req.headers.origin;
    if (origin) applyCors(req, reply, origin, done);
    else done();
  });
}

/** An HTML page of the hub's own (sign-in forms, demo): own scripts and styles only, no framing, not cached. */
export function sendHtml(reply: FastifyReply, status: number, html: string | Buffer): FastifyReply {
  return reply
    .code(status)
    .type('text/html; charset=utf-8')
    .headers({ 'content-security-policy': CSP, 'x-frame-options': 'DENY', 'cache-control': 'no-store' })
    .send(html);
}
