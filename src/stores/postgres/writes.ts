/**
 * The write engine's durable state in PostgreSQL (cluster mode, docs/writes.md): Idempotency-Key
 * records, the write audit and unfinished tus uploads, shared by every node so that a retry or a
 * resumed upload may land on any of them. Same semantics as src/stores/sqlite/writes.ts; every
 * step that must agree across nodes is one statement. (Write locks live in Redis.)
 */
import type pg from 'pg';
import { toAuditEntry } from '../rows.js';
import type {
  AuditEntry, AuditQuery, AuditStore, IdempotencyClaim, IdempotencyStore, IdempotentResponse, UploadRecord, UploadStore,
} from '../types.js';

type Row = Record<string, unknown>;

/** The part of ./index.ts's Db used here (bounded, classified errors; idempotent reads retried once). */
interface Queries {
  query(text: string, params?: unknown[], idempotent?: boolean): Promise<pg.QueryResult<Row>>;
}

export class PgIdempotency implements IdempotencyStore {
  constructor(private readonly db: Queries) {}

  async claim(scope: string, key: string, fingerprint: string, now: number, expiresAt: number): Promise<IdempotencyClaim> {
    // Insert, or take over a row past its expiry: one statement, so of concurrent claims on any
    // number of nodes exactly one gets a row back. A live row is left alone and read next; when it
    // went away in between (abandoned, or expired and swept), the claim is tried again.
    for (let attempt = 0; attempt < 5; attempt++) {
      const won = await this.db.query(
        `INSERT INTO idempotency_keys (scope, key, fingerprint, status, headers, body, created_at, expires_at) VALUES ($1, $2, $3, NULL, NULL, NULL, $4, $5)
         ON CONFLICT (scope, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, status = NULL, headers = NULL, body = NULL,
           created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
         WHERE idempotency_keys.expires_at <= $4
         RETURNING 1`,
        [scope, key, fingerprint, now, expiresAt],
      );
      if (won.rowCount === 1) return { state: 'new' };
      const r = (await this.db.query('SELECT fingerprint, status, headers, body FROM idempotency_keys WHERE scope = $1 AND key = $2 AND expires_at > $3', [scope, key, now], true)).rows[0];
      if (!r) continue;
      if (r.status === null) return { state: 'running', fingerprint: r.fingerprint as string };
      return { state: 'done', fingerprint: r.fingerprint as string, response: { status: r.status as number, headers: r.headers as Record<string, string>, body: r.body as string } };
    }
    // Five rounds of the key vanishing between two statements: other requests are busy with it.
    // Said as in progress with this request's own fingerprint (409, retry), never as a reuse (422).
    return { state: 'running', fingerprint };
  }

  async finish(scope: string, key: string, response: IdempotentResponse) {
    await this.db.query('UPDATE idempotency_keys SET status = $3, headers = $4, body = $5 WHERE scope = $1 AND key = $2',
      [scope, key, response.status, JSON.stringify(response.headers), response.body]);
  }

  async abandon(scope: string, key: string) {
    // Only an unfinished claim: a finished answer stays replayable.
    await this.db.query('DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2 AND status IS NULL', [scope, key]);
  }
}

const AUDIT_COLS = 'at, request_id, partner_id, user_id, provider_id, account_id, operation, target_id, target_id_after, name_before, name_after, bytes, result';

export class PgAudit implements AuditStore {
  constructor(private readonly db: Queries) {}

  async append(e: AuditEntry) {
    await this.db.query(
      `INSERT INTO audit_log (${AUDIT_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
      [e.at, e.requestId, e.partnerId, e.userId, e.providerId, e.accountId, e.operation, e.targetId, e.targetIdAfter, e.nameBefore, e.nameAfter, e.bytes, e.result],
    );
  }

  async list(q: AuditQuery) {
    const params: unknown[] = [q.since];
    const where = ['at >= $1'];
    const p = (v: unknown) => `$${params.push(v)}`;
    if (q.until !== undefined) where.push(`at < ${p(q.until)}`);
    if (q.partnerId !== undefined) where.push(`partner_id = ${p(q.partnerId)}`);
    // Row comparison: strictly older than the cursor in the (at, request_id) order, index-friendly.
    if (q.before) where.push(`(at, request_id) < (${p(q.before.at)}, ${p(q.before.requestId)})`);
    const rows = (await this.db.query(
      `SELECT ${AUDIT_COLS} FROM audit_log WHERE ${where.join(' AND ')} ORDER BY at DESC, request_id DESC LIMIT ${p(Math.max(0, Math.min(q.limit, 1000)))}`,
      params, true,
    )).rows;
    return rows.map(toAuditEntry);
  }

  async prune(before: number) {
    return (await this.db.query('DELETE FROM audit_log WHERE at < $1', [before])).rowCount ?? 0;
  }
}

const UPLOAD_COLS = 'id, partner_id, user_id, provider_id, length, "offset", metadata, location, created_at, expires_at, result';

function toUpload(r: Row): UploadRecord {
  return {
    id: r.id as string, partnerId: r.partner_id as string, userId: r.user_id as string, providerId: r.provider_id as string,
    length: (r.length as number | null) ?? null, offset: r.offset as number,
    metadata: r.metadata as Record<string, string>, location: r.location as string,
    createdAt: r.created_at as number, expiresAt: r.expires_at as number, result: (r.result as IdempotentResponse | null) ?? null,
  };
}

export class PgUploads implements UploadStore {
  constructor(private readonly db: Queries) {}

  async create(u: UploadRecord) {
    await this.db.query(
      `INSERT INTO uploads (${UPLOAD_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      [u.id, u.partnerId, u.userId, u.providerId, u.length, u.offset, JSON.stringify(u.metadata), u.location, u.createdAt, u.expiresAt, u.result ? JSON.stringify(u.result) : null],
    );
  }

  async get(id: string) {
    const r = (await this.db.query(`SELECT ${UPLOAD_COLS} FROM uploads WHERE id = $1`, [id], true)).rows[0];
    return r ? toUpload(r) : null;
  }

  async advance(id: string, expectedOffset: number, offset: number) {
    // Compare-and-set: of two PATCHes from the same offset (on any nodes) exactly one moves it.
    const r = await this.db.query('UPDATE uploads SET "offset" = $3 WHERE id = $1 AND "offset" = $2 AND result IS NULL', [id, expectedOffset, offset]);
    return r.rowCount === 1;
  }

  async finish(id: string, result: IdempotentResponse) {
    await this.db.query('UPDATE uploads SET result = $2 WHERE id = $1', [id, JSON.stringify(result)]);
  }

  async remove(id: string) {
    return ((await this.db.query('DELETE FROM uploads WHERE id = $1', [id])).rowCount ?? 0) > 0;
  }

  async expired(now: number, limit: number) {
    const rows = (await this.db.query(`SELECT ${UPLOAD_COLS} FROM uploads WHERE expires_at <= $1 AND result IS NULL ORDER BY expires_at LIMIT $2`, [now, limit], true)).rows;
    return rows.map(toUpload);
  }
}
