/**
 * `damhub <command>`: serve | partners add|list|writes|remove | keys rotate | users | index | migrate | mcp | connectors check
 * | backup | restore | audit.
 * Exit codes: 0 success, 1 runtime failure, 2 usage error; errors are one line on stderr.
 */
import fs from 'node:fs';
import path from 'node:path';
import { defaultConfig, parseDurationSec, type HubConfig } from '../config.js';
import { partnerInput, partnerView } from '../auth/partners.js';
import { rotateKeyRing } from '../auth/keys.js';
import { isHubError } from '../errors.js';
import { ClusterStores, clusterMode, openStores, StoreConfigError } from '../stores/index.js';
import { rotateSharedKeys } from '../auth/cluster-secrets.js';
import { connectorEndpointsFromEnv, connectorsFromEnv, oauthAppsFromEnv } from '../catalog.js';
import { migratePg, createPgPool } from '../stores/postgres/index.js';
import { StoreConflictError, type Stores } from '../stores/types.js';
import { ensurePrivateDir } from '../stores/private-files.js';
import { serve } from './serve.js';
import { hasLibraryIndex, indexCommand, openIndex, usersCommand } from './library.js';
import { removeDemoLeftovers } from '../demo/leftovers.js';
import { connectorsCommand } from './connectors-check.js';
import { backupCommand, restoreCommand } from './backup/commands.js';
import { auditCommand } from './audit.js';
import { dataOpt, parse, UsageError } from './args.js';
import { serveEnv, unknownEnvWarnings, type ServeEnvName } from './env-vars.js';
import { AddressPolicy } from '../net/safe-fetch.js';
import { parseTrustedProxies } from '../net/trusted-proxies.js';
import { MIN_DECODER_MEMORY_MB } from '../images/pool.js';
import { runStdio } from '../mcp/stdio.js';
import { claimLibraryRoot, libraryFolder } from '../providers/library/root-marker.js';
import { migrateLibraryPg } from '../providers/library/index/postgres-schema.js';

/** Each command's usage, so that a usage error prints the lines of the command that was run. */
const COMMAND_USAGE: Record<string, string> = {
  serve: `  damhub serve [--host H] [--port P] [--data DIR] [--library DIR] [--demo] [--public-url URL]
               [--database-url URL] [--redis-url URL] [--image-model FILE.onnx]`,
  partners: `  damhub partners add --issuer ISS (--jwks-url URL | --jwks-file FILE) [--audience AUD] [--name N]
               [--max-token-age S] [--rate-limit N] [--origin URL]... [--id ID] [--writes] [--data DIR]
  damhub partners list [--data DIR]
  damhub partners writes ID|ISSUER on|off [--data DIR]
  damhub partners remove ID [--data DIR]

  --writes (or writes on): the partner's users may upload, change and delete (docs/writes.md); off by default.
  partners commands take --database-url URL --redis-url URL (or DATABASE_URL, REDIS_URL) in cluster mode.`,
  users: `  damhub users add NAME [--password-stdin] [--folders PATH,...] [--write-folders PATH,...|/] [--data DIR] [--database-url URL]
  damhub users passwd NAME [--password-stdin] [--data DIR] [--database-url URL]
  damhub users list [--data DIR] [--database-url URL]
  damhub users remove NAME [--data DIR] [--database-url URL]`,
  index: '  damhub index [--library DIR] [--data DIR] [--concurrency N (default 8)] [--database-url URL]',
  keys: '  damhub keys rotate [--data DIR | --database-url URL --redis-url URL]',
  migrate: '  damhub migrate [--database-url URL] [--data DIR]',
  demo: `  damhub demo clean [--data DIR | --database-url URL --redis-url URL]
    removes what demo mode left: the library account demo/demo-password, the demo partner and its key.`,
  mcp: '  damhub mcp --user SUB [--data DIR] [--library DIR] [--public-url URL]   (MCP over stdio; docs/mcp.md)',
  connectors: `  damhub connectors check ID [--server-url URL] [--field NAME=VALUE|NAME=-]... [--fields-file FILE.json]
               [--term WORD] [--folder ID] [--max-assets N] [--max-bytes N] [--timeout S] [--json] [--open]
               [--data DIR] [--host H] [--port P] [--public-url URL]
    read-only checks against a live account (docs/connectors.md); exit 0 all pass, 1 a check failed.
    Secrets: NAME=- reads the next line of stdin; literal password fields need --allow-secret-args.`,
  backup: `  damhub backup --out FILE [--data DIR]
    a consistent copy of the data directory (SQLite stores, keys, secrets, library index) in one tar
    file, made while the hub runs; the file is mode 0600: it holds the hub's keys and secrets.
    Not for cluster mode: use pg_dump (docs/operating.md, "Backup and restore").`,
  restore: `  damhub restore --in FILE [--data DIR]   into a new or empty data directory, all or nothing
  damhub restore --in FILE --check        verify every checksum, write nothing`,
  audit: `  damhub audit [--since 24h|7d|ISO-DATE] [--until TIME] [--partner ID] [--limit N (default 100)] [--json]
               [--data DIR | --database-url URL --redis-url URL]
    the writes made through the hub, newest first (default: the last 24 hours); --json: one JSON object a line.`,
};

