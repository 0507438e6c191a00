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
 * - waiting request jobs are served fairly across their `owner` (partner + hub user): the next
 *   job is the oldest one of the owner served least recently, so a few clients of one account
 *   that loop costly images cannot starve another account's search by image; and one owner holds
 *   at most `ownerQueueMax` of the waiting places;
 * - each child may run under a memory limit (`memoryMb` above the runtime's own reservation,
 *   RLIMIT_DATA set by the shell that execs it): a decoder bomb that gets past the budget fails its allocations or dies in its own process
 *   ('out-of-memory'), never taking the machine; the next job gets a fresh child;
 * - no job declares more than `maxPixels` (width × height), whatever its caller asked;
 * - a job that runs longer than its deadline, or whose AbortSignal fires (the client went away,
 *   the provider deadline passed), has its child SIGKILLed; the slot is free again when the child
 *   has exited, and a fresh child is forked for the next job;
 * - idle children are kept (warm) but do not keep the Node process alive.
 */
import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { Metadata } from 'sharp';
import type { AnalyseResult, JobReply, WorkerJob } from './jobs.js';

export type ImageJobErrorKind = 'over-budget' | 'undecodable' | 'unsupported' | 'out-of-memory' | 'failed' | 'timeout' | 'aborted' | 'busy' | 'crashed';

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
  /**
   * Memory each child process may use for its work, in MiB, above what the Node runtime itself
   * reserves (RLIMIT_DATA = this + runtimeDataBaselineKb(): its heap and private mappings), or
   * 0/undefined for no limit. The runtime's own part differs by version (measured: ≈ 48 MiB on
   * Node 20, ≈ 560 MiB on Node 24, whose V8 reserves its heap cage up front), so a fixed total
   * would starve one version or not bind the other. Loading libvips and small decodes need about
   * 150 MiB above it (docs/image-search.md); below 256 the pool refuses to start.
   */
  memoryMb?: number;
  /** Largest declared width × height of any decode (analyse and render jobs); default none. */
  maxPixels?: number;
  /** Waiting places one owner may hold; default a quarter of `queueMax` (at least 1). */
  ownerQueueMax?: number;
}

/** The smallest memory limit (above the runtime's own) a child can do its ordinary work with. */
export const MIN_DECODER_MEMORY_MB = 256;

let baselineKb: number | null = null;

/**
 * The RLIMIT_DATA a bare Node process of this binary already takes (its VmData right after start),
 * measured once per process by starting one; the children's limit is added on top of it.
 */
