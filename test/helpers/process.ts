/** Starts the real `damhub` CLI as a child process, the way README tells people to. */
import { spawn, type ChildProcess } from 'node:child_process';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const CLI = `${REPO_ROOT}bin/damhub.js`;

/** Whether a process of this id exists (signal 0 checks without sending anything). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Asserts that process `pid` runs under RLIMIT_DATA = `workMb` MiB above the runtime's own
 * reservation (what `runtimeDataBaselineKb()` measures). A bare Node's VmData varies by a few
 * hundred KiB from one start to the next (CI saw 256 KiB between the hub's and the test's
 * measure), so the runtime's share is compared within 16 MiB, the work's share exactly above it.
 */
export function assertDataLimit(pid: number, workMb: number, baselineKb: number): void {
  const limits = fs.readFileSync(`/proc/${pid}/limits`, 'utf8');
  const m = /^Max data size\s+(\d+)\s+(\d+)\s+bytes/m.exec(limits);
  assert.ok(m, `process ${pid} has a data limit:\n${limits}`);
  assert.equal(m[1], m[2], `process ${pid}: soft and hard data limits agree`);
  const runtimeKb = Number(m[1]) / 1024 - workMb * 1024;
  assert.ok(Math.abs(runtimeKb - baselineKb) <= 16 * 1024, `process ${pid}: data limit ${m[1]} bytes is ${workMb} MiB + ${runtimeKb} KiB; the runtime's own is ${baselineKb} KiB`);
}

export async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runCli(args: string[], env: NodeJS.ProcessEnv = {}, input?: string): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  output(): string;
  /** SIGTERM and wait for exit; resolves to the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** `nodeArgs`: options for node itself, before the CLI (a benchmark's --cpu-prof). */
export async function startServer(args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 60_000, nodeArgs: string[] = []): Promise<ServerProcess> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [...nodeArgs, CLI, 'serve', '--port', String(port), '--public-url', url, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, DAMHUB_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in ${timeoutMs} ms:\n${out}`)), timeoutMs);
    const check = () => {
      if (out.includes('damhub listening on')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', check);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening:\n${out}`));
    });
  });
  return {
    child,
    url,
    output: () => out,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}
