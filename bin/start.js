#!/usr/bin/env node
// `npm start`: build when the sources changed (bin/build-stamp.js), then serve the demo in this
// very process, stopping with npm (bin/orphan-watch.js).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { buildIsCurrent, recordBuild, sourcesFingerprint } from './build-stamp.js';
import { stopWhenOrphaned } from './orphan-watch.js';

const root = fileURLToPath(new URL('..', import.meta.url));
// DAMHUB_START_SKIP_BUILD=1: the tests, which have built already, start it the way npm does.
if (process.env.DAMHUB_START_SKIP_BUILD !== '1') {
  const fingerprint = sourcesFingerprint(root);
  if (!buildIsCurrent(root, fingerprint)) {
    // Said first: the build is silent and takes about a minute the first time.
    process.stderr.write('damhub: building… (a first start, or the sources changed; about a minute on a small machine)\n');
    // The npm that runs this script (npm_execpath), else the one on PATH.
    const npm = process.env.npm_execpath;
    const build = npm
      ? spawnSync(process.execPath, [npm, 'run', 'build', '--silent'], { cwd: root, stdio: 'inherit' })
      : spawnSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: 'inherit', shell: process.platform === 'win32' });
    if (build.status !== 0) {
      process.stderr.write(`damhub: the build failed${build.error ? ` (${build.error.message})` : ''}; fix it and run npm start again\n`);
      process.exit(build.status ?? 1);
    }
    recordBuild(root, fingerprint);
  }
}
stopWhenOrphaned();
const { main } = await import('../dist/src/cli/main.js');
process.exitCode = await main(['serve', '--demo', ...process.argv.slice(2)]);
