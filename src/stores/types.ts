/**
 * The hub's state lives behind these interfaces. The embedded SQLite store implements all of them;
 * the cluster mode swaps in PostgreSQL/Redis implementations without routes noticing. Every method
 * is async so that networked stores fit; every mutation that must agree with another is one call
 * (rotate, consume, hit) so that implementations can make it atomic.
 */
import type { JSONWebKeySet } from 'jose';
import { HubError } from '../errors.js';

export interface Partner {
  id: string;
  name: string;
  issuer: string;
  audience: string;
  jwksUrl: string | null;
  jwks: JSONWebKeySet | null;
  maxTokenAgeSec: number;
  rateLimitPerMin: number;
  allowedOrigins: string[];
  enabled: boolean;
  /** Whether the partner's users may write (docs/writes.md "Who may write"); off until the operator turns it on. */
  writes: boolean;
  createdAt: number;
  updatedAt: number;
}

export type PartnerInput = Omit<Partner, 'id' | 'createdAt' | 'updatedAt' | 'writes'> & { id?: string; writes?: boolean };
export type PartnerPatch = Partial<Omit<Partner, 'id' | 'createdAt' | 'updatedAt'>>;

export interface PartnerStore {
  list(): Promise<Partner[]>;
  get(id: string): Promise<Partner | null>;
  getByIssuer(issuer: string): Promise<Partner | null>;
  /** Throws StoreConflictError when the id or issuer is taken. */
  create(input: PartnerInput, now: number): Promise<Partner>;
  update(id: string, patch: PartnerPatch, now: number): Promise<Partner | null>;
  /** Removes the partner, its users and their sessions. */
  remove(id: string): Promise<boolean>;
}

export interface UserProfile {
  email: string;
  name: string | null;
  givenName: string | null;
  familyName: string | null;
}

export interface User extends UserProfile {
  id: string;
  partnerId: string;
  sub: string;
  createdAt: number;
  lastSeenAt: number;
}

export interface UserStore {
  /** Just-in-time provisioning keyed by (partner, sub); refreshes the profile on every exchange. */
  upsert(partnerId: string, sub: string, profile: UserProfile, now: number): Promise<User>;
  get(id: string): Promise<User | null>;
  remove(id: string): Promise<boolean>;
}

/** A refresh-token family: one login session, rotated on every refresh. */
export interface Session {
  id: string;
  userId: string;
  partnerId: string;
  currentJti: string;
  previousJti: string | null;
  rotatedAt: number;
  createdAt: number;
  expiresAt: number;
  revokedAt: number | null;
}

export interface SessionStore {
  create(session: Session): Promise<void>;
  get(id: string): Promise<Session | null>;
  /** Compare-and-set: moves current → previous only if current still equals expectedJti. */
  rotate(id: string, expectedJti: string, nextJti: string, now: number, expiresAt: number): Promise<boolean>;
  revoke(id: string, now: number): Promise<void>;
}

export interface ReplayStore {
  /** Records a single-use key; false when it was already recorded and has not expired. */
  remember(key: string, expiresAt: number, now: number): Promise<boolean>;
}

export type LoginStatus = 'pending' | 'completed' | 'failed' | 'cancelled' | 'consumed';

export interface LoginState {
  state: string;
  userId: string;
  partnerId: string;
  providerId: string;
  serverUrl: string | null;
  /** The language its sign-in pages speak (POST /auth/login's uiLocale); null or absent: the browser's. */
  uiLocale?: string | null;
  status: LoginStatus;
  /** Set when completed: what the poll hands out once. */
  result: Record<string, unknown> | null;
  error: string | null;
  createdAt: number;
  expiresAt: number;
}

/** Bounds on pending login states (issue 17): per hub user and over the whole hub. */
export interface LoginCaps {
  perUser: number;
  total: number;
}

/**
 * created, or refused because the user (`user`) or the hub (`total`) already has `caps` pending,
 * unexpired states; `retryAt` is when the earliest of those expires (a slot frees at the latest then).
 */
export type LoginCreateResult = { created: true } | { created: false; limit: 'user' | 'total'; retryAt: number };

export interface LoginStateStore {
  /**
   * Inserts a pending state. With caps, counting the pending unexpired states (at `state.createdAt`)
   * and inserting is one atomic step, so concurrent starts cannot overshoot a cap.
   */
  create(state: LoginState, caps?: LoginCaps): Promise<LoginCreateResult>;
  get(state: string): Promise<LoginState | null>;
  /** pending → completed|failed|cancelled; false if the state was not pending. */
  settle(state: string, status: 'completed' | 'failed' | 'cancelled', result: Record<string, unknown> | null, error: string | null): Promise<boolean>;
  /** completed → consumed, atomically; returns the result exactly once. */
  consume(state: string): Promise<Record<string, unknown> | null>;
}

export interface RateLimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the budget is full again. */
  resetSec: number;
  /** Seconds to wait before the next request is allowed (0 when allowed). */
  retryAfterSec: number;
}

