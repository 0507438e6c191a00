/**
 * A map whose entries live for a fixed time at most (and never past their own expiry), capped in
 * size. Entries go in with the same lifetime, so they are roughly in expiry order: each insert drops
 * expired ones from the oldest end and stops at the first live one (O(1) amortised). Without that,
 * keys nobody asks for again (a token replaced by a refresh) would stay until the cap pushed them
 * out, and a busy node would hold the cap's worth for good.
 */
import type { Clock } from '../clock.js';

export class ExpiringCache<V> {
  private readonly entries = new Map<string, { value: V; until: number }>();

  constructor(
    private readonly clock: Clock,
    private readonly ttlMs: number,
    private readonly maxEntries: number,
  ) {}

  get(key: string): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (this.clock.now() >= e.until) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  /** Keeps `value` for the TTL, or until `expiresAtMs` when that comes first. */
  set(key: string, value: V, expiresAtMs = Infinity): void {
    if (this.ttlMs <= 0) return;
    const now = this.clock.now();
    for (const [k, e] of this.entries) {
      if (e.until > now) break;
      this.entries.delete(k);
    }
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { value, until: Math.min(now + this.ttlMs, expiresAtMs) });
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
