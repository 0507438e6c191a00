/**
 * Shared benchmark plumbing: servers run as child processes (one core each at most), autocannon
 * drives them from this process, rounds alternate between the subject and its baseline so both
 * see the same machine noise, and results are medians.
 *
 * Every benchmark imports this module first, which gives it two guarantees:
 * - **One private temp root per run.** At import, a fresh `mkdtemp` directory becomes
 *   `process.env.TMPDIR`, so every `os.tmpdir()` after it (the benchmark's own folders, test
 *   helpers such as `tempDir()` / `startLibraryHub`, and every child process, which inherits the
 *   variable) lands inside it. It is removed when the process exits: normally, on an error, and
 *   on SIGINT / SIGTERM / SIGHUP (children started through `startChild` or `trackChild`, and any
 *   process whose command line names the temp root, are killed first). `removeOnExit()` adds
 *   paths outside it; `onInterrupt()` adds an asynchronous clean-up (a database) for signals.
 * - **Figures that cannot lie.** `result()` records each figure; it throws when a figure is 0,
 *   negative or not finite (a timed region that timed nothing), and `median()` / `percentile()`
 *   throw on an empty or non-finite sample set. `reportResults()` ends the run with one line per
 *   figure: `RESULT <name> <value> <unit> target <op> <value> met|missed` (or `RESULT <name>
 *   <value> <unit>` for a figure without a target). `timeAsync()` / `timeSync()` time a call;
 *   the second refuses one that returns a promise (an un-awaited call times a few µs, not 0).
 */
import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

// ── the run's private temp root ─────────────────────────────────────────────────────────────
/** This run's temp root (also `process.env.TMPDIR` and so `os.tmpdir()` from here on). */
export const TEMP_ROOT = fs.mkdtempSync(path.join(os.tmpdir(), 'damhub-bench-run-'));
// Traversable by other users (mkdtemp makes it 0700): servers that drop root for an unprivileged
// user (Apache in startApacheDav) must reach their folders inside it.
fs.chmodSync(TEMP_ROOT, 0o711);
process.env.TMPDIR = TEMP_ROOT;
const toRemove = new Set<string>([TEMP_ROOT]);
const children = new Set<ChildProcess>();

/** Removes `p` (a file or folder outside the temp root) when the run ends, however it ends. */
export function removeOnExit(p: string): string {
  toRemove.add(p);
  return p;
}

/** Kills `child` (SIGKILL) if it still runs when this process ends, before the temp root goes. */
export function trackChild<T extends ChildProcess>(child: T): T {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

let cleanedUp = false;
/** Kills tracked children and removes the temp root and every `removeOnExit` path (synchronous; idempotent). */
export function cleanUp(): void {
  if (cleanedUp) return;
  cleanedUp = true;
  for (const c of children) {
    try {
      if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    } catch { /* already gone */ }
  }
  killStragglers();
  for (const p of toRemove) {
    // A child killed a moment ago may still be writing: retry a few times.
    for (let attempt = 0; ; attempt++) {
      try {
        fs.rmSync(p, { recursive: true, force: true });
        break;
      } catch (e) {
        if (attempt >= 20) {
          process.stderr.write(`bench: could not remove ${p}: ${(e as Error).message}\n`);
          break;
        }
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
      }
    }
  }
}
const onSignal: (() => Promise<unknown>)[] = [];
/**
 * An asynchronous clean-up for data outside the file system (a database, Redis keys) that a
 * benchmark's `finally` removes but an interruption would skip: run on SIGINT/SIGTERM/SIGHUP
 * (5 s at most) before the temp root is removed and the process exits.
 */
export function onInterrupt(fn: () => Promise<unknown>): void {
  onSignal.push(fn);
}
/**
 * Processes started for this run that nothing tracks, e.g. a server a test helper started detached
 * (Apache in startApacheDav, in its own process group, so neither a Ctrl+C nor our exit reaches
 * it) when the benchmark failed before it could stop them: every process whose command line names
 * this run's private temp root is this run's. Linux (/proc); best effort.
 */
function killStragglers(): void {
  let pids: string[];
  try {
    pids = fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d) && Number(d) !== process.pid);
  } catch {
    return;
  }
  for (const pid of pids) {
    try {
      if (fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(TEMP_ROOT)) process.kill(Number(pid), 'SIGKILL');
    } catch { /* gone, or not ours to read */ }
  }
}
process.on('exit', cleanUp);
const SIGNALS: Record<string, number> = { SIGINT: 2, SIGTERM: 15, SIGHUP: 1 };
let interrupted = false;
for (const [signal, number] of Object.entries(SIGNALS)) {
  process.on(signal, () => {
    if (interrupted) process.exit(128 + number); // a second signal: now
    interrupted = true;
    process.stderr.write(`\nbench: ${signal}, removing ${TEMP_ROOT}\n`);
    const timeout = new Promise((r) => setTimeout(r, 5000).unref());
    void Promise.race([Promise.allSettled(onSignal.map((fn) => fn())), timeout]).finally(() => {
      cleanUp();
      process.exit(128 + number);
    });
  });
}

