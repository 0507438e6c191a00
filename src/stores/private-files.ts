/**
 * The data directory is private: mode 0700, and every store, key and secret file in it 0600,
 * whichever command or code path creates it first. Three mechanisms, because each alone has a gap:
 *
 * - the CLI sets the process umask to 077 before any command runs (src/cli/main.ts), so whatever
 *   the process creates (the demo library, the library index and its renditions, SQLite's WAL and
 *   SHM files) is owner-only without each writer having to ask;
 * - `ensurePrivateDir` creates the directory 0700 and tightens an existing looser one (a
 *   directory created by an older version, by hand, or by another tool), and the top-level files in
 *   it; when it cannot (another owner) it says why, for the start to report;
 * - `privateSqliteFile` creates a SQLite file 0600 before SQLite opens it (SQLite gives its WAL and
 *   SHM files the mode of the database file), for code that runs without the CLI (tests,
 *   embedders of the Hub class) and so without the umask.
 */
import fs from 'node:fs';
import path from 'node:path';

/** Bits that let anyone but the owner read, write or enter. */
const GROUP_OTHER = 0o077;

const octal = (mode: number) => `0${(mode & 0o777).toString(8)}`;

/**
 * Creates `dir` (mode 0700) or tightens it and its top-level files to owner-only. Returns what it
 * did or could not do, one line for the start to print; null when nothing needed saying.
 */
export function ensurePrivateDir(dir: string): string | null {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const notes: string[] = [];
  const st = fs.statSync(dir);
  if (st.mode & GROUP_OTHER) {
    try {
      fs.chmodSync(dir, 0o700);
      notes.push(`tightened the data directory ${dir} from ${octal(st.mode)} to 0700`);
    } catch (e) {
      return `the data directory ${dir} is ${octal(st.mode)} and could not be tightened to 0700 (${reason(e, st)}); other local users may read its keys and stores: chmod 700 it as its owner`;
    }
  }
  let files = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(dir, entry.name);
    try {
      if (tighten(file, 0o600)) files++;
    } catch (e) {
      notes.push(`${file} could not be made 0600 (${reason(e, fs.statSync(file))})`);
    }
  }
  if (files) notes.push(`made ${files} file${files === 1 ? '' : 's'} in it owner-only (0600)`);
  return notes.length ? notes.join('; ') : null;
}

/**
 * Makes sure the SQLite database `file` and its WAL and SHM companions, where they exist, are
 * 0600; creates the database file empty (SQLite accepts an empty file as a new database) so that
 * it is never created with SQLite's default 0644.
 */
export function privateSqliteFile(file: string): void {
  if (file === ':memory:' || file === '') return;
  fs.closeSync(fs.openSync(file, 'a', 0o600));
  for (const f of [file, `${file}-wal`, `${file}-shm`, `${file}-journal`]) {
    try {
      tighten(f, 0o600);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
  }
}

/** chmod to `mode` when group or others have any bit; true when it changed something. */
function tighten(file: string, mode: number): boolean {
  const st = fs.statSync(file);
  if (!(st.mode & GROUP_OTHER)) return false;
  fs.chmodSync(file, mode);
  return true;
}

function reason(e: unknown, st: fs.Stats): string {
  const code = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
  const uid = process.getuid?.();
  return uid !== undefined && st.uid !== uid ? `${code}: owned by uid ${st.uid}, this process runs as uid ${uid}` : String(code);
}
