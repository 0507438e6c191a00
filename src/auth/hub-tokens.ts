/**
 * Hub access and refresh tokens: compact JWTs (HS256) signed with the key ring's active `sig` key.
 * Only the hub verifies them, so a symmetric key is enough and keeps verification cheap. The
 * header `typ` tells access from refresh tokens, so neither can stand in for the other.
 */
import { randomUUID } from 'node:crypto';
import { compactVerify, decodeProtectedHeader, errors as joseErrors, jwtVerify, SignJWT, type JWTPayload } from 'jose';
import type { Clock } from '../clock.js';
import { seconds } from '../clock.js';
import { isCanonicalCompact } from './canonical.js';
import type { KeyRing } from './keys.js';

export const ACCESS_TYP = 'damhub-access+jwt';
export const REFRESH_TYP = 'damhub-refresh+jwt';

export interface HubClaims {
  /** Hub user id. */
  sub: string;
  /** Partner id. */
  pid: string;
  /** Session (refresh-token family) id. */
  sid: string;
  jti: string;
  iat: number;
  exp: number;
}

export type HubTokenFailure = 'malformed' | 'signature' | 'expired' | 'wrong-type';

export class HubTokenError extends Error {
  constructor(readonly reason: HubTokenFailure, message: string) {
    super(message);
    this.name = 'HubTokenError';
  }
}

export class HubTokens {
  constructor(
    private readonly keys: KeyRing,
    private readonly clock: Clock,
    private readonly accessTtlSec: number,
    private readonly refreshTtlSec: number,
  ) {}

  async issueAccess(c: { sub: string; pid: string; sid: string }): Promise<{ token: string; expiresIn: number }> {
    return { token: await this.sign(ACCESS_TYP, { ...c, jti: randomUUID() }, this.accessTtlSec), expiresIn: this.accessTtlSec };
  }

  /** The refresh token's identity is its jti; re-signing the same jti yields an equivalent token. */
  async issueRefresh(c: { sub: string; pid: string; sid: string; jti: string }, expiresAtMs?: number): Promise<string> {
    const ttl = expiresAtMs ? Math.max(1, seconds(expiresAtMs - this.clock.now())) : this.refreshTtlSec;
    return this.sign(REFRESH_TYP, c, ttl);
  }

  private async sign(typ: string, c: { sub: string; pid: string; sid: string; jti: string }, ttlSec: number): Promise<string> {
    const key = this.keys.active('sig');
    const now = seconds(this.clock.now());
    return new SignJWT({ pid: c.pid, sid: c.sid })
      .setProtectedHeader({ alg: 'HS256', typ, kid: key.kid })
      .setSubject(c.sub)
      .setJti(c.jti)
      .setIssuedAt(now)
      .setExpirationTime(now + ttlSec)
      .sign(key.key);
  }

  /** Full verification: signature, type and expiry against the injected clock. */
  async verify(token: string, typ: string): Promise<HubClaims> {
    try {
      assertCanonical(token);
      const { payload } = await jwtVerify(token, (h) => this.keyFor(h.kid), {
        algorithms: ['HS256'],
        typ,
        currentDate: new Date(this.clock.now()),
        requiredClaims: ['sub', 'jti', 'exp', 'iat'],
      });
      return toClaims(payload);
    } catch (e) {
      throw this.classify(e, token, typ);
    }
  }

  /** Signature and type only: /auth/refreshToken accepts an expired access token. */
  async verifySignatureOnly(token: string, typ: string): Promise<HubClaims> {
    try {
      assertCanonical(token);
      const { payload, protectedHeader } = await compactVerify(token, (h) => this.keyFor(h.kid), { algorithms: ['HS256'] });
      if (protectedHeader.typ !== typ) throw new HubTokenError('wrong-type', `expected a ${typ} token`);
      return toClaims(JSON.parse(new TextDecoder().decode(payload)) as JWTPayload);
    } catch (e) {
      throw this.classify(e, token, typ);
    }
  }

  private keyFor(kid: string | undefined) {
    const k = kid ? this.keys.find(kid, 'sig') : undefined;
    if (!k) throw new HubTokenError('signature', 'signed with an unknown or retired key');
    return k.key;
  }

  private classify(e: unknown, token: string, typ: string): HubTokenError {
    if (e instanceof HubTokenError) return e;
    if (e instanceof joseErrors.JWTExpired) return new HubTokenError('expired', 'the token has expired');
    if (e instanceof joseErrors.JWSSignatureVerificationFailed) return new HubTokenError('signature', 'signature verification failed');
    if (e instanceof joseErrors.JWTClaimValidationFailed && e.claim === 'typ') {
      return new HubTokenError('wrong-type', `expected a ${typ} token`);
    }
    try {
      const h = decodeProtectedHeader(token);
      if (h.typ !== typ) return new HubTokenError('wrong-type', `expected a ${typ} token`);
    } catch {
      return new HubTokenError('malformed', 'the token is not a compact JWS');
    }
    return new HubTokenError('malformed', (e as Error).message);
  }
}

/**
 * jose accepts an HMAC signature re-spelt (padding, non-zero unused bits); each spelling would be a
 * separate principal-cache entry. Nothing is keyed on a hub token's text for revocation or reuse
 * (those key on sid and jti), but one token has one spelling, so the caches hold one entry each.
 */
function assertCanonical(token: string): void {
  if (!isCanonicalCompact(token, 3)) throw new HubTokenError('malformed', 'the token is not a compact JWS of three canonical base64url parts');
}

function toClaims(p: JWTPayload): HubClaims {
  if (typeof p.sub !== 'string' || typeof p.pid !== 'string' || typeof p.sid !== 'string' || typeof p.jti !== 'string' || typeof p.exp !== 'number') {
    throw new HubTokenError('malformed', 'the token lacks hub claims');
  }
  return { sub: p.sub, pid: p.pid, sid: p.sid, jti: p.jti, iat: p.iat ?? 0, exp: p.exp };
}