const USAGE = `usage:\n${Object.values(COMMAND_USAGE).join('\n')}`;

/** The usage a usage error of `cmd` prints: that command's lines, or all of them for an unknown command. */
export function usageOf(cmd: string | undefined): string {
  const own = cmd ? COMMAND_USAGE[cmd] : undefined;
  return own ? `usage:\n${own}` : USAGE;
}

export async function main(argv: string[]): Promise<number> {
  // Everything a damhub command creates (data dir, stores and their WAL/SHM files, keys, the demo
  // and library caches) is owner-only, whichever command creates it first (src/stores/private-files.ts).
  process.umask(0o077);
  try {
    const [cmd, ...rest] = argv;
    // `damhub partners add --help`: every command and subcommand answers --help (or -h) with its usage.
    if (cmd && COMMAND_USAGE[cmd] && asksForHelp(rest)) {
      process.stdout.write(`${usageOf(cmd)}\n`);
      return 0;
    }
    // A DAMHUB_* variable no command reads is most likely a typo of one that matters (a metrics
    // token spelt DAMHUB_METRIC_TOKEN leaves /metrics open): said on stderr before anything starts.
    if (cmd && COMMAND_USAGE[cmd]) for (const w of unknownEnvWarnings(process.env)) process.stderr.write(`damhub: warning: ${w}\n`);
    switch (cmd) {
      case 'serve':
        return await serveCommand(rest);
      case 'partners':
        return await partnersCommand(rest);
      case 'keys':
        return await keysCommand(rest);
      case 'users':
        return await usersCommand(rest);
      case 'index':
        return await indexCommand(rest);
      case 'migrate':
        return await migrateCommand(rest);
      case 'mcp':
        return await mcpCommand(rest);
      case 'demo':
        return await demoCommand(rest);
      case 'connectors':
        return await connectorsCommand(rest, (values) => configFrom(values));
      case 'backup':
        return await backupCommand(rest);
      case 'restore':
        return await restoreCommand(rest);
      case 'audit':
        return await auditCommand(rest, openStore);
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        process.stdout.write(`${USAGE}\n`);
        return cmd ? 0 : 2;
      default:
        throw new UsageError(`unknown command ${JSON.stringify(cmd)}`);
    }
  } catch (e) {
    if (e instanceof UsageError || e instanceof StoreConfigError || (e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`damhub: ${(e as Error).message}\n${usageOf(argv[0])}\n`);
      return 2;
    }
    const msg = isHubError(e) ? (e.details ?? e.message) : (e as Error).message;
    process.stderr.write(`damhub: ${msg}\n`);
    return 1;
  }
}

/** Whether a command line asks for help: --help or -h among its arguments (before a `--`, after which arguments are values). */
function asksForHelp(args: string[]): boolean {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).some((a) => a === '--help' || a === '-h');
}