// ── figures ──────────────────────────────────────────────────────────────────────────────────
export type Comparison = '<=' | '>=';
/**
 * What a figure may be: `positive` (the default: every timed figure, rate, ratio, size) must be
 * finite and > 0; `non-negative` (counts of errors, a recall beyond the targets) may be 0;
 * `finite` (a trend) may be negative.
 */
export type FigureKind = 'positive' | 'non-negative' | 'finite';

/** Thrown when a benchmark measured nothing: a 0, negative or non-finite figure, or an empty sample set. */
export class BenchmarkError extends Error {
  override name = 'BenchmarkError';
}

function checkFigure(name: string, value: number, kind: FigureKind): void {
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new BenchmarkError(`figure ${name} is ${value}: not a finite number (an empty sample set or a division by 0?)`);
  if (kind === 'positive' && value <= 0) throw new BenchmarkError(`figure ${name} is ${value}: a timed figure (or rate, ratio, size) of 0 or less means nothing was measured (an un-awaited call?)`);
  if (kind === 'non-negative' && value < 0) throw new BenchmarkError(`figure ${name} is ${value}: negative`);
}

/** Checks a sample set: not empty, every sample finite. Returns it. */
export function samples(xs: readonly number[], what = 'sample set'): readonly number[] {
  if (!xs.length) throw new BenchmarkError(`${what} is empty: nothing was measured`);
  for (const x of xs) if (typeof x !== 'number' || !Number.isFinite(x)) throw new BenchmarkError(`${what} holds ${x}: not a finite number`);
  return xs;
}

const meets = (value: number, op: Comparison, target: number) => (op === '<=' ? value <= target : value >= target);

/**
 * The value as printed: two decimals, more when rounding to two would put it on the other side of
 * its target (0.5996 against >= 0.6 prints 0.5996, not 0.6).
 */
export function formatValue(value: number, target?: { op: Comparison; value: number }): string {
  for (let d = 2; d <= 8; d++) {
    const shown = Math.round(value * 10 ** d) / 10 ** d;
    if (!target || meets(shown, target.op, target.value) === meets(value, target.op, target.value)) return String(shown);
  }
  return String(value);
}

/** One figure as its RESULT line. */
export function resultLine(name: string, value: number, unit: string, target?: { op: Comparison; value: number }): string {
  const base = `RESULT ${name} ${formatValue(value, target)} ${unit}`;
  return target ? `${base} target ${target.op} ${target.value} ${meets(value, target.op, target.value) ? 'met' : 'missed'}` : base;
}

const recorded: string[] = [];

/**
 * Records one figure (printed by `reportResults()`): throws a BenchmarkError if it is not finite,
 * or ≤ 0 for a `positive` figure (the default), or < 0 for a `non-negative` one. `target`:
 * `['<=', 15]` means met when value ≤ 15. Names are one token (letters, digits, `-_.:@`).
 */
export function result(name: string, value: number, unit: string, target?: [Comparison, number] | null, kind: FigureKind = 'positive'): string {
  if (!/^[\w.:@-]+$/.test(name)) throw new BenchmarkError(`figure name "${name}" is not one token`);
  if (!/^\S+$/.test(unit)) throw new BenchmarkError(`unit "${unit}" of ${name} is not one token`);
  checkFigure(name, value, kind);
  if (target) checkFigure(`${name} (target)`, target[1], 'finite');
  const line = resultLine(name, value, unit, target ? { op: target[0], value: target[1] } : undefined);
  recorded.push(line);
  return line;
}

