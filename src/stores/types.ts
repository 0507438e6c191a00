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
  createdAt: number;
  updatedAt: number;
}

export type PartnerInput = Omit<Partner, 'id' | 'createdAt' | 'updatedAt'> & { id?: string };
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

export interface Stores {
  partners: PartnerStore;
  users: UserStore;
  sessions: SessionStore;
  replay: ReplayStore;
  logins: LoginStateStore;
  rateLimits: RateLimitStore;
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