/**
 * The public URL as given (--public-url or DAMHUB_PUBLIC_URL), checked: the hub builds every
 * redirect URI, media link and the OpenAPI server from it, and "notaurl" used to be taken as is.
 */
function publicUrlOf(value: string, source: string): string {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw new UsageError(`${source} must be an absolute http(s) URL such as https://hub.example.com, got ${JSON.stringify(value)}`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new UsageError(`${source} must be an http(s) URL such as https://hub.example.com, got ${JSON.stringify(value)}`);
  if (u.username || u.password || u.search || u.hash) throw new UsageError(`${source} must be the hub's address without credentials, query or fragment, got ${JSON.stringify(value)}`);
  return value.replace(/\/+$/, '');
}

/** Flags win over environment variables, which win over defaults. */
export function configFrom(values: Record<string, string | boolean | string[] | undefined>, env: NodeJS.ProcessEnv = process.env): HubConfig {
  // Only the names of src/cli/env-vars.ts can be read here: that list is also what the start-up
  // warning about unknown DAMHUB_* variables and the documentation test check against.
  const read = serveEnv(env);
  const pick = (flag: string, envName: ServeEnvName | 'DATABASE_URL' | 'REDIS_URL') => (values[flag] as string | undefined) ?? (envName.startsWith('DAMHUB_') ? read(envName as ServeEnvName) : env[envName]);
  const port = pick('port', 'DAMHUB_PORT');
  const portNum = port === undefined ? 8080 : Number(port);
  if (!Number.isInteger(portNum) || portNum < 0 || portNum > 65535) throw new UsageError(`--port must be 0..65535, got ${port}`);
  const host = pick('host', 'DAMHUB_HOST') ?? '127.0.0.1';
  const num = (envName: ServeEnvName) => {
    const v = read(envName);
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0) throw new UsageError(`${envName} must be a non-negative number`);
    return n;
  };
  const overrides: Partial<HubConfig> = {
    host,
    port: portNum,
    dataDir: path.resolve(pick('data', 'DAMHUB_DATA_DIR') ?? '.damhub'),
    libraryDir: pick('library', 'DAMHUB_LIBRARY') ? path.resolve(pick('library', 'DAMHUB_LIBRARY')!) : null,
    demo: values.demo === true || read('DAMHUB_DEMO') === '1' || read('DAMHUB_DEMO') === 'true',
    databaseUrl: pick('database-url', 'DATABASE_URL') || null,
    redisUrl: pick('redis-url', 'REDIS_URL') || null,
    redisKeyPrefix: read('DAMHUB_REDIS_PREFIX') || 'damhub:',
    adminKey: read('DAMHUB_ADMIN_KEY') ?? null,
    metricsToken: read('DAMHUB_METRICS_TOKEN') || null,
    logLevel: read('DAMHUB_LOG_LEVEL') ?? 'info',
    oauthApps: oauthAppsFromEnv(env),
    oauthPkceSecret: read('DAMHUB_OAUTH_PKCE_SECRET') || null,
  };
  const publicUrl = pick('public-url', 'DAMHUB_PUBLIC_URL');
  if (publicUrl) overrides.publicUrl = publicUrlOf(publicUrl, values['public-url'] !== undefined ? '--public-url' : 'DAMHUB_PUBLIC_URL');
  const proxies = read('DAMHUB_TRUSTED_PROXIES');
  if (proxies) {
    try {
      overrides.trustedProxies = parseTrustedProxies(proxies);
    } catch (e) {
      throw new UsageError(`DAMHUB_TRUSTED_PROXIES: ${(e as Error).message}`);
    }
  }
  const bodyLimit = num('DAMHUB_BODY_LIMIT');
  if (bodyLimit !== undefined) overrides.bodyLimitBytes = bodyLimit;
  const userLimit = num('DAMHUB_USER_RATE_LIMIT');
  if (userLimit !== undefined) overrides.userRateLimitPerMin = userLimit;
  // Sign-in throttling and login-state bounds (docs/security.md, "Sign-in forms"); all positive integers.
  for (const [envName, field] of [
    ['DAMHUB_SIGNIN_ACCOUNT_FAILURES', 'signInAccountFailures'],
    ['DAMHUB_SIGNIN_ACCOUNT_WINDOW', 'signInAccountWindowSec'],
    ['DAMHUB_SIGNIN_USER_FAILURES', 'signInUserFailures'],
    ['DAMHUB_SIGNIN_USER_WINDOW', 'signInUserWindowSec'],
    ['DAMHUB_SIGNIN_STATE_ATTEMPTS', 'signInStateAttempts'],
    ['DAMHUB_LOGIN_STARTS_PER_MIN', 'loginStartsPerMin'],
    ['DAMHUB_PENDING_LOGINS_PER_USER', 'pendingLoginsPerUser'],
    ['DAMHUB_PENDING_LOGINS_TOTAL', 'pendingLoginsTotal'],
  ] as const) {
    const n = num(envName);
    if (n === undefined) continue;
    if (!Number.isInteger(n) || n < 1) throw new UsageError(`${envName} must be a positive integer`);
    overrides[field] = n;
  }
  const maxUpload = num('DAMHUB_MAX_UPLOAD_BYTES');
  if (maxUpload !== undefined) {
    if (!Number.isSafeInteger(maxUpload) || maxUpload < 1) throw new UsageError('DAMHUB_MAX_UPLOAD_BYTES must be a positive number of bytes');
    overrides.maxUploadBytes = maxUpload;
  }
  const uploadExtensions = read('DAMHUB_UPLOAD_EXTENSIONS');
  if (uploadExtensions !== undefined && uploadExtensions.trim() !== '') {
    const list = uploadExtensions.split(',').map((e) => e.trim().replace(/^\./, '').toLowerCase()).filter(Boolean);
    if (list.some((e) => !/^[a-z0-9][a-z0-9+_-]{0,15}$/.test(e))) throw new UsageError('DAMHUB_UPLOAD_EXTENSIONS must be a comma-separated list of file extensions, such as "jpg,png,pdf"');
    overrides.uploadExtensions = list;
  }
  const pageCacheMb = num('DAMHUB_PAGE_CACHE_MB');
  if (pageCacheMb !== undefined) overrides.pageCacheBytes = Math.round(pageCacheMb * 1024 * 1024);
  const grace = num('DAMHUB_REFRESH_GRACE');
  if (grace !== undefined) overrides.refreshGraceSec = grace;
  const fetchAllow = read('DAMHUB_IMAGE_FETCH_ALLOW');
  if (fetchAllow) {
    overrides.imageFetchAllow = fetchAllow.split(',').map((s) => s.trim()).filter(Boolean);
    try {
      new AddressPolicy(overrides.imageFetchAllow);
    } catch {
      throw new UsageError('DAMHUB_IMAGE_FETCH_ALLOW must be a comma-separated list of host names, IP addresses and CIDR ranges');
    }
  }
  const fetchTimeout = num('DAMHUB_IMAGE_FETCH_TIMEOUT');
  if (fetchTimeout !== undefined) overrides.imageFetchTimeoutMs = fetchTimeout;
  const imageBytes = num('DAMHUB_IMAGE_MAX_BYTES');
  if (imageBytes !== undefined) overrides.imageMaxBytes = imageBytes;
  const imagePixels = num('DAMHUB_IMAGE_MAX_PIXELS');
  if (imagePixels !== undefined) overrides.imageMaxPixels = imagePixels;
  const numbers: [ServeEnvName, keyof HubConfig, number][] = [
    ['DAMHUB_IMAGE_DECODE_BUDGET', 'imageDecodeBudget', 1],
    ['DAMHUB_IMAGE_INDEX_DECODE_BUDGET', 'imageIndexDecodeBudget', 1],
    ['DAMHUB_IMAGE_POOL_SIZE', 'imagePoolSize', 1],
    ['DAMHUB_IMAGE_POOL_QUEUE', 'imagePoolQueue', 0],
    // Each decoder process's memory limit (0: none) and the declared-pixel limit of every decode.
    ['DAMHUB_IMAGE_DECODER_MEMORY_MB', 'imageDecoderMemoryMb', 0],
    ['DAMHUB_IMAGE_INDEX_MAX_PIXELS', 'imageIndexMaxPixels', 1],
    ['DAMHUB_IMAGE_DECODE_TIMEOUT', 'imageDecodeTimeoutMs', 1],
    ['DAMHUB_IMAGE_INDEX_DECODE_TIMEOUT', 'imageIndexDecodeTimeoutMs', 1],
    // Connector thumbnails (docs/connectors.md, "Thumbnails").
    ['DAMHUB_THUMBNAIL_CACHE_BYTES', 'thumbnailCacheBytes', 0],
    ['DAMHUB_THUMBNAIL_MAX_BYTES', 'thumbnailMaxBytes', 1],
    ['DAMHUB_THUMBNAIL_TIMEOUT', 'thumbnailTimeoutMs', 1],
    // Reads of originals the hub did not index, hub-wide, and the media links' rate limits (issue 28).
    ['DAMHUB_ORIGINAL_READS', 'originalReads', 1],
    ['DAMHUB_ORIGINAL_READS_QUEUE', 'originalReadsQueue', 0],
    ['DAMHUB_MEDIA_RATE_LIMIT_PER_LINK', 'mediaRateLimitPerLinkPerMin', 0],
    ['DAMHUB_MEDIA_RATE_LIMIT_PER_USER', 'mediaRateLimitPerUserPerMin', 0],
    // Days the write audit keeps an entry (docs/writes.md "Audit").
    ['DAMHUB_AUDIT_RETENTION', 'auditRetentionDays', 1],
  ];
  for (const [envName, key, min] of numbers) {
    const v = num(envName);
    if (v === undefined) continue;
    if (!Number.isInteger(v) || v < min) throw new UsageError(`${envName} must be an integer of at least ${min}`);
    (overrides as Record<string, unknown>)[key] = v;
  }
  const decoderMb = overrides.imageDecoderMemoryMb;
  if (decoderMb !== undefined && decoderMb > 0 && decoderMb < MIN_DECODER_MEMORY_MB) throw new UsageError(`DAMHUB_IMAGE_DECODER_MEMORY_MB must be 0 (no limit) or at least ${MIN_DECODER_MEMORY_MB}`);
  const leaseSec = num('DAMHUB_LIBRARY_LEASE_SEC');
  if (leaseSec !== undefined) overrides.libraryLeaseSec = leaseSec;
  const rescanSec = num('DAMHUB_LIBRARY_RESCAN_SEC');
  if (rescanSec !== undefined) overrides.libraryRescanSec = rescanSec;
  // Resumable uploads (docs/writes.md): where their parts wait, and how long an unfinished one lives.
  const uploadDir = read('DAMHUB_UPLOAD_DIR');
  if (uploadDir) overrides.uploadDir = path.resolve(uploadDir);
  const expiry = read('DAMHUB_UPLOAD_EXPIRY');
  if (expiry) {
    const sec = parseDurationSec(expiry);
    if (sec === null || sec < 1) throw new UsageError('DAMHUB_UPLOAD_EXPIRY must be a positive duration in seconds, or with a unit: 90s, 30m, 24h, 7d');
    overrides.uploadExpirySec = sec;
  }
  const model = pick('image-model', 'DAMHUB_IMAGE_MODEL');
  if (model) overrides.imageModel = path.resolve(model);
  const weight = num('DAMHUB_IMAGE_MODEL_WEIGHT');
  if (weight !== undefined) {
    if (weight > 1) throw new UsageError('DAMHUB_IMAGE_MODEL_WEIGHT must be between 0 and 1');
    overrides.imageModelWeight = weight;
  }
  const mcpIssuer = read('DAMHUB_MCP_ISSUER');
  if (mcpIssuer) overrides.mcpIssuer = mcpIssuer;
  const mcpJwks = read('DAMHUB_MCP_JWKS_URL');
  if (mcpJwks) overrides.mcpJwksUrl = mcpJwks;
  try {
    overrides.connectors = connectorsFromEnv(env);
    overrides.connectorEndpoints = connectorEndpointsFromEnv(env);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  return defaultConfig(overrides);
}

async function serveCommand(args: string[]): Promise<number> {
  const { values } = parse(args, {
    host: { type: 'string' },
    port: { type: 'string' },
    ...dataOpt,
    library: { type: 'string' },
    demo: { type: 'boolean' },
    'public-url': { type: 'string' },
    'image-model': { type: 'string' },
    'database-url': { type: 'string' },
    'redis-url': { type: 'string' },
  });
  const config = configFrom(values);
  clusterMode(config); // one of the two URLs alone is a usage error
  return serve(config);
}

const clusterOpts = { 'database-url': { type: 'string' }, 'redis-url': { type: 'string' } } as const;

type StoreFlags = { data?: string; 'database-url'?: string; 'redis-url'?: string };

/** The store the partners commands write to: the data dir's SQLite, or the cluster's PostgreSQL + Redis. */
function openStore(values: StoreFlags): Promise<Stores> {
  const dir = path.resolve(values.data ?? process.env.DAMHUB_DATA_DIR ?? '.damhub');
  return openStores({
    dataDir: dir,
    databaseUrl: values['database-url'] || process.env.DATABASE_URL || null,
    redisUrl: values['redis-url'] || process.env.REDIS_URL || null,
  }, { keyPrefix: process.env.DAMHUB_REDIS_PREFIX || 'damhub:' });
}

/** Applies pending schema migrations (PostgreSQL; the SQLite store migrates whenever it is opened). */
async function migrateCommand(args: string[]): Promise<number> {
  const { values } = parse(args, { ...dataOpt, 'database-url': { type: 'string' } });
  const url = values['database-url'] || process.env.DATABASE_URL;
  if (!url) {
    const dir = path.resolve(values.data ?? process.env.DAMHUB_DATA_DIR ?? '.damhub');
    await (await openStores({ dataDir: dir, databaseUrl: null, redisUrl: null })).close();
    process.stdout.write(`SQLite store in ${dir} is up to date\n`);
    return 0;
  }
  const pool = createPgPool(url);
  try {
    const applied = await migratePg(pool);
    // The library's tables too (its index would apply them on first use: src/providers/library/index/postgres-schema.ts).
    await migrateLibraryPg(pool);
    process.stdout.write(applied.length ? `applied migrations ${applied.join(', ')}\n` : 'PostgreSQL schema is up to date\n');
  } finally {
    await pool.end();
  }
  return 0;
}

async function partnersCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === 'add') {
    const { values } = parse(rest, {
      ...dataOpt,
      id: { type: 'string' },
      name: { type: 'string' },
      issuer: { type: 'string' },
      audience: { type: 'string' },
      'jwks-url': { type: 'string' },
      'jwks-file': { type: 'string' },
      'max-token-age': { type: 'string' },
      'rate-limit': { type: 'string' },
      origin: { type: 'string', multiple: true },
      writes: { type: 'boolean' },
      ...clusterOpts,
    });
    if (!values.issuer) throw new UsageError('partners add needs --issuer');
    if (!values['jwks-url'] === !values['jwks-file']) throw new UsageError('partners add needs exactly one of --jwks-url or --jwks-file');
    const intFlag = (name: string, v: string | undefined) => {
      if (v === undefined) return undefined;
      if (!/^\d+$/.test(v)) throw new UsageError(`--${name} must be a positive integer`);
      return Number(v);
    };
    let jwks: unknown;
    if (values['jwks-file']) {
      try {
        jwks = JSON.parse(fs.readFileSync(values['jwks-file'], 'utf8'));
      } catch (e) {
        throw new Error(`cannot read the JWKS file: ${(e as Error).message}`);
      }
    }
    const input = partnerInput({
      id: values.id,
      name: values.name,
      issuer: values.issuer,
      audience: values.audience,
      jwksUrl: values['jwks-url'],
      jwks,
      maxTokenAge: intFlag('max-token-age', values['max-token-age']),
      rateLimit: intFlag('rate-limit', values['rate-limit']),
      allowedOrigins: values.origin,
      writes: values.writes === true,
    }, defaultConfig().defaultPartnerRateLimitPerMin);
    const plain = plainJwksUrl(input.jwksUrl);
    if (plain) process.stderr.write(`damhub: warning: ${plain}\n`);
    const store = await openStore(values);
    try {
      const p = await store.partners.create(input, Date.now());
      process.stdout.write(`${JSON.stringify(partnerView(p), null, 2)}\n`);
    } catch (e) {
      if (e instanceof StoreConflictError) throw new Error(await conflictMessage(store, input.id, input.issuer));
      throw e;
    } finally {
      await store.close();
    }
    return 0;
  }
  if (sub === 'list') {
    const { values } = parse(rest, { ...dataOpt, ...clusterOpts });
    const store = await openStore(values);
    try {
      const partners = await store.partners.list();
      // A header names the columns; an empty store prints nothing, so scripts see no partners.
      // WRITES last: scripts cutting the earlier columns keep working.
      if (partners.length) process.stdout.write('ID\tSTATE\tISSUER\tAUDIENCE\tJWKS\tWRITES\n');
      for (const p of partners) {
        process.stdout.write(`${p.id}\t${p.enabled ? 'enabled' : 'disabled'}\t${p.issuer}\t${p.audience}\t${p.jwksUrl ?? 'inline JWKS'}\t${p.writes ? 'on' : 'off'}\n`);
      }
    } finally {
      await store.close();
    }
    return 0;
  }
  if (sub === 'writes') {
    const { values, positionals } = parse(rest, { ...dataOpt, ...clusterOpts }, true);
    const [which, state] = positionals;
    if (positionals.length !== 2 || (state !== 'on' && state !== 'off')) throw new UsageError('partners writes takes a partner id (or issuer) and on or off');
    const store = await openStore(values);
    try {
      const found = (await store.partners.get(which!)) ?? (await store.partners.getByIssuer(which!));
      const p = found && (await store.partners.update(found.id, { writes: state === 'on' }, Date.now()));
      if (!p) throw new Error(`no partner with id or issuer ${which}: damhub partners list shows them`);
      // Running nodes drop what they cached of the partner (cluster mode; one node's cache lives a second).
      if (store instanceof ClusterStores) await store.redis.publishInvalidate();
      process.stdout.write(`partner ${p.id} (issuer ${p.issuer}): writes ${p.writes ? 'on' : 'off'}\n`);
    } finally {
      await store.close();
    }
    return 0;
  }
  if (sub === 'remove') {
    const { values, positionals } = parse(rest, { ...dataOpt, ...clusterOpts }, true);
    if (positionals.length !== 1) throw new UsageError('partners remove takes one partner id');
    const store = await openStore(values);
    try {
      const id = positionals[0]!;
      const p = await store.partners.get(id);
      if (!p || !(await store.partners.remove(id))) throw new Error(`no partner with id ${id}: damhub partners list shows the ids`);
      process.stdout.write(`removed partner ${p.id} (issuer ${p.issuer}); its tokens stop working at once\n`);
    } finally {
      await store.close();
    }
    return 0;
  }
  throw new UsageError(`unknown partners command ${JSON.stringify(sub ?? '')}`);
}

