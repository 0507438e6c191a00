/**
 * What a backup takes from a data directory, and how. Everything the hub must not lose is there:
 * the auth store (`hub.sqlite`: partners, users, sessions, MCP connections), the key ring
 * (`keys.json`), the admin and user-hash secrets (`*.key`), the library's index and accounts
 * (`library/library.sqlite`), its recorded folder (`library/root.json`), stored versions
 * (`library/blobs/`) and renditions (`library/renditions/`), and a demo library when there is one.
 *
 * Left out, because they are caches or scratch that the hub makes again: connector thumbnails
 * (`thumbnails/`), the parts of unfinished resumable uploads (`uploads/`, the default
 * DAMHUB_UPLOAD_DIR: possibly large and appended to as the backup runs; a restored hub answers
 * those uploads 410 and their clients start them again), the search engine's snapshot (`*.sqlite.search`, rebuilt from the index at
 * start), temporary files, and SQLite's WAL/SHM/journal files (the online copy of their database
 * holds what they hold).
 */
import fs from 'node:fs';
import path from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { MIGRATIONS } from '../../stores/sqlite/migrations.js';
import { SQLITE_INDEX_SCHEMA_VERSION } from '../../providers/library/index/sqlite-schema.js';
import { MANIFEST_NAME } from './manifest.js';

/** The SQLite stores whose schema a backup records and a restore compares with this build's. */
export const STORE_SCHEMAS: Record<string, { current: number; read(db: BetterSqlite3.Database): number }> = {
  'hub.sqlite': {
    current: Math.max(...MIGRATIONS.map((m) => m.version)),
    read: (db) => {
      const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get();
      return table ? ((db.prepare('SELECT max(version) AS v FROM schema_migrations').get() as { v: number | null }).v ?? 0) : 0;
    },
  },
  'library/library.sqlite': {
    current: SQLITE_INDEX_SCHEMA_VERSION,
    read: (db) => db.pragma('user_version', { simple: true }) as number,
  },
};

/** Files that make a directory a damhub data directory (any one of them). */
const MARKERS = ['hub.sqlite', 'keys.json', 'library/library.sqlite'];

/** Where a backup stages its copies inside the data directory (same file system: hard links). */
export const STAGING_PREFIX = '.backup-';

const SQLITE_COMPANIONS = ['-wal', '-shm', '-journal'];
const SQLITE_MAGIC = Buffer.from('SQLite format 3\0', 'latin1');

export interface DataDirListing {
  /** SQLite databases, copied with the online backup API. */
  sqlite: string[];
  /** Every other file, linked or copied as it is. */
  files: string[];
}

/** Whether `dir` looks like a damhub data directory (a marker file in it). */
export function isDataDir(dir: string): boolean {
  return MARKERS.some((m) => fs.existsSync(path.join(dir, m)));
}

function excluded(rel: string, name: string): boolean {
  // The manifest's own name is the archive's, not a data file's (none has it; a stray one is left out).
  if (rel === 'thumbnails' || rel === 'uploads' || rel.startsWith(STAGING_PREFIX) || rel === MANIFEST_NAME) return true;
  if (name.endsWith('.sqlite.search')) return true;
  return name.endsWith('.tmp') || name.startsWith('.tmp-');
}

function isSqlite(abs: string): boolean {
  const fd = fs.openSync(abs, 'r');
  try {
    const head = Buffer.alloc(SQLITE_MAGIC.length);
    return fs.readSync(fd, head, 0, head.length, 0) === head.length && head.equals(SQLITE_MAGIC);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * The files of `dir` a backup takes, as relative paths with forward slashes. Symbolic links are
 * followed (an operator may have put `library/` on another disk); a file that vanishes while the
 * directory is walked (a rendition replaced by the running hub) is simply not listed.
 */
export function listDataDir(dir: string): DataDirListing {
  const out: DataDirListing = { sqlite: [], files: [] };
  const all = new Set<string>();
  const visit = (relDir: string) => {
    for (const name of fs.readdirSync(path.join(dir, relDir))) {
      const rel = relDir ? `${relDir}/${name}` : name;
      if (excluded(rel, name)) continue;
      let st: fs.Stats;
      try {
        st = fs.statSync(path.join(dir, rel));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw e;
      }
      if (st.isDirectory()) visit(rel);
      else if (st.isFile()) all.add(rel);
    }
  };
  visit('');
  for (const rel of [...all].sort()) {
    const companionOf = SQLITE_COMPANIONS.find((s) => rel.endsWith(s) && all.has(rel.slice(0, -s.length)));
    if (companionOf) continue;
    let sqlite = false;
    try {
      sqlite = isSqlite(path.join(dir, rel));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw e;
    }
    (sqlite ? out.sqlite : out.files).push(rel);
  }
  return out;
}

/** The library folder recorded in a data directory (library/root.json), or null. */
export function recordedLibraryRoot(dataDir: string): string | null {
  try {
    const root = (JSON.parse(fs.readFileSync(path.join(dataDir, 'library', 'root.json'), 'utf8')) as { root?: unknown }).root;
    return typeof root === 'string' ? root : null;
  } catch {
    return null;
  }
}
