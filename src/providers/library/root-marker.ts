/**
 * One data directory holds one library. The index, renditions and kept versions under
 * `<data>/library/` describe the files of one folder; opening them with another folder would
 * silently re-index it over the first one's index (and drop the first one's kept versions). The
 * folder that was indexed first is recorded in `<data>/library/root.json`, and a start or
 * `damhub index` with a different folder is refused.
 */
import fs from 'node:fs';
import path from 'node:path';
import { writeSecretFile } from '../../auth/keys.js';

export class LibraryRootError extends Error {}

const MARKER = 'root.json';

/** The folder a library folder argument names, or a LibraryRootError saying why it is unusable. */
export function libraryFolder(dir: string, flag = '--library'): string {
  const abs = path.resolve(dir);
  let st: fs.Stats;
  try {
    st = fs.statSync(abs);
  } catch {
    throw new LibraryRootError(`the library folder ${abs} does not exist: give ${flag} an existing folder of media`);
  }
  if (!st.isDirectory()) throw new LibraryRootError(`${abs} is not a folder: give ${flag} the folder of media to serve, not a file`);
  return abs;
}

/**
 * Records `root` as the library of `dataDir`, or checks it is the one already recorded. A data
 * directory from before the marker existed adopts the folder it is opened with (it cannot know
 * better). Compares real paths, so a symlinked or relative spelling of the same folder passes.
 */
export function claimLibraryRoot(dataDir: string, root: string): void {
  const libDir = path.join(dataDir, 'library');
  const file = path.join(libDir, MARKER);
  const real = fs.realpathSync(root);
  let recorded: string | null = null;
  try {
    recorded = (JSON.parse(fs.readFileSync(file, 'utf8')) as { root?: unknown }).root as string;
    if (typeof recorded !== 'string') recorded = null;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw new LibraryRootError(`cannot read ${file}: ${(e as Error).message}; remove it to let the data directory adopt ${real}`);
  }
  if (recorded !== null) {
    let same = recorded === real;
    if (!same) {
      try {
        same = fs.realpathSync(recorded) === real;
      } catch {
        same = false;
      }
    }
    if (same) return;
    throw new LibraryRootError(
      `the data directory ${dataDir} holds the library ${recorded}, not ${real}: serve ${recorded} with it, or give ${real} its own data directory with --data DIR`,
    );
  }
  fs.mkdirSync(libDir, { recursive: true, mode: 0o700 });
  writeSecretFile(file, `${JSON.stringify({ root: real })}\n`);
}
