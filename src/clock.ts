/**
 * Every time-dependent rule (token expiry, iat skew, grace windows, login-state TTL, rate limits)
 * reads time through a Clock so tests can move time instead of sleeping.
 */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock tests move by hand. */
export class ManualClock implements Clock {
  constructor(private t = Date.UTC(2026, 0, 1)) {}
  now(): number {
    return this.t;
  }
  advance(ms: number): void {
    this.t += ms;
  }
  set(ms: number): void {
    this.t = ms;
  }
}

export const seconds = (ms: number): number => Math.floor(ms / 1000);
