/**
 * Descriptor scans off the main thread. A million-descriptor scan is 10–15 ms of one core: run on
 * the event loop it holds every other request of the node (a token check, a browse) behind it. The
 * scan pool runs it in worker threads over the index's own memory: the kernel's memory is a
 * shared WebAssembly memory (kernel.ts), so the workers read the vectors where the index wrote
 * them, with no copy, and a scan is split into one slice per worker (both cores of a small machine).
 *
 * A worker answers a slice's candidates — (slot, dot) pairs at or above the floor — copied into
 * its message, since the same slice of the next query may be written before this one is read.
 * The index (vector-index.ts) ranks them on the main thread, which touches only the candidates.
 *
 * Workers are started on first use and unref'd: an idle pool keeps no process alive; close()
 * ends them. A worker that dies fails its jobs (the index then scans on the main thread) and is
 * replaced on the next scan.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';

export interface SliceJob {
  /** The query vector (64 int8). */
  query: Int8Array;
  /** Byte offset of slot 0's vector in the shared memory. */
  base: number;
  /** The slots [from, to) to scan. */
  from: number;
  to: number;
  floor: number;
}

/** Where worker w keeps its copy of the query and writes the kernel's output (vector-index.ts's layout). */
export interface ScanLayout {
  queryOffset(w: number): number;
  outOffset(w: number): number;
  /** Slots per kernel call: the output area holds this many (slot, dot) pairs. */
  chunk: number;
}

/** A slice's candidates as (slot, dot) int32 pairs, slots absolute. */
export type SliceResult = Int32Array;

interface Pending {
  resolve(r: SliceResult): void;
  reject(e: Error): void;
}

interface Slot {
  worker: Worker;
  jobs: Map<number, Pending>;
}

let nextJob = 0;

/** Most scan workers an index starts (each has its own query copy and output area in the layout). */
export const MAX_SCAN_WORKERS = 4;


export class ScanPool {
  private readonly slots: (Slot | null)[];
  private closed = false;

  /** `memory`: the index's shared kernel memory; `size`: workers (default: the cores, at most MAX_SCAN_WORKERS). */
  constructor(private readonly memory: WebAssembly.Memory, private readonly layout: ScanLayout, readonly size = ScanPool.defaultSize()) {
    if (size < 1 || size > MAX_SCAN_WORKERS) throw new RangeError(`scan workers: 1..${MAX_SCAN_WORKERS}`);
    this.slots = Array.from({ length: size }, () => null);
  }

  /** Workers a pool starts by default: the machine's cores, at most MAX_SCAN_WORKERS. */
  static defaultSize(): number {
    return Math.min(MAX_SCAN_WORKERS, Math.max(1, availableParallelism()));
  }

  private slot(w: number): Slot {
    const have = this.slots[w];
    if (have) return have;
    const { queryOffset, outOffset, chunk } = this.layout;
    const worker = new Worker(new URL('./scan-worker.js', import.meta.url), { workerData: { memory: this.memory, queryOffset: queryOffset(w), outOffset: outOffset(w), chunk } });
    worker.unref();
    const s: Slot = { worker, jobs: new Map() };
    const fail = (e: Error) => {
      if (this.slots[w] === s) this.slots[w] = null;
      for (const p of s.jobs.values()) p.reject(e);
      s.jobs.clear();
    };
    worker.on('message', (m: { id: number; pairs: Int32Array } | { id: number; error: string }) => {
      const p = s.jobs.get(m.id);
      if (!p) return;
      s.jobs.delete(m.id);
      if ('error' in m) p.reject(new Error(m.error));
      else p.resolve(m.pairs);
    });
    worker.on('error', (e) => fail(e));
    worker.on('exit', (code) => fail(new Error(`scan worker exited (${code})`)));
    this.slots[w] = s;
    return s;
  }

  /** Scans the slice on worker w (jobs of one worker run one after another). */
  scan(w: number, job: SliceJob): Promise<SliceResult> {
    if (this.closed) return Promise.reject(new Error('the scan pool is closed'));
    const s = this.slot(w);
    const id = nextJob++;
    return new Promise<SliceResult>((resolve, reject) => {
      s.jobs.set(id, { resolve, reject });
      s.worker.postMessage({ id, ...job });
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const live = this.slots.filter((s): s is Slot => s !== null);
    this.slots.fill(null);
    await Promise.all(live.map((s) => s.worker.terminate()));
  }
}
