/**
 * Partner token exchange: a partner-signed JWT in, a hub session out (SPEC.md section 3).
 * Checks run cheapest-first but nothing is trusted before the signature verifies: the unverified
 * `iss` only picks which partner's keys to verify with.
 */
import { createHash, randomUUID } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader, errors as joseErrors, importJWK, jwtVerify, type JWK, type JWTPayload } from 'jose';
import type { Clock } from '../clock.js';
import { seconds } from '../clock.js';
import { hubError, type HubError } from '../errors.js';
import type { Partner, Stores, User } from '../stores/types.js';
import type { HubTokens } from './hub-tokens.js';
import { isCanonicalCompact } from './canonical.js';
import { JwksError, type JwksCache } from './jwks-cache.js';

/** iat may be this far in the future (partner clock skew). */
export const MAX_IAT_SKEW_SEC = 30;

export interface TokenPair {
  access_token: string;
  refresh_token: string;
  expires_in: number;
  token_type: 'Bearer';
}

export interface IdentifiedToken {
  partner: Partner;
  token: string;
}

export interface VerifiedToken extends IdentifiedToken {
  payload: JWTPayload;
}

const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;

export class TokenExchange {
  private readonly importedKeys = new WeakMap<JWK, Promise<CryptoKey | Uint8Array>>();

  constructor(
    private readonly stores: Stores,
    private readonly jwks: JwksCache,
    private readonly tokens: HubTokens,
    private readonly clock: Clock,
    private readonly refreshTtlSec: number,
  ) {}

  /** Finds the partner a JWT claims to come from, without trusting anything in it yet. */
  async identify(authorization: string | undefined): Promise<IdentifiedToken> {
    const token = bearer(authorization);
    if (!token) throw hubError('hub-sdk-token-missing', 'send the partner-signed JWT as "Authorization: Bearer <JWT>"');
    // Before anything reads it: a token has one spelling, or a re-spelt copy would pass replay detection.
    if (!isCanonicalCompact(token, 3)) {
      throw invalid('the token is not a compact JWS of three canonical base64url parts (no padding, no other characters, unused trailing bits zero)');
    }
    let header;
    let payload: JWTPayload;
    try {
      header = decodeProtectedHeader(token);
      payload = decodeJwt(token);
    } catch {
      throw invalid('the token is not a compact JWS (header.payload.signature, base64url)');
    }
    if (header.alg !== 'RS256') throw invalid(`alg must be RS256, got ${JSON.stringify(header.alg ?? null)}`);
    if (typeof header.kid !== 'string' || !header.kid) throw invalid('the JWT header has no kid');
    if (typeof payload.iss !== 'string' || !payload.iss) throw invalid('the JWT has no iss claim');
    const partner = await this.stores.partners.getByIssuer(payload.iss);
    if (!partner || !partner.enabled) {
      throw hubError('hub-sdk-partner-unknown', `no enabled partner is registered with issuer ${JSON.stringify(payload.iss)} (the match is exact, trailing slash included)`);
    }
    return { partner, token };
  }

  /** Checks the signature and every claim rule against the partner's registration. */
  async verify(t: IdentifiedToken): Promise<VerifiedToken> {
    return { ...t, payload: await this.verifyJwt(t.partner, t.token) };
  }

  /** Provisions the user and opens a session for a verified JWT (single use). */
  async complete({ partner, token, payload }: VerifiedToken, bodyEmail: unknown): Promise<{ pair: TokenPair; user: User }> {
    const email = pickEmail(payload.email, bodyEmail);
    const now = this.clock.now();

    // Single use. With a jti, the partner names the token. Without one, the key is what the token
    // asserts: the partner and the decoded payload bytes. Not the token's text (the signature's
    // spelling is the one part an outsider can vary, and non-canonical spellings are refused above
    // anyway), nor the header (the same claims re-signed under another of the partner's keys are
    // the same assertion, made once).
    const replayKey = typeof payload.jti === 'string' && payload.jti
      ? `jti:${partner.id}:${payload.jti}`
      : `tok:${createHash('sha256').update(`${partner.id}\n`).update(Buffer.from(token.split('.')[1]!, 'base64url')).digest('base64url')}`;
    // Remembered until the token could no longer pass verifyJwt: past exp, or older than maxTokenAge
    // (whichever comes first), plus the skew. A far-future exp does not keep the entry longer.
    const until = (Math.min(payload.exp!, payload.iat! + partner.maxTokenAgeSec) + MAX_IAT_SKEW_SEC) * 1000;
    if (!(await this.stores.replay.remember(replayKey, until, now))) {
      throw invalid('this JWT was already used; sign a new one (with a new jti) for every exchange');
    }

    const user = await this.stores.users.upsert(partner.id, payload.sub!, {
      email,
      name: str(payload.name) ?? (joinName(str(payload.given_name), str(payload.family_name))),
      givenName: str(payload.given_name),
      familyName: str(payload.family_name),
    }, now);
    const pair = await this.openSession(user);
    return { pair, user };
  }