/** Prints the RESULT lines (once, at the end of a run); throws if the run recorded none. */
export function reportResults(log: (line: string) => void = (l) => process.stdout.write(`${l}\n`)): string[] {
  if (!recorded.length) throw new BenchmarkError('the benchmark recorded no figure');
  const lines = recorded.splice(0);
  for (const l of lines) log(l);
  return lines;
}

/**
 * Times `fn` and awaits what it returns, so an asynchronous call cannot end the timer before its
 * work is done. Returns the value and the milliseconds.
 */
export async function timeAsync<T>(fn: () => T | Promise<T>): Promise<{ value: T; ms: number }> {
  const t0 = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - t0 };
}

/**
 * Times a synchronous `fn`. Throws a BenchmarkError if it returns a promise (or any thenable): the
 * timer would stop before the work ran, and the work would land in whatever is timed next (the
 * un-awaited scan of image-speed before issue 22 read a few µs; no zero check sees that).
 */
export function timeSync<T>(fn: () => T): { value: T; ms: number } {
  const t0 = performance.now();
  const value = fn();
  const ms = performance.now() - t0;
  if (value !== null && (typeof value === 'object' || typeof value === 'function') && typeof (value as { then?: unknown }).then === 'function') {
    throw new BenchmarkError('timeSync: the timed call returned a promise; time it with timeAsync (await it)');
  }
  return { value, ms };
}

/** A short tag for a scale in figure names: 1000000 → 1m, 100000 → 100k, 2000 → 2k. */
export function scaleTag(n: number): string {
  if (n >= 1e6 && n % 1e5 === 0) return `${n / 1e6}m`;
  if (n >= 1e3 && n % 100 === 0) return `${n / 1e3}k`;
  return String(n);
}

// ── plumbing ─────────────────────────────────────────────────────────────────────────────────
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  /** Connection errors other than timeouts (autocannon counts timeouts among its errors too). */
  errors: number;
  /** Requests without an answer within autocannon's timeout (10 s). */
  timeouts: number;
  non2xx: number;
}

/**
 * autocannon keeps every response body as a string (`req.body += chunk`, pipelinedRequestsQueue.js
 * in autocannon 9): for the browse benchmark's 640 KB pages that is a UTF-8 decode and a growing
 * string per response in the load generator's own thread, which made autocannon, not the server,
 * the slow and unfair side (issue 22: "client timeouts" at 50 connections while the hub's own log
 * showed no request over 0.8 s). No benchmark here reads the bodies autocannon collects (status
 * codes are still counted), so each client drops them. autocannon is pinned in package-lock.json;
 * if an upgrade moves this internal, the check below stops the run rather than measuring the old way.
 */
function dropBodies(client: unknown): void {
  const queue = (client as { pipelinedRequests?: { addBody?: unknown } }).pipelinedRequests;
  if (typeof queue?.addBody !== 'function') throw new Error('autocannon internals changed: pipelinedRequests.addBody is gone (see dropBodies in bench/lib.ts)');
  queue.addBody = () => {};
}

export async function load(url: string, headers: Record<string, string>, durationSec: number, connections: number): Promise<LoadResult> {
  const r = await autocannon({ url, headers, duration: durationSec, connections, pipelining: 1, setupClient: dropBodies });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: Math.max(0, r.errors - r.timeouts), timeouts: r.timeouts, non2xx: r.non2xx };
}

/** Runs `script` in a child process (a load generator off this process's event loop) and parses the JSON it prints; a non-zero exit fails the run. */
export async function childJson<T>(script: string, what: string): Promise<T> {
  const child = trackChild(spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'pipe'] }));
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  const code = await new Promise<number | null>((r) => child.on('close', r));
  if (code !== 0 || !out) throw new Error(`${what} exited ${code}`);
  return JSON.parse(out) as T;
}

/**
 * checkToken from a child process, 4 connections each sending its next request when the last is
 * answered, for `seconds`: p50 and p99 in ms with µs resolution (autocannon's histogram counts
 * whole milliseconds, and an idle token check takes well under one). Any error or non-200 fails
 * the run.
 */
