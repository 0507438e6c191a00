/**
 * Verified access tokens → their principal, for a second at most. Every authenticated request
 * would otherwise pay an HMAC verification and three store reads; under load the same token
 * arrives many times a second. Any revocation, user removal or partner change the store reports
 * clears the cache at once (in cluster mode the store relays other nodes' changes); the short TTL
 * bounds staleness for changes made behind the hub's back (a CLI writing the database directly).
 */
import type { Clock } from '../clock.js';
import type { HubPrincipal } from './sessions.js';

interface Entry {
  principal: HubPrincipal;
  until: number;
}

export class PrincipalCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly clock: Clock,
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
  ) {}

  get(token: string): HubPrincipal | undefined {
    const e = this.entries.get(token);
    if (!e) return undefined;
    if (this.clock.now() >= e.until) {
      this.entries.delete(token);
      return undefined;
    }
    return e.principal;
  }

  set(token: string, principal: HubPrincipal): void {
    if (this.ttlMs <= 0) return;
    const now = this.clock.now();
    this.pruneExpired(now);
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(token, { principal, until: Math.min(now + this.ttlMs, principal.claims.exp * 1000) });
  }

  /**
   * Drops expired entries from the oldest end. A token replaced by a refresh is never asked for
   * again, so without this its entry (≈ 2.5 KB) would stay until the size cap pushed it out: a
   * busy node held the cap's worth (≈ 25 MB) for good. Entries go in roughly in expiry order
   * (now + ttl), so the scan stops at the first live one and costs O(1) amortised.
   */
  private pruneExpired(now: number): void {
    for (const [token, e] of this.entries) {
      if (e.until > now) break;
      this.entries.delete(token);
    }
  }

  get size(): number {
    return this.entries.size;
  }

  clear(): void {
    this.entries.clear();
  }
}
