/**
 * Hub sessions: authenticating access tokens, rotating refresh tokens (with a grace window for
 * concurrent refreshes and reuse detection that revokes the family), and logout.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import { hubError, isHubError } from '../errors.js';
import type { Partner, Session, Stores, User } from '../stores/types.js';
import { bearer, type TokenPair } from './exchange.js';
import { ACCESS_TYP, HubTokenError, REFRESH_TYP, type HubClaims, type HubTokens } from './hub-tokens.js';
import { PrincipalCache, type HubPrincipal } from './principal-cache.js';
import { rotateFamily } from './refresh-family.js';

export type { HubPrincipal };

export class SessionService {
  private readonly cache: PrincipalCache;

  constructor(
    private readonly stores: Stores,
    private readonly tokens: HubTokens,
    private readonly clock: Clock,
    private readonly refreshTtlSec: number,
    private readonly graceSec: number,
    private readonly userHash: (partnerId: string, sub: string) => string,
    principalCacheMs = 1000,
  ) {
    this.cache = new PrincipalCache(clock, principalCacheMs);
    stores.onInvalidate(() => this.cache.clear());
  }

  /** The principal of a token verified within the last second, without any async work (the hot path). */
  cached(authorization: string | undefined): HubPrincipal | undefined {
    const token = authorization ? bearer(authorization) : null;
    return token ? this.cache.get(token) : undefined;
  }

  /** Authorization: Bearer <access token> → the live session behind it. */
  async authenticate(authorization: string | undefined): Promise<HubPrincipal> {
    const token = bearer(authorization);
    if (!token) throw hubError('hub-access-token-missing', 'send "Authorization: Bearer <access token>" from /auth/exchangeToken');
    const cached = this.cache.get(token);
    if (cached) return cached;
    let claims: HubClaims;
    try {
      claims = await this.tokens.verify(token, ACCESS_TYP);
    } catch (e) {
      throw accessInvalid(e);
    }
    const p = await this.principal(claims);
    this.cache.set(token, p);
    return p;
  }

  /** For /auth/refreshToken with a DAM refresh token: the (possibly expired) access token's session must still be live. */
  async assertLive(claims: HubClaims): Promise<void> {
    await this.principal(claims);
  }

  private async principal(claims: HubClaims): Promise<HubPrincipal> {
    const [session, user, partner] = await Promise.all([
      this.stores.sessions.get(claims.sid),
      this.stores.users.get(claims.sub),
      this.stores.partners.get(claims.pid),
    ]);
    if (!session || session.revokedAt !== null) throw hubError('hub-access-token-invalid', 'the session was ended (logout or revocation); exchange again');
    if (!user || user.partnerId !== claims.pid) throw hubError('hub-access-token-invalid', 'the user no longer exists');
    if (!partner || !partner.enabled) throw hubError('hub-access-token-invalid', 'the partner was disabled or removed');
    return { user, partner, session, claims, userHash: this.userHash(partner.id, user.sub) };
  }

  /** /auth/refreshToken: the current access token may have expired, so only its signature is checked. */
  async accessClaimsForRefresh(authorization: string | undefined): Promise<HubClaims> {
    const access = bearer(authorization);
    if (!access) throw hubError('hub-access-token-missing', 'send the current (possibly expired) access token as "Authorization: Bearer <token>"');
    try {
      return await this.tokens.verifySignatureOnly(access, ACCESS_TYP);
    } catch (e) {
      throw accessInvalid(e);
    }
  }

  /** GET /auth/refreshToken with a hub refresh token in provider-authorization. */
  async refresh(accessClaims: HubClaims, refreshToken: string): Promise<TokenPair> {
    let rc: HubClaims;
    try {
      rc = await this.tokens.verify(refreshToken, REFRESH_TYP);
    } catch (e) {
      if (e instanceof HubTokenError && e.reason === 'wrong-type') {
        throw hubError('hub-refresh-token-invalid', 'provider-authorization does not carry a refresh token (an access token, perhaps?)');
      }
      throw hubError('provider-access-token-invalid', `the refresh token failed verification (${(e as Error).message}); exchange a new partner JWT`);
    }
    if (rc.sub !== accessClaims.sub || rc.pid !== accessClaims.pid) {
      throw hubError('hub-refresh-token-invalid', 'the refresh token belongs to another user than the access token');
    }

    const now = this.clock.now();
    const session = await this.stores.sessions.get(rc.sid);
    if (!session || session.revokedAt !== null || session.expiresAt <= now) {
      throw hubError('provider-access-token-invalid', 'the session behind this refresh token was ended; exchange a new partner JWT');
    }
    // A user or partner gone is this refresh token's end; a store that is down is not (503 passes through).
    const { user, partner } = await this.principal({ ...rc, sid: session.id }).catch((e) => {
      if (isHubError(e) && e.code === 'hub-access-token-invalid') throw hubError('provider-access-token-invalid', e.details ?? 'session ended');
      throw e;
    });

    const next = randomUUID();
    const expiresAt = now + this.refreshTtlSec * 1000;
    const refreshJti = await rotateFamily(this.stores.sessions, session, rc.jti, now, expiresAt, this.graceSec * 1000, next);
    if (refreshJti === null) {
      throw hubError('provider-access-token-invalid', 'this refresh token was already used; the session has been revoked as a precaution. Exchange a new partner JWT');
    }
    const sess = (await this.stores.sessions.get(session.id))!;
    const a = await this.tokens.issueAccess({ sub: user.id, pid: partner.id, sid: session.id });
    const r = await this.tokens.issueRefresh({ sub: user.id, pid: partner.id, sid: session.id, jti: refreshJti }, sess.expiresAt);
    return { access_token: a.token, refresh_token: r, expires_in: a.expiresIn, token_type: 'Bearer' };
  }

  async logout(p: HubPrincipal): Promise<void> {
    await this.stores.sessions.revoke(p.session.id, this.clock.now());
  }
}

function accessInvalid(e: unknown) {
  const reason = e instanceof HubTokenError ? e.reason : 'malformed';
  const details = {
    malformed: 'the access token is malformed',
    signature: 'the access token signature does not verify',
    expired: 'the access token has expired; refresh it with /auth/refreshToken',
    'wrong-type': 'Authorization must carry an access token (not a refresh or partner token)',
  }[reason];
  return hubError('hub-access-token-invalid', details);
}
