#!/usr/bin/env node
// `npm start`: build, then serve the demo in this very process.
//
// npm forwards SIGTERM/SIGINT only to the shell that runs its script (`sh -c "…"`), and that shell
// dies of it without passing it on: with `sh -c "npm run build && node bin/damhub.js serve"` the
// hub was left running, orphaned, and never drained. dash does not even exec a script's single
// command, and `exec` is not a command of cmd.exe, so this process watches for the moment it loses
// its parent (its parent pid changes when it is re-parented) and signals itself as the shell should
// have: the hub's own SIGTERM handler then drains and exits (test/operating.test.ts).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const npm = process.env.npm_execpath;
// The npm that runs this script (npm_execpath), else the one on PATH.
// DAMHUB_START_SKIP_BUILD=1: the tests, which have built already, start it the way npm does.
const build = process.env.DAMHUB_START_SKIP_BUILD === '1' ? { status: 0 } : npm
  ? spawnSync(process.execPath, [npm, 'run', 'build', '--silent'], { cwd: root, stdio: 'inherit' })
  : spawnSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: 'inherit', shell: process.platform === 'win32' });
if (build.status !== 0) {
  process.stderr.write(`damhub: the build failed${build.error ? ` (${build.error.message})` : ''}; fix it and run npm start again\n`);
  process.exit(build.status ?? 1);
}
const parent = process.ppid;
const orphaned = setInterval(() => {
  if (process.ppid === parent) return;
  // Once: the hub's handler is a `once`, and a second SIGTERM would kill it mid-drain.
  clearInterval(orphaned);
  process.kill(process.pid, 'SIGTERM');
}, 200).unref();
const { main } = await import('../dist/src/cli/main.js');
process.exitCode = await main(['serve', '--demo', ...process.argv.slice(2)]);
