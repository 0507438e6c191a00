/**
 * The in-memory top-k index of search by image: every descriptor's int8 vector in one contiguous
 * block of WebAssembly memory, scanned exactly by the SIMD kernel (kernel.ts). 1,000,000 vectors
 * take 64 MB and one scan ~14 ms on one core; an exact scan needs no training, no rebuilds after updates and
 * has no recall loss beyond int8 quantisation, which is why it is preferred over an approximate
 * graph at library scale (figures in docs/benchmarks.md).
 *
 * Ranking: score = cosine (int8 dot / 127²) + a near-duplicate boost when the perceptual hashes
 * are within NEAR_DUPLICATE_BITS. Results are ordered by (score desc, asset id asc), and a page
 * continues strictly after the (score, id) of the previous page's last hit (keyset paging), so
 * pages stay stable while assets are added or removed.
 */
import { DIM, hamming, SCALE, type Descriptor } from './descriptor.js';
import { createKernel, scanSlots, type DotKernel } from './kernel.js';
import { MAX_SCAN_WORKERS, ScanPool, type ScanLayout } from './scan-pool.js';
import { LargeMap } from '../large-map.js';

/** Results below this score are not returned (see docs/image-search.md for how it was chosen). */
export const DEFAULT_CUTOFF = 0.6;
/** pHash distance up to which two images count as near-duplicates. */
export const NEAR_DUPLICATE_BITS = 12;
/** The largest boost, for identical hashes; it shrinks linearly to 0 at NEAR_DUPLICATE_BITS + 1. */
export const MAX_BOOST = 0.05;

/**
 * Memory layout (bytes): the query copies (the main thread's at 0, scan worker w's at 64·(w+1)),
 * then one output area per scanning thread (the main thread's, then each worker's), each holding
 * CHUNK (slot, dot) pairs, then the vectors, 64 bytes each. A scan calls the kernel a CHUNK of
 * slots at a time, so the output areas stay small whatever the index's size.
 */
const QUERY_OFFSET = 0;
const CHUNK = 65536;
const OUT_OFFSET = 1024;
const OUT_BYTES = CHUNK * 8;
const VECTORS_OFFSET = OUT_OFFSET + (1 + MAX_SCAN_WORKERS) * OUT_BYTES;
const PAGE = 65536;
/** Below this many vectors a scan (≤ 1 ms) stays on the main thread: a worker round trip costs about as much. */
export const PARALLEL_MIN = 50_000;
const LAYOUT: ScanLayout = { queryOffset: (w) => QUERY_OFFSET + DIM * (w + 1), outOffset: (w) => OUT_OFFSET + OUT_BYTES * (w + 1), chunk: CHUNK };
if (DIM !== 64) throw new Error('the SIMD kernel is specialised for 64-component descriptors');

export interface Hit {
  id: string;
  score: number;
}

export interface QueryOptions {
  /** Hits wanted (the page size, plus one to know whether there is more). */
  k: number;
  /** Continue after this hit of the previous page. */
  after: Hit | null;
  cutoff: number;
  /** Folder filter for accounts limited to sub-folders; null = every folder. */
  folderAllowed: ((folderPath: string) => boolean) | null;
  /**
   * With a semantic embedder (embedder.ts): score = (1 − weight)·(cosine + boost) + weight·
   * embedding cosine; an asset without an embedding keeps its descriptor score.
   */
  blend?: Blend | null;
}

export interface Blend {
  /** 0..1: 1 ranks by the embedding alone. */
  weight: number;
  /** The embedding cosine of an asset with the query, or null when it has no embedding. */
  embeddingScore(id: string): number | null;
}

export class VectorIndex {
  private readonly kernel: DotKernel;
  private capacity = 0;
  private count = 0;
  private ids: string[] = [];
  private folderOf = new Uint32Array(0);
  private phashes = new Uint8Array(0);
  private readonly slotOf = new LargeMap<string, number>();
  private readonly folders: string[] = [];
  private readonly folderIds = new LargeMap<string, number>();
  /** Counts puts and removals: a scan that ran while it changed re-checks its candidates. */
  private mutations = 0;
  private pool: ScanPool | null = null;
  /** Scans done by the worker pool, and those it failed (then done on the calling thread). */
  readonly scans = { inWorkers: 0, fellBack: 0 };

  /**
   * `workers`: scan threads for queryAsync (0: every scan on the calling thread; undefined: the
   * machine's cores). Settable so that a benchmark can compare both on one loaded index.
   */
  constructor(initialCapacity = 1024, public workers?: number) {
    this.kernel = createKernel();
    this.grow(initialCapacity);
  }

  get size(): number {
    return this.count;
  }

  /** Bytes held in typed arrays (scan block incl. the kernel's output areas, hashes, folders); ids and the map are extra. */
  get bytes(): number {
    return this.kernel.memory.buffer.byteLength + this.phashes.byteLength + this.folderOf.byteLength;
  }