export function runtimeDataBaselineKb(): number {
  if (baselineKb === null) {
    const out = execFileSync(process.execPath, ['-e', "process.stdout.write(/VmData:\\s*(\\d+)/.exec(require('fs').readFileSync('/proc/self/status', 'utf8'))?.[1] ?? '0')"], { encoding: 'utf8', timeout: 10_000 });
    baselineKb = Number(out) || 0;
  }
  return baselineKb;
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
  /**
   * Who the job is for (partner + hub user): waiting request jobs are served round-robin across
   * owners, and one owner holds at most `ownerQueueMax` waiting places. Jobs without an owner
   * share one turn.
   */
  owner?: string;
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
  /** When each owner last had a job started (a counter): the least recently served goes next. */
  private readonly servedAt = new Map<string, number>();
  private served = 0;
  private readonly ownerQueueMax: number;
  private nextId = 1;
  private closed = false;
  /** For tests and the benchmark: the most jobs ever running at once, and children forked. */
  peakRunning = 0;
  forks = 0;
  /** Jobs started (each one decode): a search by image costs exactly one. */
  jobs = 0;

  constructor(readonly opts: ImagePoolOptions) {
    if (!(opts.size >= 1)) throw new Error('the image pool needs at least one process');
    if (opts.memoryMb && opts.memoryMb < MIN_DECODER_MEMORY_MB) throw new Error(`the image decoders need a memory limit of at least ${MIN_DECODER_MEMORY_MB} MiB (or none)`);
    this.ownerQueueMax = opts.ownerQueueMax ?? Math.max(1, Math.ceil(opts.queueMax / 4));
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
    if (!free && !opts.background && opts.owner !== undefined && this.queue.filter((q) => !q.opts.background && q.opts.owner === opts.owner).length >= this.ownerQueueMax) {
      return Promise.reject(new ImageJobError('busy', `${this.ownerQueueMax} images of this account are already waiting to be decoded`));
    }
    if (this.opts.maxPixels && (job.op === 'analyse' || job.op === 'render')) job = { ...job, maxPixels: Math.min(job.maxPixels ?? Number.MAX_SAFE_INTEGER, this.opts.maxPixels) };
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
    if (!p.opts.background) this.servedAt.set(p.opts.owner ?? '', ++this.served);
    this.jobs++;
    this.peakRunning = Math.max(this.peakRunning, this.running);
    const child = slot.child ?? this.spawn(slot);
    child.ref();
    (child.channel as { ref?(): void } | undefined)?.ref?.();
    // Its stderr too, while a job runs: a death's last words are read before the job fails.
    (child.stderr as { ref?(): void } | null)?.ref?.();
    const id = this.nextId++;
    let settled = false;
    let stop: ImageJobError | null = null;
    let timer: NodeJS.Timeout | undefined;
    let unreachable: string | null = null;
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
      // Out of memory: the process is not given another job; the slot frees at its exit.
      if (!m.ok && m.kind === 'out-of-memory') return kill(new ImageJobError('out-of-memory', m.message));
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
      const done = () => {
        finish(() => p.reject(stop ?? crashError(child, code, signal, unreachable)));
        if (slot.running === p) this.release(slot);
      };
      // An unexpected death is told by the child's last words: read them to the end first.
      const err = child.stderr;
      if (stop || !err || err.destroyed || err.readableEnded) done();
      else err.once('close', done);
    });
    // The deadline starts when the job reaches a ready child (a fresh one first loads sharp).
    const dispatch = () => {
      if (settled || stop) return;
      timer = setTimeout(() => kill(new ImageJobError('timeout', `the image was not decoded within ${timeoutMs} ms`)), timeoutMs);
      child.send({ id, job: p.job }, (err) => {
        // The child died while the job was being sent (a job too large for its memory limit, say):
        // its own last words tell why (crashError), not the broken pipe.
        if (err && !stop) {
          unreachable = err.message;
          child.kill('SIGKILL');
        }
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
      (child.stderr as { unref?(): void } | null)?.unref?.();
    }
    const next = this.next();
    if (next) this.start(slot, next);
  }

  /**
   * The job to start next: among request jobs, the oldest one of the owner served least recently
   * (an owner never served first; jobs without an owner count as one owner); else the oldest
   * indexing job.
   */
  private next(): Pending | undefined {
    let pick = -1;
    let pickServed = Infinity;
    const seen = new Set<string>();
    for (let i = 0; i < this.queue.length; i++) {
      const q = this.queue[i]!;
      if (q.opts.background) continue;
      const owner = q.opts.owner ?? '';
      if (seen.has(owner)) continue; // only each owner's oldest job competes
      seen.add(owner);
      const at = this.servedAt.get(owner) ?? 0;
      if (at < pickServed) {
        pick = i;
        pickServed = at;
      }
    }
    if (pick < 0) pick = this.queue.findIndex((q) => q.opts.background);
    if (pick < 0) return undefined;
    const [p] = this.queue.splice(pick, 1);
    // Forget owners with nothing waiting once the map grows: their next job counts as never served.
    if (this.servedAt.size > 1024) for (const o of this.servedAt.keys()) if (!seen.has(o)) this.servedAt.delete(o);
    return p;
  }

  private spawn(slot: Slot): ChildProcess {
    // stderr is read, not inherited: what a decoder prints about hostile content (or V8's report
    // when it runs out of memory) is not the hub's log; its tail tells an out-of-memory death.
    const stdio: ['ignore', 'ignore', 'pipe', 'ipc'] = ['ignore', 'ignore', 'pipe', 'ipc'];
    const limitKb = this.opts.memoryMb ? Math.floor(this.opts.memoryMb * 1024) + runtimeDataBaselineKb() : 0;
    const child = limitKb && process.platform !== 'win32'
      // The limit is set by the shell, which then becomes Node (exec): the IPC channel's
      // descriptor and variables pass through unchanged, and the limit binds this child only.
      ? spawn('/bin/sh', ['-c', `ulimit -d ${limitKb} && exec "$0" "$@"`, process.execPath, WORKER], { serialization: 'advanced', stdio })
      : fork(WORKER, [], { serialization: 'advanced', execArgv: [], stdio });
    child.on('error', () => undefined); // reported through 'exit'
    const tail: Buffer[] = [];
    let tailBytes = 0;
    child.stderr?.on('data', (b: Buffer) => {
      tail.push(b);
      tailBytes += b.length;
      while (tailBytes > 4096 && tail.length > 1) tailBytes -= tail.shift()!.length;
    });
    stderrTails.set(child, () => Buffer.concat(tail).toString('utf8'));
    // An idle child's stderr must not hold the event loop open.
    (child.stderr as { unref?(): void } | null)?.unref?.();
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

const stderrTails = new WeakMap<ChildProcess, () => string>();

/** How libjpeg, GLib and V8 report an allocation that failed, in what a dead child printed. */
const OUT_OF_MEMORY = /out of memory|insufficient memory|failed to allocate|allocation failed|cannot allocate|bad_alloc/i;

/** A child that died with its job: out of memory (its limit) when its last words say so. */
function crashError(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null, unreachable: string | null): ImageJobError {
  const how = signal ?? `exit ${code}`;
  if (OUT_OF_MEMORY.test(stderrTails.get(child)?.() ?? '')) return new ImageJobError('out-of-memory', `the decoder process ran out of its memory limit (${how})`);
  if (unreachable) return new ImageJobError('crashed', `the decoder process could not be reached (${unreachable})`);
  return new ImageJobError('crashed', `the decoder process ended (${how})`);
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
 * shared pool (one process per core, at most 4) with the default indexing budget, pixel limit and
 * memory limit (config.ts: imageIndexDecodeBudget, imageIndexMaxPixels, imageDecoderMemoryMb). Its idle
 * children do not keep the process alive.
 */
export function defaultImageWork(): ImageWork {
  fallback ??= {
    pool: new ImagePool({ size: Math.max(1, Math.min(4, availableParallelism())), queueMax: 16, timeoutMs: 60_000, memoryMb: 1024, maxPixels: 268_402_689 }),
    budget: 268_402_689,
    timeoutMs: 60_000,
  };
  return fallback;
}
