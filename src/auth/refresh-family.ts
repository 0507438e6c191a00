/**
 * One rule for every rotating refresh token of the hub (hub sessions, src/auth/sessions.ts, and DAM
 * connections, src/auth/dam-refresh.ts): a family row holds the current and previous jti. A refresh
 * with the current jti rotates (compare-and-set, so two nodes cannot both win); one with the
 * previous jti within the grace window (a client's concurrent refreshes) is answered with the
 * current one; anything else is a reuse, and the whole family is revoked, its newest token included.
 */
import type { Session, SessionStore } from '../stores/types.js';

/** The jti to issue the next refresh token with, or null: a reuse, and the family is now revoked. */
export async function rotateFamily(store: SessionStore, family: Session, jti: string, now: number, expiresAt: number, graceMs: number, next: string): Promise<string | null> {
  if (jti === family.currentJti && (await store.rotate(family.id, jti, next, now, expiresAt))) return next;
  // Either this token was already rotated, or a concurrent refresh rotated it a moment ago.
  const fresh = await store.get(family.id);
  const inGrace = fresh !== null && fresh.previousJti === jti && now - fresh.rotatedAt <= graceMs && fresh.revokedAt === null;
  if (!inGrace) {
    await store.revoke(family.id, now);
    return null;
  }
  return fresh.currentJti;
}
