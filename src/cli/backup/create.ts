/**
 * `damhub backup`: one tar file holding a consistent copy of a data directory, made while the hub
 * runs. Each SQLite store is copied with SQLite's online backup API (a snapshot of committed
 * transactions, taken beside the running hub's connections); every other file is hard-linked
 * into a staging folder inside the data directory (its writers replace files by rename, so a link
 * holds the version of the moment) or copied where links are refused. The stores are copied
 * first, so the files their rows name (renditions, stored versions) were already there.
 *
 * The archive is written to a temporary file next to `out`, mode 0600 (it holds the hub's signing
 * keys and secrets), synced, and renamed over `out` only when complete.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { create as createTar } from 'tar';
import { Database } from '../../stores/sqlite/driver.js';
import { isDataDir, listDataDir, recordedLibraryRoot, STAGING_PREFIX, STORE_SCHEMAS } from './data-dir.js';
import { fsyncPath, sha256File } from './files.js';
import { BackupError, damhubVersion, FORMAT, FORMAT_VERSION, MANIFEST_NAME, type BackupFile, type BackupManifest } from './manifest.js';

export interface BackupResult {
  out: string;
  manifest: BackupManifest;
  /** Bytes of the archive. */
  bytes: number;
}

export async function createBackup(opts: { dataDir: string; out: string; now?: Date }): Promise<BackupResult> {
  const dataDir = path.resolve(opts.dataDir);
  const out = path.resolve(opts.out);
  checkPlaces(dataDir, out);
  removeStaleStaging(dataDir);
  const staging = path.join(dataDir, `${STAGING_PREFIX}${process.pid}-${randomBytes(4).toString('hex')}`);
  fs.mkdirSync(staging, { mode: 0o700 });
  const tmp = `${out}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    const listing = listDataDir(dataDir);
    const schemas: Record<string, number> = {};
    for (const rel of listing.sqlite) {
      const schema = await copySqlite(path.join(dataDir, rel), stagedPath(staging, rel), STORE_SCHEMAS[rel]?.read);
      if (schema !== null) schemas[rel] = schema;
    }
    const linked = listing.files.filter((rel) => linkOrCopy(path.join(dataDir, rel), stagedPath(staging, rel)));
    const files: BackupFile[] = [];
    for (const rel of [...listing.sqlite, ...linked].sort()) files.push({ path: rel, ...(await sha256File(path.join(staging, rel))) });
    const manifest: BackupManifest = {
      format: FORMAT,
      formatVersion: FORMAT_VERSION,
      damhubVersion: damhubVersion(),
      createdAt: (opts.now ?? new Date()).toISOString(),
      source: { hostname: hostname(), dataDir },
      schemas,
      libraryRoot: recordedLibraryRoot(staging),
      files,
    };
    // 'wx': never written through a link into the data directory.
    fs.writeFileSync(path.join(staging, MANIFEST_NAME), `${JSON.stringify(manifest, null, 1)}\n`, { mode: 0o600, flag: 'wx' });
    // Created empty and owner-only first: node-tar then writes into it and keeps its mode.
    fs.closeSync(fs.openSync(tmp, 'wx', 0o600));
    await createTar({ cwd: staging, file: tmp, portable: true, strict: true, noDirRecurse: true }, [MANIFEST_NAME, ...files.map((f) => f.path)]);
    fsyncPath(tmp);
    fs.renameSync(tmp, out);
    fsyncPath(path.dirname(out));
    return { out, manifest, bytes: fs.statSync(out).size };
  } finally {
    fs.rmSync(tmp, { force: true });
    fs.rmSync(staging, { recursive: true, force: true });
  }
}

/** The data directory must be one, and the archive must go elsewhere (a backup inside would be copied into the next one). */
function checkPlaces(dataDir: string, out: string): void {
  if (!fs.existsSync(dataDir)) throw new BackupError(`the data directory ${dataDir} does not exist: give --data the directory the hub runs with`);
  if (!isDataDir(dataDir)) throw new BackupError(`${dataDir} is not a damhub data directory (no hub.sqlite, keys.json or library/library.sqlite in it): give --data the directory the hub runs with`);
  const outDir = path.dirname(out);
  let st: fs.Stats;
  try {
    st = fs.statSync(outDir);
  } catch {
    throw new BackupError(`the folder ${outDir} of --out does not exist: create it first`);
  }
  if (!st.isDirectory()) throw new BackupError(`${outDir} is not a folder: give --out a file in an existing folder`);
  if (fs.existsSync(out) && fs.statSync(out).isDirectory()) throw new BackupError(`--out ${out} is a folder: give it a file name, e.g. ${path.join(out, 'damhub-backup.tar')}`);
  const rel = path.relative(fs.realpathSync(dataDir), fs.realpathSync(outDir));
  if (rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel))) throw new BackupError(`--out ${out} is inside the data directory ${dataDir}: write the backup somewhere else`);
}

/** Staging folders a killed backup left behind (their process is gone). */
function removeStaleStaging(dataDir: string): void {
  for (const name of fs.readdirSync(dataDir)) {
    const pid = name.startsWith(STAGING_PREFIX) ? Number(name.slice(STAGING_PREFIX.length).split('-')[0]) : NaN;
    if (!Number.isInteger(pid) || pid <= 0 || processExists(pid)) continue;
    fs.rmSync(path.join(dataDir, name), { recursive: true, force: true });
  }
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function stagedPath(staging: string, rel: string): string {
  const file = path.join(staging, ...rel.split('/'));
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  return file;
}

/**
 * SQLite's online backup of `src` into `dest`; returns the store's schema version when it is one
 * damhub knows. The source is opened without migrating it (the running hub owns its schema);
 * after the first step the rest is copied in one step, so a busy writer cannot keep restarting it.
 */
async function copySqlite(src: string, dest: string, readSchema?: (db: InstanceType<typeof Database>) => number): Promise<number | null> {
  const db = new Database(src, { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    const schema = readSchema ? readSchema(db) : null;
    await db.backup(dest, { progress: ({ remainingPages }) => Math.max(remainingPages, 100) });
    return schema;
  } catch (e) {
    throw new BackupError(`could not copy ${src}: ${(e as Error).message}`);
  } finally {
    db.close();
  }
}

/** Links `src` to `dest` (copies where links are refused); false when `src` vanished meanwhile. */
function linkOrCopy(src: string, dest: string): boolean {
  try {
    fs.linkSync(src, dest);
    return true;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return false;
    if (code !== 'EXDEV' && code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EMLINK') throw e;
  }
  try {
    fs.copyFileSync(src, dest, fs.constants.COPYFILE_FICLONE);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
}
