/**
 * bench/lib.ts, the helper every benchmark reports through: a figure of 0, NaN or an empty sample
 * set fails the run; RESULT lines are formatted exactly; the run's private temp root (TMPDIR) is
 * removed when the run exits, throws, or is interrupted. Importing the module changes the process
 * (TMPDIR, exit and signal handlers), so every case runs in a child process of its own.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

const LIB = new URL('../../bench/lib.js', import.meta.url).href;

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `body` as an ES module with `lib` imported from bench/lib.js, TMPDIR set to `tmp`. */
function runWithLib(body: string, tmp: string, onStdout?: (text: string, child: ReturnType<typeof spawn>) => void): Promise<Run> {
  return new Promise((resolve, reject) => {
    const code = `const lib = await import(${JSON.stringify(LIB)});\n${body}`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', code], { env: { ...process.env, TMPDIR: tmp }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => {
      stdout += d;
      onStdout?.(stdout, child);
    });
    child.stderr!.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (c, signal) => resolve({ code: c, signal, stdout, stderr }));
  });
}

function scratch(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'damhub-bench-lib-test-'));
}

test('a figure of 0, a negative, NaN or infinite figure, an empty or non-finite sample set, and a promise timed as synchronous throw a BenchmarkError', async () => {
  const tmp = scratch();
  try {
    const r = await runWithLib(`
      const cases = {
        zero: () => lib.result('scan-p95', 0, 'ms'),
        negative: () => lib.result('scan-p95', -1, 'ms'),
        nan: () => lib.result('scan-p95', NaN, 'ms'),
        infinite: () => lib.result('ratio', Infinity, 'x', ['>=', 0.8]),
        emptyMedian: () => lib.median([]),
        emptyPercentile: () => lib.percentile([], 95),
        nanSample: () => lib.median([1, NaN, 3]),
        emptySamples: () => lib.samples([], 'http latencies'),
        negativeCount: () => lib.result('errors', -1, 'answers', ['<=', 0], 'non-negative'),
        noFigure: () => lib.reportResults(),
        spaceInName: () => lib.result('two words', 1, 'ms'),
        // The image-speed bug: an asynchronous scan timed as if synchronous reads a few µs, not 0.
        promiseTimedSync: () => lib.timeSync(() => new Promise((r) => setTimeout(r, 30))),
      };
      const out = {};
      for (const [k, fn] of Object.entries(cases)) {
        try { fn(); out[k] = 'no error'; } catch (e) { out[k] = e.name + ': ' + e.message; }
      }
      // Allowed: 0 for a non-negative figure, a negative for a finite one.
      out.zeroCount = lib.result('errors', 0, 'answers', ['<=', 0], 'non-negative');
      out.negativeTrend = lib.result('rss-trend', -0.25, 'MiB/min', ['<=', 1], 'finite');
      out.timeAsync = await lib.timeAsync(() => new Promise((r) => setTimeout(() => r(7), 30)));
      out.timeSync = lib.timeSync(() => 5);
      process.stdout.write(JSON.stringify(out));
    `, tmp);
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as Record<string, string> & { timeAsync: { value: number; ms: number }; timeSync: { value: number; ms: number } };
    for (const k of ['zero', 'negative', 'nan', 'infinite', 'emptyMedian', 'emptyPercentile', 'nanSample', 'emptySamples', 'negativeCount', 'noFigure', 'spaceInName', 'promiseTimedSync']) {
      assert.match(out[k]!, /^BenchmarkError: /, `${k}: ${out[k]}`);
    }
    assert.match(out.zero!, /figure scan-p95 is 0: .*nothing was measured/);
    assert.match(out.emptySamples!, /http latencies is empty/);
    assert.equal(out.zeroCount, 'RESULT errors 0 answers target <= 0 met');
    assert.equal(out.negativeTrend, 'RESULT rss-trend -0.25 MiB/min target <= 1 met');
    assert.match(out.promiseTimedSync!, /returned a promise/);
    assert.equal(out.timeAsync.value, 7);
    assert.ok(out.timeAsync.ms >= 25, `timeAsync waited for the promise: ${out.timeAsync.ms} ms`);
    assert.equal(out.timeSync.value, 5);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test('RESULT lines: name, value, unit, target and met|missed, printed once at the end in the order recorded', async () => {
  const tmp = scratch();
  try {
    const r = await runWithLib(`
      lib.result('image-search-http-p95-1m', 52.3, 'ms', ['<=', 15]);
      lib.result('image-search-recall50-1m', 0.99345, 'ratio', ['>=', 0.95]);
      lib.result('checktoken-vs-bare-node-http', 0.59996, 'x', ['>=', 0.6]);
      lib.result('picker-min-gzip', 19.4756, 'KB', ['<=', 40]);
      lib.result('browse-cached-p99-over-p50', 2.125, 'x');
      lib.result('at-target', 15, 'ms', ['<=', 15]);
      process.stdout.write('--\\n');
      lib.reportResults();
      process.stdout.write(JSON.stringify([lib.median([3, 1, 2]), lib.median([4, 1, 3, 2]), lib.percentile([5, 1, 4, 2, 3], 95), lib.percentile([5, 1, 4, 2, 3], 50), lib.scaleTag(1000000), lib.scaleTag(100000), lib.scaleTag(2000), lib.scaleTag(2500), lib.scaleTag(750)]));
    `, tmp);
    assert.equal(r.code, 0, r.stderr);
    const [before, after] = r.stdout.split('--\n');
    assert.equal(before, '', 'nothing is printed before reportResults()');
    const lines = after!.split('\n');
    assert.deepEqual(lines.slice(0, 6), [
      'RESULT image-search-http-p95-1m 52.3 ms target <= 15 missed',
      'RESULT image-search-recall50-1m 0.99 ratio target >= 0.95 met',
      // Rounded to two decimals it would read 0.6 and "missed": printed with the digits that show why.
      'RESULT checktoken-vs-bare-node-http 0.59996 x target >= 0.6 missed',
      'RESULT picker-min-gzip 19.48 KB target <= 40 met',
      'RESULT browse-cached-p99-over-p50 2.13 x',
      'RESULT at-target 15 ms target <= 15 met',
    ]);
    assert.deepEqual(JSON.parse(lines[6]!), [2, 2.5, 5, 3, '1m', '100k', '2k', '2.5k', '750']);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

/** The run's temp root, its parent and what the child reported about it. */
async function tempRootCase(body: string, onStdout?: (text: string, child: ReturnType<typeof spawn>) => void) {
  const tmp = scratch();
  const r = await runWithLib(`
    const fs = await import('node:fs');
    const os = await import('node:os');
    const path = await import('node:path');
    const { execFileSync, spawn } = await import('node:child_process');
    // Everything that asks os.tmpdir() lands in the run's root, children included.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'damhub-lib-'));
    fs.writeFileSync(path.join(dir, 'data.bin'), Buffer.alloc(1024));
    const childTmp = execFileSync(process.execPath, ['-e', 'process.stdout.write(require("node:os").tmpdir())']).toString();
    process.stdout.write(JSON.stringify({ root: lib.TEMP_ROOT, tmpdir: os.tmpdir(), dir, childTmp }) + '\\n');
    ${body}
  `, tmp, onStdout);
  const info = JSON.parse(r.stdout.split('\n')[0]!) as { root: string; tmpdir: string; dir: string; childTmp: string; sleeper?: number };
  const left = fs.readdirSync(tmp);
  fs.rmSync(tmp, { recursive: true, force: true });
  return { r, info, tmp, left };
}

test('the temp root: one per run inside TMPDIR, used by os.tmpdir() and by child processes, removed on a normal exit', async () => {
  const { r, info, tmp, left } = await tempRootCase('');
  assert.equal(r.code, 0, r.stderr);
  assert.equal(path.dirname(info.root), tmp);
  assert.match(path.basename(info.root), /^damhub-bench-run-/);
  assert.equal(info.tmpdir, info.root);
  assert.equal(info.childTmp, info.root);
  assert.ok(info.dir.startsWith(info.root + path.sep));
  assert.deepEqual(left, [], 'the temp root is gone');
});

/** Waits up to 2 s for a process to be gone. */
async function gone(pid: number): Promise<boolean> {
  const alive = () => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  for (let i = 0; i < 40 && alive(); i++) await new Promise((res) => setTimeout(res, 50));
  return !alive();
}

test('the temp root is removed when the benchmark throws (exit code 1), and a detached server using it is stopped', async () => {
  // A server in its own process group (as test helpers start Apache), left running by a failure.
  const { r, left } = await tempRootCase(`
    const server = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', path.join(os.tmpdir(), 'server.conf')], { stdio: 'ignore', detached: true });
    server.unref();
    process.stdout.write(JSON.stringify({ server: server.pid }) + '\\n');
    await new Promise((r) => setTimeout(r, 20));
    throw new Error('benchmark failed');
  `);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /benchmark failed/);
  assert.deepEqual(left, []);
  const server = (JSON.parse(r.stdout.split('\n')[1]!) as { server: number }).server;
  assert.ok(await gone(server), 'the detached server is gone');
});

test('the temp root is removed when a figure is 0 (the run fails)', async () => {
  const { r, left } = await tempRootCase(`lib.result('index-scan-p95', 0, 'ms'); lib.reportResults();`);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /BenchmarkError: figure index-scan-p95 is 0/);
  assert.doesNotMatch(r.stdout, /RESULT/);
  assert.deepEqual(left, []);
});

for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
  test(`the temp root is removed on ${signal} (Ctrl+C is SIGINT), a tracked child killed and an interrupt clean-up run (exit ${code})`, async () => {
    const { r, info, left } = await tempRootCase(`
      const sleeper = lib.trackChild(spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' }));
      lib.onInterrupt(async () => { await new Promise((r) => setTimeout(r, 20)); fs.writeFileSync(path.join(os.tmpdir(), 'written-during-clean-up'), ''); process.stdout.write('interrupt clean-up ran\\n'); });
      process.stdout.write(JSON.stringify({ sleeper: sleeper.pid }) + '\\nready\\n');
      setInterval(() => {}, 1000);
    `, (text, child) => {
      if (text.includes('ready\n') && !child.killed) child.kill(signal);
    });
    assert.equal(r.code, code, r.stderr);
    assert.match(r.stdout, /interrupt clean-up ran/);
    assert.match(r.stderr, new RegExp(`bench: ${signal}, removing ${info.root.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    assert.deepEqual(left, []);
    const sleeper = (JSON.parse(r.stdout.split('\n')[1]!) as { sleeper: number }).sleeper;
    assert.ok(await gone(sleeper), 'the tracked child is gone');
  });
}

test('load(): autocannon\'s body collection is switched off where dropBodies expects it (an autocannon upgrade that moves it fails here), answers and non-2xx still counted', async () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'damhub-bench-lib-test-'));
  try {
    const run = await runWithLib(`
      const http = await import('node:http');
      const big = Buffer.alloc(1 << 20, 0xe3); // not valid UTF-8 on its own: decoding it would be slow and lossy
      const server = http.createServer((req, res) => { res.statusCode = req.url === '/missing' ? 404 : 200; res.end(big); }).listen(0, '127.0.0.1');
      await new Promise((r) => server.once('listening', r));
      const url = 'http://127.0.0.1:' + server.address().port;
      const ok = await lib.load(url + '/', {}, 1, 4);
      const missing = await lib.load(url + '/missing', {}, 1, 2);
      server.close();
      console.log(JSON.stringify({ ok, missing }));`, tmp);
    assert.equal(run.code, 0, run.stderr);
    const { ok, missing } = JSON.parse(run.stdout.trim().split('\n').pop()!) as Record<string, { rps: number; errors: number; timeouts: number; non2xx: number }>;
    assert.ok(ok!.rps > 0, 'answers were counted');
    assert.deepEqual([ok!.errors, ok!.timeouts, ok!.non2xx], [0, 0, 0]);
    assert.ok(missing!.non2xx > 0, 'status codes are still counted');
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