export interface RateLimitStore {
  /** GCRA: `limit` requests per `periodMs`, bursting up to `limit`. */
  hit(key: string, limit: number, periodMs: number, now: number): Promise<RateLimitDecision>;
  /** Gives back one request of an earlier allowed hit (src/stores/gcra.ts gcraRefund). */
  refund(key: string, limit: number, periodMs: number, now: number): Promise<void>;
}

/** A partner's JWKS as fetched (src/auth/jwks-cache.ts). */
export interface JwksEntry {
  jwks: JSONWebKeySet;
  fetchedAt: number;
  /** partner.updatedAt when fetched: an edited registration invalidates the entry. */
  version: number;
}

/**
 * A cache every node shares (Redis in cluster mode): a JWKS one node fetched serves all nodes, so
 * a partner sees one fetch per TTL from the whole cluster, not one per node. Best effort: when it
 * fails the node fetches for itself.
 */
export interface SharedJwksCache {
  get(partnerId: string): Promise<JwksEntry | null>;
  set(partnerId: string, entry: JwksEntry, ttlMs: number): Promise<void>;
}

/**
 * A DAM connection the hub holds for a hub user's MCP sessions (src/mcp/connections.ts), keyed by
 * (user, provider): an assistant cannot carry `provider-authorization` the way a partner app does.
 * The tokens are the hub's own DAM connection tokens, sealed (JWE) by the caller before they get
 * here, so the rows are encrypted at rest; the store treats them as opaque strings.
 */
export interface McpConnection {
  userId: string;
  providerId: string;
  accessToken: string | null;
  refreshToken: string | null;
  /** A DAM login started by connect_provider and not yet collected. */
  pendingState: string | null;
  pendingUrl: string | null;
  updatedAt: number;
}

/**
 * Every write that must agree with what the caller read is one conditional call, so two nodes (or
 * two concurrent tool calls on one node) acting on the same row cannot undo each other's work.
 * Removing the user (or the partner) removes the user's held connections.
 */
export interface McpConnectionStore {
  get(userId: string, providerId: string): Promise<McpConnection | null>;
  /** A sign-in started (creates the row if needed); a held connection stays usable until it completes. */
  startSignIn(userId: string, providerId: string, state: string, url: string, now: number): Promise<void>;
  /**
   * The sign-in `state` collected: sets the tokens, and clears the pending sign-in only while it is
   * still `state` (a newer one started meanwhile stays pending). false: the row was removed meanwhile.
   */
  completeSignIn(userId: string, providerId: string, state: string, accessToken: string, refreshToken: string | null, now: number): Promise<boolean>;
  /** Clears the pending sign-in only while it is still `state`; false when the row moved on (collected, restarted or removed). */
  dropSignIn(userId: string, providerId: string, state: string): Promise<boolean>;
  /**
   * Compare-and-set for a renewed connection: replaces the tokens only while the access token is
   * still `expectedAccessToken`; a pending sign-in is left alone. false: another node renewed it, a
   * sign-in replaced it or it was removed, and the caller's renewal is dropped.
   */
  renew(userId: string, providerId: string, expectedAccessToken: string, accessToken: string, refreshToken: string | null, now: number): Promise<boolean>;
  remove(userId: string, providerId: string): Promise<boolean>;
  /**
   * Takes over rows kept elsewhere (the per-node file of earlier versions). Of two rows for the same
   * (user, provider) the more recently updated one is kept, so importing is idempotent and nodes
   * importing their own files in any order agree; rows of users that no longer exist are skipped.
   * Returns how many rows were written.
   */
  importRows(rows: McpConnection[]): Promise<number>;
}

/**
 * Named mutual exclusion across the nodes (docs/writes.md): the write engine holds the lock of an
 * asset (or folder) while it checks If-Match and writes, so of concurrent writers exactly one wins
 * on every backend. A lock expires after `ttlMs` unless renewed, so a node that dies mid-write does
 * not hold it forever; `release` and `renew` act only with the token `acquire` returned.
 */
export interface WriteLockStore {
  /** The lock's token, or null when another holder has it (the caller waits and tries again). */
  acquire(key: string, ttlMs: number, now: number): Promise<string | null>;
  /** false when the lock expired and someone else took it. */
  renew(key: string, token: string, ttlMs: number, now: number): Promise<boolean>;
  release(key: string, token: string): Promise<void>;
}

/** A finished request kept for Idempotency-Key replays: what was answered. */
export interface IdempotentResponse {
  status: number;
  /** Response headers worth replaying (ETag, Location, Damhub-Asset-Id, content-type). */
  headers: Record<string, string>;
  /** The response body as sent (UTF-8 JSON, or empty). */
  body: string;
}

export type IdempotencyClaim =
  | { state: 'new' }
  /** Claimed by a request still running (on any node). */
  | { state: 'running'; fingerprint: string }
  | { state: 'done'; fingerprint: string; response: IdempotentResponse };

/**
 * Idempotency-Key records (IETF httpapi draft "The Idempotency-Key HTTP Header Field"), scoped by
 * partner + hub user (`scope`) so one user's key never answers another's request. `claim` is one
 * atomic step: the first caller gets `new` and owns the key until `finish` (or `abandon`, when the
 * request failed in a way a retry may repair); the others see `running` or `done`.
 */
