/**
 * `damhub restore`: puts a backup's data directory in place, all of it or nothing. The target must
 * be new or empty (a hub running on a directory has files in it, so this also refuses the data
 * directory of a running hub; there is no lock file to ask). The archive is checked and written
 * into a temporary folder on the target's file system (beside it, or inside it when it is an
 * existing empty directory such as a mount point); only when every file matched its manifest is
 * the folder renamed into place. A failure at any point removes the temporary folder and leaves
 * the target as it was.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { STORE_SCHEMAS } from './data-dir.js';
import { fsyncPath } from './files.js';
import { BackupError, damhubVersion, type BackupManifest } from './manifest.js';
import { readBackup } from './read.js';

/** Entries an empty file system has at its root; a directory holding only these counts as empty. */
const FRESH_VOLUME_ENTRIES = new Set(['lost+found']);

export interface RestoreResult {
  dataDir: string;
  manifest: BackupManifest;
  /** The library folder the restored directory serves (library/root.json), or null. */
  libraryRoot: string | null;
  /** True when the library lived inside the backed-up data directory and root.json now names its new place. */
  libraryMoved: boolean;
}

/** Checks the whole archive without writing anything (`damhub restore --check`). */
export function checkBackup(archive: string): Promise<BackupManifest> {
  return readBackup(path.resolve(archive), { into: null, accept: (m) => acceptSchemas(m, archive) });
}

export async function restoreBackup(opts: { archive: string; dataDir: string }): Promise<RestoreResult> {
  const archive = path.resolve(opts.archive);
  const target = path.resolve(opts.dataDir);
  const exists = targetState(target) === 'empty';
  const parent = path.dirname(target);
  // The first folder this restore had to create, removed again if it fails.
  const createdParent = exists ? undefined : fs.mkdirSync(parent, { recursive: true, mode: 0o700 });
  const temp = exists ? path.join(target, `.restore-${randomBytes(4).toString('hex')}`) : path.join(parent, `.${path.basename(target)}.restore-${randomBytes(4).toString('hex')}`);
  fs.mkdirSync(temp, { mode: 0o700 });
  try {
    const manifest = await readBackup(archive, { into: temp, accept: (m) => acceptSchemas(m, archive) });
    const finalPath = path.join(fs.realpathSync(parent), path.basename(target));
    const moved = relocateLibraryRoot(temp, manifest, finalPath);
    if (exists) moveEntries(temp, target);
    else moveDir(temp, target);
    fs.chmodSync(target, 0o700);
    fsyncPath(target);
    fsyncPath(parent);
    return { dataDir: target, manifest, libraryRoot: moved ?? manifest.libraryRoot, libraryMoved: moved !== null };
  } catch (e) {
    fs.rmSync(temp, { recursive: true, force: true });
    if (createdParent) fs.rmSync(createdParent, { recursive: true, force: true });
    throw e;
  } finally {
    fs.rmSync(temp, { recursive: true, force: true });
  }
}

/** 'absent' or 'empty'; anything else is refused with what to do. */
function targetState(target: string): 'absent' | 'empty' {
  let st: fs.Stats;
  try {
    st = fs.statSync(target);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return 'absent';
    throw new BackupError(`cannot use ${target}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  if (!st.isDirectory()) throw new BackupError(`${target} exists and is not a directory: give --data a new or empty directory`);
  const entries = fs.readdirSync(target).filter((n) => !FRESH_VOLUME_ENTRIES.has(n));
  if (entries.length) {
    const shown = entries.sort().slice(0, 3).join(', ') + (entries.length > 3 ? ', …' : '');
    throw new BackupError(`the data directory ${target} is not empty (${shown}): restore never overwrites one; restore into a new or empty directory, or stop its hub and move it aside first`);
  }
  return 'empty';
}

/** A store newer than this build knows would be opened by code that does not understand it. */
function acceptSchemas(m: BackupManifest, archive: string): void {
  for (const [store, version] of Object.entries(m.schemas)) {
    const known = STORE_SCHEMAS[store];
    if (known && version > known.current) {
      throw new BackupError(`${archive} holds ${store} at schema ${version} (made by damhub ${m.damhubVersion}); this damhub (${damhubVersion()}) knows schema ${known.current}: restore it with damhub ${m.damhubVersion} or newer`);
    }
  }
}

/**
 * A library inside the data directory (the demo's `demo-library/`) moves with it: root.json,
 * which records the library folder's absolute path, is made to name its new place. A library
 * elsewhere (`--library /srv/media`) keeps its recorded path: serve the same folder.
 */
function relocateLibraryRoot(temp: string, m: BackupManifest, finalDataDir: string): string | null {
  if (!m.libraryRoot) return null;
  const rel = path.relative(m.source.dataDir, m.libraryRoot);
  if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) return null;
  const file = path.join(temp, 'library', 'root.json');
  if (!fs.existsSync(file)) return null;
  const root = path.join(finalDataDir, rel);
  fs.writeFileSync(file, `${JSON.stringify({ root })}\n`, { mode: 0o600 });
  return root;
}

function moveDir(temp: string, target: string): void {
  try {
    fs.renameSync(temp, target);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOTEMPTY' || code === 'EEXIST') throw new BackupError(`${target} was created by something else during the restore: nothing was restored; restore into a new or empty directory`);
    throw e;
  }
}

/** Into an existing empty directory (a mount point cannot be replaced by a rename): entry by entry, undone on failure. */
function moveEntries(temp: string, target: string): void {
  const tempName = path.basename(temp);
  const intruders = fs.readdirSync(target).filter((n) => n !== tempName && !FRESH_VOLUME_ENTRIES.has(n));
  if (intruders.length) throw new BackupError(`${target} was written to during the restore (${intruders[0]}): nothing was restored; is a hub running on it?`);
  const moved: string[] = [];
  try {
    for (const name of fs.readdirSync(temp)) {
      fs.renameSync(path.join(temp, name), path.join(target, name));
      moved.push(name);
    }
  } catch (e) {
    for (const name of moved) fs.renameSync(path.join(target, name), path.join(temp, name));
    throw e;
  }
}
