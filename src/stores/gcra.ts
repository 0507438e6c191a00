import type { RateLimitDecision } from './types.js';

/**
 * Times are kept on a grid of 1/1024 ms, where every value is an exact binary fraction: sums of an
 * interval such as 60000/7 ms would otherwise drift, and the drift refused the last request of a
 * full burst for about half of all limits. The interval is rounded down to the grid (by under
 * 1 µs), so a client pacing itself at exactly the rate is never refused.
 */
const GRID = 1024;
const snap = (ms: number) => Math.round(ms * GRID) / GRID;

/**
 * Generic cell rate algorithm: one number per key (the theoretical arrival time, TAT), so a store
 * can update it atomically with a single compare-and-set or script. Allows a burst of `limit`
 * requests and then one every periodMs/limit.
 */
export function gcra(tat: number | null, limit: number, periodMs: number, now: number): { decision: RateLimitDecision; tat: number } {
  const interval = Math.max(1, Math.floor((periodMs / limit) * GRID)) / GRID;
  const burst = interval * limit; // ≈ periodMs
  // A TAT beyond now + burst can only come from a clock that jumped back (or another node's clock
  // ahead of ours): clamp it, so the jump costs at most one period, not the length of the jump.
  const base = snap(Math.max(Math.min(tat ?? now, now + burst), now));
  const newTat = base + interval;
  const allowAt = newTat - burst;
  if (allowAt > now) {
    const retry = allowAt - now;
    return {
      // Unchanged, except a clamped jump, which is kept so the next period can pass.
      tat: Math.min(tat ?? now, now + burst),
      decision: { allowed: false, limit, remaining: 0, resetSec: Math.ceil((base - now) / 1000), retryAfterSec: Math.max(1, Math.ceil(retry / 1000)) },
    };
  }
  const remaining = Math.max(0, Math.floor((now + burst - newTat) / interval));
  return { tat: newTat, decision: { allowed: true, limit, remaining, resetSec: Math.ceil((newTat - now) / 1000), retryAfterSec: 0 } };
}

/**
 * Gives one request back (the sign-in throttle reserves an attempt before checking a password and
 * returns the reservation of an attempt that succeeded): the TAT moves back one interval, never
 * before `now` (a TAT at or before now is a full budget, the same as no key). null: nothing is
 * left to remember, the key may be dropped.
 */
export function gcraRefund(tat: number | null, limit: number, periodMs: number, now: number): number | null {
  if (tat === null) return null;
  const interval = Math.max(1, Math.floor((periodMs / limit) * GRID)) / GRID;
  const back = snap(tat - interval);
  return back > now ? back : null;
}
