/**
 * The DAM login state machine (POST/GET /auth/login). A state is created for a hub user and a
 * provider, lives 5 minutes, settles once (completed, failed or cancelled) through the provider's
 * sign-in page or callback, and its tokens are handed out to exactly one poll.
 *
 *   pending ──complete──▶ completed ──poll──▶ consumed
 *      │ ├────fail──────▶ failed
 *      │ └────cancel────▶ cancelled
 *      └──(5 min)──────▶ expired (derived from expiresAt)
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { Clock } from '../clock.js';
import { hubError } from '../errors.js';
import type { LoginDescription, LoginHost, LoginIdentity, LoginProblem, LoginUnusable } from '../providers/contract.js';
import { LoginBrowser } from '../auth/login-browser.js';
import { featuresOf } from '../providers/capabilities.js';
import type { ProviderRegistry } from '../providers/registry.js';
import type { Stores } from '../stores/types.js';
import { DAM_ACCESS_TYP, type ProviderTokens } from '../auth/provider-tokens.js';
import { startDamRefreshFamily } from '../auth/dam-refresh.js';
import { DEFAULT_SIGNIN_LIMITS, SignInThrottle, type SignInLimits, type SignInReservation, type SignInSubject } from '../auth/signin-throttle.js';
import type { HubPrincipal } from '../auth/sessions.js';

const COLLECT_GRACE_MS = 60_000;

export interface DamLoginOptions {
  stateTtlSec: number;
  accessTtlSec: number;
  refreshTtlSec: number;
  publicUrl: string;
  /** Secret that makes userHash values opaque (stable for the life of the install); also keys the sign-in throttle's account names. */
  hashSecret: string;
  /** Sign-in form throttling (src/auth/signin-throttle.ts); defaults: DEFAULT_SIGNIN_LIMITS. */
  signIn?: SignInLimits;
  /**
   * Pending, unexpired login states a hub user (perUser) and the whole hub (total) may hold;
   * beyond them a start is refused (429 for the user, 503 for the hub) until one settles or expires.
   */
  pendingCaps?: { perUser: number; total: number };
}

export const DEFAULT_PENDING_CAPS = { perUser: 10, total: 10_000 };

/** What a page cannot use, in English for logs and the API (the pages say it in their own language). */
const PROBLEMS: Record<LoginProblem, string> = {
  invalid: 'This sign-in link is not valid. Start again from the application.',
  finished: 'This sign-in was already finished. You can close this window.',
  expired: 'This sign-in link has expired. Start again from the application.',
  gone: 'This sign-in is no longer valid. Start again from the application.',
};

function unusable(problem: LoginProblem): LoginUnusable {
  return { error: PROBLEMS[problem], problem };
}

export type PollAnswer = Record<string, never> | { access_token: string; refresh_token?: string; userHash: string; expires_in: number } | { error: string };

export class DamLogin implements LoginHost {
  readonly publicUrl: string;
  readonly throttle: SignInThrottle;
  /** The cookie binding each login to the browser that opened its start page (issue 28). */
  readonly browser: LoginBrowser;

  constructor(
    private readonly stores: Stores,
    private readonly providers: ProviderRegistry,
    private readonly tokens: ProviderTokens,
    private readonly clock: Clock,
    private readonly opts: DamLoginOptions,
  ) {
    this.publicUrl = opts.publicUrl.replace(/\/+$/, '');
    this.throttle = new SignInThrottle(stores.rateLimits, clock, opts.signIn ?? DEFAULT_SIGNIN_LIMITS, opts.hashSecret, opts.stateTtlSec * 1000);
    // Lives a minute past the state, so a page submitted at the last second still carries it.
    this.browser = new LoginBrowser(opts.hashSecret, this.publicUrl, opts.stateTtlSec + 60);
  }

  reserveSignIn(subject: SignInSubject): Promise<SignInReservation> {
    return this.throttle.reserve(subject);
  }

  /** `uiLocale`: the language the login's pages speak (one of the six; null: the browser's Accept-Language decides). */
  async start(p: Pick<HubPrincipal, 'user' | 'partner'>, providerId: string, serverUrl: string | null, uiLocale: string | null = null): Promise<{ redirect_uri: string; state: string }> {
    const provider = this.providers.require(providerId);
    if (serverUrl !== null) {
      if (!featuresOf(provider).serverUrl) throw hubError('hub-validation-error', `provider ${providerId} does not take a serverUrl`);
      let u: URL;
      try {
        u = new URL(serverUrl);
      } catch {
        throw hubError('hub-validation-error', 'serverUrl must be an absolute http(s) URL');
      }
      if (u.protocol !== 'https:' && u.protocol !== 'http:') throw hubError('hub-validation-error', 'serverUrl must be an absolute http(s) URL');
    }
    const now = this.clock.now();
    const state = randomBytes(24).toString('base64url');
    const created = await this.stores.logins.create({
      state, userId: p.user.id, partnerId: p.partner.id, providerId, serverUrl, uiLocale, status: 'pending', result: null, error: null,
      createdAt: now, expiresAt: now + this.opts.stateTtlSec * 1000,
    }, this.opts.pendingCaps ?? DEFAULT_PENDING_CAPS);
    if (!created.created) {
      // The store cannot grow without bound (issue 17): a slot frees when a state settles or expires.
      const wait = String(Math.max(1, Math.ceil((created.retryAt - now) / 1000)));
      if (created.limit === 'user') {
        throw hubError('hub-rate-limited', `this user has too many sign-ins in progress; finish or cancel one, or retry in ${wait} s`, { headers: { 'Retry-After': wait } });
      }
      throw hubError('hub-unavailable', `the hub has too many sign-ins in progress; retry in ${wait} s`, { headers: { 'Retry-After': wait } });
    }
    try {
      const { redirectUri } = await provider.beginLogin({ state, serverUrl }, this);
      return { redirect_uri: redirectUri, state };
    } catch (e) {
      // Nobody can use this state: free its slot rather than hold it for the whole lifetime.
      await this.stores.logins.settle(state, 'cancelled', null, null).catch(() => {});
      throw e;
    }
  }

