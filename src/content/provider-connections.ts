/**
 * Opening and renewing DAM connections from the `provider-authorization` header.
 */
import { randomUUID } from 'node:crypto';
import type { HubClaims } from '../auth/hub-tokens.js';
import { hubError, integrationError, isHubError } from '../errors.js';
import type { ProviderSession } from '../providers/contract.js';
import type { ProviderRegistry } from '../providers/registry.js';
import { bearer } from '../auth/exchange.js';
import { providerDeadline, withDeadline } from '../providers/deadline.js';
import { DAM_ACCESS_TYP, DAM_REFRESH_TYP, ProviderTokenError, type ProviderTokens } from '../auth/provider-tokens.js';
import { rotateFamily } from '../auth/refresh-family.js';
import type { Clock } from '../clock.js';
import type { SessionStore } from '../stores/types.js';

/** Where DAM refresh families live and how long a rotated token stays usable (src/auth/dam-refresh.ts). */
export interface DamRefreshRotation {
  store: SessionStore;
  clock: Clock;
  graceSec: number;
}

export class ProviderConnections {
  constructor(
    private readonly tokens: ProviderTokens,
    private readonly providers: ProviderRegistry,
    private readonly accessTtlSec: number,
    private readonly refreshTtlSec: number,
    private readonly rotation: DamRefreshRotation,
    private readonly timeoutMs = 30_000,
  ) {}

  /** provider-authorization → the DAM connection of this hub user. */
  /** `who.writes`: the partner's write opt-in, carried on the session (ProviderSession.writes). */
  async open(header: string | undefined, who: { userId: string; partnerId: string; writes?: boolean }): Promise<ProviderSession> {
    const token = bearer(header);
    if (!token) throw hubError('provider-access-token-missing', 'send "provider-authorization: Bearer <DAM token>" from the DAM login (POST /auth/login)');
    const c = await this.tokens.open(token, DAM_ACCESS_TYP).catch((e) => {
      throw hubError('provider-access-token-invalid', e instanceof ProviderTokenError ? e.message : 'the provider token failed verification');
    });
    if (c.sub !== who.userId || c.pid !== who.partnerId) throw hubError('provider-access-token-invalid', 'the provider token was issued to another user');
    if (!this.providers.get(c.prv)) throw hubError('provider-access-token-invalid', `the provider ${c.prv} of this token is no longer served`);
    return { providerId: c.prv, userId: c.sub, partnerId: c.pid, credentials: c.cred, writes: who.writes === true };
  }

  /** GET /auth/refreshToken with a DAM refresh token: a new DAM connection token. */
  async refresh(token: string, access: Pick<HubClaims, 'sub' | 'pid'>): Promise<{ access_token: string; refresh_token?: string; expires_in: number; token_type: 'Bearer' }> {
    const c = await this.tokens.open(token, DAM_REFRESH_TYP).catch((e) => {
      throw hubError('provider-access-token-invalid', e instanceof ProviderTokenError ? e.message : 'the DAM refresh token failed verification');
    });
    if (c.sub !== access.sub || c.pid !== access.pid) throw hubError('provider-access-token-invalid', 'the DAM refresh token was issued to another user');
    const provider = this.providers.get(c.prv);
    if (!provider) throw hubError('provider-access-token-invalid', `the provider ${c.prv} of this token is no longer served`);
    if (!provider.refresh) {
      throw integrationError('integration-not-supported', c.prv, `${provider.descriptor.name} connections cannot be refreshed; sign in again`);
    }
    // Rotation before the vendor is asked: a reused token reaches no upstream.
    const jti = await this.rotate(c);
    let cred;
    try {
      cred = await withDeadline(provider.refresh(c.cred), this.timeoutMs, () => providerDeadline(provider, this.timeoutMs));
    } catch (e) {
      if (isHubError(e)) throw e;
      throw integrationError('integration-auth-failed', c.prv, (e as Error).message);
    }
    const base = { prv: c.prv, sub: c.sub, pid: c.pid, cred };
    return {
      access_token: await this.tokens.issue({ ...base, typ: DAM_ACCESS_TYP }, this.accessTtlSec),
      refresh_token: await this.tokens.issue({ ...base, typ: DAM_REFRESH_TYP, fam: c.fam, jti }, this.refreshTtlSec),
      expires_in: this.accessTtlSec,
      token_type: 'Bearer',
    };
  }

  /**
   * Moves the token's family on and returns the next jti. Refused (403): a token without a family
   * (issued before rotation existed), a family gone, expired, revoked or of another user, and a
   * reuse past the grace window, which also revokes the family.
   */
  private async rotate(c: { fam?: string; jti?: string; sub: string; pid: string }): Promise<string> {
    if (!c.fam || !c.jti) throw hubError('provider-access-token-invalid', 'this DAM refresh token predates rotation; sign in to the DAM again');
    const { store, clock, graceSec } = this.rotation;
    const now = clock.now();
    const family = await store.get(c.fam);
    if (!family || family.revokedAt !== null || family.expiresAt <= now || family.userId !== c.sub || family.partnerId !== c.pid) {
      throw hubError('provider-access-token-invalid', 'this DAM connection was ended (a reused refresh token, or its user was removed); sign in to the DAM again');
    }
    const jti = await rotateFamily(store, family, c.jti, now, now + this.refreshTtlSec * 1000, graceSec * 1000, randomUUID());
    if (jti === null) {
      throw hubError('provider-access-token-invalid', 'this DAM refresh token was already used; the connection has been revoked as a precaution. Sign in to the DAM again');
    }
    return jti;
  }
}
