/**
 * A circuit breaker per (provider, upstream host). An upstream that keeps failing is not asked
 * again for a cool-down, so a dead DAM costs users one fast 503 instead of a timeout each, and the
 * DAM gets room to recover. Time comes from the injected clock: tests move it, nothing sleeps.
 *
 *   closed ──N consecutive failures──▶ open ──cool-down elapsed──▶ half-open
 *     ▲                                  ▲                             │ one trial call
 *     └────────────trial succeeds────────┴───────trial fails───────────┘
 */
import type { Clock } from '../../clock.js';

export interface BreakerOptions {
  /** Consecutive failures that open the circuit. */
  failureThreshold: number;
  /** How long an open circuit refuses calls before letting one trial through. */
  coolDownMs: number;
}

export type BreakerState = 'closed' | 'open' | 'half-open';

interface Circuit {
  failures: number;
  openedAt: number | null;
  trialInFlight: boolean;
}

export class CircuitBreakers {
  private readonly circuits = new Map<string, Circuit>();

  constructor(private readonly clock: Clock, private readonly opts: BreakerOptions) {}

  state(key: string): BreakerState {
    const c = this.circuits.get(key);
    if (!c || c.openedAt === null) return 'closed';
    return this.clock.now() - c.openedAt >= this.opts.coolDownMs ? 'half-open' : 'open';
  }

  /** Whether a call may go out now; in half-open only one trial at a time does. */
  admit(key: string): { ok: true } | { ok: false; retryAfterMs: number } {
    const c = this.circuits.get(key);
    const s = this.state(key);
    if (s === 'closed') return { ok: true };
    if (s === 'open') return { ok: false, retryAfterMs: this.opts.coolDownMs - (this.clock.now() - c!.openedAt!) };
    if (c!.trialInFlight) return { ok: false, retryAfterMs: 1000 };
    c!.trialInFlight = true;
    return { ok: true };
  }

  success(key: string): void {
    this.circuits.delete(key);
  }

  failure(key: string): void {
    const c = this.circuits.get(key) ?? { failures: 0, openedAt: null, trialInFlight: false };
    c.failures++;
    // A failed trial re-opens for a full cool-down; otherwise open on reaching the threshold.
    if (c.trialInFlight || c.failures >= this.opts.failureThreshold) c.openedAt = this.clock.now();
    c.trialInFlight = false;
    this.circuits.set(key, c);
  }

  /** A call that ended without telling anything about the upstream's health (a 404, a 401). */
  neutral(key: string): void {
    const c = this.circuits.get(key);
    if (c?.trialInFlight) this.circuits.delete(key);
  }
}
