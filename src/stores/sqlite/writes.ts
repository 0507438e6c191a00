/**
 * The write engine's state in the embedded store (docs/writes.md): write locks, Idempotency-Key
 * records, the audit and unfinished tus uploads. One SQLite file serves one node, so a lock here
 * is a row with a token and an expiry, taken in one statement.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { toAuditEntry } from '../rows.js';
import type {
  AuditEntry, AuditQuery, AuditStore, IdempotencyClaim, IdempotencyStore, IdempotentResponse, UploadRecord, UploadStore, WriteLockStore,
} from '../types.js';

type Row = Record<string, unknown>;

export class SqliteWriteLocks implements WriteLockStore {
  private readonly take;
  constructor(private readonly db: BetterSqlite3.Database) {
    // Taken when free or expired: one statement, so two callers cannot both get it.
    this.take = db.prepare(
      `INSERT INTO write_locks (key, token, expires_at) VALUES (@key, @token, @expires)
       ON CONFLICT (key) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at WHERE write_locks.expires_at <= @now`,
    );
  }
  async acquire(key: string, ttlMs: number, now: number) {
    const token = randomUUID();
    return this.take.run({ key, token, expires: now + ttlMs, now }).changes === 1 ? token : null;
  }
  async renew(key: string, token: string, ttlMs: number, now: number) {
    return this.db.prepare('UPDATE write_locks SET expires_at = ? WHERE key = ? AND token = ?').run(now + ttlMs, key, token).changes === 1;
  }
  async release(key: string, token: string) {
    this.db.prepare('DELETE FROM write_locks WHERE key = ? AND token = ?').run(key, token);
  }
}

export class SqliteIdempotency implements IdempotencyStore {
  constructor(private readonly db: BetterSqlite3.Database) {}
  async claim(scope: string, key: string, fingerprint: string, now: number, expiresAt: number): Promise<IdempotencyClaim> {
    return this.db.transaction((): IdempotencyClaim => {
      const r = this.db.prepare('SELECT * FROM idempotency_keys WHERE scope = ? AND key = ? AND expires_at > ?').get(scope, key, now) as Row | undefined;
      if (r) {
        if (r.status === null) return { state: 'running', fingerprint: r.fingerprint as string };
        return { state: 'done', fingerprint: r.fingerprint as string, response: { status: r.status as number, headers: JSON.parse(r.headers as string), body: r.body as string } };
      }
      this.db.prepare(
        `INSERT INTO idempotency_keys (scope, key, fingerprint, status, headers, body, created_at, expires_at) VALUES (?, ?, ?, NULL, NULL, NULL, ?, ?)
         ON CONFLICT (scope, key) DO UPDATE SET fingerprint = excluded.fingerprint, status = NULL, headers = NULL, body = NULL, created_at = excluded.created_at, expires_at = excluded.expires_at`,
      ).run(scope, key, fingerprint, now, expiresAt);
      return { state: 'new' };
    }).immediate();
  }
  async finish(scope: string, key: string, response: IdempotentResponse) {
    this.db.prepare('UPDATE idempotency_keys SET status = ?, headers = ?, body = ? WHERE scope = ? AND key = ?')
      .run(response.status, JSON.stringify(response.headers), response.body, scope, key);
  }
  async abandon(scope: string, key: string) {
    this.db.prepare('DELETE FROM idempotency_keys WHERE scope = ? AND key = ? AND status IS NULL').run(scope, key);
  }
}

export class SqliteAudit implements AuditStore {
  constructor(private readonly db: BetterSqlite3.Database) {}
  async append(e: AuditEntry) {
    this.db.prepare(
      `INSERT INTO audit_log (at, request_id, partner_id, user_id, provider_id, account_id, operation, target_id, target_id_after, name_before, name_after, bytes, result)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(e.at, e.requestId, e.partnerId, e.userId, e.providerId, e.accountId, e.operation, e.targetId, e.targetIdAfter, e.nameBefore, e.nameAfter, e.bytes, e.result);
  }
  async list(q: AuditQuery) {
    const where = ['at >= @since'];
    if (q.until !== undefined) where.push('at < @until');
    if (q.partnerId !== undefined) where.push('partner_id = @partnerId');
    if (q.before) where.push('(at < @beforeAt OR (at = @beforeAt AND request_id < @beforeId))');
    const rows = this.db.prepare(`SELECT * FROM audit_log WHERE ${where.join(' AND ')} ORDER BY at DESC, request_id DESC LIMIT @limit`).all({
      since: q.since, until: q.until, partnerId: q.partnerId, beforeAt: q.before?.at, beforeId: q.before?.requestId, limit: Math.min(q.limit, 1000),
    }) as Row[];
    return rows.map(toAuditEntry);
  }
  async prune(before: number) {
    return this.db.prepare('DELETE FROM audit_log WHERE at < ?').run(before).changes;
  }
}

export function toUploadRecord(r: Row): UploadRecord {
  return {
    id: r.id as string, partnerId: r.partner_id as string, userId: r.user_id as string, providerId: r.provider_id as string,
    length: r.length === null || r.length === undefined ? null : Number(r.length), offset: Number(r.offset),
    metadata: JSON.parse(r.metadata as string), location: r.location as string,
    createdAt: Number(r.created_at), expiresAt: Number(r.expires_at), result: r.result ? JSON.parse(r.result as string) : null,
  };
}

export class SqliteUploads implements UploadStore {
  constructor(private readonly db: BetterSqlite3.Database) {}
  async create(u: UploadRecord) {
    this.db.prepare(
      `INSERT INTO uploads (id, partner_id, user_id, provider_id, length, "offset", metadata, location, created_at, expires_at, result)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(u.id, u.partnerId, u.userId, u.providerId, u.length, u.offset, JSON.stringify(u.metadata), u.location, u.createdAt, u.expiresAt, u.result ? JSON.stringify(u.result) : null);
  }
  async get(id: string) {
    const r = this.db.prepare('SELECT * FROM uploads WHERE id = ?').get(id) as Row | undefined;
    return r ? toUploadRecord(r) : null;
  }
  async advance(id: string, expectedOffset: number, offset: number) {
    return this.db.prepare('UPDATE uploads SET "offset" = ? WHERE id = ? AND "offset" = ? AND result IS NULL').run(offset, id, expectedOffset).changes === 1;
  }
  async finish(id: string, result: IdempotentResponse) {
    this.db.prepare('UPDATE uploads SET result = ? WHERE id = ?').run(JSON.stringify(result), id);
  }
  async remove(id: string) {
    return this.db.prepare('DELETE FROM uploads WHERE id = ?').run(id).changes === 1;
  }
  async expired(now: number, limit: number) {
    return (this.db.prepare('SELECT * FROM uploads WHERE expires_at <= ? AND result IS NULL ORDER BY expires_at LIMIT ?').all(now, limit) as Row[]).map(toUploadRecord);
  }
}