/**
 * A JWKS URL fetched over plain http, said: whoever is on the network path can replace the keys and
 * sign tokens as the partner. On loopback (a partner on the same machine, development) it is not.
 */
function plainJwksUrl(url: string | null): string | null {
  if (!url) return null;
  const u = new URL(url);
  if (u.protocol !== 'http:') return null;
  const host = u.hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost' || host === '::1' || /^127\./.test(host)) return null;
  return `the JWKS URL ${u.origin} is not https: anyone on the network path between the hub and ${u.host} can replace the partner's keys and sign tokens as it; use an https:// URL (plain http is accepted on loopback only, for development)`;
}

/** Which registration a conflicting `partners add` ran into, with what to do about it. */
async function conflictMessage(store: Stores, id: string | undefined, issuer: string): Promise<string> {
  const byIssuer = await store.partners.getByIssuer(issuer).catch(() => null);
  if (byIssuer) return `a partner with issuer ${issuer} already exists (id ${byIssuer.id}): remove it first with damhub partners remove ${byIssuer.id}, or give another --issuer`;
  return `a partner with id ${id} already exists: give another --id, or remove it first with damhub partners remove ${id}`;
}

async function keysCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'rotate') throw new UsageError(`unknown keys command ${JSON.stringify(sub ?? '')}`);
  const { values } = parse(rest, { ...dataOpt, ...clusterOpts });
  const c = defaultConfig();
  // Keep old keys as long as the longest-lived token they may have made (refresh tokens).
  const retireAfterMs = Math.max(c.refreshTokenTtlSec, c.providerRefreshTtlSec) * 1000 + 86_400_000;
  const store = values['database-url'] || values['redis-url'] || process.env.DATABASE_URL || process.env.REDIS_URL ? await openStore(values) : null;
  if (store instanceof ClusterStores) {
    try {
      const ring = await rotateSharedKeys(store.pg.pool, Date.now(), retireAfterMs);
      // Running nodes reload the shared ring when they hear this.
      await store.redis.publishInvalidate();
      process.stdout.write(`new keys: ${ring.active('sig').kid}, ${ring.active('enc').kid}; running nodes switch to them within seconds\n`);
    } finally {
      await store.close();
    }
    return 0;
  }
  await store?.close();
  const dir = path.resolve(values.data ?? process.env.DAMHUB_DATA_DIR ?? '.damhub');
  ensurePrivateDir(dir);
  const ring = rotateKeyRing(dir, Date.now(), retireAfterMs);
  process.stdout.write(`new keys: ${ring.active('sig').kid}, ${ring.active('enc').kid}; restart the hub to use them\n`);
  return 0;
}