export async function checkTokenLoad(target: string, authorization: string, seconds: number): Promise<{ p50: number; p99: number }> {
  const script = `
    const http = require('node:http');
    const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
    const end = Date.now() + ${seconds * 1000};
    const lat = [];
    let bad = 0;
    const once = () => new Promise((resolve, reject) => {
      const t0 = process.hrtime.bigint();
      const req = http.get(${JSON.stringify(target)}, { agent, headers: { authorization: ${JSON.stringify(authorization)} } }, (res) => {
        res.on('data', () => {});
        res.on('end', () => { lat.push(Number(process.hrtime.bigint() - t0) / 1e6); if (res.statusCode !== 200) bad++; resolve(); });
      });
      req.on('error', reject);
    });
    const loop = async () => { while (Date.now() < end) await once(); };
    Promise.all([loop(), loop(), loop(), loop()]).then(() => {
      lat.sort((a, b) => a - b);
      const q = (p) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))];
      process.stdout.write(JSON.stringify({ n: lat.length, bad, p50: q(0.5), p99: q(0.99) }));
    }, (e) => { process.stderr.write(String(e)); process.exit(1); });`;
  const j = await childJson<{ n: number; bad: number; p50: number; p99: number }>(script, 'checkToken load');
  if (j.bad || !j.n) throw new Error(`checkToken under load: ${j.bad} non-200 answers of ${j.n}`);
  return { p50: j.p50, p99: j.p99 };
}

/**
 * checkToken measured (checkTokenLoad) while `startLoad` keeps the node busy: the load starts a
 * second before the measured window opens and runs two seconds longer than it, so it covers the
 * whole window.
 */
export async function checkTokenWhile<T>(target: string, authorization: string, seconds: number, startLoad: (seconds: number) => Promise<T>): Promise<{ checks: { p50: number; p99: number }; load: T }> {
  const running = startLoad(seconds + 2);
  await new Promise((r) => setTimeout(r, 1000));
  const checks = await checkTokenLoad(target, authorization, seconds);
  return { checks, load: await running };
}

/** Median of a sample set; throws on an empty or non-finite one. */
export const median = (xs: readonly number[], what = 'sample set'): number => {
  const s = [...samples(xs, what)].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** The p-th percentile (nearest rank) of a sample set; throws on an empty or non-finite one. */
export const percentile = (xs: readonly number[], p: number, what = 'sample set'): number => {
  const s = [...samples(xs, what)].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};

export function startChild(args: string[], readyText: string, env: NodeJS.ProcessEnv = {}): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = trackChild(spawn(process.execPath, args, { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] }));
    let out = '';
    const onData = (d: Buffer) => {
      out += d;
      if (out.includes(readyText)) resolve(child);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (d) => (out += d));
    child.on('exit', (code) => reject(new Error(`${args.join(' ')} exited ${code}: ${out}`)));
  });
}

export interface Side {
  name: string;
  url: string;
  headers: Record<string, string>;
}

/**
 * Alternates the sides for `rounds` after one warm-up each; returns per-side medians and the
 * median of the per-round ratios subject/baseline (adjacent runs share the machine's drift).
 */
export async function sideBySide(subject: Side, baseline: Side, opts: { rounds: number; durationSec: number; connections: number; extra?: Side[] }) {
  const sides = [subject, baseline, ...(opts.extra ?? [])];
  for (const side of sides) await load(side.url, side.headers, 2, opts.connections);
  const runs: Record<string, LoadResult[]> = Object.fromEntries(sides.map((s) => [s.name, []]));
  const ratios: number[] = [];
  for (let i = 0; i < opts.rounds; i++) {
    const round: Record<string, LoadResult> = {};
    for (const side of i % 2 ? [...sides].reverse() : sides) {
      const r = await load(side.url, side.headers, opts.durationSec, opts.connections);
      if (r.errors || r.timeouts || r.non2xx) throw new Error(`${side.name}: ${r.timeouts} timeouts, ${r.errors} other connection errors, ${r.non2xx} non-2xx responses`);
      runs[side.name]!.push(r);
      round[side.name] = r;
    }
    ratios.push(round[subject.name]!.rps / round[baseline.name]!.rps);
  }
  const summary = (rs: LoadResult[]) => ({ rps: median(rs.map((r) => r.rps)), p50: median(rs.map((r) => r.p50)), p99: median(rs.map((r) => r.p99)) });
  return {
    subject: summary(runs[subject.name]!),
    baseline: summary(runs[baseline.name]!),
    extra: Object.fromEntries((opts.extra ?? []).map((s) => [s.name, summary(runs[s.name]!)])),
    ratio: median(ratios),
    ratios,
    runs,
  };
}

