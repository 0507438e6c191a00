/**
 * Hashing an upload while it is written (disk.ts writeBody), so the indexing never reads the file
 * again. The seven digests cost far more CPU than writing the bytes (measured on the 2-core test
 * machine, idle: MD5 ≈ 845 MiB/s, SHA-512 ≈ 1160, SHA-256 ≈ 2000 and it runs twice for
 * sha256Split4MB, SHA-1 ≈ 2100, CRC-32 ≈ 6800; all seven on one thread ≈ 270 MiB/s, and a third
 * of that with the machine loaded), and node's Hash.update runs on the calling thread. So a large
 * body is hashed in LANES: worker threads, each computing a subset of the digests over the same
 * chunks, shared with them without a copy
 * (SharedArrayBuffer), while the main thread reads the socket and writes the file. A small body
 * is hashed inline: a worker's round trip would cost more than its hashing.
 *
 * Memory: the batches live in shared slots of SLOT_SIZE bytes, recycled once every lane has
 * acknowledged a slot's bytes and the writer has written them (never left to the garbage
 * collector: a worker that allocates nothing never collects, and would hold every batch it was
 * ever sent). An upload holds at most SLOTS_PER_STREAM slots; the writer waits for one to come
 * free, so a slow lane slows the client as a slow disk would, and bounds the memory an upload holds.
 */
import { Worker } from 'node:worker_threads';
import { complete, DigestSet, type DigestPart, type FileHashes } from './hashes.js';
import type { LaneAnswer, LaneRequest } from './hash-worker.js';

/** A running hash over a stream of chunks, which also lends the buffers the chunks are gathered in. */
export interface StreamHasher {
  /** A buffer of `size` bytes to gather the next batch in; waits while the lanes are too far behind. */
  buffer(size: number): Promise<Buffer>;
  /** Feeds a batch (a buffer from buffer(), not changed afterwards: lanes read it later). */
  update(batch: Buffer): void;
  /** The writer is done with a batch (written, or the write failed): its buffer may be lent again. */
  release(batch: Buffer): void;
  /** The digests of everything fed. */
  result(): Promise<FileHashes>;
  /** Forgets the stream (a failed write). */
  abort(): void;
}

/**
 * The lanes, balanced by the throughputs above (≈ 1.2–1.3 ms of CPU per MiB each):
 * MD5 + CRC-32 | SHA-512 + SHA-1 | SHA-256 (twice). Three lanes on two cores: the scheduler
 * evens them out, where two unequal lanes could not.
 */
export const LANES: DigestPart[][] = [['md5', 'crc32'], ['sha512', 'sha1'], ['sha256']];
/** Bodies declared smaller than this are hashed inline. */
export const LANE_THRESHOLD = 8 * 1024 * 1024;
/** A shared slot: a write batch (disk.ts WRITE_BATCH, 1 MiB) plus the socket chunk that overfilled it. */
export const SLOT_SIZE = 1024 * 1024 + 256 * 1024;
/** Slots one upload may hold: how far the lanes may lag behind the writer (≈ 7.5 MiB). */
const SLOTS_PER_STREAM = 6;
/** Free slots kept for the next uploads; more are let go. */
const SLOTS_KEPT = 16;

export function inlineHasher(): StreamHasher {
  const set = new DigestSet();
  return {
    buffer: (size) => Promise.resolve(Buffer.allocUnsafe(size)),
    update: (batch) => set.update(batch),
    release: () => undefined,
    result: () => Promise.resolve(complete(set.result())),
    abort: () => undefined,
  };
}

interface Slot {
  sab: SharedArrayBuffer;
  /** Lanes and writer still using it. */
  users: number;
  stream: Stream | null;
}

interface Stream {
  held: number;
  waiter: (() => void) | null;
  results: (ReturnType<DigestSet['result']>)[];
  done: { resolve(h: FileHashes): void; reject(e: Error): void } | null;
  failed: Error | null;
}

/** The lane workers, started on first use and shared by every upload of the process. */
export class HashLanes {
  private workers: Worker[] | null = null;
  private readonly streams = new Map<number, Stream>();
  private readonly slots: Slot[] = [];
  private readonly free: number[] = [];
  private readonly slotOf = new WeakMap<ArrayBufferLike, number>();
  private nextId = 1;

