#!/usr/bin/env node
// `npm start`: build, then serve the demo in this very process. npm forwards SIGTERM/SIGINT to
// the shell running its script, and `sh -c "build && node …"` dies of it without passing it on,
// leaving the hub orphaned and undrained; a script that is one simple command is exec'd by the
// shell (dash, bash), so the signal reaches this process and the hub drains (test/npm-start.test.ts).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const npm = process.env.npm_execpath;
// The npm that runs this script (npm_execpath), else the one on PATH.
const build = npm
  ? spawnSync(process.execPath, [npm, 'run', 'build', '--silent'], { cwd: root, stdio: 'inherit' })
  : spawnSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: 'inherit', shell: process.platform === 'win32' });
if (build.status !== 0) {
  process.stderr.write(`damhub: the build failed${build.error ? ` (${build.error.message})` : ''}; fix it and run npm start again\n`);
  process.exit(build.status ?? 1);
}
const { main } = await import('../dist/src/cli/main.js');
process.exitCode = await main(['serve', '--demo', ...process.argv.slice(2)]);
