/**
 * The file earlier versions kept MCP's held DAM connections in (`<data>/mcp.sqlite`, one per node),
 * written here with that version's schema and settings so the upgrade path reads what an existing
 * installation has on disk.
 */
import path from 'node:path';
import { LEGACY_MCP_FILE } from '../../src/stores/legacy-mcp-file.js';
import { Database } from '../../src/stores/sqlite/driver.js';
import type { McpConnection } from '../../src/stores/types.js';

export function writeLegacyMcpFile(dataDir: string, rows: McpConnection[]): string {
  const file = path.join(dataDir, LEGACY_MCP_FILE);
  const db = new Database(file);
  try {
    db.pragma('journal_mode = WAL');
    db.exec(`CREATE TABLE IF NOT EXISTS mcp_connections (
      user_id TEXT NOT NULL,
      provider_id TEXT NOT NULL,
      access_token TEXT,
      refresh_token TEXT,
      pending_state TEXT,
      pending_url TEXT,
      updated_at INTEGER NOT NULL,
      PRIMARY KEY (user_id, provider_id)
    )`);
    const insert = db.prepare('INSERT INTO mcp_connections VALUES (@userId, @providerId, @accessToken, @refreshToken, @pendingState, @pendingUrl, @updatedAt)');
    for (const r of rows) insert.run(r);
  } finally {
    db.close();
  }
  return file;
}
