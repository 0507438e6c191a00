/**
 * The durable half of the cluster stores: partners, users and refresh-token families in
 * PostgreSQL, shared by every hub node. Semantics mirror the SQLite store exactly (same columns,
 * same compare-and-set rotation, same cascades); what differs is the failure mode: every call has
 * bounded connect and statement timeouts, and a refused, cut or slow connection surfaces as
 * StoreUnavailableError (503 hub-unavailable), never a hang.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import {
  StoreConflictError,
  StoreUnavailableError,
  type McpConnectionStore,
  type Partner,
  type PartnerInput,
  type PartnerPatch,
  type PartnerStore,
  type AuditStore,
  type IdempotencyStore,
  type Session,
  type SessionStore,
  type UploadStore,
  type UserProfile,
  type UserStore,
} from '../types.js';
import { MIGRATION_LOCK_KEY, PG_MIGRATIONS } from './migrations.js';
import { toSession, toUser } from '../rows.js';
import { PgMcpConnections } from './mcp-connections.js';
import { PgAudit, PgIdempotency, PgUploads } from './writes.js';

type Row = Record<string, unknown>;
type Notify = () => void;

export interface PgOptions {
  /** Bound on opening a connection and on waiting for a free one in the pool (ms). */
  connectTimeoutMs?: number;
  /** Server-side statement_timeout and client-side query timeout (ms). */
  statementTimeoutMs?: number;
  /** Pool size per node. */
  maxConnections?: number;
}

// BIGINT (oid 20) holds epoch milliseconds, well inside Number's exact range.
const types = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === 20 ? (v: string) => Number(v) : (pg.types.getTypeParser as (o: number, f?: string) => unknown)(oid, format)) as never,
};

/** SQLSTATE classes that mean "the server or the connection is not usable right now". */
const UNAVAILABLE_CLASSES = /^(08|53|57|58)/;

function isUnavailable(e: unknown): boolean {
  // Our own errors raised inside a transaction (a conflict) are answers, not outages.
  if (e instanceof StoreConflictError || e instanceof StoreUnavailableError) return false;
  const code = (e as { code?: unknown })?.code;
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return UNAVAILABLE_CLASSES.test(code);
  // Everything else pg throws from a query is about the connection: ECONNREFUSED, ECONNRESET,
  // "Connection terminated", "timeout exceeded when trying to connect", "Query read timeout".
  return true;
}

/** A connection that broke under an idempotent read is worth one retry on a fresh connection. */
function isBrokenConnection(e: unknown): boolean {
  const code = (e as { code?: unknown })?.code;
  const msg = (e as Error)?.message ?? '';
  if (/timeout/i.test(msg)) return false; // a slow server gets no second wait
  return code === '57P01' || code === 'ECONNRESET' || code === 'EPIPE' || /terminated/i.test(msg);
}

function wrap(e: unknown): unknown {
  return isUnavailable(e) ? new StoreUnavailableError('postgres', e) : e;
}

export function createPgPool(url: string, o: PgOptions = {}): pg.Pool {
  const statementTimeoutMs = o.statementTimeoutMs ?? 5000;
  const pool = new pg.Pool({
    connectionString: url,
    max: o.maxConnections ?? 10,
    connectionTimeoutMillis: o.connectTimeoutMs ?? 2000,
    idleTimeoutMillis: 30_000,
    statement_timeout: statementTimeoutMs,
    query_timeout: statementTimeoutMs + 1000,
    idle_in_transaction_session_timeout: statementTimeoutMs * 2,
    keepAlive: true,
    application_name: 'damhub',
    types,
  });
  // An idle connection killed by the server (restart, pg_terminate_backend) is dropped from the
  // pool; the next query opens a fresh one. Without a listener the event would crash the process.
  pool.on('error', () => {});
  return pool;
}

/** Applies pending migrations under an advisory lock, so nodes starting together apply each once. */
export async function migratePg(pool: pg.Pool, now = Date.now()): Promise<number[]> {
  return new Db(pool).tx(async (client) => {
    // Migrations may take longer than a request's statement budget.
    await client.query('SET LOCAL statement_timeout = 0');
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)');
    const done = new Set((await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) => r.version));
    const applied: number[] = [];
    for (const m of PG_MIGRATIONS) {
      if (done.has(m.version)) continue;
      await client.query(m.sql);
      await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [m.version, m.name, now]);
      applied.push(m.version);
    }
    return applied;
  });
}

