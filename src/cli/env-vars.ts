/**
 * Every `DAMHUB_*` environment variable damhub knows: the one list configFrom reads through (its
 * reader takes only these names, so a variable read without being listed does not compile), the
 * one the start-up warning checks the environment against (a typo such as DAMHUB_METRIC_TOKEN used
 * to be ignored in silence), and the one the documentation test compares the docs with
 * (test/cli/env-vars.test.ts: each documented variable is listed and changes what it documents).
 * The per-connector names (`DAMHUB_<ID>_CLIENT_ID`, ...) come from the catalog's connector ids.
 */
import { connectorEnvPrefix, oauthConnectors, vendorConnectors } from '../catalog.js';

/** Read by `damhub serve` (and the commands sharing its configuration: mcp, connectors check, index). */
export const SERVE_ENV = [
  'DAMHUB_HOST', 'DAMHUB_PORT', 'DAMHUB_DATA_DIR', 'DAMHUB_LIBRARY', 'DAMHUB_PUBLIC_URL', 'DAMHUB_TRUSTED_PROXIES', 'DAMHUB_DEMO',
  'DAMHUB_REDIS_PREFIX', 'DAMHUB_ADMIN_KEY', 'DAMHUB_METRICS_TOKEN', 'DAMHUB_LOG_LEVEL', 'DAMHUB_OAUTH_PKCE_SECRET',
  'DAMHUB_BODY_LIMIT', 'DAMHUB_USER_RATE_LIMIT', 'DAMHUB_REFRESH_GRACE',
  'DAMHUB_SIGNIN_ACCOUNT_FAILURES', 'DAMHUB_SIGNIN_ACCOUNT_WINDOW', 'DAMHUB_SIGNIN_USER_FAILURES', 'DAMHUB_SIGNIN_USER_WINDOW',
  'DAMHUB_SIGNIN_STATE_ATTEMPTS', 'DAMHUB_LOGIN_STARTS_PER_MIN', 'DAMHUB_PENDING_LOGINS_PER_USER', 'DAMHUB_PENDING_LOGINS_TOTAL',
  'DAMHUB_PAGE_CACHE_MB', 'DAMHUB_MAX_UPLOAD_BYTES', 'DAMHUB_UPLOAD_EXTENSIONS',
  'DAMHUB_IMAGE_FETCH_ALLOW', 'DAMHUB_IMAGE_FETCH_TIMEOUT', 'DAMHUB_IMAGE_MAX_BYTES', 'DAMHUB_IMAGE_MAX_PIXELS',
  'DAMHUB_IMAGE_DECODE_BUDGET', 'DAMHUB_IMAGE_INDEX_DECODE_BUDGET', 'DAMHUB_IMAGE_POOL_SIZE', 'DAMHUB_IMAGE_POOL_QUEUE',
  'DAMHUB_IMAGE_DECODE_TIMEOUT', 'DAMHUB_IMAGE_INDEX_DECODE_TIMEOUT', 'DAMHUB_IMAGE_MODEL', 'DAMHUB_IMAGE_MODEL_WEIGHT',
  'DAMHUB_IMAGE_DECODER_MEMORY_MB', 'DAMHUB_IMAGE_INDEX_MAX_PIXELS',
  'DAMHUB_THUMBNAIL_CACHE_BYTES', 'DAMHUB_THUMBNAIL_MAX_BYTES', 'DAMHUB_THUMBNAIL_TIMEOUT',
  'DAMHUB_ORIGINAL_READS', 'DAMHUB_ORIGINAL_READS_QUEUE', 'DAMHUB_MEDIA_RATE_LIMIT_PER_LINK', 'DAMHUB_MEDIA_RATE_LIMIT_PER_USER',
  'DAMHUB_LIBRARY_LEASE_SEC', 'DAMHUB_LIBRARY_RESCAN_SEC',
  'DAMHUB_UPLOAD_DIR', 'DAMHUB_UPLOAD_EXPIRY',
  'DAMHUB_MCP_ISSUER', 'DAMHUB_MCP_JWKS_URL',
  'DAMHUB_AUDIT_RETENTION',
  // Read by the catalog (src/catalog.ts connectorsFromEnv), from the same environment.
  'DAMHUB_CONNECTORS', 'DAMHUB_CONNECTOR_ALLOW_HOSTS', 'DAMHUB_CONNECTOR_TIMEOUT_MS',
] as const;

