/**
 * Online password guessing on the hub's sign-in forms (the library's and the connector kit's),
 * OWASP ASVS V2.2.1, issue 17. One mechanism for both forms, on the rate-limit store's GCRA
 * (src/stores/gcra.ts; SQLite, or a Lua script in Redis), so every node of a cluster shares it.
 *
 * Every attempt reserves one unit of three budgets BEFORE the credentials are checked:
 *   - the account name at that provider, across all login states and hub users
 *     (`accountFailures` per `accountWindowSec`, bursting to `accountFailures`);
 *   - the hub user who started the login, across all their login states and account names
 *     (`userFailures` per `userWindowSec`);
 *   - the login state itself (`perState` over the state's lifetime; the last one ends the state).
 * Each reservation is one atomic store step, so N concurrent guesses cannot all reach the password
 * hash: at most the remaining budget does, the rest are refused without a check. A refused attempt
 * is answered the same whatever the password (the forms answer 429 with Retry-After).
 *
 * A successful sign-in gives its own reservation back (refund), so signing in costs nothing, but
 * the failures before it stay counted: resetting on success would let anyone who knows one valid
 * account clear the hub-user budget, and the victim's own sign-in would hand an attacker guessing
 * at the same account a fresh budget. Budgets refill continuously (one unit per window/limit), so
 * a throttled account recovers by itself: there is no lockout, and other names are never affected.
 *
 * The account-name key is an HMAC of the normalised name under the hub's secret: the store holds
 * neither the name nor anything a dictionary could invert without that secret, and nothing here
 * is logged.
 */
import { createHmac } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { RateLimitStore } from '../stores/types.js';

export interface SignInLimits {
  /** Failed attempts per account name (per provider), refilled over accountWindowSec. */
  accountFailures: number;
  accountWindowSec: number;
  /** Failed attempts per hub user, over all their login states, refilled over userWindowSec. */
  userFailures: number;
  userWindowSec: number;
  /** Attempts per login state; the last failed one ends the state. */
  perState: number;
}

export const DEFAULT_SIGNIN_LIMITS: SignInLimits = {
  accountFailures: 5,
  accountWindowSec: 15 * 60,
  userFailures: 20,
  userWindowSec: 15 * 60,
  perState: 5,
};

/** What a form needs to know of the login it serves. */
export interface SignInSubject {
  state: string;
  providerId: string;
  /** The hub user who started the login. */
  userId: string;
  /**
   * The account the credentials name: the library's user name; for the kit's forms every field
   * that is not a password (server URL and user name, endpoint, bucket and key id).
   */
  account: string;
}

export type SignInReservation =
  | {
    allowed: true;
    /** This attempt used the state's last unit: if it fails, the form ends the state. */
    lastForState: boolean;
    /** The credentials were right: gives this attempt's units back. */
    succeeded(): Promise<void>;
  }
  | { allowed: false; retryAfterSec: number };

interface Budget {
  key: string;
  limit: number;
  periodMs: number;
}

/** Case, Unicode form and surrounding blanks do not make a new account name. */
export function normaliseAccount(account: string): string {
  return account.normalize('NFKC').trim().toLowerCase();
}

export class SignInThrottle {
  constructor(
    private readonly rateLimits: RateLimitStore,
    private readonly clock: Clock,
    private readonly limits: SignInLimits,
    private readonly keySecret: string,
    /** Lifetime of a login state: the window of its own budget. */
    private readonly stateTtlMs: number,
  ) {
    for (const [k, v] of Object.entries(limits)) {
      if (!Number.isInteger(v) || v < 1) throw new Error(`sign-in limit ${k} must be a positive integer, got ${v}`);
    }
  }

  /** The store key of an account name: `signin:acct:<provider>:<HMAC>`, never the name itself. */
  accountKey(providerId: string, account: string): string {
    const mac = createHmac('sha256', this.keySecret).update(`signin-account\0${providerId}\0${normaliseAccount(account)}`).digest('base64url').slice(0, 32);
    return `signin:acct:${providerId}:${mac}`;
  }

  private budgets(s: SignInSubject): Budget[] {
    const l = this.limits;
    return [
      { key: this.accountKey(s.providerId, s.account), limit: l.accountFailures, periodMs: l.accountWindowSec * 1000 },
      { key: `signin:user:${s.userId}`, limit: l.userFailures, periodMs: l.userWindowSec * 1000 },
      // A period of perState lifetimes refills one unit per lifetime, i.e. never while the state
      // lives: its count is exact, however slowly the attempts come.
      { key: `signin:state:${s.state}`, limit: l.perState, periodMs: l.perState * this.stateTtlMs },
    ];
  }

  /**
   * Reserves one attempt in every budget, before any credential is checked. When one budget is
   * spent, the units already taken from the others are given back (the refused attempt is not
   * checked, so it must not cost the innocent budgets) and the answer is the wait until it refills.
   */
  async reserve(s: SignInSubject): Promise<SignInReservation> {
    const now = this.clock.now();
    const taken: Budget[] = [];
    let remaining = 0;
    // In order account, user, state: the state's budget is the last one taken, so `remaining`
    // ends as the state's. A unit taken and then given back may briefly refuse a concurrent
    // attempt on the same budget: a false refusal, never a false admission.
    for (const b of this.budgets(s)) {
      const d = await this.rateLimits.hit(b.key, b.limit, b.periodMs, now);
      if (!d.allowed) {
        await this.giveBack(taken, now);
        return { allowed: false, retryAfterSec: d.retryAfterSec };
      }
      taken.push(b);
      remaining = d.remaining;
    }
    return { allowed: true, lastForState: remaining === 0, succeeded: () => this.giveBack(taken, this.clock.now()) };
  }

  /**
   * One unit of the state's own budget, for a failed attempt that names no account (an OAuth
   * callback whose code the DAM refused). `last`: the budget is spent, the state must end.
   */
  async stateAttempt(state: string): Promise<{ last: boolean }> {
    const perState = this.limits.perState;
    const d = await this.rateLimits.hit(`signin:state:${state}`, perState, perState * this.stateTtlMs, this.clock.now());
    return { last: !d.allowed || d.remaining === 0 };
  }

  private async giveBack(taken: Budget[], now: number): Promise<void> {
    for (const b of taken) await this.rateLimits.refund(b.key, b.limit, b.periodMs, now);
  }
}
