/**
 * Heavy page assembly, one job per turn of the event loop, first come first served.
 *
 * Why: an uncached 200-asset browse page costs ≈ 8 ms of CPU (rows, mapping, serialising ≈ 600
 * KB) in one macrotask. Under load, one poll phase of the event loop hands the server every
 * request that arrived meanwhile, and each runs to completion before the loop looks at its
 * sockets again: with ten such requests a turn takes ≈ 80 ms, and a large answer, which needs
 * several writable turns to drain into its socket, takes seconds for some clients while others
 * are served in one turn (issue 22: p99 twelve times p50). Taken one per turn, in arrival order,
 * the loop writes between jobs, every answer drains at the same pace, and waiting is shared
 * fairly; the work done is the same.
 *
 * `turn()` resolves when the caller may start; the caller's synchronous work (and its microtasks)
 * is its turn. A caller whose signal has fired by then (its client went away while it waited) is
 * refused with the signal's reason instead and takes no turn: under overload the queue holds
 * requests nobody waits for any more, and assembling them would only delay the others.
 *
 * The next waiter is released from the check phase of the following loop iteration (setImmediate
 * callbacks queued while the check phase runs wait for the next iteration), so I/O callbacks, the
 * writes among them, run between two jobs. The queue is as long as the requests waiting, at most
 * one per open connection, so a plain array's shift() serves.
 */
interface Waiter {
  start: () => void;
  refuse: (reason: unknown) => void;
  signal: AbortSignal | undefined;
}

export class Turns {
  private readonly waiting: Waiter[] = [];
  private scheduled = false;

  /** Resolves at the caller's turn; rejects with `signal.reason` when the signal fired first. */
  turn(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((start, refuse) => {
      this.waiting.push({ start, refuse, signal });
      this.schedule();
    });
  }

  /** Callers waiting for their turn (tests, metrics). */
  get pending(): number {
    return this.waiting.length;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.release);
  }

  private readonly release = (): void => {
    this.scheduled = false;
    // Callers whose client has gone are refused here, without a turn of their own.
    let next = this.waiting.shift();
    while (next?.signal?.aborted) {
      next.refuse(next.signal.reason);
      next = this.waiting.shift();
    }
    if (this.waiting.length > 0) this.schedule();
    next?.start();
  };
}
