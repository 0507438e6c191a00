// Each test file's time, taken from the node:test event stream of a run: printed as the slowest
// files at the end of the run, and recorded in test-artifacts/test-durations.json, where
// scripts/test.mjs reads it to start the slowest files first next time.
//
// Each file ends with a `test:complete` event at nesting 0 named after the file itself (its absolute
// path on Node 20; on Node 24 the path as given, or its base name), whose duration is the file's
// whole run, process start included.
import fs from 'node:fs';
import path from 'node:path';

const SHOWN = 15;
const RECORD = 'test-artifacts/test-durations.json';

export function recordFileTimes(stream) {
  const times = new Map();
  stream.on('test:complete', (data) => {
    const { file, name, nesting, details } = data;
    if (nesting !== 0 || !file) return;
    if (name !== file && path.resolve(name) !== file && path.basename(file) !== name) return;
    times.set(path.relative(process.cwd(), file), details?.duration_ms ?? 0);
  });
  return times;
}

/** The table of the slowest files; records every file's time (merged with the last record). */
export function slowestFiles(times) {
  if (times.size === 0) return '';
  const sorted = [...times].sort((a, b) => b[1] - a[1]);
  const total = sorted.reduce((s, [, ms]) => s + ms, 0);
  let out = `\nslowest test files (of ${times.size}; ${(total / 1000).toFixed(0)} s in all files together):\n`;
  for (const [file, ms] of sorted.slice(0, SHOWN)) out += `  ${(ms / 1000).toFixed(1).padStart(7)} s  ${file}\n`;
  try {
    fs.mkdirSync(path.dirname(RECORD), { recursive: true });
    let previous = {};
    try { previous = JSON.parse(fs.readFileSync(RECORD, 'utf8')); } catch { /* first run */ }
    fs.writeFileSync(RECORD, `${JSON.stringify({ ...previous, ...Object.fromEntries(sorted.map(([f, ms]) => [f, Math.round(ms)])) }, null, 1)}\n`);
  } catch (e) {
    out += `  (durations not saved: ${e.message})\n`;
  }
  return out;
}
