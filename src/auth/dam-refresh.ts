/**
 * Rotation of the hub's DAM refresh tokens, with reuse detection, as hub sessions rotate theirs
 * (src/auth/refresh-family.ts). Each DAM login that can be refreshed starts a family: a row of the
 * session store (SQLite, or PostgreSQL in cluster mode) under the id `dam-<uuid>`, bound to the hub
 * user and partner, expiring with the refresh TTL (swept with the sessions; removed with the user or
 * partner). The refresh token carries the family id and its jti; every refresh moves the family on,
 * so a stolen refresh token that is used after its owner's next refresh (past the grace window)
 * revokes the family, and both the thief's and the owner's tokens stop working.
 */
import { randomUUID } from 'node:crypto';
import type { SessionStore } from '../stores/types.js';
import { DAM_REFRESH_TYP, type ProviderTokenClaims, type ProviderTokens } from './provider-tokens.js';

type Base = Pick<ProviderTokenClaims, 'prv' | 'sub' | 'pid' | 'cred'>;

/** The prefix of a DAM family's id among the session store's rows (hub sessions are plain UUIDs). */
export const DAM_FAMILY_PREFIX = 'dam-';

/** The first refresh token of a new family (a completed DAM login). */
export async function startDamRefreshFamily(store: SessionStore, tokens: ProviderTokens, base: Base, now: number, ttlSec: number): Promise<string> {
  const fam = `${DAM_FAMILY_PREFIX}${randomUUID()}`;
  const jti = randomUUID();
  await store.create({ id: fam, userId: base.sub, partnerId: base.pid, currentJti: jti, previousJti: null, rotatedAt: now, createdAt: now, expiresAt: now + ttlSec * 1000, revokedAt: null });
  return tokens.issue({ ...base, typ: DAM_REFRESH_TYP, fam, jti }, ttlSec);
}