export interface IdempotencyStore {
  claim(scope: string, key: string, fingerprint: string, now: number, expiresAt: number): Promise<IdempotencyClaim>;
  finish(scope: string, key: string, response: IdempotentResponse): Promise<void>;
  abandon(scope: string, key: string): Promise<void>;
}

/** One write, as the audit keeps it (docs/writes.md "Audit"). */
export interface AuditEntry {
  /** Epoch ms. */
  at: number;
  requestId: string;
  partnerId: string;
  userId: string;
  providerId: string;
  /** The DAM account (its id as the provider names it), when known. */
  accountId: string | null;
  /** upload, update, rename, move, delete, create-folder, update-folder, delete-folder, lock, unlock. */
  operation: string;
  /** Asset or folder id before and after (a move or rename may change a path-based id). */
  targetId: string | null;
  targetIdAfter: string | null;
  nameBefore: string | null;
  nameAfter: string | null;
  bytes: number | null;
  /** 'ok', or the error code the client got. */
  result: string;
}

export interface AuditQuery {
  since: number;
  until?: number;
  partnerId?: string;
  /** Newest first, at most this many (≤ 1000). */
  limit: number;
  /** Paging: entries strictly older than this (at, requestId) pair. */
  before?: { at: number; requestId: string };
}

export interface AuditStore {
  append(entry: AuditEntry): Promise<void>;
  list(q: AuditQuery): Promise<AuditEntry[]>;
  /** Removes entries older than `before` (the retention, DAMHUB_AUDIT_RETENTION). */
  prune(before: number): Promise<number>;
}

/**
 * An unfinished resumable (tus) upload, kept in the stores so that any node can continue it
 * (cluster mode). The bytes live where `location` says (a part file under the shared data dir, or
 * the provider's own upload session); the record says how far it got.
 */
export interface UploadRecord {
  id: string;
  partnerId: string;
  userId: string;
  providerId: string;
  /** Upload-Length; null while deferred. */
  length: number | null;
  offset: number;
  /** The parsed Upload-Metadata (parentId, name, onConflict, or assetId + ifMatch). */
  metadata: Record<string, string>;
  /** Where the received bytes are (opaque to the store). */
  location: string;
  createdAt: number;
  expiresAt: number;
  /** Set once the upload became an asset: the final answer, replayed to a repeated final PATCH. */
  result: IdempotentResponse | null;
}

export interface UploadStore {
  create(r: UploadRecord): Promise<void>;
  get(id: string): Promise<UploadRecord | null>;
  /** Compare-and-set on the offset: false when another request moved it meanwhile. */
  advance(id: string, expectedOffset: number, offset: number): Promise<boolean>;
  finish(id: string, result: IdempotentResponse): Promise<void>;
  remove(id: string): Promise<boolean>;
  /** Unfinished uploads past their expiry (for the sweeper to remove with their parts). */
  expired(now: number, limit: number): Promise<UploadRecord[]>;
}

export interface Stores {
  partners: PartnerStore;
  users: UserStore;
  sessions: SessionStore;
  replay: ReplayStore;
  logins: LoginStateStore;
  rateLimits: RateLimitStore;
  /** DAM connections held for MCP sessions (durable: SQLite, or PostgreSQL in cluster mode). */
  mcpConnections: McpConnectionStore;
  /** Write locks (Redis in cluster mode). */
  writeLocks: WriteLockStore;
  /** Idempotency-Key records (durable: SQLite, or PostgreSQL in cluster mode). */
  idempotency: IdempotencyStore;
  /** The write audit (SQLite, or PostgreSQL in cluster mode). */
  audit: AuditStore;
  /** Unfinished tus uploads (SQLite, or PostgreSQL in cluster mode). */
  uploads: UploadStore;
  /** Partner JWKS fetched by any node (cluster mode); absent: each node caches its own fetches. */
  jwksCache?: SharedJwksCache;
  /**
   * Called after anything that must end cached authentications: a session revoked, a user
   * removed, a partner changed or removed (on this node or, in cluster mode, on any node).
   */
  onInvalidate(listener: () => void): void;
  /** Cheap reachability probe for /readyz. */
  ping(): Promise<void>;
  /**
   * One probe per backing service for /readyz (e.g. `postgres`, `redis`); stores without it are
   * reported as one `store` check through ping().
   */
  probes?(): Record<string, () => Promise<void>>;
  /** Drops expired replay keys, login states, sessions and rate-limit keys back at a full budget. */
  sweep(now: number): Promise<void>;
  close(): Promise<void>;
}

export class StoreConflictError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StoreConflictError';
  }
}

/**
 * A backing service (PostgreSQL, Redis) did not answer in time or refused the connection. It is a
 * HubError, so a request that meets it answers 503 `hub-unavailable` (safe to retry) without any
 * mapping in the routes.
 */
export class StoreUnavailableError extends HubError {
  constructor(readonly service: string, cause: unknown) {
    super('hub-unavailable', {
      details: `${service} is unavailable: ${(cause as Error)?.message ?? String(cause)}`,
      headers: { 'retry-after': '1' },
      cause,
    });
    this.name = 'StoreUnavailableError';
  }
}