/** Read by one other command: `users add|passwd` (the password), `mcp` (the hub user). */
export const COMMAND_ENV = ['DAMHUB_USER_PASSWORD', 'DAMHUB_MCP_USER'] as const;

/**
 * Read by the repository's tooling, never by the hub: the test suite, the benchmarks, the CI audit
 * and `npm start`. Known, so that a hub started by them (they pass their environment on) does not
 * warn about them.
 */
export const TOOLING_ENV = [
  'DAMHUB_TEST_DATABASE_URL', 'DAMHUB_TEST_REDIS_URL', 'DAMHUB_TEST_LIBRARY_INDEX', 'DAMHUB_FIGURES', 'DAMHUB_FUZZ_RUNS',
  'DAMHUB_BENCH_CPU_PROF', 'DAMHUB_AUDIT_REQUIRED', 'DAMHUB_AUDIT_ALLOWLIST', 'DAMHUB_START_SKIP_BUILD', 'DAMHUB_TEST_CONCURRENCY',
] as const;

export type ServeEnvName = (typeof SERVE_ENV)[number];

/** The per-connector names: an OAuth app (`_CLIENT_ID`, `_CLIENT_SECRET`) and replaced vendor origins (`_ENDPOINTS`). */
export function connectorEnvNames(): string[] {
  return [
    ...oauthConnectors().flatMap((id) => [`${connectorEnvPrefix(id)}CLIENT_ID`, `${connectorEnvPrefix(id)}CLIENT_SECRET`]),
    ...vendorConnectors().map((id) => `${connectorEnvPrefix(id)}ENDPOINTS`),
  ];
}

export function knownEnvNames(): string[] {
  return [...SERVE_ENV, ...COMMAND_ENV, ...TOOLING_ENV, ...connectorEnvNames()];
}

/** A reader of the environment that takes only listed names. */
export function serveEnv(env: NodeJS.ProcessEnv): (name: ServeEnvName) => string | undefined {
  return (name) => env[name];
}

/**
 * One line per `DAMHUB_*` variable of `env` that damhub does not know, with the closest known name
 * when one is close (a typo), for the start of a command to print on stderr.
 */
export function unknownEnvWarnings(env: NodeJS.ProcessEnv): string[] {
  const known = knownEnvNames();
  const set = new Set(known);
  const out: string[] = [];
  for (const name of Object.keys(env).filter((n) => n.startsWith('DAMHUB_')).sort()) {
    if (set.has(name)) continue;
    const near = closest(name, known);
    out.push(`unknown environment variable ${name}${near ? ` (did you mean ${near}?)` : ''}: it is ignored (README.md "Configuration" lists the variables)`);
  }
  return out;
}

/** The known name nearest to `name` by edit distance, if it is within a third of its length (at most 4). */
function closest(name: string, known: string[]): string | null {
  let best: string | null = null;
  let bestD = Math.min(4, Math.floor(name.length / 3));
  for (const k of known) {
    const d = editDistance(name, k, bestD);
    if (d <= bestD && (best === null || d < bestD)) {
      best = k;
      bestD = d;
    }
  }
  return best;
}

/** Levenshtein distance, stopping early once every path exceeds `max` (returns max + 1 then). */
function editDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const v = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      cur.push(v);
      rowMin = Math.min(rowMin, v);
    }
    if (rowMin > max) return max + 1;
    prev = cur;
  }
  return prev[b.length]!;
}
