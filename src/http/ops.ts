/**
 * Liveness, readiness and Prometheus metrics (outside /api/v1, for orchestrators). /healthz and
 * /readyz are unauthenticated; /metrics asks for the bearer token DAMHUB_METRICS_TOKEN when one is
 * configured, because route names, request counts and process figures tell an outsider what the
 * hub serves and how busy it is.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import client from 'prom-client';
import { hubError } from '../errors.js';
import { bearer } from '../auth/exchange.js';
import { secretEquals } from './auth.js';

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** Counts of one route and method: requests by status, and the duration histogram (per bucket, not cumulative). */
interface RouteStats {
  method: string;
  route: string;
  byStatus: Map<number, number>;
  buckets: Float64Array;
  sum: number;
  count: number;
}

/**
 * HTTP request metrics recorded on the hot path with plain arithmetic on a per-route record, and
 * rendered into Prometheus series only when /metrics is scraped. prom-client's labelled
 * Counter/Histogram hash their label set on every inc()/observe() even for a cached child; at tens
 * of thousands of requests a second that is measurable, a scrape every 15 s is not.
 */
class HttpMetrics {
  /** Keyed by the route's config object (one per route, stable for the server's life). */
  private readonly byRoute = new WeakMap<object, Record<string, RouteStats>>();
  private readonly all: RouteStats[] = [];
  private readonly unmatched = {};

  record(config: object | undefined, url: string | undefined, method: string, status: number, seconds: number): void {
    const key = config ?? this.unmatched;
    let perMethod = this.byRoute.get(key);
    if (!perMethod) this.byRoute.set(key, (perMethod = Object.create(null) as Record<string, RouteStats>));
    let s = perMethod[method];
    if (!s) {
      // The route pattern, not the URL, so ids and tokens never become label values.
      s = { method, route: url ?? 'unmatched', byStatus: new Map(), buckets: new Float64Array(BUCKETS.length + 1), sum: 0, count: 0 };
      perMethod[method] = s;
      this.all.push(s);
    }
    s.byStatus.set(status, (s.byStatus.get(status) ?? 0) + 1);
    let i = 0;
    while (i < BUCKETS.length && seconds > BUCKETS[i]!) i++;
    s.buckets[i]!++;
    s.sum += seconds;
    s.count++;
  }

  /** Series of routes that share a pattern and method (a route registered twice under one pattern) are merged. */
  private merged(): RouteStats[] {
    const m = new Map<string, RouteStats>();
    for (const s of this.all) {
      const k = `${s.method} ${s.route}`;
      const t = m.get(k);
      if (!t) {
        m.set(k, { ...s, byStatus: new Map(s.byStatus), buckets: Float64Array.from(s.buckets) });
        continue;
      }
      for (const [st, n] of s.byStatus) t.byStatus.set(st, (t.byStatus.get(st) ?? 0) + n);
      s.buckets.forEach((n, i) => (t.buckets[i]! += n));
      t.sum += s.sum;
      t.count += s.count;
    }
    return [...m.values()];
  }

  /** Metric objects in prom-client's shape, so one registry renders them with the default metrics. */
  register(registry: client.Registry): void {
    const counter = {
      name: 'damhub_http_requests_total',
      help: 'HTTP requests by route and status',
      type: 'counter',
      aggregator: 'sum',
      get: async () => ({
        name: counter.name, help: counter.help, type: counter.type, aggregator: counter.aggregator,
        values: this.merged().flatMap((s) => [...s.byStatus].map(([status, n]) => ({ labels: { method: s.method, route: s.route, status: String(status) }, value: n }))),
      }),
    };
    const histogram = {
      name: 'damhub_http_request_duration_seconds',
      help: 'HTTP request duration by route',
      type: 'histogram',
      aggregator: 'sum',
      get: async () => ({
        name: histogram.name, help: histogram.help, type: histogram.type, aggregator: histogram.aggregator,
        values: this.merged().flatMap((s) => {
          const labels = { method: s.method, route: s.route };
          let acc = 0;
          const out = BUCKETS.map((le, i) => ({ labels: { le, ...labels }, value: (acc += s.buckets[i]!), metricName: `${histogram.name}_bucket` }));
          out.push({ labels: { le: '+Inf' as unknown as number, ...labels }, value: s.count, metricName: `${histogram.name}_bucket` });
          return [...out, { labels, value: s.sum, metricName: `${histogram.name}_sum` }, { labels, value: s.count, metricName: `${histogram.name}_count` }] as { labels: Record<string, string | number>; value: number; metricName: string }[];
        }),
      }),
    };
    registry.registerMetric(counter as unknown as client.Metric);
    registry.registerMetric(histogram as unknown as client.Metric);
  }
}

export function registerOps(app: FastifyInstance): void {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry, prefix: 'damhub_' });
  const http = new HttpMetrics();
  http.register(registry);

  app.addHook('onResponse', (req, reply, done) => {
    const route = req.routeOptions;
    http.record(route.config, route.url, req.method, reply.statusCode, reply.elapsedTime / 1000);
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

  const token = app.hub.config.metricsToken;
  app.get('/metrics', { logLevel: 'warn', schema: { hide: true } }, async (req, reply) => {
    if (token) checkMetricsToken(req, token);
    return reply.type(registry.contentType).send(await registry.metrics());
  });
}

/** The scrape's bearer token against the configured one, in constant time (SHA-256 of both sides). */
function checkMetricsToken(req: FastifyRequest, token: string): void {
  const given = bearer(req.headers.authorization);
  if (!given) throw hubError('hub-access-token-missing', 'send "Authorization: Bearer <DAMHUB_METRICS_TOKEN>" to read /metrics', { headers: { 'www-authenticate': 'Bearer realm="metrics"' } });
  if (!secretEquals(given, token)) throw hubError('hub-access-denied', 'metrics token check failed');
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let t: NodeJS.Timeout;
  return Promise.race([p, new Promise<never>((_, rej) => { t = setTimeout(() => rej(new Error(`no answer in ${ms} ms`)), ms); })]).finally(() => clearTimeout(t));
}
