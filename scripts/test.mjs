#!/usr/bin/env node
// `npm test` after the build: runs the compiled test files with node:test, several files side by
// side (each file is its own process; the files share nothing: free ports, their own temp data
// directories, a PostgreSQL database and Redis key prefix of their own, real servers started per
// file), the slowest first, and prints the slowest files at the end.
//
//   node scripts/test.mjs [--concurrency N] [--list FILE] [FILE…]
//
// --concurrency (or DAMHUB_TEST_CONCURRENCY): files run at once; default 2 (measured on the 2-core
//   reference machine: docs/reliability.md "Test suite time").
// --list FILE: only the test files the list names (one path or folder under dist/test per line, #
//   comments): .ci/run runs .ci/older-node-tests this way on the older Node.
// FILE…: only these files.
import fs from 'node:fs';
import path from 'node:path';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';
import { fileURLToPath } from 'node:url';
import { recordFileTimes, slowestFiles } from './test-durations.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
process.chdir(root);
const args = process.argv.slice(2);
let concurrency = Number(process.env.DAMHUB_TEST_CONCURRENCY || 2);
let list = null;
const only = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--concurrency') concurrency = Number(args[++i]);
  else if (args[i] === '--list') list = args[++i];
  else only.push(args[i]);
}
if (!Number.isInteger(concurrency) || concurrency < 1) {
  process.stderr.write('scripts/test.mjs: --concurrency (DAMHUB_TEST_CONCURRENCY) must be a whole number ≥ 1\n');
  process.exit(2);
}

function testFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? testFiles(p) : e.name.endsWith('.test.js') ? [p] : [];
  });
}

let files = testFiles('dist/test').sort();
if (list) {
  const entries = fs.readFileSync(list, 'utf8').split('\n').map((l) => l.replace(/#.*/, '').trim()).filter(Boolean);
  // An entry names one file, or a folder and everything under it.
  const names = (e, f) => f === e || f.startsWith(`${e.replace(/\/$/, '')}/`);
  for (const e of entries) {
    if (!files.some((f) => names(e, f))) {
      process.stderr.write(`scripts/test.mjs: ${list} names ${e}, which matches no test file\n`);
      process.exit(2);
    }
  }
  files = files.filter((f) => entries.some((e) => names(e, f)));
}
if (only.length) files = only;

// The slowest first (times of the last run on this checkout, else the ones recorded in the
// repository), files of unknown time before the known ones: one long file started last would
// otherwise run alone at the end.
let durations = {};
for (const f of ['test/durations.json', 'test-artifacts/test-durations.json']) {
  try { durations = { ...durations, ...JSON.parse(fs.readFileSync(f, 'utf8')) }; } catch { /* absent */ }
}
files.sort((a, b) => (durations[b] ?? Infinity) - (durations[a] ?? Infinity));

// Run through node:test's run() rather than `node --test FILES`: the command line sorts the files
// by name, run() keeps this order. Each file is its own process, as with --test.
const abort = new AbortController();
for (const sig of ['SIGTERM', 'SIGINT']) process.once(sig, () => { process.exitCode = 1; abort.abort(); });
// The timeout also bounds each file as a whole (its own test at the top): ten minutes, a guard
// against a hang, long enough for the CLI files (a hundred real processes each) on a loaded machine.
const stream = run({ files, concurrency, timeout: 600_000, signal: abort.signal });
stream.on('test:fail', () => { process.exitCode = 1; });
const times = recordFileTimes(stream);
// node:test/reporters' spec is a class on some versions and a ready-made transform on others.
let reporter;
try { reporter = new spec(); } catch { reporter = spec; }
const output = stream.compose(reporter);
output.pipe(process.stdout, { end: false });
output.on('end', () => process.stdout.write(slowestFiles(times)));