function toPartner(r: Row): Partner {
  return {
    id: r.id as string,
    name: r.name as string,
    issuer: r.issuer as string,
    audience: r.audience as string,
    jwksUrl: (r.jwks_url as string | null) ?? null,
    jwks: (r.jwks as Partner['jwks']) ?? null,
    maxTokenAgeSec: r.max_token_age as number,
    rateLimitPerMin: r.rate_limit as number,
    allowedOrigins: r.allowed_origins as string[],
    enabled: r.enabled === true,
    writes: r.writes === true,
    createdAt: r.created_at as number,
    updatedAt: r.updated_at as number,
  };
}

/** Thin access layer: bounded, classified errors; reads retry once on a connection cut under them. */
export class Db {
  constructor(readonly pool: pg.Pool) {}

  async query(text: string, params: unknown[] = [], idempotent = false): Promise<pg.QueryResult<Row>> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.pool.query<Row>(text, params);
      } catch (e) {
        if (idempotent && attempt === 0 && isBrokenConnection(e)) continue;
        throw wrap(e);
      }
    }
  }

  async tx<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (e) {
      throw wrap(e);
    }
    const onError = () => {};
    client.on('error', onError);
    let broken = false;
    try {
      await client.query('BEGIN');
      const r = await fn(client);
      await client.query('COMMIT');
      return r;
    } catch (e) {
      broken = isUnavailable(e);
      await client.query('ROLLBACK').catch(() => {});
      throw wrap(e);
    } finally {
      client.off('error', onError);
      client.release(broken);
    }
  }
}

const PARTNER_COLS = 'id, name, issuer, audience, jwks_url, jwks, max_token_age, rate_limit, allowed_origins, enabled, writes, created_at, updated_at';

class PgPartners implements PartnerStore {
  constructor(private readonly db: Db, private readonly changed: Notify) {}
  async list() {
    return (await this.db.query(`SELECT ${PARTNER_COLS} FROM partners ORDER BY created_at, id`, [], true)).rows.map(toPartner);
  }
  async get(id: string) {
    const r = (await this.db.query(`SELECT ${PARTNER_COLS} FROM partners WHERE id = $1`, [id], true)).rows[0];
    return r ? toPartner(r) : null;
  }
  async getByIssuer(issuer: string) {
    const r = (await this.db.query(`SELECT ${PARTNER_COLS} FROM partners WHERE issuer = $1`, [issuer], true)).rows[0];
    return r ? toPartner(r) : null;
  }
  async create(p: PartnerInput, now: number) {
    const id = p.id ?? randomUUID();
    try {
      const r = await this.db.query(
        `INSERT INTO partners (${PARTNER_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12) RETURNING ${PARTNER_COLS}`,
        [id, p.name, p.issuer, p.audience, p.jwksUrl, p.jwks ? JSON.stringify(p.jwks) : null, p.maxTokenAgeSec, p.rateLimitPerMin, JSON.stringify(p.allowedOrigins), p.enabled, p.writes ?? false, now],
      );
      return toPartner(r.rows[0]!);
    } catch (e) {
      if ((e as { code?: string }).code === '23505') throw new StoreConflictError(`a partner with id ${id} or issuer ${p.issuer} already exists`);
      throw e;
    }
  }
  async update(id: string, patch: PartnerPatch, now: number) {
    // Read-modify-write under a row lock: two nodes patching different fields both keep theirs.
    const updated = await this.db.tx(async (c) => {
      const cur = (await c.query<Row>(`SELECT ${PARTNER_COLS} FROM partners WHERE id = $1 FOR UPDATE`, [id])).rows[0];
      if (!cur) return null;
      const n = { ...toPartner(cur), ...patch };
      try {
        const r = await c.query<Row>(
          `UPDATE partners SET name=$1, issuer=$2, audience=$3, jwks_url=$4, jwks=$5, max_token_age=$6, rate_limit=$7, allowed_origins=$8, enabled=$9, writes=$10, updated_at=$11
           WHERE id=$12 RETURNING ${PARTNER_COLS}`,
          [n.name, n.issuer, n.audience, n.jwksUrl, n.jwks ? JSON.stringify(n.jwks) : null, n.maxTokenAgeSec, n.rateLimitPerMin, JSON.stringify(n.allowedOrigins), n.enabled, n.writes, now, id],
        );
        return toPartner(r.rows[0]!);
      } catch (e) {
        if ((e as { code?: string }).code === '23505') throw new StoreConflictError(`issuer ${n.issuer} is taken by another partner`);
        throw e;
      }
    });
    if (updated) this.changed();
    return updated;
  }
  async remove(id: string) {
    // ON DELETE CASCADE removes the partner's users and sessions in the same statement.
    const removed = ((await this.db.query('DELETE FROM partners WHERE id = $1', [id])).rowCount ?? 0) > 0;
    if (removed) this.changed();
    return removed;
  }
}

