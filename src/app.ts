/**
 * Builds the Fastify instance for a Hub. The CLI and the tests both call buildApp, so what is
 * tested is what runs.
 */
import swagger from '@fastify/swagger';
import { DOCS_LOGO, favicon } from './http/favicon.js';
import { polishDocument, transformRoute } from './http/openapi.js';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import type { Hub } from './hub.js';
import { registerAuth } from './http/auth.js';
import { guardSlowConnections } from './http/connection-guard.js';
import { registerCorsRoute } from './http/cors.js';
import { lazyChildLogger } from './http/lazy-logger.js';
import { registerErrorHandling, rejections } from './http/errors.js';
import { clientErrorHandler, frameworkErrors } from './http/framework-errors.js';
import { registerOps } from './http/ops.js';
import { genReqId } from './http/request-id.js';
import { SHARED_SCHEMAS } from './http/schemas.js';
import type { PageCache } from './content/page-cache.js';
import { registerSecurityHeaders } from './http/security-headers.js';
import { adminRoutes } from './routes/admin.js';
import { assetRoutes } from './routes/assets.js';
import { writeRoutes } from './routes/writes.js';
import { authRoutes } from './routes/auth.js';
import { assetOpsOf } from './routes/content.js';
import { demoRoutes } from './routes/demo.js';
import { systemRoutes } from './routes/system.js';
import { uploadRoutes } from './routes/uploads.js';
import { mcpRoutes } from './mcp/http.js';

export const API_PREFIX = '/api/v1';
/** A connection with no bytes moving either way for this long is closed. */
const SLOW_CONNECTION_MS = 60_000;

declare module 'fastify' {
  interface FastifyInstance {
    /** Serialised browse pages, shared by the REST routes and the MCP tools (src/content/page-cache.ts). */
    pageCache: PageCache;
  }
}

export interface AppOptions {
  logger?: FastifyServerOptions['logger'];
}

/**
 * Log lines carry method, path, request id and the client's address; never query strings (login
 * states, URL signatures) or headers (tokens). The address is request.ip: the socket's, or behind
 * a proxy of DAMHUB_TRUSTED_PROXIES the client that proxy saw (src/net/trusted-proxies.ts).
 */
const logSerializers = {
  req(req: { method: string; url: string; id: string; ip?: string }) {
    return { method: req.method, path: req.url.split('?')[0], id: req.id, ip: req.ip };
  },
};

/**
 * One log line per request at info, when it is answered, carrying method, path, status, time and
 * request id: Fastify's default is two ("incoming request", then "request completed"), twice the
 * log volume for nothing. A route's logLevel (e.g. /healthz at warn) still keeps probes out.
 */
class OneLinePerRequest extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) reply.log.error({ req: request, res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
    else reply.log.info({ req: request, res: reply, responseTime: reply.elapsedTime, ...rejections.get(request) }, 'request completed');
  }
}