  async poll(state: string): Promise<PollAnswer> {
    const s = await this.stores.logins.get(state);
    if (!s) return { error: 'unknown login state; start a new login' };
    if (s.status === 'consumed') return { error: 'this login was already completed and its tokens handed out' };
    if (s.status === 'failed') return { error: s.error ?? 'the sign-in failed' };
    if (s.status === 'cancelled') return { error: 'the sign-in was cancelled' };
    // A sign-in completed in time can still be collected shortly after the 5 minutes (a poll in flight).
    const late = this.clock.now() >= s.expiresAt + (s.status === 'completed' ? COLLECT_GRACE_MS : 0);
    if (late) return { error: 'the login expired (5 minutes); start a new login' };
    if (s.status === 'pending') return {};
    const result = await this.stores.logins.consume(state);
    if (!result) return { error: 'this login was already completed and its tokens handed out' };
    return result as PollAnswer;
  }

  async pending(state: string): ReturnType<LoginHost['pending']> {
    const s = typeof state === 'string' && state ? await this.stores.logins.get(state) : null;
    if (!s) return unusable('invalid');
    if (s.status !== 'pending') return unusable('finished');
    if (this.clock.now() >= s.expiresAt) return unusable('expired');
    return { providerId: s.providerId, serverUrl: s.serverUrl, userId: s.userId, partnerId: s.partnerId, uiLocale: s.uiLocale ?? null };
  }

  async describe(state: string): Promise<LoginDescription | LoginUnusable> {
    const s = await this.pending(state);
    if ('error' in s) return s;
    const [partner, user] = await Promise.all([this.stores.partners.get(s.partnerId), this.stores.users.get(s.userId)]);
    // A partner or user removed since the start: nobody is left to receive the access. (A disabled
    // partner is still named: MCP clients' partner row is disabled by design, src/mcp/identity.ts.)
    if (!partner || !user) return unusable('gone');
    const provider = this.providers.get(s.providerId);
    return {
      providerId: s.providerId, userId: s.userId, partnerId: s.partnerId, providerName: provider?.descriptor.name ?? s.providerId, serverUrl: s.serverUrl,
      partnerName: partner.name, userEmail: user.email || user.name || user.sub, uiLocale: s.uiLocale ?? null,
    };
  }

  async failedAttempt(state: string, error: string): Promise<{ ended: boolean }> {
    const { last } = await this.throttle.stateAttempt(state);
    if (!last) return { ended: false };
    await this.fail(state, error);
    return { ended: true };
  }

  async complete(state: string, identity: LoginIdentity): Promise<void> {
    const s = await this.pending(state);
    if ('error' in s) throw hubError('hub-validation-error', s.error);
    const provider = this.providers.require(s.providerId);
    const base = { prv: s.providerId, sub: s.userId, pid: s.partnerId, cred: identity.credentials };
    const access = await this.tokens.issue({ ...base, typ: DAM_ACCESS_TYP }, this.opts.accessTtlSec);
    const result: Record<string, unknown> = {
      access_token: access,
      expires_in: this.opts.accessTtlSec,
      userHash: this.userHash(s.partnerId, s.providerId, identity.accountId),
    };
    if (provider.refresh) {
      // A new rotation family (src/auth/dam-refresh.ts): each refresh moves it on, a reuse revokes it.
      result.refresh_token = await startDamRefreshFamily(this.stores.sessions, this.tokens, base, this.clock.now(), this.opts.refreshTtlSec);
    }
    if (!(await this.stores.logins.settle(state, 'completed', result, null))) throw hubError('hub-validation-error', 'the login was settled concurrently');
  }

  async fail(state: string, error: string): Promise<void> {
    await this.stores.logins.settle(state, 'failed', null, error);
  }

  async cancel(state: string): Promise<void> {
    await this.stores.logins.settle(state, 'cancelled', null, null);
  }

  userHash(partnerId: string, providerId: string, accountId: string): string {
    return createHmac('sha256', this.opts.hashSecret).update(`${partnerId}\0${providerId}\0${accountId}`).digest('base64url').slice(0, 32);
  }
}