  has(id: string): boolean {
    return this.slotOf.has(id);
  }

  /** Adds or replaces the descriptor of an asset. */
  put(id: string, folderPath: string, d: Descriptor): void {
    let slot = this.slotOf.get(id);
    if (slot === undefined) {
      if (this.count === this.capacity) this.grow(this.capacity * 2);
      slot = this.count++;
      this.slotOf.set(id, slot);
      this.ids[slot] = id;
    }
    this.mutations++;
    new Int8Array(this.kernel.memory.buffer, VECTORS_OFFSET + slot * DIM, DIM).set(d.vector);
    this.phashes.set(d.phash, slot * 8);
    this.folderOf[slot] = this.folderId(folderPath);
  }

  /** Removes an asset; the last slot moves into the hole so the block stays contiguous. */
  remove(id: string): boolean {
    const slot = this.slotOf.get(id);
    if (slot === undefined) return false;
    const last = --this.count;
    this.mutations++;
    this.slotOf.delete(id);
    if (slot !== last) {
      const mem = new Int8Array(this.kernel.memory.buffer);
      mem.copyWithin(VECTORS_OFFSET + slot * DIM, VECTORS_OFFSET + last * DIM, VECTORS_OFFSET + (last + 1) * DIM);
      this.phashes.copyWithin(slot * 8, last * 8, last * 8 + 8);
      this.folderOf[slot] = this.folderOf[last]!;
      const moved = this.ids[last]!;
      this.ids[slot] = moved;
      this.slotOf.set(moved, slot);
    }
    this.ids.length = last;
    return true;
  }

  /**
   * The kernel's floor for a query: the boost only raises a score, so nothing below (cut-off −
   * MAX_BOOST) can reach the cut-off; blended with an embedding cosine (≤ 1), a descriptor score
   * needs (cut-off − w)/(1 − w) at least.
   */
  private floor(opts: QueryOptions): number {
    const blend = opts.blend ?? null;
    const w = blend ? Math.min(1, Math.max(0, blend.weight)) : 0;
    const need = blend ? (w >= 1 ? -Infinity : (opts.cutoff - w) / (1 - w)) : opts.cutoff;
    return need === -Infinity ? -0x7fffffff : Math.max(Math.ceil((need - MAX_BOOST) * SCALE * SCALE), -0x7fffffff);
  }

  /** Candidates of slots [from, to) on this thread, a CHUNK at a time through the main output area. */
  private scanHere(q: Descriptor, floor: number, from: number, to: number): Int32Array {
    new Int8Array(this.kernel.memory.buffer, QUERY_OFFSET, DIM).set(q.vector);
    return scanSlots(this.kernel, { q: QUERY_OFFSET, base: VECTORS_OFFSET, out: OUT_OFFSET, chunk: CHUNK }, from, to, floor);
  }

  /** The k best hits after `after`, and how many hits in all are at or above the cut-off, scanned on this thread. */
  query(q: Descriptor, opts: QueryOptions): { hits: Hit[]; total: number } {
    if (this.count === 0) return { hits: [], total: 0 };
    return this.rank([this.scanHere(q, this.floor(opts), 0, this.count)], q, opts, false);
  }

  /**
   * query(), with the scan of a large index split over worker threads (scan-pool.ts): the event
   * loop only ranks the candidates. Puts and removals may run meanwhile; the candidates are then
   * re-scored against the vectors as they are when ranked. A pool that fails scans here instead.
   */
  async queryAsync(q: Descriptor, opts: QueryOptions): Promise<{ hits: Hit[]; total: number }> {
    const n = this.count;
    const workers = this.workers ?? ScanPool.defaultSize();
    if (n < PARALLEL_MIN || workers < 1) return this.query(q, opts);
    if (this.pool && this.pool.size !== workers) void this.close();
    this.pool ??= new ScanPool(this.kernel.memory, LAYOUT, workers);
    const floor = this.floor(opts);
    const before = this.mutations;
    const p = this.pool.size;
    let parts: Int32Array[];
    try {
      parts = await Promise.all(Array.from({ length: p }, (_, w) =>
        this.pool!.scan(w, { query: q.vector, base: VECTORS_OFFSET, from: Math.floor((n * w) / p), to: Math.floor((n * (w + 1)) / p), floor })));
    } catch {
      this.scans.fellBack++;
      return this.query(q, opts);
    }
    this.scans.inWorkers++;
    return this.rank(parts, q, opts, this.mutations !== before);
  }

  /** Ends the scan workers (the index stays usable: scans then run here until new workers start). */
  async close(): Promise<void> {
    const pool = this.pool;
    this.pool = null;
    await pool?.close();
  }

  /** The dot of slot i with the query, in JavaScript: re-scoring a candidate after a concurrent change. */
  private dotAt(q: Int8Array, i: number): number {
    const v = new Int8Array(this.kernel.memory.buffer, VECTORS_OFFSET + i * DIM, DIM);
    let s = 0;
    for (let d = 0; d < DIM; d++) s += v[d]! * q[d]!;
    return s;
  }