  /** A hasher for a body of `length` bytes (null: unknown, hashed in lanes). */
  hasher(length: number | null): StreamHasher {
    return length !== null && length < LANE_THRESHOLD ? inlineHasher() : this.laned();
  }

  /** Stops the workers (provider close); streams still running fail. */
  async close(): Promise<void> {
    const ws = this.workers;
    this.workers = null;
    if (ws) await Promise.all(ws.map((w) => w.terminate()));
  }

  private start(): Worker[] {
    if (this.workers) return this.workers;
    const ws = LANES.map(() => new Worker(new URL('./hash-worker.js', import.meta.url)));
    for (const w of ws) {
      w.unref(); // an idle lane never keeps the process alive
      w.on('message', (m: LaneAnswer) => this.answer(m));
      w.on('error', (e) => this.lost(ws, e));
      w.on('exit', (code) => this.lost(ws, new Error(`a hashing lane stopped (exit code ${code})`)));
    }
    this.workers = ws;
    return ws;
  }

  /** A lane died: every stream fails (its digests are incomplete); the next upload starts new lanes. */
  private lost(ws: Worker[], e: Error): void {
    if (this.workers === ws) this.workers = null;
    for (const w of ws) void w.terminate();
    for (const s of this.streams.values()) this.fail(s, e);
    this.streams.clear();
  }

  private fail(s: Stream, e: Error): void {
    s.failed ??= e;
    s.done?.reject(e);
    s.done = null;
    s.waiter?.();
    s.waiter = null;
  }

  /** One user of a slot is done with it; the last one gives it back. */
  private unuse(i: number): void {
    const slot = this.slots[i]!;
    if (--slot.users > 0) return;
    const s = slot.stream;
    slot.stream = null;
    if (this.free.length < SLOTS_KEPT) this.free.push(i);
    if (s) {
      s.held--;
      s.waiter?.();
      s.waiter = null;
    }
  }

  private answer(m: LaneAnswer): void {
    if (m.op === 'ack') {
      if (m.slot !== null) this.unuse(m.slot);
      return;
    }
    const s = this.streams.get(m.id);
    if (!s) return;
    s.results.push(m.hashes);
    if (s.results.length < LANES.length) return;
    this.streams.delete(m.id);
    try {
      s.done?.resolve(complete(...s.results));
    } catch (e) {
      s.done?.reject(e as Error);
    }
  }

  private laned(): StreamHasher {
    const ws = this.start();
    const id = this.nextId++;
    const s: Stream = { held: 0, waiter: null, results: [], done: null, failed: null };
    this.streams.set(id, s);
    const post = (m: LaneRequest) => { for (const w of ws) w.postMessage(m); };
    ws.forEach((w, i) => w.postMessage({ op: 'start', id, parts: LANES[i]! } satisfies LaneRequest));
    const take = (): number => {
      let i = this.free.pop();
      if (i === undefined) {
        const sab = new SharedArrayBuffer(SLOT_SIZE);
        i = this.slots.push({ sab, users: 0, stream: null }) - 1;
        this.slotOf.set(sab, i);
      }
      const slot = this.slots[i]!;
      slot.users = LANES.length + 1; // the lanes and the writer
      slot.stream = s;
      s.held++;
      return i;
    };
    return {
      buffer: async (size) => {
        // A batch larger than a slot (a huge chunk from the stream) is shared memory of its own.
        if (size > SLOT_SIZE) return Buffer.from(new SharedArrayBuffer(size));
        while (s.held >= SLOTS_PER_STREAM && !s.failed) await new Promise<void>((resolve) => (s.waiter = resolve));
        if (s.failed) throw s.failed;
        return Buffer.from(this.slots[take()]!.sab, 0, size);
      },
      update: (batch) => {
        if (s.failed) return;
        const slot = this.slotOf.get(batch.buffer);
        post({ op: 'data', id, bytes: new Uint8Array(batch.buffer, batch.byteOffset, batch.length), slot: slot ?? null });
      },
      release: (batch) => {
        const slot = this.slotOf.get(batch.buffer);
        if (slot !== undefined) this.unuse(slot);
      },
      result: () => {
        if (s.failed) return Promise.reject(s.failed);
        const p = new Promise<FileHashes>((resolve, reject) => (s.done = { resolve, reject }));
        post({ op: 'end', id });
        return p;
      },
      abort: () => {
        if (!this.streams.delete(id)) return;
        post({ op: 'drop', id });
      },
    };
  }
}