  async openSession(user: User): Promise<TokenPair> {
    const now = this.clock.now();
    const sid = randomUUID();
    const jti = randomUUID();
    const expiresAt = now + this.refreshTtlSec * 1000;
    await this.stores.sessions.create({ id: sid, userId: user.id, partnerId: user.partnerId, currentJti: jti, previousJti: null, rotatedAt: now, createdAt: now, expiresAt, revokedAt: null });
    const access = await this.tokens.issueAccess({ sub: user.id, pid: user.partnerId, sid });
    const refresh = await this.tokens.issueRefresh({ sub: user.id, pid: user.partnerId, sid, jti }, expiresAt);
    return { access_token: access.token, refresh_token: refresh, expires_in: access.expiresIn, token_type: 'Bearer' };
  }

  private async verifyJwt(partner: Partner, token: string): Promise<JWTPayload> {
    const { kid } = decodeProtectedHeader(token);
    let jwk: JWK | null;
    try {
      jwk = await this.jwks.keyFor(partner, kid!);
    } catch (e) {
      if (e instanceof JwksError) throw hubError('hub-unavailable', `the partner's JWKS could not be loaded: ${e.message}`);
      throw e;
    }
    if (!jwk) throw invalid(`kid ${JSON.stringify(kid)} is not in the partner's JWKS`);
    let key = this.importedKeys.get(jwk);
    if (!key) {
      // importJWK turns a symmetric (oct) JWK into raw bytes whatever alg is asked for; only RSA keys may verify.
      key = (jwk.kty === 'RSA' ? importJWK(jwk, 'RS256') : Promise.reject(new Error(`kty ${jwk.kty}`))) as Promise<CryptoKey | Uint8Array>;
      this.importedKeys.set(jwk, key);
    }
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, await key.catch(() => { throw invalid(`the partner's key ${kid} is not an RSA signing key`); }), {
        algorithms: ['RS256'],
        issuer: partner.issuer,
        audience: partner.audience,
        requiredClaims: ['iss', 'aud', 'sub', 'iat', 'exp'],
        currentDate: new Date(this.clock.now()),
      }));
    } catch (e) {
      throw mapJoseError(e, partner);
    }
    const now = seconds(this.clock.now());
    if (typeof payload.sub !== 'string' || !payload.sub) throw invalid('the sub claim must be a non-empty string');
    if (payload.iat! > now + MAX_IAT_SKEW_SEC) throw invalid(`iat is more than ${MAX_IAT_SKEW_SEC} s in the future; check the partner's clock`);
    if (now - payload.iat! > partner.maxTokenAgeSec) throw invalid(`iat is older than the partner's maxTokenAge (${partner.maxTokenAgeSec} s); sign a fresh JWT per exchange`);
    return payload;
  }
}

function mapJoseError(e: unknown, partner: Partner): HubError {
  if ((e as HubError).name === 'HubError') return e as HubError;
  if (e instanceof joseErrors.JWTExpired) return hubError('hub-sdk-token-expired', 'the JWT is past its exp; sign a new one');
  if (e instanceof joseErrors.JWTClaimValidationFailed) {
    if (e.claim === 'aud' && e.reason !== 'missing') return hubError('hub-sdk-audience-invalid', `aud must be ${JSON.stringify(partner.audience)}`);
    return invalid(`claim ${e.claim}: ${e.message}`);
  }
  if (e instanceof joseErrors.JWSSignatureVerificationFailed) return invalid('the signature does not verify with the partner key named by kid');
  if (e instanceof joseErrors.JOSEError) return invalid(e.message);
  throw e;
}

function invalid(details: string): HubError {
  return hubError('hub-sdk-token-invalid', details);
}

export function bearer(h: string | undefined): string | null {
  if (!h) return null;
  const m = /^Bearer[ ]+([^\s]+)\s*$/i.exec(h);
  return m ? m[1]! : null;
}

function str(v: unknown): string | null {
  return typeof v === 'string' && v.trim() ? v.trim().slice(0, 256) : null;
}

function joinName(a: string | null, b: string | null): string | null {
  return [a, b].filter(Boolean).join(' ') || null;
}

/** The JWT's email wins over the body's; either must look like an address. */
function pickEmail(jwtEmail: unknown, bodyEmail: unknown): string {
  for (const candidate of [jwtEmail, bodyEmail]) {
    if (typeof candidate === 'string' && EMAIL.test(candidate.trim())) return candidate.trim();
  }
  throw hubError('hub-sdk-email-missing', 'put the user\'s email in the JWT "email" claim or in the JSON body as {"email": "..."}');
}
