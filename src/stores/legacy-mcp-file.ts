/**
 * Upgrading from the versions that kept the DAM connections held for MCP sessions in a private
 * SQLite file per node (`<data>/mcp.sqlite`): at start the file's rows are taken over by the hub's
 * store (Stores.mcpConnections) and the file is removed, so held connections survive the upgrade
 * and the file is read once. In cluster mode each node brings its own file; the store keeps the
 * newer row where two files hold the same (user, provider).
 *
 * The rows are imported before the file is removed: a start that stops in between imports the
 * same rows again next time, which changes nothing (a row is only replaced by a newer one).
 */
import fs from 'node:fs';
import path from 'node:path';
import { toMcpConnection } from './rows.js';
import { Database } from './sqlite/driver.js';
import type { McpConnectionStore } from './types.js';

/** The old file's name in the data directory. */
export const LEGACY_MCP_FILE = 'mcp.sqlite';

/** Rows read from the old file and how many of them the store took (null: there was no file). */
export interface LegacyImport {
  file: string;
  read: number;
  imported: number;
}

export async function importLegacyMcpConnections(dataDir: string, store: McpConnectionStore): Promise<LegacyImport | null> {
  const file = path.join(dataDir, LEGACY_MCP_FILE);
  if (!fs.existsSync(file)) return null;
  let rows;
  try {
    // Opened read-write so that SQLite recovers a WAL the old version left behind.
    const db = new Database(file, { fileMustExist: true });
    try {
      db.pragma('busy_timeout = 5000');
      const hasTable = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'mcp_connections'`).get();
      rows = hasTable ? (db.prepare('SELECT * FROM mcp_connections').all() as Record<string, unknown>[]).map(toMcpConnection) : [];
    } finally {
      db.close();
    }
  } catch (e) {
    // Another process on this data dir (`damhub mcp` next to `damhub serve`) took it over first.
    if (!fs.existsSync(file)) return null;
    throw new Error(`cannot read the MCP connections of ${file} to move them into the hub's store (${(e as Error).message}); remove the file to drop them (users then connect their DAMs again)`, { cause: e });
  }
  const imported = await store.importRows(rows);
  for (const f of [file, `${file}-wal`, `${file}-shm`, `${file}-journal`]) fs.rmSync(f, { force: true });
  return { file, read: rows.length, imported };
}
