/** Liveness, readiness and Prometheus metrics (outside /api/v1, unauthenticated, for orchestrators). */
import type { FastifyInstance } from 'fastify';
import client from 'prom-client';

export function registerOps(app: FastifyInstance): void {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry, prefix: 'damhub_' });
  const requests = new client.Counter({ name: 'damhub_http_requests_total', help: 'HTTP requests by route and status', labelNames: ['method', 'route', 'status'], registers: [registry] });
  const duration = new client.Histogram({
    name: 'damhub_http_request_duration_seconds',
    help: 'HTTP request duration by route',
    labelNames: ['method', 'route'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });

  // Label children are cached per route/status: prom-client would otherwise hash the labels on every request.
  const counters = new Map<string, ReturnType<typeof requests.labels>>();
  const timers = new Map<string, ReturnType<typeof duration.labels>>();
  app.addHook('onResponse', (req, reply, done) => {
    // The route pattern, not the URL, so ids and tokens never become label values.
    const route = req.routeOptions.url ?? 'unmatched';
    const key = `${req.method} ${route}`;
    const ckey = `${key} ${reply.statusCode}`;
    let c = counters.get(ckey);
    if (!c) counters.set(ckey, (c = requests.labels({ method: req.method, route, status: String(reply.statusCode) })));
    c.inc();
    let h = timers.get(key);
    if (!h) timers.set(key, (h = duration.labels({ method: req.method, route })));
    h.observe(reply.elapsedTime / 1000);
    done();
  });

  app.get('/healthz', { logLevel: 'warn', schema: { hide: true } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { logLevel: 'warn', schema: { hide: true } }, async (_req, reply) => {
    const checks: Record<string, string> = {};
    let ok = true;
    // One check per backing service (postgres, redis in cluster mode; store for SQLite), in parallel.
    const stores = app.hub.stores;
    const probes = stores.probes?.() ?? { store: () => stores.ping() };
    await Promise.all(Object.entries(probes).map(async ([name, probe]) => {
      try {
        await withTimeout(probe(), 2000);
        checks[name] = 'ok';
      } catch (e) {
        ok = false;
        checks[name] = `down: ${(e as { details?: string }).details ?? (e as Error).message}`;
      }
    }));
    return reply.code(ok ? 200 : 503).send({ status: ok ? 'ready' : 'unavailable', checks });
  });

  app.get('/metrics', { logLevel: 'warn', schema: { hide: true } }, async (_req, reply) =>
    reply.type(registry.contentType).send(await registry.metrics()));
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let t: NodeJS.Timeout;
  return Promise.race([p, new Promise<never>((_, rej) => { t = setTimeout(() => rej(new Error(`no answer in ${ms} ms`)), ms); })]).finally(() => clearTimeout(t));
}
