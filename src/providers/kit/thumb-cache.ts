/**
 * The disk cache of connector thumbnails (`<data>/thumbnails/`): one JPEG per key, least recently
 * used out first once the files pass a byte budget, and one producer per key at a time (ten
 * requests for one cold thumbnail make one upstream fetch and one decode).
 *
 * The key is computed by the caller (thumbnails.ts) from provider, account scope, item and
 * ETag/version, hashed: the cache never sees a path or a credential, and two accounts can never
 * meet on one key. The index of what is cached lives in memory and is rebuilt from the directory
 * at start (oldest modification first), so a restart keeps the files it had.
 *
 * The cache is an optimisation, never a requirement: a directory that cannot be created, a full
 * disk, a file that vanished under us — each degrades to serving without caching (the caller still
 * gets its bytes), never to an error. In cluster mode each node has its own cache.
 */
import fs from 'node:fs';
import path from 'node:path';

export interface ThumbCacheFs {
  writeFile(file: string, data: Buffer): Promise<void>;
}

const realFs: ThumbCacheFs = {
  writeFile: (file, data) => fs.promises.writeFile(file, data, { mode: 0o600 }),
};

const KEY = /^[0-9a-f]{64}$/;

export class ThumbCache {
  /** Key → size in bytes, in least-recently-used-first order (a Map keeps insertion order). */
  private readonly entries = new Map<string, number>();
  private readonly flights = new Map<string, Flight>();
  private total = 0;
  /** False once the directory could not be made: every call is then a miss and a no-op put. */
  private usable: boolean;
  /** For tests and the benchmark. */
  stats = { hits: 0, misses: 0, writes: 0, writeFailures: 0, evictions: 0 };

  /** `dir` null: no disk cache at all (single-flight still applies). */
  constructor(private readonly dir: string | null, readonly maxBytes: number, private readonly io: ThumbCacheFs = realFs) {
    this.usable = dir !== null && maxBytes > 0 && this.open(dir);
  }

  get bytes(): number {
    return this.total;
  }

  get size(): number {
    return this.entries.size;
  }

  private open(dir: string): boolean {
    try {
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
      const files = fs.readdirSync(dir)
        .filter((n) => KEY.test(n.replace(/\.jpg$/, '')) && n.endsWith('.jpg'))
        .map((n) => ({ key: n.slice(0, -4), st: fs.statSync(path.join(dir, n)) }))
        .sort((a, b) => a.st.mtimeMs - b.st.mtimeMs);
      for (const f of files) this.remember(f.key, f.st.size);
      this.evict();
      return true;
    } catch {
      return false;
    }
  }

  private file(key: string): string {
    if (!KEY.test(key)) throw new Error('thumbnail cache keys are sha-256 hex');
    return path.join(this.dir!, `${key}.jpg`);
  }

  private remember(key: string, size: number): void {
    this.forget(key);
    this.entries.set(key, size);
    this.total += size;
  }

  private forget(key: string): void {
    const size = this.entries.get(key);
    if (size === undefined) return;
    this.entries.delete(key);
    this.total -= size;
  }

  private evict(): void {
    for (const [key] of this.entries) {
      if (this.total <= this.maxBytes) break;
      this.forget(key);
      this.stats.evictions++;
      fs.rm(this.file(key), { force: true }, () => undefined);
    }
  }

  /** The cached bytes, or null; a hit becomes the most recently used. */
  async get(key: string): Promise<Buffer | null> {
    if (!this.usable || !this.entries.has(key)) {
      this.stats.misses++;
      return null;
    }
    try {
      const data = await fs.promises.readFile(this.file(key));
      this.remember(key, data.length);
      this.stats.hits++;
      return data;
    } catch {
      // Removed behind our back (a cleaner, a full reset): a miss, and forgotten.
      this.forget(key);
      this.stats.misses++;
      return null;
    }
  }

  /** Stores `data` under `key`; false when it was not kept (too big for the budget, disk trouble). */
  async put(key: string, data: Buffer): Promise<boolean> {
    if (!this.usable || data.length > this.maxBytes) return false;
    const file = this.file(key);
    const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    try {
      await this.io.writeFile(tmp, data);
      await fs.promises.rename(tmp, file);
    } catch {
      // ENOSPC, EACCES, EROFS...: serve without caching; a partial temp file is dropped.
      this.stats.writeFailures++;
      await fs.promises.rm(tmp, { force: true }).catch(() => undefined);
      return false;
    }
    this.stats.writes++;
    this.remember(key, data.length);
    this.evict();
    return this.entries.has(key);
  }

  /** Productions running now (tests and the benchmark). */
  get producing(): number {
    return this.flights.size;
  }

  /**
   * Runs `produce` once per key at a time: callers that arrive while it runs share its result
   * (or its error). Nothing is remembered after it settles: the disk is the memory.
   *
   * Each caller is a waiter; `signal` firing (its client left) ends its wait with the signal's
   * reason. When the last waiter leaves, the production's own signal fires: nobody wants the
   * bytes any more, so its upstream read and its decode stop. A caller without a signal waits to
   * the end.
   */
  once<T>(key: string, produce: (signal: AbortSignal) => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    let flight = this.flights.get(key);
    if (!flight) {
      const ac = new AbortController();
      const p = Promise.resolve().then(() => produce(ac.signal)).finally(() => {
        if (this.flights.get(key) === flight) this.flights.delete(key);
      });
      // Waiters that left do not read the result: its rejection must not go unhandled.
      p.catch(() => undefined);
      flight = { promise: p, waiters: 0, abort: (why) => ac.abort(why) };
      this.flights.set(key, flight);
    }
    const f = flight;
    f.waiters++;
    if (!signal) return f.promise as Promise<T>;
    return new Promise<T>((resolve, reject) => {
      const leave = () => {
        reject(signal.reason);
        if (--f.waiters === 0) {
          // A later caller for this key starts a fresh production rather than join an aborted one.
          if (this.flights.get(key) === f) this.flights.delete(key);
          f.abort(signal.reason);
        }
      };
      signal.addEventListener('abort', leave, { once: true });
      (f.promise as Promise<T>).then(resolve, reject).finally(() => signal.removeEventListener('abort', leave));
    });
  }
}

interface Flight {
  promise: Promise<unknown>;
  /** Callers waiting for it; at 0 it is aborted. */
  waiters: number;
  abort(why: unknown): void;
}