export async function buildApp(hub: Hub, opts: AppOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: opts.logger === undefined ? { level: hub.config.logLevel, serializers: logSerializers } : opts.logger,
    genReqId,
    // Request loggers are created when something is logged, not for every request.
    childLoggerFactory: lazyChildLogger as FastifyServerOptions["childLoggerFactory"],
    requestIdHeader: false,
    // X-Forwarded-For from the configured proxies only; false: request.ip is the socket's address.
    // Fastify's request.hostname and request.protocol would then follow X-Forwarded-Host/-Proto
    // too: the hub never reads them (its URLs come from config.publicUrl alone).
    trustProxy: hub.config.trustedProxies.length > 0 ? hub.config.trustedProxies : false,
    bodyLimit: hub.config.bodyLimitBytes,
    // Bounded waits: a slow client cannot hold a connection forever (slowloris). Header and
    // request deadlines are Node's; no bytes moving for 60 s is guardSlowConnections below
    // (a per-socket timeout would re-arm a timer on every read and write).
    requestTimeout: 120_000,
    keepAliveTimeout: 10_000,
    forceCloseConnections: 'idle',
    return503OnClosing: true,
    routerOptions: { maxParamLength: 2048, ignoreTrailingSlash: true },
    logController: new OneLinePerRequest(),
    frameworkErrors,
    clientErrorHandler,
    ajv: { customOptions: { coerceTypes: 'array', removeAdditional: false, useDefaults: true } },
  });
  app.decorate('hub', hub);
  // What the connectors log (an upstream they could not reach) goes to this app's log.
  hub.connectorLog.attach(app.log);
  guardSlowConnections(app.server, SLOW_CONNECTION_MS);
  app.decorate('pageCache', assetOpsOf(hub).pageCache);

  registerErrorHandling(app);
  registerSecurityHeaders(app);
  registerAuth(app);
  registerOps(app);
  for (const s of SHARED_SCHEMAS) app.addSchema(s);

  registerCorsRoute(app);

  await app.register(swagger, {
    // Shared schemas appear in components under their $id (ErrorEnvelope), not def-N.
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) },
    transform: transformRoute as never,
    transformObject: ((d: { openapiObject?: unknown }) => polishDocument(d.openapiObject as Record<string, unknown>)) as never,
    openapi: {
      openapi: '3.1.0',
      info: { title: 'damhub API', version: '1.0.0', description: 'One read-only contract over many DAM systems. See docs/ in the repository.' },
      servers: [{ url: hub.config.publicUrl }],
      components: {
        securitySchemes: {
          HubAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'hub access token from /auth/exchangeToken' },
          ProviderAuth: { type: 'apiKey', in: 'header', name: 'provider-authorization', description: '"Bearer <DAM connection token>" from the DAM login' },
          PartnerJwt: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'partner-signed RS256 JWT' },
          AdminKey: { type: 'http', scheme: 'bearer', description: 'admin key from configuration or <data>/admin.key' },
        },
      },
    },
  });
  // The reference page gets a CSP too (the plugin's, with no framing) like every HTML page of the hub.
  await app.register(swaggerUi, { routePrefix: `${API_PREFIX}/docs`, staticCSP: true,
    // Swagger UI adds <style> elements as it renders (its syntax highlighter), which the plugin's
    // policy refused (a CSP error on every page view): inline styles are allowed on this page,
    // scripts stay 'self' only. No stylesheet from elsewhere is needed, so `https:` goes.
    transformStaticCSP: (h) => h.replace("frame-ancestors 'self'", "frame-ancestors 'none'").replace(/style-src 'self' https:/, "style-src 'self' 'unsafe-inline'"),
    // damhub's name, logo and icon on the page instead of Swagger UI's.
    theme: { title: 'damhub API reference', favicon: [{ filename: 'favicon.ico', rel: 'icon', sizes: '32x32', type: 'image/x-icon', content: await favicon() }] },
    logo: { type: 'image/svg+xml', content: Buffer.from(DOCS_LOGO), href: `${API_PREFIX}/docs` },
    uiConfig: { docExpansion: 'list', deepLinking: true },
  });

  await app.register(async (api) => {
    await api.register(authRoutes);
    await api.register(systemRoutes);
    await api.register(assetRoutes);
    await api.register(writeRoutes);
    await api.register(adminRoutes);
    await api.register(uploadRoutes);
    api.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
    for (const p of hub.providers.list()) {
      const routes = p.routes?.bind(p);
      if (routes) await api.register(async (scope) => routes(scope, hub.damLogin));
    }
  }, { prefix: API_PREFIX });

  app.get('/favicon.ico', { logLevel: 'warn', schema: { hide: true } }, async (_req, reply) =>
    reply.type('image/x-icon').header('cache-control', 'public, max-age=86400').send(await favicon()));
  if (hub.config.demo) await app.register(demoRoutes);
  await app.register(mcpRoutes);
  return app;
}
