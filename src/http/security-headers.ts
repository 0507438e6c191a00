import type { FastifyInstance } from 'fastify';

/**
 * Every response: nosniff and no referrer leaks. HTML pages the hub serves itself (sign-in forms,
 * demo) get a strict CSP: own scripts and styles only, no framing. Swagger UI sets its own.
 */
export function registerSecurityHeaders(app: FastifyInstance): void {
  app.addHook('onSend', (req, reply, payload, done) => {
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'no-referrer');
    const type = String(reply.getHeader('content-type') ?? '');
    if (type.startsWith('text/html') && !req.url.startsWith('/api/v1/docs')) {
      reply.header('content-security-policy', "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'");
      reply.header('x-frame-options', 'DENY');
      reply.header('cache-control', 'no-store');
    }
    done(null, payload);
  });
}
