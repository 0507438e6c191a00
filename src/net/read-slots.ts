/**
 * The hub-wide bound on reads of originals the hub did not index itself (issue 28, "Thumbnail
 * floods"): hub-made connector thumbnails, the metadata head reads of connector assets, reference
 * images fetched by URL. Each such read holds at most its own byte cap (in a temp file or in
 * memory) while it runs, so `max` slots bound the whole: temp bytes ≤ max × thumbnailMaxBytes.
 *
 * One instance per hub, shared by every connector. A read takes a slot before its upstream
 * request is made; when all are taken it may wait in a short queue (waiting holds no connection
 * and no byte, and ends when its client leaves); past the queue the answer is `busy` at once, which
 * the callers turn into 503 hub-unavailable with Retry-After, before anything was read.
 */

export class ReadsBusy extends Error {
  override name = 'ReadsBusy';
}

export interface ReadSlot {
  /** Gives the slot back (idempotent). */
  release(): void;
}

export class ReadSlots {
  private running = 0;
  private readonly waiting: { grant: (s: ReadSlot) => void }[] = [];
  /** For tests: reads refused since start, most running at once. */
  readonly stats = { refused: 0, peak: 0 };

  constructor(readonly max: number, readonly queueMax: number) {
    if (!(max >= 1)) throw new Error('ReadSlots: at least one read at a time');
  }

  get active(): number {
    return this.running;
  }

  get queued(): number {
    return this.waiting.length;
  }

  /** A slot now, or null when all are taken (for optional reads: a head read skips, never waits). */
  tryAcquire(): ReadSlot | null {
    if (this.running >= this.max) return null;
    return this.take();
  }

  /**
   * A slot, waiting in the queue if need be; ReadsBusy at once when the queue is full too. While
   * waiting, `signal` firing (the client left) ends the wait with its reason.
   */
  acquire(signal?: AbortSignal): Promise<ReadSlot> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const now = this.tryAcquire();
    if (now) return Promise.resolve(now);
    if (this.waiting.length >= this.queueMax) {
      this.stats.refused++;
      return Promise.reject(new ReadsBusy(`${this.max} reads of originals are running and ${this.waiting.length} are waiting`));
    }
    return new Promise<ReadSlot>((resolve, reject) => {
      const onAbort = () => {
        const i = this.waiting.indexOf(w);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal!.reason);
      };
      const w = {
        grant: (s: ReadSlot) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(s);
        },
      };
      this.waiting.push(w);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private take(): ReadSlot {
    this.running++;
    this.stats.peak = Math.max(this.stats.peak, this.running);
    let held = true;
    return {
      release: () => {
        if (!held) return;
        held = false;
        this.running--;
        const next = this.waiting.shift();
        if (next) next.grant(this.take());
      },
    };
  }
}
