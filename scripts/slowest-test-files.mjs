// A node:test reporter that prints the slowest test files once the run ends, and writes every
// file's time to test-artifacts/test-durations.json, where scripts/test.mjs reads it to start the
// slowest files first next time (with files run side by side, a slow file started last would set
// the run's length alone).
//
// Each file ends with a `test:complete` event at nesting 0 named after the file itself (its path on
// Node 20, its base name on Node 22+), whose duration is the file's whole run, process start included.
import fs from 'node:fs';
import path from 'node:path';

const SHOWN = 15;

export default async function* slowestTestFiles(source) {
  const times = new Map();
  for await (const event of source) {
    if (event.type !== 'test:complete' || event.data.nesting !== 0 || !event.data.file) continue;
    const { file, name, details } = event.data;
    if (name !== file && path.basename(file) !== name) continue;
    times.set(path.relative(process.cwd(), file), details?.duration_ms ?? 0);
  }
  if (times.size === 0) return;
  const sorted = [...times].sort((a, b) => b[1] - a[1]);
  const total = sorted.reduce((s, [, ms]) => s + ms, 0);
  let out = `\nslowest test files (of ${times.size}; ${(total / 1000).toFixed(0)} s in all files together):\n`;
  for (const [file, ms] of sorted.slice(0, SHOWN)) out += `  ${(ms / 1000).toFixed(1).padStart(7)} s  ${file}\n`;
  try {
    fs.mkdirSync('test-artifacts', { recursive: true });
    // Merged with the last record: a run of some files keeps the others' times.
    let previous = {};
    try { previous = JSON.parse(fs.readFileSync('test-artifacts/test-durations.json', 'utf8')); } catch { /* first run */ }
    fs.writeFileSync('test-artifacts/test-durations.json', `${JSON.stringify({ ...previous, ...Object.fromEntries(sorted.map(([f, ms]) => [f, Math.round(ms)])) }, null, 1)}\n`);
  } catch (e) {
    out += `  (durations not saved: ${e.message})\n`;
  }
  yield out;
}
