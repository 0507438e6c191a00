/**
 * One writer at a time per asset (or folder, or upload target), across the nodes: the write engine
 * checks If-Match and writes while holding the target's lock from the stores (WriteLockStore), so
 * of concurrent writers with the same If-Match exactly one wins on every backend, whether or not
 * the DAM has conditional writes. The lock is renewed while the write runs (a 2 GiB upload takes
 * minutes) and expires on its own if the node dies.
 */
import { createHash } from 'node:crypto';
import type { Clock } from '../clock.js';
import { hubError } from '../errors.js';
import type { WriteLockStore } from '../stores/types.js';

export interface WriteLockOptions {
  /** A lock not renewed for this long is free again (a node died mid-write). */
  ttlMs: number;
  /** How long a writer waits for the lock before answering 423. */
  waitMs: number;
}

export const DEFAULT_WRITE_LOCK: WriteLockOptions = { ttlMs: 30_000, waitMs: 15_000 };

export class WriteLocks {
  constructor(
    private readonly store: WriteLockStore,
    private readonly clock: Clock,
    private readonly o: WriteLockOptions = DEFAULT_WRITE_LOCK,
    /** Test seam: the pause between attempts. */
    private readonly pause: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
  ) {}

  /** The lock key of a target: short and free of whatever characters the id holds. */
  static key(providerId: string, kind: 'asset' | 'folder' | 'name', id: string): string {
    return `w:${createHash('sha256').update(JSON.stringify([providerId, kind, id])).digest('base64url').slice(0, 32)}`;
  }

  /** Runs `fn` holding every lock of `keys` (taken in sorted order, so two writers cannot deadlock). */
  async with<T>(keys: string[], fn: () => Promise<T>): Promise<T> {
    const held: { key: string; token: string }[] = [];
    try {
      for (const key of [...new Set(keys)].sort()) held.push({ key, token: await this.acquire(key) });
      const renew = setInterval(() => {
        for (const h of held) void this.store.renew(h.key, h.token, this.o.ttlMs, this.clock.now()).catch(() => {});
      }, Math.max(1000, Math.floor(this.o.ttlMs / 3)));
      try {
        return await fn();
      } finally {
        clearInterval(renew);
      }
    } finally {
      await Promise.all(held.map((h) => this.store.release(h.key, h.token).catch(() => {})));
    }
  }

  private async acquire(key: string): Promise<string> {
    const start = Date.now();
    let delay = 10;
    for (;;) {
      const token = await this.store.acquire(key, this.o.ttlMs, this.clock.now());
      if (token) return token;
      if (Date.now() - start >= this.o.waitMs) {
        throw hubError('asset-locked', 'another change to this item is still being saved; try again when it has finished', { headers: { 'retry-after': '5' } });
      }
      await this.pause(delay);
      delay = Math.min(delay * 2, 250);
    }
  }
}
