import path from 'node:path';
import type { ConnectorsConfig } from './providers/kit/define.js';

/** One typed configuration for a hub node; built from flags and environment by the CLI, or by tests directly. */
/** The issuer of MCP users when no OAuth server is configured (`damhub mcp`, local tokens). */
export const LOCAL_MCP_ISSUER = 'urn:damhub:mcp-local';

/** A SaaS connector's OAuth app, as registered at the vendor (docs/connectors.md, "Enabling"). */
export interface OAuthAppConfig {
  clientId: string;
  clientSecret: string | null;
}

/**
 * A connector's vendor origins replaced by name (`authorize`, `token`, `api`, and the connector's
 * own: Dropbox's `content`, Microsoft's `graph`, ...): national clouds, regional endpoints, a stand-in
 * such as a replay server. Names the connector does not know are refused when it is built; the
 * hosts named here are reachable although not public.
 */
export type ConnectorEndpoints = Record<string, string>;

export interface HubConfig {
  host: string;
  port: number;
  /** Where keys, the admin key, the SQLite store and caches live. */
  dataDir: string;
  /** Folder served by the embedded library provider (null: no library). */
  libraryDir: string | null;
  /** Base URL the hub is reached at; used for redirect_uri and signed asset URLs. */
  publicUrl: string;
  /**
   * Reverse proxies (IP addresses, CIDR ranges, `loopback`/`linklocal`/`uniquelocal`) whose
   * X-Forwarded-For gives the client's address (request.ip, the request log); [] believes no one.
   * Never used for URLs: those come from publicUrl alone.
   */
  trustedProxies: string[];
  /** Register the demo partner and serve the demo page. */
  demo: boolean;
  /** Cluster mode (both or neither): PostgreSQL for durable state, Redis for shared short-lived state. */
  databaseUrl: string | null;
  redisUrl: string | null;
  /** Prefix of every Redis key and channel of this hub (several hubs may share one Redis). */
  redisKeyPrefix: string;
  /** Admin bearer key; generated into the data dir when not given. */
  adminKey: string | null;
  /**
   * Bearer token a /metrics scrape must send (`Authorization: Bearer <token>`); null: /metrics is
   * open, for a hub whose port only the orchestrator and the reverse proxy reach.
   */
  metricsToken: string | null;
  bodyLimitBytes: number;
  accessTokenTtlSec: number;
  refreshTokenTtlSec: number;
  refreshGraceSec: number;
  loginStateTtlSec: number;
  /** Lifetime of the DAM connection token (access) and its refresh token. */
  providerTokenTtlSec: number;
  providerRefreshTtlSec: number;
  /** Per-user limit on content calls, per minute (0 disables). */
  userRateLimitPerMin: number;
  /**
   * Sign-in forms (library and connector kit; src/auth/signin-throttle.ts, docs/security.md):
   * failed attempts per account name and per hub user, each refilled over its window (GCRA: the
   * whole budget at once, then one per window/limit), and attempts per login state.
   */
  signInAccountFailures: number;
  signInAccountWindowSec: number;
  signInUserFailures: number;
  signInUserWindowSec: number;
  signInStateAttempts: number;
  /** Login starts (POST /auth/login) per hub user per minute. */
  loginStartsPerMin: number;
  /** Pending, unexpired login states per hub user and over the whole hub. */
  pendingLoginsPerUser: number;
  pendingLoginsTotal: number;
  /** Default exchange limit for partners registered without one. */
  defaultPartnerRateLimitPerMin: number;
  /** Upper bound for a JWKS document fetched from a partner. */
  jwksMaxBytes: number;
  jwksTimeoutMs: number;
  jwksCacheSec: number;
  logLevel: string;
  /**
   * Reference images of search by image fetched from http(s) URLs (net/safe-fetch.ts): host
   * names, IPs or CIDR ranges that may be reached although not public (loopback, private, ...).
   */
  imageFetchAllow: string[];
  imageFetchConnectTimeoutMs: number;
  /** Deadline for the whole fetch, redirects and body included. */
  imageFetchTimeoutMs: number;
  /** Largest reference image, fetched or sent inline. */
  imageMaxBytes: number;
  imageFetchMaxRedirects: number;
  /** Largest declared width × height of a reference image (image bombs). */
  imageMaxPixels: number;
  /**
   * Decode budget of a search-by-image reference, in pixel-equivalents (src/images/budget.ts):
   * what decoding it will really cost given its format and shrink-on-load; over it, 413.
   */
  imageDecodeBudget: number;
  /** The same budget for a file of the library at indexing time (over it: indexed without renditions). */
  imageIndexDecodeBudget: number;
  /** Child processes decoding images (src/images/pool.ts), i.e. decodes at once. */
  imagePoolSize: number;
  /** Decodes that may wait for a free process; one more is 503 hub-unavailable. */
  imagePoolQueue: number;
  /**
   * Memory limit of each decoder process in MiB (RLIMIT_DATA; 0: none, else at least 256): a
   * decoder bomb that gets past the budget fails or dies in its own process, never the machine.
   */
  imageDecoderMemoryMb: number;
  /**
   * Largest declared width × height of any image the hub decodes: library files at indexing
   * time and connector thumbnails (a reference is also held to the lower imageMaxPixels).
   */
  imageIndexMaxPixels: number;
  /** Longest decode of a reference image; the decoder process is killed at it (413). */
  imageDecodeTimeoutMs: number;
  /** Longest decode of a library file at indexing time (the file gets no renditions). */
  imageIndexDecodeTimeoutMs: number;
  /** Disk for connector thumbnails under `<data>/thumbnails/`, least recently used out first (0: no disk cache). */
  thumbnailCacheBytes: number;
  /** Largest original (or vendor rendition) the hub reads to make one connector thumbnail; over it: a generic icon. */
  thumbnailMaxBytes: number;
  /** Longest wait for that body, in ms; a body still running is cut (generic icon). */
  thumbnailTimeoutMs: number;
  /**
   * Reads of originals the hub did not index itself that run at once, over the whole hub (every
   * connector's hub-made thumbnails, the connectors' metadata head reads, reference images fetched
   * by URL; src/net/read-slots.ts). Temp bytes stay ≤ originalReads × thumbnailMaxBytes.
   */
  originalReads: number;
  /** Such reads that may wait for a slot (holding nothing); one more is 503 hub-unavailable + Retry-After. */
  originalReadsQueue: number;
  /** Requests per minute through one connector media link (thumbnail or download grant); 0 disables. */
  mediaRateLimitPerLinkPerMin: number;
  /** Requests per minute through all the media links of one partner's hub user; 0 disables. */
  mediaRateLimitPerUserPerMin: number;
  /** Bytes of serialised browse pages kept for repeated requests (0 disables; src/content/page-cache.ts). */
  pageCacheBytes: number;
  /** The largest upload or new version, in bytes (DAMHUB_MAX_UPLOAD_BYTES; docs/writes.md). */
  maxUploadBytes: number;
  /** File extensions uploads may have (lower case, no dot; DAMHUB_UPLOAD_EXTENSIONS), or null for whatever the provider takes. */
  uploadExtensions: string[] | null;
  /**
   * A CLIP-style ONNX image model (a local file) for search by image in the embedded library;
   * null: the built-in descriptors alone (docs/image-search.md).
   */
  imageModel: string | null;
  /** Weight of the model's cosine in the blended similarity score, 0..1 (1: the model alone). */
  imageModelWeight: number;
  /** Graceful-shutdown budget for draining in-flight requests. */
  shutdownGraceMs: number;
  /** OAuth 2.1 authorization server trusted for /mcp (its issuer) and its JWKS URL; null: /mcp is off over HTTP (docs/mcp.md). */
  mcpIssuer: string | null;
  mcpJwksUrl: string | null;
  /** Deadline of one call into a provider (browse, search, refresh, ...): past it the caller gets 504 integration-unavailable. */
  providerTimeoutMs: number;
  /** OAuth apps of the SaaS connectors by connector id (src/catalog.ts); such a connector is served when its app is configured. */
  oauthApps: Record<string, OAuthAppConfig>;
  /** Replaced vendor origins by connector id (`DAMHUB_<ID>_ENDPOINTS`); absent: the vendor's public ones. */
  connectorEndpoints: Record<string, ConnectorEndpoints>;
  /** Secret PKCE verifiers are derived from; every node of a cluster needs the same (generated into the data dir when not given). */
  oauthPkceSecret: string | null;
  /** Remote connectors to serve, by id, with their upstream overrides (docs/connectors.md); {} = none. */
  connectors: ConnectorsConfig;
  /** Cluster mode: lifetime of the library's indexer lease; its holder renews it every third (docs/library.md). */
  libraryLeaseSec: number;
  /** Cluster mode: the indexer's periodic rescan (a shared folder's changes may not reach its watcher); 0 disables. */
  libraryRescanSec: number;
  /** How long the write audit keeps an entry (days, DAMHUB_AUDIT_RETENTION); older ones go with the periodic sweep. */
  auditRetentionDays: number;
  /**
   * Part files of unfinished resumable (tus) uploads; null: `<dataDir>/uploads`. In cluster mode a
   * directory every node shares (like the library folder), so any node continues an upload.
   */
  uploadDir: string | null;
  /** An unfinished resumable upload expires this long after its creation (410 upload-expired; its parts removed). */
  uploadExpirySec: number;
}

