/**
 * DAM connections held for MCP sessions, in PostgreSQL (cluster mode), so a user who connected a
 * DAM through one node is connected on every node. Same semantics as the SQLite store
 * (src/stores/sqlite/index.ts); every conditional write is one statement.
 */
import type pg from 'pg';
import { toMcpConnection } from '../rows.js';
import type { McpConnection, McpConnectionStore } from '../types.js';

/** The part of ./index.ts's Db used here (bounded, classified errors; idempotent reads retried once). */
interface Queries {
  query(text: string, params?: unknown[], idempotent?: boolean): Promise<pg.QueryResult<Record<string, unknown>>>;
}

const MCP_COLS = 'user_id, provider_id, access_token, refresh_token, pending_state, pending_url, updated_at';

export class PgMcpConnections implements McpConnectionStore {
  constructor(private readonly db: Queries) {}
  async get(userId: string, providerId: string) {
    const r = (await this.db.query(`SELECT ${MCP_COLS} FROM mcp_connections WHERE user_id = $1 AND provider_id = $2`, [userId, providerId], true)).rows[0];
    return r ? toMcpConnection(r) : null;
  }
  async startSignIn(userId: string, providerId: string, state: string, url: string, now: number) {
    await this.db.query(
      `INSERT INTO mcp_connections (${MCP_COLS}) VALUES ($1, $2, NULL, NULL, $3, $4, $5)
       ON CONFLICT (user_id, provider_id) DO UPDATE SET pending_state = EXCLUDED.pending_state, pending_url = EXCLUDED.pending_url, updated_at = EXCLUDED.updated_at`,
      [userId, providerId, state, url, now],
    );
  }
  async completeSignIn(userId: string, providerId: string, state: string, accessToken: string, refreshToken: string | null, now: number) {
    // The CASEs read the row as it was before this UPDATE: both test the old pending_state.
    const r = await this.db.query(
      `UPDATE mcp_connections SET access_token = $4, refresh_token = $5, updated_at = $6,
         pending_state = CASE WHEN pending_state = $3 THEN NULL ELSE pending_state END,
         pending_url = CASE WHEN pending_state = $3 THEN NULL ELSE pending_url END
       WHERE user_id = $1 AND provider_id = $2`,
      [userId, providerId, state, accessToken, refreshToken, now],
    );
    return r.rowCount === 1;
  }
  async dropSignIn(userId: string, providerId: string, state: string) {
    const r = await this.db.query(
      'UPDATE mcp_connections SET pending_state = NULL, pending_url = NULL WHERE user_id = $1 AND provider_id = $2 AND pending_state = $3',
      [userId, providerId, state],
    );
    return r.rowCount === 1;
  }
  async renew(userId: string, providerId: string, expectedAccessToken: string, accessToken: string, refreshToken: string | null, now: number) {
    // Compare-and-set in one statement: of two nodes renewing the same connection, exactly one wins.
    const r = await this.db.query(
      'UPDATE mcp_connections SET access_token = $4, refresh_token = $5, updated_at = $6 WHERE user_id = $1 AND provider_id = $2 AND access_token = $3',
      [userId, providerId, expectedAccessToken, accessToken, refreshToken, now],
    );
    return r.rowCount === 1;
  }
  async remove(userId: string, providerId: string) {
    return ((await this.db.query('DELETE FROM mcp_connections WHERE user_id = $1 AND provider_id = $2', [userId, providerId])).rowCount ?? 0) > 0;
  }
  async importRows(rows: McpConnection[]) {
    if (!rows.length) return 0;
    // One statement over arrays: the newer row wins, rows of users that no longer exist are skipped.
    const col = <K extends keyof McpConnection>(k: K) => rows.map((r) => r[k]);
    const r = await this.db.query(
      `INSERT INTO mcp_connections (${MCP_COLS})
       SELECT DISTINCT ON (i.user_id, i.provider_id) i.* FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[])
         AS i(user_id, provider_id, access_token, refresh_token, pending_state, pending_url, updated_at)
       WHERE EXISTS (SELECT 1 FROM users u WHERE u.id = i.user_id)
       ORDER BY i.user_id, i.provider_id, i.updated_at DESC
       ON CONFLICT (user_id, provider_id) DO UPDATE SET access_token = EXCLUDED.access_token, refresh_token = EXCLUDED.refresh_token,
         pending_state = EXCLUDED.pending_state, pending_url = EXCLUDED.pending_url, updated_at = EXCLUDED.updated_at
       WHERE mcp_connections.updated_at < EXCLUDED.updated_at`,
      [col('userId'), col('providerId'), col('accessToken'), col('refreshToken'), col('pendingState'), col('pendingUrl'), col('updatedAt')],
    );
    return r.rowCount ?? 0;
  }
}