  /** Candidates (slot, dot) → the page: folder filter, boost, blend, cut-off, keyset, top k. */
  private rank(parts: Int32Array[], q: Descriptor, opts: QueryOptions, changed: boolean): { hits: Hit[]; total: number } {
    let allowed: Uint8Array | null = null;
    if (opts.folderAllowed) {
      allowed = new Uint8Array(this.folders.length);
      for (let f = 0; f < this.folders.length; f++) allowed[f] = opts.folderAllowed(this.folders[f]!) ? 1 : 0;
    }
    const blend = opts.blend ?? null;
    const w = blend ? Math.min(1, Math.max(0, blend.weight)) : 0;
    const heap = new TopK(opts.k);
    const after = opts.after;
    let total = 0;
    const qh = q.phash;
    const n = this.count;
    const floor = changed ? this.floor(opts) : 0;
    for (const pairs of parts) {
      const found = pairs.length >> 1;
      for (let c = 0; c < found; c++) {
        const i = pairs[2 * c]!;
        // A slot moved or removed while the scan ran is past the end now, or holds another vector: scored again.
        if (i >= n) continue;
        let dot = pairs[2 * c + 1]!;
        if (changed) {
          dot = this.dotAt(q.vector, i);
          if (dot < floor) continue;
        }
        if (allowed && !allowed[this.folderOf[i]!]) continue;
        let score = this.score(dot, qh, i);
        const id = this.ids[i]!;
        if (blend) {
          const e = blend.embeddingScore(id);
          if (e !== null) score = w >= 1 ? e : (1 - w) * score + w * e;
        }
        if (score < opts.cutoff) continue;
        total++;
        if (after && (score > after.score || (score === after.score && id <= after.id))) continue;
        heap.offer(score, id);
      }
    }
    return { hits: heap.sorted(), total };
  }

  /** Final score of slot i: cosine plus the near-duplicate boost. */
  private score(dot: number, qh: Uint8Array, i: number): number {
    const d = hamming(qh, this.phashes.subarray(i * 8, i * 8 + 8));
    const boost = d <= NEAR_DUPLICATE_BITS ? MAX_BOOST * (1 - d / (NEAR_DUPLICATE_BITS + 1)) : 0;
    return dot / (SCALE * SCALE) + boost;
  }

  private folderId(folderPath: string): number {
    let f = this.folderIds.get(folderPath);
    if (f === undefined) {
      f = this.folders.length;
      this.folders.push(folderPath);
      this.folderIds.set(folderPath, f);
    }
    return f;
  }

  /** Makes room for `capacity` vectors (the memory grows in place: scans running in workers keep their offsets). */
  private grow(capacity: number): void {
    const need = VECTORS_OFFSET + capacity * DIM;
    const have = this.kernel.memory.buffer.byteLength;
    if (need > have) this.kernel.memory.grow(Math.ceil((need - have) / PAGE));
    const folderOf = new Uint32Array(capacity);
    folderOf.set(this.folderOf.subarray(0, this.count));
    this.folderOf = folderOf;
    const phashes = new Uint8Array(capacity * 8);
    phashes.set(this.phashes.subarray(0, this.count * 8));
    this.phashes = phashes;
    this.capacity = capacity;
  }
}

/** A bounded min-heap on (score asc, id desc): its root is the worst of the best k. */
class TopK {
  private readonly scores: number[] = [];
  private readonly ids: string[] = [];

  constructor(private readonly k: number) {}

  /** a ranks below b: lower score, or equal score and a larger id. */
  private static worse(sa: number, ia: string, sb: number, ib: string): boolean {
    return sa < sb || (sa === sb && ia > ib);
  }

  offer(score: number, id: string): void {
    const s = this.scores, ids = this.ids;
    if (s.length < this.k) {
      s.push(score);
      ids.push(id);
      let i = s.length - 1;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (!TopK.worse(s[i]!, ids[i]!, s[p]!, ids[p]!)) break;
        this.swap(i, p);
        i = p;
      }
      return;
    }
    if (this.k === 0 || !TopK.worse(s[0]!, ids[0]!, score, id)) return;
    s[0] = score;
    ids[0] = id;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1, r = l + 1;
      let m = i;
      if (l < s.length && TopK.worse(s[l]!, ids[l]!, s[m]!, ids[m]!)) m = l;
      if (r < s.length && TopK.worse(s[r]!, ids[r]!, s[m]!, ids[m]!)) m = r;
      if (m === i) break;
      this.swap(i, m);
      i = m;
    }
  }

  private swap(a: number, b: number): void {
    const s = this.scores, ids = this.ids;
    [s[a], s[b]] = [s[b]!, s[a]!];
    [ids[a], ids[b]] = [ids[b]!, ids[a]!];
  }

  /** Best first. */
  sorted(): Hit[] {
    return this.scores.map((score, i) => ({ score, id: this.ids[i]! })).sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }
}