const USER_COLS = 'id, partner_id, sub, email, name, given_name, family_name, created_at, last_seen_at';

class PgUsers implements UserStore {
  constructor(private readonly db: Db, private readonly changed: Notify) {}
  async upsert(partnerId: string, sub: string, p: UserProfile, now: number) {
    const r = await this.db.query(
      `INSERT INTO users (${USER_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)
       ON CONFLICT (partner_id, sub) DO UPDATE SET email = EXCLUDED.email, name = EXCLUDED.name,
         given_name = EXCLUDED.given_name, family_name = EXCLUDED.family_name, last_seen_at = EXCLUDED.last_seen_at
       RETURNING ${USER_COLS}`,
      [randomUUID(), partnerId, sub, p.email, p.name, p.givenName, p.familyName, now],
    );
    return toUser(r.rows[0]!);
  }
  async get(id: string) {
    const r = (await this.db.query(`SELECT ${USER_COLS} FROM users WHERE id = $1`, [id], true)).rows[0];
    return r ? toUser(r) : null;
  }
  async remove(id: string) {
    const removed = ((await this.db.query('DELETE FROM users WHERE id = $1', [id])).rowCount ?? 0) > 0;
    if (removed) this.changed();
    return removed;
  }
}

const SESSION_COLS = 'id, user_id, partner_id, current_jti, previous_jti, rotated_at, created_at, expires_at, revoked_at';

class PgSessions implements SessionStore {
  constructor(private readonly db: Db, private readonly changed: Notify) {}
  async create(s: Session) {
    await this.db.query(
      `INSERT INTO sessions (${SESSION_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [s.id, s.userId, s.partnerId, s.currentJti, s.previousJti, s.rotatedAt, s.createdAt, s.expiresAt, s.revokedAt],
    );
  }
  async get(id: string) {
    const r = (await this.db.query(`SELECT ${SESSION_COLS} FROM sessions WHERE id = $1`, [id], true)).rows[0];
    return r ? toSession(r) : null;
  }
  async rotate(id: string, expectedJti: string, nextJti: string, now: number, expiresAt: number) {
    // Compare-and-set in one statement: of two nodes rotating the same token, exactly one wins.
    const r = await this.db.query(
      `UPDATE sessions SET previous_jti = current_jti, current_jti = $1, rotated_at = $2, expires_at = $3
       WHERE id = $4 AND current_jti = $5 AND revoked_at IS NULL`,
      [nextJti, now, expiresAt, id, expectedJti],
    );
    return r.rowCount === 1;
  }
  async revoke(id: string, now: number) {
    await this.db.query('UPDATE sessions SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2', [now, id]);
    this.changed();
  }
}

/**
 * Partners, users, sessions, held MCP connections and the write engine's durable state in
 * PostgreSQL. `changed` is called after each invalidating write.
 */
export class PgDurableStores {
  readonly partners: PartnerStore;
  readonly users: UserStore;
  readonly sessions: SessionStore;
  readonly mcpConnections: McpConnectionStore;
  readonly idempotency: IdempotencyStore;
  readonly audit: AuditStore;
  readonly uploads: UploadStore;
  private readonly db: Db;
  private closed = false;

  constructor(readonly pool: pg.Pool, changed: Notify) {
    this.db = new Db(pool);
    this.partners = new PgPartners(this.db, changed);
    this.users = new PgUsers(this.db, changed);
    this.sessions = new PgSessions(this.db, changed);
    this.mcpConnections = new PgMcpConnections(this.db);
    this.idempotency = new PgIdempotency(this.db);
    this.audit = new PgAudit(this.db);
    this.uploads = new PgUploads(this.db);
  }

  migrate(now?: number): Promise<number[]> {
    return migratePg(this.pool, now);
  }

  async ping(): Promise<void> {
    await this.db.query('SELECT 1');
  }

  async sweep(now: number): Promise<void> {
    await this.db.query('DELETE FROM sessions WHERE expires_at <= $1 OR revoked_at <= $2', [now, now - 31 * 24 * 3600_000]);
    await this.db.query('DELETE FROM idempotency_keys WHERE expires_at <= $1', [now]);
    // A finished tus upload's record answers a repeated final PATCH until the upload's expiry; then it goes.
    await this.db.query('DELETE FROM uploads WHERE expires_at <= $1 AND result IS NOT NULL', [now]);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }
}
