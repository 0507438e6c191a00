/**
 * Locks on library assets, as writes and reads see them. The lock rows live in the index store
 * (LibraryIndexStore.takeLock/releaseLock: SQLite, or PostgreSQL shared by every node), so a lock
 * taken on one node holds on all. Also the in-process serialisation of writes to one path.
 */
import { hubError } from '../../errors.js';
import type { AccountRow, LockRow } from './index/contract.js';

/** Refuses (423 asset-locked naming the holder) when someone else than the account holds the lock. */
export function requireUnlocked(lock: LockRow | null, acc: AccountRow, what: string): void {
  if (lock && lock.accountId !== acc.id) throw hubError('asset-locked', `${what} is locked by ${lock.lockedBy}`);
}

/**
 * One write at a time per key (a library path) in this process: two uploads onto one name with
 * onConflict=version, or a write and a rename of the same file, run one after the other. The hub
 * already serialises writes to one asset id (across nodes too); this covers what has no id yet.
 */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<unknown>>();

  async run<T>(keys: string[], fn: () => Promise<T>): Promise<T> {
    // Taken in sorted order, so two callers with overlapping keys cannot wait on each other.
    const sorted = [...new Set(keys)].sort();
    const release: (() => void)[] = [];
    try {
      for (const k of sorted) release.push(await this.take(k));
      return await fn();
    } finally {
      for (const r of release.reverse()) r();
    }
  }

  private async take(key: string): Promise<() => void> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    let done!: () => void;
    const mine = new Promise<void>((r) => (done = r));
    const tail = prev.then(() => mine);
    this.tails.set(key, tail);
    await prev;
    return () => {
      done();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    };
  }
}
