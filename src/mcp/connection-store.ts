/**
 * DAM connections held by the hub for MCP sessions: an assistant cannot carry the
 * `provider-authorization` header the way a partner app does, so the hub keeps it per (user,
 * provider). What is stored is the hub's own DAM connection token (and its refresh token): a JWE
 * under the key ring's active `enc` key, so the rows are encrypted at rest and follow key rotation
 * (`damhub keys rotate`): new and refreshed connections are sealed under the new key, older rows
 * keep opening while their key is retained (src/auth/keys.ts). A sign-in in progress is kept as
 * its login state (src/auth/dam-login.ts).
 */
import type BetterSqlite3 from 'better-sqlite3';
import { Database } from '../stores/sqlite/driver.js';
import path from 'node:path';
import { privateSqliteFile } from '../stores/private-files.js';

export interface StoredConnection {
  userId: string;
  providerId: string;
  accessToken: string | null;
  refreshToken: string | null;
  /** A DAM login started by connect_provider and not yet collected. */
  pendingState: string | null;
  pendingUrl: string | null;
  updatedAt: number;
}

export class McpConnectionStore {
  private readonly db: BetterSqlite3.Database;

  constructor(file: string) {
    privateSqliteFile(file);
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('busy_timeout = 5000');
    this.db.exec(`CREATE TABLE IF NOT EXISTS mcp_connections (
      user_id TEXT NOT NULL,
      provider_id TEXT NOT NULL,
      access_token TEXT,
      refresh_token TEXT,
      pending_state TEXT,
      pending_url TEXT,
      updated_at INTEGER NOT NULL,
      PRIMARY KEY (user_id, provider_id)
    )`);
  }

  static open(dataDir: string): McpConnectionStore {
    return new McpConnectionStore(path.join(dataDir, 'mcp.sqlite'));
  }

  get(userId: string, providerId: string): StoredConnection | null {
    const r = this.db.prepare('SELECT * FROM mcp_connections WHERE user_id = ? AND provider_id = ?').get(userId, providerId) as Record<string, unknown> | undefined;
    if (!r) return null;
    return {
      userId: r.user_id as string, providerId: r.provider_id as string,
      accessToken: (r.access_token as string | null) ?? null, refreshToken: (r.refresh_token as string | null) ?? null,
      pendingState: (r.pending_state as string | null) ?? null, pendingUrl: (r.pending_url as string | null) ?? null,
      updatedAt: r.updated_at as number,
    };
  }

  /** A connected DAM: tokens set, any pending login cleared. */
  connect(userId: string, providerId: string, accessToken: string, refreshToken: string | null, now: number): void {
    this.db.prepare(`INSERT INTO mcp_connections (user_id, provider_id, access_token, refresh_token, pending_state, pending_url, updated_at)
      VALUES (?, ?, ?, ?, NULL, NULL, ?)
      ON CONFLICT (user_id, provider_id) DO UPDATE SET access_token = excluded.access_token, refresh_token = excluded.refresh_token,
        pending_state = NULL, pending_url = NULL, updated_at = excluded.updated_at`).run(userId, providerId, accessToken, refreshToken, now);
  }

  /** A sign-in started; an existing connection stays usable until the new one completes. */
  pending(userId: string, providerId: string, state: string, url: string, now: number): void {
    this.db.prepare(`INSERT INTO mcp_connections (user_id, provider_id, access_token, refresh_token, pending_state, pending_url, updated_at)
      VALUES (?, ?, NULL, NULL, ?, ?, ?)
      ON CONFLICT (user_id, provider_id) DO UPDATE SET pending_state = excluded.pending_state, pending_url = excluded.pending_url, updated_at = excluded.updated_at`)
      .run(userId, providerId, state, url, now);
  }

  clearPending(userId: string, providerId: string): void {
    this.db.prepare('UPDATE mcp_connections SET pending_state = NULL, pending_url = NULL WHERE user_id = ? AND provider_id = ?').run(userId, providerId);
  }

  remove(userId: string, providerId: string): void {
    this.db.prepare('DELETE FROM mcp_connections WHERE user_id = ? AND provider_id = ?').run(userId, providerId);
  }

  close(): void {
    this.db.close();
  }
}