/** MCP over stdio for a local assistant, acting as the hub user --user names (docs/mcp.md). */
async function mcpCommand(args: string[]): Promise<number> {
  const { values } = parse(args, { ...dataOpt, library: { type: 'string' }, user: { type: 'string' }, 'public-url': { type: 'string' }, ...clusterOpts });
  const user = values.user ?? process.env.DAMHUB_MCP_USER;
  if (!user) throw new UsageError('mcp needs --user SUB (or DAMHUB_MCP_USER): the hub user the assistant acts for');
  const config = configFrom(values);
  clusterMode(config);
  if (config.libraryDir) claimLibraryRoot(config.dataDir, libraryFolder(config.libraryDir));
  return runStdio({ ...config, logLevel: 'silent' }, user);
}

/**
 * `damhub demo clean`: removes the demo's library account, partner and key from a data directory
 * (or the cluster's database) that a crashed demo or an older version left them in (src/demo/leftovers.ts).
 */
async function demoCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'clean') throw new UsageError(`unknown demo command ${JSON.stringify(sub ?? '')}`);
  const { values } = parse(rest, { ...dataOpt, ...clusterOpts });
  const dataDir = path.resolve(values.data ?? process.env.DAMHUB_DATA_DIR ?? '.damhub');
  const cluster = Boolean(values['database-url'] || process.env.DATABASE_URL);
  const store = await openStore(values);
  // The library's accounts: the cluster's PostgreSQL, or the data dir's SQLite index when there is one.
  const library = cluster || hasLibraryIndex(values.data) ? await openIndex(values) : null;
  try {
    const removed = await removeDemoLeftovers({ dataDir, partners: store.partners, library: library?.index ?? null });
    process.stdout.write(removed.length ? removed.map((r) => `removed ${r}\n`).join('') : 'no demo account, partner or key found\n');
    // Running nodes drop what they cached of the removed partner (cluster mode).
    if (store instanceof ClusterStores) await store.redis.publishInvalidate();
  } finally {
    await library?.close();
    await store.close();
  }
  return 0;
}