export function table(rows: [string, ...(string | number)[]][]): string {
  return rows.map((r) => r.map((c) => String(typeof c === 'number' ? Math.round(c * 100) / 100 : c).padEnd(14)).join(' ')).join('\n');
}

/** Peak and current resident set size (MiB) of a process, from /proc/<pid>/status (Linux). */
export function rssOf(pid: number): { peakMiB: number; currentMiB: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { peakMiB: kb('VmHWM') / 1024, currentMiB: kb('VmRSS') / 1024 };
}

/**
 * CPU time (user + system) process `pid` has used so far, in ms, from /proc/PID/stat: the hub's own
 * cost of a transfer, which a machine shared with other work disturbs much less than a throughput.
 * NaN where /proc is missing.
 */
export function cpuMsOf(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}
/** USER_HZ: 100 on every Linux the benchmarks run on (getconf CLK_TCK). */
const CLOCK_TICKS = 100;

/** DAMHUB_BENCH_CPU_PROF=<dir>: the hub child writes a V8 CPU profile there when it exits. */
export function profileArgs(): string[] {
  const dir = process.env.DAMHUB_BENCH_CPU_PROF;
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : [];
}

/**
 * The response headers a baseline should repeat to send the same bytes as the hub: all but those
 * node:http writes itself (date, connection, keep-alive, content-length) and content-type (passed
 * apart). The request id keeps its length but not its value.
 */
export function sameBytesHeaders(res: Response, file: string): string {
  const skip = new Set(['date', 'connection', 'keep-alive', 'content-length', 'content-type', 'transfer-encoding']);
  const out: Record<string, string> = {};
  res.headers.forEach((v, k) => {
    if (!skip.has(k)) out[k] = v;
  });
  fs.writeFileSync(file, JSON.stringify(out));
  return file;
}

/** What ThreadClient hands back: the status, the timings and the few fields benchmarks check. */
export interface ClientAnswer {
  status: number;
  /** From the request until the response's last byte. */
  ms: number;
  /** The JSON parse that follows, apart. */
  parseMs: number;
  body: { totalAssetsCount?: number; code?: string; assetIds?: string[] };
}

/**
 * An HTTP client on a thread of its own, as a partner's client is in a process of its own: its
 * allocations (the response, its parse) do not collect in the hub's heap, and its work does not
 * run on the hub's event loop between a request and its answer. A latency is from the request
 * until the response's last byte, as autocannon measures the other HTTP benchmarks; the parse of
 * the JSON that follows is timed apart. One request at a time.
 */
export class ThreadClient {
  private readonly worker = new Worker(`
    const { parentPort } = require('node:worker_threads');
    const { performance } = require('node:perf_hooks');
    parentPort.on('message', async ({ url, method, headers, body }) => {
      try {
        const s = performance.now();
        const res = await fetch(url, { method, headers, body });
        const bytes = await res.arrayBuffer();
        const ms = performance.now() - s;
        const p = performance.now();
        const json = JSON.parse(Buffer.from(bytes).toString('utf8'));
        const parseMs = performance.now() - p;
        const assetIds = Array.isArray(json.assets) ? json.assets.map((a) => a.id) : undefined;
        parentPort.postMessage({ status: res.status, ms, parseMs, body: { totalAssetsCount: json.totalAssetsCount, code: json.code, assetIds } });
      } catch (e) {
        parentPort.postMessage({ error: String(e && e.stack || e) });
      }
    });`, { eval: true });

  private pending: { resolve: (r: ClientAnswer) => void; reject: (e: unknown) => void } | null = null;

  constructor() {
    this.worker.on('message', (r: ClientAnswer | { error: string }) => {
      const p = this.pending;
      this.pending = null;
      if ('error' in r) p?.reject(new Error(`client: ${r.error}`));
      else p?.resolve(r);
    });
    this.worker.on('error', (e) => this.pending?.reject(e));
  }

  get(url: string, headers: Record<string, string>): Promise<ClientAnswer> {
    return this.request({ url, method: 'GET', headers });
  }

  request(req: { url: string; method: string; headers: Record<string, string>; body?: string }): Promise<ClientAnswer> {
    if (this.pending) throw new Error('ThreadClient: one request at a time');
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      this.worker.postMessage(req);
    });
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }
}
