import type { RateLimitDecision } from './types.js';

/**
 * Generic cell rate algorithm: one number per key (the theoretical arrival time, TAT), so a store
 * can update it atomically with a single compare-and-set or script. Allows a burst of `limit`
 * requests and then one every periodMs/limit.
 */
export function gcra(tat: number | null, limit: number, periodMs: number, now: number): { decision: RateLimitDecision; tat: number } {
  const interval = periodMs / limit;
  const burst = periodMs; // limit × interval
  const base = Math.max(tat ?? now, now);
  const newTat = base + interval;
  const allowAt = newTat - burst;
  if (allowAt > now) {
    const retry = allowAt - now;
    return {
      tat: tat ?? now,
      decision: { allowed: false, limit, remaining: 0, resetSec: Math.ceil((base - now) / 1000), retryAfterSec: Math.max(1, Math.ceil(retry / 1000)) },
    };
  }
  const remaining = Math.max(0, Math.floor((now + burst - newTat) / interval));
  return { tat: newTat, decision: { allowed: true, limit, remaining, resetSec: Math.ceil((newTat - now) / 1000), retryAfterSec: 0 } };
}
