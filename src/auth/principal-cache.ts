/**
 * Verified access tokens → their principal, for a second at most. Every authenticated request
 * would otherwise pay an HMAC verification and three store reads; under load the same token
 * arrives many times a second. Any revocation, user removal or partner change the store reports
 * clears the cache at once (in cluster mode the store relays other nodes' changes); the short TTL
 * bounds staleness for changes made behind the hub's back (a CLI writing the database directly).
 */
import type { Clock } from '../clock.js';
import type { Partner, Session, User } from '../stores/types.js';
import { ExpiringCache } from './expiring-cache.js';
import type { HubClaims } from './hub-tokens.js';

/** Who an authenticated request acts for (src/auth/sessions.ts authenticates). */
export interface HubPrincipal {
  user: User;
  partner: Partner;
  session: Session;
  claims: HubClaims;
  /** Stable opaque hash of (partner, sub), computed once per authentication. */
  userHash: string;
}

export class PrincipalCache extends ExpiringCache<HubPrincipal> {
  constructor(clock: Clock, ttlMs: number, maxEntries = 10_000) {
    super(clock, ttlMs, maxEntries);
  }

  /** Never past the access token's own exp. */
  override set(token: string, principal: HubPrincipal): void {
    super.set(token, principal, principal.claims.exp * 1000);
  }
}
