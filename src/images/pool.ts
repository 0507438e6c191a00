/**
 * The image pool: every decode of untrusted image bytes (search-by-image references, library
 * files at indexing time, their renditions) runs in one of a few warm child processes.
 *
 * Why child processes and not worker_threads: sharp's work runs on the process-wide libuv thread
 * pool, which worker threads share with the main thread — a decode in a worker would still queue
 * ahead of the server's file reads, WebCrypto and DNS lookups — and terminating a worker does not
 * stop native work already in flight. A child process has its own libuv pool and its own memory,
 * and SIGKILL stops it whatever it is doing. The cost is one IPC round trip per job (bytes in,
 * 64×64-sized raw results out; `serialization: 'advanced'` moves Buffers without base64), which
 * bench/image-decode.ts measures.
 *
 * Rules:
 * - at most `size` jobs run at once (one per child, each child with sharp.concurrency(1));
 * - at most `queueMax` jobs of requests wait; one more is refused at once (`busy`: the caller
 *   answers 503); indexing jobs (`background`) wait behind every request's job;
 * - a job that runs longer than its deadline, or whose AbortSignal fires (the client went away,
 *   the provider deadline passed), has its child SIGKILLed; the slot is free again when the child
 *   has exited, and a fresh child is forked for the next job;
 * - idle children are kept (warm) but do not keep the Node process alive.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { Metadata } from 'sharp';
import type { AnalyseResult, JobReply, WorkerJob } from './jobs.js';

export type ImageJobErrorKind = 'over-budget' | 'undecodable' | 'unsupported' | 'failed' | 'timeout' | 'aborted' | 'busy' | 'crashed';

export class ImageJobError extends Error {
  constructor(readonly kind: ImageJobErrorKind, message: string) {
    super(message);
    this.name = 'ImageJobError';
  }
}

export interface ImagePoolOptions {
  /** Child processes, i.e. decodes at once. */
  size: number;
  /** Jobs that may wait for a child; one more is refused. */
  queueMax: number;
  /** Default deadline of a job once it runs, in ms. */
  timeoutMs: number;
}

export interface RunOptions {
  signal?: AbortSignal;
  /** Deadline once the job runs (not while it waits), in ms; default the pool's. */
  timeoutMs?: number;
  /**
   * Indexing work: waits behind every request's job, and is not counted against `queueMax`
   * (the indexer bounds its own concurrency), so a library scan never makes a search 503.
   */
  background?: boolean;
}

interface Pending {
  job: WorkerJob;
  opts: RunOptions;
  resolve(v: unknown): void;
  reject(e: Error): void;
  onAbort?: () => void;
}

interface Slot {
  child: ChildProcess | null;
  /** The child has loaded sharp and said so: job deadlines count decoding, not process start-up. */
  ready: boolean;
  onReady: (() => void) | null;
  /** The job running in this slot, until its child answered or exited. */
  running: Pending | null;
}

const WORKER = fileURLToPath(new URL('./worker.js', import.meta.url));

export class ImagePool {
  private readonly slots: Slot[];
  private readonly queue: Pending[] = [];
  private nextId = 1;
  private closed = false;
  /** For tests and the benchmark: the most jobs ever running at once, and children forked. */
  peakRunning = 0;
  forks = 0;
  /** Jobs started (each one decode): a search by image costs exactly one. */
  jobs = 0;

  constructor(readonly opts: ImagePoolOptions) {
    if (!(opts.size >= 1)) throw new Error('the image pool needs at least one process');
    this.slots = Array.from({ length: opts.size }, () => ({ child: null, ready: false, onReady: null, running: null }));
  }

  get running(): number {
    return this.slots.filter((s) => s.running).length;
  }

  get queued(): number {
    return this.queue.length;
  }

  /** Process ids of the live children (tests check a killed one is gone). */
  pids(): number[] {
    return this.slots.flatMap((s) => (s.child?.pid ? [s.child.pid] : []));
  }

  analyse(job: Omit<Extract<WorkerJob, { op: 'analyse' }>, 'op'>, opts: RunOptions = {}): Promise<AnalyseResult> {
    return this.run({ op: 'analyse', ...job }, opts) as Promise<AnalyseResult>;
  }

  /** sharp's header-only metadata of a file, read in a child; its buffers (EXIF, ICC, IPTC, XMP) as Buffers. */
  async probe(source: string, opts: RunOptions = {}): Promise<Metadata> {
    const m = (await this.run({ op: 'probe', source }, opts)) as Record<string, unknown>;
    // Buffers cross the IPC channel as plain Uint8Arrays.
    for (const [k, v] of Object.entries(m)) if (v instanceof Uint8Array && !Buffer.isBuffer(v)) m[k] = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
    return m as unknown as Metadata;
  }

  run(job: WorkerJob, opts: RunOptions = {}): Promise<unknown> {
    if (this.closed) return Promise.reject(new ImageJobError('busy', 'the image pool is closed'));
    if (opts.signal?.aborted) return Promise.reject(new ImageJobError('aborted', 'the request ended before the image was decoded'));
    const free = this.slots.find((s) => !s.running);
    if (!free && !opts.background && this.queue.filter((q) => !q.opts.background).length >= this.opts.queueMax) {
      return Promise.reject(new ImageJobError('busy', `${this.opts.size} images are being decoded and ${this.opts.queueMax} are waiting`));
    }
    return new Promise((resolve, reject) => {
      const p: Pending = { job, opts, resolve, reject };
      if (free) return this.start(free, p);
      if (opts.signal) {
        p.onAbort = () => {
          const i = this.queue.indexOf(p);
          if (i >= 0) this.queue.splice(i, 1);
          reject(new ImageJobError('aborted', 'the request ended before the image was decoded'));
        };
        opts.signal.addEventListener('abort', p.onAbort, { once: true });
      }
      const firstBackground = opts.background ? -1 : this.queue.findIndex((q) => q.opts.background);
      if (firstBackground < 0) this.queue.push(p);
      else this.queue.splice(firstBackground, 0, p);
    });
  }

