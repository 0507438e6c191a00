/**
 * DAM connection tokens (the `provider-authorization` header). A JWE (dir + A256GCM) under the key
 * ring's active `enc` key: confidential because it may wrap the DAM's own credentials,
 * tamper-evident through the AEAD tag, and bound to the hub user and partner it was issued to.
 * The hub stores nothing per DAM connection; the token is the connection.
 */
import { EncryptJWT, errors as joseErrors, jwtDecrypt } from 'jose';
import type { Clock } from '../clock.js';
import { seconds } from '../clock.js';
import { isCanonicalCompact } from './canonical.js';
import { ExpiringCache } from './expiring-cache.js';
import type { KeyRing } from './keys.js';

export const DAM_ACCESS_TYP = 'damhub-dam-access';
export const DAM_REFRESH_TYP = 'damhub-dam-refresh';

/** What a provider keeps about one connection (its own credentials, account id, server URL). */
export type ProviderCredentials = Record<string, unknown>;

export interface ProviderTokenClaims {
  typ: typeof DAM_ACCESS_TYP | typeof DAM_REFRESH_TYP;
  /** Provider id. */
  prv: string;
  /** Hub user id the connection belongs to. */
  sub: string;
  /** Partner id. */
  pid: string;
  cred: ProviderCredentials;
  /**
   * Refresh tokens only: the rotation family (a row of the session store) and this token's place in
   * it (src/auth/dam-refresh.ts). A refresh token without them (issued before rotation) is refused.
   */
  fam?: string;
  jti?: string;
  exp: number;
}

export class ProviderTokenError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProviderTokenError';
  }
}

/** How many opened tokens are remembered (≈ 1 KB each), and for how long: the connections of the last minute. */
const OPENED_MAX = 5_000;
const OPENED_TTL_MS = 60_000;

export class ProviderTokens {
  /**
   * Tokens already decrypted, by their exact text, until their exp at the latest. Opening one is a
   * JWE decryption through WebCrypto, which round-trips through the libuv thread pool: about half a
   * millisecond, paid by every content call otherwise. The same bytes always decrypt to the same
   * claims, so a hit only re-checks what can change: that its key is still in the ring.
   */
  private readonly opened: ExpiringCache<{ claims: ProviderTokenClaims; kid: string }>;

  constructor(
    private readonly keys: KeyRing,
    private readonly clock: Clock,
  ) {
    this.opened = new ExpiringCache(clock, OPENED_TTL_MS, OPENED_MAX);
  }

  /** How many opened tokens are remembered now. */
  get remembered(): number {
    return this.opened.size;
  }

  async issue(c: Omit<ProviderTokenClaims, 'exp'>, ttlSec: number): Promise<string> {
    const key = this.keys.active('enc');
    const now = seconds(this.clock.now());
    return new EncryptJWT({ typ: c.typ, prv: c.prv, pid: c.pid, cred: c.cred, ...(c.fam && c.jti ? { fam: c.fam, jti: c.jti } : {}) })
      .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid: key.kid })
      .setSubject(c.sub)
      .setIssuedAt(now)
      .setExpirationTime(now + ttlSec)
      .encrypt(key.key);
  }

  /** Decrypts and checks type and expiry; binding to the caller is checked by the caller. */
  async open(token: string, typ: ProviderTokenClaims['typ']): Promise<ProviderTokenClaims> {
    // The memo is keyed by text: only the one canonical spelling of a token may reach it (jose
    // would decrypt a re-spelt IV, ciphertext or tag just the same).
    if (!isCanonicalCompact(token, 5)) throw new ProviderTokenError('the provider token is not a compact JWE of five canonical base64url parts');
    const hit = this.opened.get(token);
    if (hit) {
      if (!this.keys.find(hit.kid, 'enc')) {
        this.opened.delete(token);
        throw new ProviderTokenError('encrypted with an unknown or retired key');
      }
      if (hit.claims.typ !== typ) throw wrongType(typ);
      return hit.claims;
    }
    let payload;
    let kid = '';
    try {
      ({ payload } = await jwtDecrypt(token, (h) => {
        const k = h.kid ? this.keys.find(h.kid, 'enc') : undefined;
        if (!k) throw new ProviderTokenError('encrypted with an unknown or retired key');
        kid = k.kid;
        return k.key;
      }, { keyManagementAlgorithms: ['dir'], contentEncryptionAlgorithms: ['A256GCM'], currentDate: new Date(this.clock.now()) }));
    } catch (e) {
      if (e instanceof ProviderTokenError) throw e;
      if (e instanceof joseErrors.JWTExpired) throw new ProviderTokenError('the provider token has expired');
      throw new ProviderTokenError('the provider token is malformed or was tampered with');
    }
    if (payload.typ !== typ) throw wrongType(typ);
    // A token without exp would open for ever (jose checks exp only when present); the hub always sets one.
    if (typeof payload.exp !== 'number' || !Number.isFinite(payload.exp)) throw new ProviderTokenError('the provider token has no expiry (exp)');
    if (typeof payload.prv !== 'string' || typeof payload.sub !== 'string' || typeof payload.pid !== 'string' || typeof payload.cred !== 'object' || payload.cred === null) {
      throw new ProviderTokenError('the provider token lacks its claims');
    }
    const claims: ProviderTokenClaims = { typ, prv: payload.prv, sub: payload.sub, pid: payload.pid, cred: payload.cred as ProviderCredentials, exp: payload.exp };
    if (typeof payload.fam === 'string' && typeof payload.jti === 'string') Object.assign(claims, { fam: payload.fam, jti: payload.jti });
    // Shared by every later request with this token: frozen, so no caller can change another's view.
    Object.freeze(claims.cred);
    Object.freeze(claims);
    this.opened.set(token, { claims, kid }, claims.exp * 1000);
    return claims;
  }
}

function wrongType(expected: ProviderTokenClaims['typ']): ProviderTokenError {
  return new ProviderTokenError(`expected a ${expected === DAM_ACCESS_TYP ? 'DAM access' : 'DAM refresh'} token`);
}

/** Five dot-separated parts: a JWE (DAM token); three: a JWS (hub token). */
export function looksLikeJwe(token: string): boolean {
  return token.split('.').length === 5;
}
