/**
 * The embedded store: one SQLite file in the data directory (WAL mode), holding everything the hub
 * must not lose across a restart. better-sqlite3 is synchronous and in-process, so each method is a
 * handful of microseconds; the async signatures exist for the networked stores of the cluster mode.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { Database } from './driver.js';
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { gcra, gcraRefund } from '../gcra.js';
import { MIGRATIONS } from './migrations.js';
import { toMcpConnection, toSession, toUser } from '../rows.js';
import {
  StoreConflictError,
  type LoginCaps,
  type LoginCreateResult,
  type LoginState,
  type LoginStateStore,
  type McpConnection,
  type McpConnectionStore,
  type Partner,
  type PartnerInput,
  type PartnerPatch,
  type PartnerStore,
  type RateLimitStore,
  type ReplayStore,
  type Session,
  type SessionStore,
  type Stores,
  type UserProfile,
  type UserStore,
} from '../types.js';

import { privateSqliteFile } from '../private-files.js';
import { SqliteAudit, SqliteIdempotency, SqliteUploads, SqliteWriteLocks } from './writes.js';
import type { AuditStore, IdempotencyStore, UploadStore, WriteLockStore } from '../types.js';

type Row = Record<string, unknown>;

export function openSqlite(file: string): BetterSqlite3.Database {
  privateSqliteFile(file);
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  migrate(db);
  return db;
}

function migrate(db: BetterSqlite3.Database): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)');
  const applied = new Set((db.prepare('SELECT version FROM schema_migrations').all() as { version: number }[]).map((r) => r.version));
  for (const m of MIGRATIONS) {
    if (applied.has(m.version)) continue;
    db.transaction(() => {
      db.exec(m.sql);
      db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(m.version, Date.now());
    })();
  }
}

function toPartner(r: Row): Partner {
  return {
    id: r.id as string,
    name: r.name as string,
    issuer: r.issuer as string,
    audience: r.audience as string,
    jwksUrl: (r.jwks_url as string | null) ?? null,
    jwks: r.jwks ? JSON.parse(r.jwks as string) : null,
    maxTokenAgeSec: r.max_token_age as number,
    rateLimitPerMin: r.rate_limit as number,
    allowedOrigins: JSON.parse(r.allowed_origins as string),
    enabled: r.enabled === 1,
    writes: r.writes === 1,
    createdAt: r.created_at as number,
    updatedAt: r.updated_at as number,
  };
}

function toLogin(r: Row): LoginState {
  return {
    state: r.state as string,
    userId: r.user_id as string,
    partnerId: r.partner_id as string,
    providerId: r.provider_id as string,
    serverUrl: (r.server_url as string | null) ?? null,
    uiLocale: (r.ui_locale as string | null) ?? null,
    status: r.status as LoginState['status'],
    result: r.result ? JSON.parse(r.result as string) : null,
    error: (r.error as string | null) ?? null,
    createdAt: r.created_at as number,
    expiresAt: r.expires_at as number,
  };
}

type Notify = () => void;

class SqlitePartners implements PartnerStore {
  private readonly byId;
  private readonly byIssuer;
  constructor(private readonly db: BetterSqlite3.Database, private readonly changed: Notify) {
    this.byId = db.prepare('SELECT * FROM partners WHERE id = ?');
    this.byIssuer = db.prepare('SELECT * FROM partners WHERE issuer = ?');
  }
  async list() {
    return (this.db.prepare('SELECT * FROM partners ORDER BY created_at, id').all() as Row[]).map(toPartner);
  }
  async get(id: string) {
    const r = this.byId.get(id) as Row | undefined;
    return r ? toPartner(r) : null;
  }
  async getByIssuer(issuer: string) {
    const r = this.byIssuer.get(issuer) as Row | undefined;
    return r ? toPartner(r) : null;
  }
  async create(p: PartnerInput, now: number) {
    const id = p.id ?? randomUUID();
    try {
      this.db
        .prepare(
          `INSERT INTO partners (id, name, issuer, audience, jwks_url, jwks, max_token_age, rate_limit, allowed_origins, enabled, writes, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(id, p.name, p.issuer, p.audience, p.jwksUrl, p.jwks ? JSON.stringify(p.jwks) : null, p.maxTokenAgeSec, p.rateLimitPerMin, JSON.stringify(p.allowedOrigins), p.enabled ? 1 : 0, p.writes ? 1 : 0, now, now);
    } catch (e) {
      if ((e as { code?: string }).code?.startsWith('SQLITE_CONSTRAINT')) throw new StoreConflictError(`a partner with id ${id} or issuer ${p.issuer} already exists`);
      throw e;
    }
    return (await this.get(id))!;
  }
  async update(id: string, patch: PartnerPatch, now: number) {
    const cur = await this.get(id);
    if (!cur) return null;
    const n = { ...cur, ...patch };
    try {
      this.db
        .prepare(
          `UPDATE partners SET name=?, issuer=?, audience=?, jwks_url=?, jwks=?, max_token_age=?, rate_limit=?, allowed_origins=?, enabled=?, writes=?, updated_at=? WHERE id=?`,
        )
        .run(n.name, n.issuer, n.audience, n.jwksUrl, n.jwks ? JSON.stringify(n.jwks) : null, n.maxTokenAgeSec, n.rateLimitPerMin, JSON.stringify(n.allowedOrigins), n.enabled ? 1 : 0, n.writes ? 1 : 0, now, id);
    } catch (e) {
      if ((e as { code?: string }).code?.startsWith('SQLITE_CONSTRAINT')) throw new StoreConflictError(`issuer ${n.issuer} is taken by another partner`);
      throw e;
    }
    this.changed();
    return this.get(id);
  }
  async remove(id: string) {
    // ON DELETE CASCADE removes the partner's users, sessions, pending logins and held MCP connections in the same transaction.
    const removed = this.db.prepare('DELETE FROM partners WHERE id = ?').run(id).changes > 0;
    if (removed) this.changed();
    return removed;
  }
}

class SqliteUsers implements UserStore {
  private readonly byId;
  private readonly upsertStmt;
  constructor(private readonly db: BetterSqlite3.Database, private readonly changed: Notify) {
    this.byId = db.prepare('SELECT * FROM users WHERE id = ?');
    this.upsertStmt = db.prepare(
      `INSERT INTO users (id, partner_id, sub, email, name, given_name, family_name, created_at, last_seen_at)
       VALUES (@id, @partnerId, @sub, @email, @name, @givenName, @familyName, @now, @now)
       ON CONFLICT (partner_id, sub) DO UPDATE SET email=excluded.email, name=excluded.name,
         given_name=excluded.given_name, family_name=excluded.family_name, last_seen_at=excluded.last_seen_at
       RETURNING *`,
    );
  }
  async upsert(partnerId: string, sub: string, p: UserProfile, now: number) {
    return toUser(this.upsertStmt.get({ id: randomUUID(), partnerId, sub, ...p, now }) as Row);
  }
  async get(id: string) {
    const r = this.byId.get(id) as Row | undefined;
    return r ? toUser(r) : null;
  }
  async remove(id: string) {
    const removed = this.db.prepare('DELETE FROM users WHERE id = ?').run(id).changes > 0;
    if (removed) this.changed();
    return removed;
  }
}

class SqliteSessions implements SessionStore {
  private readonly byId;
  private readonly rotateStmt;
  constructor(private readonly db: BetterSqlite3.Database, private readonly changed: Notify) {
    this.byId = db.prepare('SELECT * FROM sessions WHERE id = ?');
    this.rotateStmt = db.prepare(
      `UPDATE sessions SET previous_jti = current_jti, current_jti = ?, rotated_at = ?, expires_at = ?
       WHERE id = ? AND current_jti = ? AND revoked_at IS NULL`,
    );
  }
  async create(s: Session) {
    this.db
      .prepare(
        `INSERT INTO sessions (id, user_id, partner_id, current_jti, previous_jti, rotated_at, created_at, expires_at, revoked_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(s.id, s.userId, s.partnerId, s.currentJti, s.previousJti, s.rotatedAt, s.createdAt, s.expiresAt, s.revokedAt);
  }
  async get(id: string) {
    const r = this.byId.get(id) as Row | undefined;
    return r ? toSession(r) : null;
  }
  async rotate(id: string, expectedJti: string, nextJti: string, now: number, expiresAt: number) {
    return this.rotateStmt.run(nextJti, now, expiresAt, id, expectedJti).changes === 1;
  }
  async revoke(id: string, now: number) {
    this.db.prepare('UPDATE sessions SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?').run(now, id);
    this.changed();
  }
}

class SqliteReplay implements ReplayStore {
  private readonly insert;
  constructor(db: BetterSqlite3.Database) {
    // A stale row (expired key) is overwritten; a live one makes the insert a no-op.
    this.insert = db.prepare(
      `INSERT INTO replay_keys (key, expires_at) VALUES (?, ?)
       ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at WHERE replay_keys.expires_at <= ?`,
    );
  }
  async remember(key: string, expiresAt: number, now: number) {
    return this.insert.run(key, expiresAt, now).changes === 1;
  }
}

class SqliteLogins implements LoginStateStore {
  private readonly consumeTx;
  private readonly createTx;
  constructor(private readonly db: BetterSqlite3.Database) {
    // Read and flip in one immediate transaction: two pollers can never both get the tokens.
    this.consumeTx = db.transaction((state: string) => {
      const r = db.prepare(`SELECT result FROM login_states WHERE state = ? AND status = 'completed'`).get(state) as { result: string | null } | undefined;
      if (!r) return null;
      db.prepare(`UPDATE login_states SET status = 'consumed', result = NULL WHERE state = ?`).run(state);
      return r.result ? (JSON.parse(r.result) as Record<string, unknown>) : {};
    });
    const insert = db.prepare(
      `INSERT INTO login_states (state, user_id, partner_id, provider_id, server_url, ui_locale, status, result, error, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    // Pending and unexpired: a state past its expiry no longer takes a slot, whether swept yet or not.
    const userPending = db.prepare(`SELECT COUNT(*) AS n, MIN(expires_at) AS first FROM login_states WHERE user_id = ? AND status = 'pending' AND expires_at > ?`);
    const allPending = db.prepare(`SELECT COUNT(*) AS n, MIN(expires_at) AS first FROM login_states WHERE status = 'pending' AND expires_at > ?`);
    // Count and insert in one immediate transaction: two starts (or two processes) cannot both take the last slot.
    this.createTx = db.transaction((s: LoginState, caps?: LoginCaps): LoginCreateResult => {
      if (caps) {
        const u = userPending.get(s.userId, s.createdAt) as { n: number; first: number | null };
        if (u.n >= caps.perUser) return { created: false, limit: 'user', retryAt: u.first ?? s.createdAt };
        const t = allPending.get(s.createdAt) as { n: number; first: number | null };
        if (t.n >= caps.total) return { created: false, limit: 'total', retryAt: t.first ?? s.createdAt };
      }
      insert.run(s.state, s.userId, s.partnerId, s.providerId, s.serverUrl, s.uiLocale ?? null, s.status, s.result ? JSON.stringify(s.result) : null, s.error, s.createdAt, s.expiresAt);
      return { created: true };
    });
  }
  async create(s: LoginState, caps?: LoginCaps): Promise<LoginCreateResult> {
    return this.createTx.immediate(s, caps);
  }
  async get(state: string) {
    const r = this.db.prepare('SELECT * FROM login_states WHERE state = ?').get(state) as Row | undefined;
    return r ? toLogin(r) : null;
  }
  async settle(state: string, status: 'completed' | 'failed' | 'cancelled', result: Record<string, unknown> | null, error: string | null) {
    return (
      this.db
        .prepare(`UPDATE login_states SET status = ?, result = ?, error = ? WHERE state = ? AND status = 'pending'`)
        .run(status, result ? JSON.stringify(result) : null, error, state).changes === 1
    );
  }
  async consume(state: string) {
    return this.consumeTx.immediate(state);
  }
}

class SqliteRateLimits implements RateLimitStore {
  private readonly refundTx;
  private readonly read;
  private readonly write;
  private readonly tx;
  constructor(db: BetterSqlite3.Database) {
    this.read = db.prepare('SELECT tat FROM rate_limits WHERE key = ?');
    this.write = db.prepare('INSERT INTO rate_limits (key, tat) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET tat = excluded.tat');
    this.tx = db.transaction((key: string, limit: number, periodMs: number, now: number) => {
      const row = this.read.get(key) as { tat: number } | undefined;
      const { decision, tat } = gcra(row?.tat ?? null, limit, periodMs, now);
      if (decision.allowed || (row && tat !== row.tat)) this.write.run(key, tat);
      return decision;
    });
    const drop = db.prepare('DELETE FROM rate_limits WHERE key = ?');
    this.refundTx = db.transaction((key: string, limit: number, periodMs: number, now: number) => {
      const row = this.read.get(key) as { tat: number } | undefined;
      const tat = gcraRefund(row?.tat ?? null, limit, periodMs, now);
      if (tat === null) drop.run(key);
      else this.write.run(key, tat);
    });
  }
  async hit(key: string, limit: number, periodMs: number, now: number) {
    return this.tx.immediate(key, limit, periodMs, now);
  }
  async refund(key: string, limit: number, periodMs: number, now: number) {
    this.refundTx.immediate(key, limit, periodMs, now);
  }
}

class SqliteMcpConnections implements McpConnectionStore {
  private readonly byKey;
  private readonly importTx;
  constructor(private readonly db: BetterSqlite3.Database) {
    this.byKey = db.prepare('SELECT * FROM mcp_connections WHERE user_id = ? AND provider_id = ?');
    // The newer row wins; a row of a user who no longer exists is skipped (it could never be read).
    const importOne = db.prepare(
      `INSERT INTO mcp_connections (user_id, provider_id, access_token, refresh_token, pending_state, pending_url, updated_at)
       SELECT @userId, @providerId, @accessToken, @refreshToken, @pendingState, @pendingUrl, @updatedAt WHERE EXISTS (SELECT 1 FROM users WHERE id = @userId)
       ON CONFLICT (user_id, provider_id) DO UPDATE SET access_token = excluded.access_token, refresh_token = excluded.refresh_token,
         pending_state = excluded.pending_state, pending_url = excluded.pending_url, updated_at = excluded.updated_at
       WHERE mcp_connections.updated_at < excluded.updated_at`,
    );
    this.importTx = db.transaction((rows: McpConnection[]) => rows.reduce((n, r) => n + importOne.run(r).changes, 0));
  }
  async get(userId: string, providerId: string) {
    const r = this.byKey.get(userId, providerId) as Row | undefined;
    return r ? toMcpConnection(r) : null;
  }
  async startSignIn(userId: string, providerId: string, state: string, url: string, now: number) {
    this.db
      .prepare(
        `INSERT INTO mcp_connections (user_id, provider_id, access_token, refresh_token, pending_state, pending_url, updated_at)
         VALUES (?, ?, NULL, NULL, ?, ?, ?)
         ON CONFLICT (user_id, provider_id) DO UPDATE SET pending_state = excluded.pending_state, pending_url = excluded.pending_url, updated_at = excluded.updated_at`,
      )
      .run(userId, providerId, state, url, now);
  }
  async completeSignIn(userId: string, providerId: string, state: string, accessToken: string, refreshToken: string | null, now: number) {
    return (
      this.db
        .prepare(
          `UPDATE mcp_connections SET access_token = @accessToken, refresh_token = @refreshToken, updated_at = @now,
             pending_url = CASE WHEN pending_state = @state THEN NULL ELSE pending_url END,
             pending_state = CASE WHEN pending_state = @state THEN NULL ELSE pending_state END
           WHERE user_id = @userId AND provider_id = @providerId`,
        )
        .run({ userId, providerId, state, accessToken, refreshToken, now }).changes === 1
    );
  }
  async dropSignIn(userId: string, providerId: string, state: string) {
    return (
      this.db
        .prepare('UPDATE mcp_connections SET pending_state = NULL, pending_url = NULL WHERE user_id = ? AND provider_id = ? AND pending_state = ?')
        .run(userId, providerId, state).changes === 1
    );
  }
  async renew(userId: string, providerId: string, expectedAccessToken: string, accessToken: string, refreshToken: string | null, now: number) {
    return (
      this.db
        .prepare('UPDATE mcp_connections SET access_token = ?, refresh_token = ?, updated_at = ? WHERE user_id = ? AND provider_id = ? AND access_token = ?')
        .run(accessToken, refreshToken, now, userId, providerId, expectedAccessToken).changes === 1
    );
  }
  async remove(userId: string, providerId: string) {
    return this.db.prepare('DELETE FROM mcp_connections WHERE user_id = ? AND provider_id = ?').run(userId, providerId).changes === 1;
  }
  async importRows(rows: McpConnection[]) {
    return this.importTx.immediate(rows);
  }
}

export class SqliteStores implements Stores {
  readonly partners: PartnerStore;
  readonly users: UserStore;
  readonly sessions: SessionStore;
  readonly replay: ReplayStore;
  readonly logins: LoginStateStore;
  readonly rateLimits: RateLimitStore;
  readonly mcpConnections: McpConnectionStore;
  readonly writeLocks: WriteLockStore;
  readonly idempotency: IdempotencyStore;
  readonly audit: AuditStore;
  readonly uploads: UploadStore;

  private readonly events = new EventEmitter();

  constructor(readonly db: BetterSqlite3.Database) {
    const changed = () => this.events.emit('invalidate');
    this.partners = new SqlitePartners(db, changed);
    this.users = new SqliteUsers(db, changed);
    this.sessions = new SqliteSessions(db, changed);
    this.replay = new SqliteReplay(db);
    this.logins = new SqliteLogins(db);
    this.rateLimits = new SqliteRateLimits(db);
    this.mcpConnections = new SqliteMcpConnections(db);
    this.writeLocks = new SqliteWriteLocks(db);
    this.idempotency = new SqliteIdempotency(db);
    this.audit = new SqliteAudit(db);
    this.uploads = new SqliteUploads(db);
  }

  static open(file: string): SqliteStores {
    return new SqliteStores(openSqlite(file));
  }

  onInvalidate(listener: () => void) {
    this.events.on('invalidate', listener);
  }

  async ping() {
    this.db.prepare('SELECT 1').get();
  }

  async sweep(now: number) {
    this.db.transaction(() => {
      this.db.prepare('DELETE FROM replay_keys WHERE expires_at <= ?').run(now);
      // Settled or expired login states are kept an hour past expiry so a late poll still hears "expired".
      this.db.prepare('DELETE FROM login_states WHERE expires_at <= ?').run(now - 3600_000);
      this.db.prepare('DELETE FROM sessions WHERE expires_at <= ? OR revoked_at <= ?').run(now, now - 31 * 24 * 3600_000);
      // A TAT at or before now is a full budget, the same as no row: keys named after guessed
      // account names (the sign-in throttle) must not pile up.
      this.db.prepare('DELETE FROM rate_limits WHERE tat <= ?').run(now);
      this.db.prepare('DELETE FROM write_locks WHERE expires_at <= ?').run(now);
      this.db.prepare('DELETE FROM idempotency_keys WHERE expires_at <= ?').run(now);
      // A finished tus upload's record answers a repeated final PATCH until the upload's expiry; then it goes.
      this.db.prepare('DELETE FROM uploads WHERE expires_at <= ? AND result IS NOT NULL').run(now);
    })();
  }

  async close() {
    if (this.db.open) this.db.close();
  }
}
