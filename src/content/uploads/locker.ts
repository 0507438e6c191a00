/**
 * @tus/server's Locker over the hub's write locks (WriteLockStore: SQLite, or Redis in cluster
 * mode), so two requests of one upload never write at once even on different nodes. As
 * @tus/server's own MemoryLocker does, a request that wants a lock held by a request of this node
 * asks that holder to let go (tus: the holder is most likely a PATCH whose client went away and
 * came back over a new connection); a holder on another node keeps it until it finishes or its
 * lease lapses (a node that died mid-request).
 */
import { setTimeout as delay } from 'node:timers/promises';
import { ERRORS, type Lock, type Locker, type RequestRelease } from '@tus/server';
import type { Clock } from '../../clock.js';
import type { WriteLockStore } from '../../stores/types.js';

const LEASE_MS = 30_000;
/** A waiting request gives up (500 ERR_LOCK_TIMEOUT, tus's answer) after this long. */
const WAIT_MS = 30_000;
const POLL_MS = 25;

export class StoreLocker implements Locker {
  /** Locks held by this node's requests: their release callbacks. */
  readonly held = new Map<string, RequestRelease>();

  constructor(readonly locks: WriteLockStore, readonly clock: Clock) {}

  newLock(id: string): Lock {
    return new StoreLock(this, `tus-upload:${id}`);
  }
}

class StoreLock implements Lock {
  #token: string | null = null;
  #renew: NodeJS.Timeout | null = null;

  constructor(private readonly locker: StoreLocker, private readonly key: string) {}

  async lock(signal: AbortSignal, requestRelease: RequestRelease): Promise<void> {
    const started = Date.now();
    for (;;) {
      if (signal.aborted) throw ERRORS.ERR_LOCK_TIMEOUT;
      const token = await this.locker.locks.acquire(this.key, LEASE_MS, this.locker.clock.now());
      if (token) {
        this.#token = token;
        this.locker.held.set(this.key, requestRelease);
        this.#renew = setInterval(() => {
          void this.locker.locks.renew(this.key, token, LEASE_MS, this.locker.clock.now()).catch(() => undefined);
        }, LEASE_MS / 3);
        this.#renew.unref();
        return;
      }
      await this.locker.held.get(this.key)?.();
      if (Date.now() - started > WAIT_MS) throw ERRORS.ERR_LOCK_TIMEOUT;
      await delay(POLL_MS, undefined, { signal }).catch(() => undefined);
    }
  }

  async unlock(): Promise<void> {
    if (this.#renew) clearInterval(this.#renew);
    const token = this.#token;
    this.#token = null;
    if (!token) return;
    if (this.locker.held.get(this.key)) this.locker.held.delete(this.key);
    await this.locker.locks.release(this.key, token);
  }
}