/** Where the part files of resumable uploads go. */
export function uploadDirOf(config: HubConfig): string {
  return config.uploadDir ?? path.join(config.dataDir, 'uploads');
}

/** `90`, `90s`, `15m`, `24h`, `7d` → seconds; null when it is none of these. */
export function parseDurationSec(v: string): number | null {
  const m = /^\s*(\d+)\s*([smhd]?)\s*$/.exec(v);
  if (!m) return null;
  return Number(m[1]) * { '': 1, s: 1, m: 60, h: 3600, d: 86_400 }[m[2] as '' | 's' | 'm' | 'h' | 'd'];
}

/** The public URL of a hub that was given none: where it listens. */
export function defaultPublicUrl(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

export function defaultConfig(overrides: Partial<HubConfig> = {}): HubConfig {
  const host = overrides.host ?? '127.0.0.1';
  const port = overrides.port ?? 8080;
  const base: HubConfig = {
    host,
    port,
    dataDir: path.resolve('.damhub'),
    libraryDir: null,
    publicUrl: defaultPublicUrl(host, port),
    trustedProxies: [],
    demo: false,
    databaseUrl: null,
    redisUrl: null,
    redisKeyPrefix: 'damhub:',
    adminKey: null,
    metricsToken: null,
    bodyLimitBytes: 16 * 1024 * 1024,
    accessTokenTtlSec: 3600,
    refreshTokenTtlSec: 30 * 24 * 3600,
    refreshGraceSec: 60,
    loginStateTtlSec: 300,
    providerTokenTtlSec: 24 * 3600,
    providerRefreshTtlSec: 30 * 24 * 3600,
    userRateLimitPerMin: 1200,
    defaultPartnerRateLimitPerMin: 60,
    signInAccountFailures: 5,
    signInAccountWindowSec: 15 * 60,
    signInUserFailures: 20,
    signInUserWindowSec: 15 * 60,
    signInStateAttempts: 5,
    loginStartsPerMin: 30,
    pendingLoginsPerUser: 10,
    pendingLoginsTotal: 10_000,
    jwksMaxBytes: 64 * 1024,
    jwksTimeoutMs: 5000,
    jwksCacheSec: 600,
    logLevel: 'info',
    imageFetchAllow: [],
    imageFetchConnectTimeoutMs: 3000,
    imageFetchTimeoutMs: 10_000,
    imageMaxBytes: 20 * 1024 * 1024,
    imageFetchMaxRedirects: 3,
    imageMaxPixels: 50_000_000,
    imageDecodeBudget: 64_000_000,
    imageIndexDecodeBudget: 268_402_689,
    imagePoolSize: 2,
    imagePoolQueue: 16,
    imageDecoderMemoryMb: 1024,
    imageIndexMaxPixels: 268_402_689,
    imageDecodeTimeoutMs: 10_000,
    imageIndexDecodeTimeoutMs: 60_000,
    thumbnailCacheBytes: 256 * 1024 * 1024,
    thumbnailMaxBytes: 50 * 1024 * 1024,
    thumbnailTimeoutMs: 20_000,
    // 4 × 50 MiB = 200 MiB of temp files at most (the flood benchmark's target is 256 MiB).
    originalReads: 4,
    originalReadsQueue: 16,
    // A picker scrolling a grid of 200 tiles asks each link once (a retry or two after a 503).
    mediaRateLimitPerLinkPerMin: 30,
    mediaRateLimitPerUserPerMin: 1200,
    pageCacheBytes: 32 * 1024 * 1024,
    maxUploadBytes: 5 * 1024 * 1024 * 1024,
    uploadExtensions: null,
    imageModel: null,
    imageModelWeight: 0.5,
    shutdownGraceMs: 10_000,
    mcpIssuer: null,
    mcpJwksUrl: null,
    providerTimeoutMs: 30_000,
    oauthApps: {},
    connectorEndpoints: {},
    oauthPkceSecret: null,
    connectors: {},
    libraryLeaseSec: 15,
    libraryRescanSec: 60,
    auditRetentionDays: 90,
    uploadDir: null,
    uploadExpirySec: 24 * 3600,
  };
  return { ...base, ...overrides };
}
