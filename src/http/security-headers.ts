import type { FastifyInstance, FastifyReply } from 'fastify';

const CSP = "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'";

/**
 * Every response: its request id, nosniff and no referrer leaks, set in one callback-style hook
 * (it runs on the hottest path). HTML pages go through sendHtml, which adds the strict CSP.
 */
export function registerSecurityHeaders(app: FastifyInstance): void {
  app.addHook('onRequest', (req, reply, done) => {
    reply.headers({ 'x-request-id': req.id, 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer' });
    done();
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
