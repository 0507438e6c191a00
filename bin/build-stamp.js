// Whether `npm start` must build: the build (`npm run build`, about a minute on a small machine)
// runs only when the sources it compiles changed since the last build npm start made.
//
// The fingerprint is a hash of every input's path, size and modification time (src/, the packages'
// sources and build files, the tsconfig and package files), taken BEFORE the build and written to
// dist/ only after it succeeded: a file saved during a build changes the fingerprint, so the next
// start builds again, and a deleted or renamed file changes the list. A build made another way
// (`npm run build`, `npm test`) writes no stamp: the next npm start builds once more.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const STAMP = path.join('dist', '.start-build-stamp');

/** The files the build reads, relative to `root`. */
function inputs(root) {
  const out = [];
  const walk = (rel) => {
    let entries;
    try {
      entries = fs.readdirSync(path.join(root, rel), { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const child = path.join(rel, e.name);
      if (e.isDirectory()) walk(child);
      else out.push(child);
    }
  };
  walk('src');
  let packages = [];
  try {
    packages = fs.readdirSync(path.join(root, 'packages'));
  } catch { /* none */ }
  for (const p of packages) {
    walk(path.join('packages', p, 'src'));
    for (const f of ['build.mjs', 'tsconfig.json', 'package.json']) out.push(path.join('packages', p, f));
  }
  out.push('tsconfig.json', 'package.json', 'package-lock.json');
  return out;
}

/** The hash of the inputs as they are now. */
export function sourcesFingerprint(root) {
  const hash = crypto.createHash('sha256');
  for (const rel of inputs(root).sort()) {
    let st;
    try {
      st = fs.statSync(path.join(root, rel));
    } catch {
      continue; // an optional file (a package without build.mjs)
    }
    hash.update(`${rel}\0${st.size}\0${st.mtimeMs}\n`);
  }
  return hash.digest('hex');
}

/** Whether the build in dist/ is of these sources (and the CLI it compiles is there). */
export function buildIsCurrent(root, fingerprint) {
  if (!fs.existsSync(path.join(root, 'dist', 'src', 'cli', 'main.js'))) return false;
  try {
    return fs.readFileSync(path.join(root, STAMP), 'utf8').trim() === fingerprint;
  } catch {
    return false;
  }
}

/** Records that dist/ holds the build of `fingerprint` (taken before that build started). */
export function recordBuild(root, fingerprint) {
  fs.writeFileSync(path.join(root, STAMP), `${fingerprint}\n`);
}
