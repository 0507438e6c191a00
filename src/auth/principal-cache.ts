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
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(token, { principal, until: Math.min(this.clock.now() + this.ttlMs, principal.claims.exp * 1000) });
  }

  clear(): void {
    this.entries.clear();
  }
}