  private start(slot: Slot, p: Pending): void {
    if (p.onAbort) p.opts.signal?.removeEventListener('abort', p.onAbort);
    slot.running = p;
    this.jobs++;
    this.peakRunning = Math.max(this.peakRunning, this.running);
    const child = slot.child ?? this.spawn(slot);
    child.ref();
    (child.channel as { ref?(): void } | undefined)?.ref?.();
    const id = this.nextId++;
    let settled = false;
    let stop: ImageJobError | null = null;
    let timer: NodeJS.Timeout | undefined;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      p.opts.signal?.removeEventListener('abort', onAbort);
      child.off('message', onMessage);
      fn();
    };
    // Stopping a job = killing its child: native decode work cannot be interrupted otherwise.
    const kill = (e: ImageJobError) => {
      stop = e;
      child.kill('SIGKILL');
    };
    const timeoutMs = p.opts.timeoutMs ?? this.opts.timeoutMs;
    const onAbort = () => kill(new ImageJobError('aborted', 'the request ended while the image was decoded'));
    p.opts.signal?.addEventListener('abort', onAbort, { once: true });
    const onMessage = (m: JobReply) => {
      // Once the child is being killed, a late answer is ignored: the slot frees at its exit, so
      // no next job is ever sent to a dying process.
      if (m.id !== id || stop) return;
      finish(() => {
        this.release(slot);
        if (m.ok) p.resolve(m.result);
        else p.reject(new ImageJobError(m.kind, m.message));
      });
    };
    child.on('message', onMessage);
    // The child died with the job: killed by us (deadline, abort) or crashed (out of memory, a
    // decoder abort). The slot frees only once the process is gone.
    child.once('exit', (code, signal) => {
      if (slot.child === child) slot.child = null;
      finish(() => p.reject(stop ?? new ImageJobError('crashed', `the decoder process ended (${signal ?? `exit ${code}`})`)));
      if (slot.running === p) this.release(slot);
    });
    // The deadline starts when the job reaches a ready child (a fresh one first loads sharp).
    const dispatch = () => {
      if (settled || stop) return;
      timer = setTimeout(() => kill(new ImageJobError('timeout', `the image was not decoded within ${timeoutMs} ms`)), timeoutMs);
      child.send({ id, job: p.job }, (err) => {
        if (err) kill(new ImageJobError('crashed', `the decoder process could not be reached (${err.message})`));
      });
    };
    if (slot.ready) dispatch();
    else slot.onReady = dispatch;
  }

  private release(slot: Slot): void {
    slot.running = null;
    const child = slot.child;
    if (child) {
      child.removeAllListeners('exit');
      child.once('exit', () => {
        if (slot.child === child) slot.child = null;
      });
      // Idle children stay warm without holding the event loop open.
      child.unref();
      (child.channel as { unref?(): void } | undefined)?.unref?.();
    }
    const next = this.queue.shift();
    if (next) this.start(slot, next);
  }

  private spawn(slot: Slot): ChildProcess {
    const child = fork(WORKER, [], { serialization: 'advanced', execArgv: [], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    child.on('error', () => undefined); // reported through 'exit'
    slot.child = child;
    slot.ready = false;
    slot.onReady = null;
    child.on('message', (m: { ready?: boolean }) => {
      if (!m?.ready || slot.child !== child) return;
      slot.ready = true;
      const go = slot.onReady;
      slot.onReady = null;
      go?.();
    });
    this.forks++;
    return child;
  }

  /** Kills every child and refuses what waits; the pool cannot be used afterwards. */
  async close(): Promise<void> {
    this.closed = true;
    for (const p of this.queue.splice(0)) p.reject(new ImageJobError('busy', 'the image pool is closed'));
    const exits = this.slots.flatMap((s) => {
      const c = s.child;
      if (!c || c.exitCode !== null || c.signalCode !== null) return [];
      return [new Promise<void>((r) => {
        c.once('exit', () => r());
        c.ref(); // an idle child is unref'd: without this the loop could end before its exit
        c.kill('SIGKILL');
      })];
    });
    await Promise.all(exits);
  }
}

/** The pool, budget and deadline under which a library decodes its files at indexing time. */
export interface ImageWork {
  pool: ImagePool;
  /** Decode budget per file, pixel-equivalents (budget.ts). */
  budget: number;
  /** Deadline per file once its decode runs. */
  timeoutMs: number;
}

let fallback: ImageWork | null = null;

/**
 * For code that runs without a Hub (the `damhub index` command, tests, benchmarks): one small
 * shared pool (one process per core, at most 4) with the default indexing budget. Its idle
 * children do not keep the process alive.
 */
export function defaultImageWork(): ImageWork {
  fallback ??= { pool: new ImagePool({ size: Math.max(1, Math.min(4, availableParallelism())), queueMax: 16, timeoutMs: 60_000 }), budget: 268_402_689, timeoutMs: 60_000 };
  return fallback;
}
