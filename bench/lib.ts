/**
 * Shared benchmark plumbing: servers run as child processes (one core each at most), autocannon
 * drives them from this process, rounds alternate between the subject and its baseline so both
 * see the same machine noise, and results are medians.
 */
import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

export async function load(url: string, headers: Record<string, string>, durationSec: number, connections: number): Promise<LoadResult> {
  const r = await autocannon({ url, headers, duration: durationSec, connections, pipelining: 1 });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.timeouts, non2xx: r.non2xx };
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

export function startChild(args: string[], readyText: string, env: NodeJS.ProcessEnv = {}): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
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
      if (r.errors || r.non2xx) throw new Error(`${side.name}: ${r.errors} errors, ${r.non2xx} non-2xx responses`);
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
