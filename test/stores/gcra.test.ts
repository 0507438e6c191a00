/**
 * The GCRA rate limiter (src/stores/gcra.ts) as a pure function: a burst of `limit`, then one
 * request per periodMs/limit; denials carry Retry-After ≥ 1 s and do not use up budget.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { gcra } from '../../src/stores/gcra.js';
import type { RateLimitDecision } from '../../src/stores/types.js';

const MINUTE = 60_000;
/** A realistic epoch: float precision of the TAT matters at these magnitudes. */
const T0 = Date.UTC(2026, 5, 1, 12);

/** One key of a store: keeps the TAT like the SQLite store does (written only when allowed). */
class Key {
  tat: number | null = null;
  constructor(readonly limit: number, readonly periodMs = MINUTE) {}
  hit(now: number): RateLimitDecision {
    const { decision, tat } = gcra(this.tat, this.limit, this.periodMs, now);
    if (decision.allowed) this.tat = tat;
    return decision;
  }
  /** Hits at one instant until denied; returns the allowed decisions and the denial. */
  drain(now: number, max = 100_000): { allowed: RateLimitDecision[]; denied: RateLimitDecision } {
    const allowed: RateLimitDecision[] = [];
    for (let i = 0; i < max; i++) {
      const d = this.hit(now);
      if (!d.allowed) return { allowed, denied: d };
      allowed.push(d);
    }
    throw new Error(`never denied after ${max} hits`);
  }
}

describe('burst', () => {
  test('a burst of `limit` is allowed, then denied; remaining counts down to 0', () => {
    const k = new Key(5);
    const { allowed, denied } = k.drain(T0);
    assert.equal(allowed.length, 5);
    assert.deepEqual(allowed.map((d) => d.remaining), [4, 3, 2, 1, 0]);
    for (const d of allowed) {
      assert.equal(d.allowed, true);
      assert.equal(d.limit, 5);
      assert.equal(d.retryAfterSec, 0);
    }
    assert.equal(denied.allowed, false);
    assert.equal(denied.limit, 5);
    assert.equal(denied.remaining, 0);
  });

  test('the first hit of a fresh key', () => {
    const { decision, tat } = gcra(null, 3, MINUTE, T0);
    assert.deepEqual(decision, { allowed: true, limit: 3, remaining: 2, resetSec: 20, retryAfterSec: 0 });
    assert.equal(tat, T0 + 20_000);
  });

  test('every limit gets exactly its burst, with remaining limit-1 … 0 (no floating-point drift)', () => {
    for (const now of [0, T0, T0 + 123, Date.UTC(2039, 0, 1), Date.UTC(2030, 0, 1) + 7]) {
      for (let limit = 1; limit <= 300; limit++) {
        const { allowed } = new Key(limit).drain(now);
        assert.equal(allowed.length, limit, `limit ${limit} at ${now}`);
        allowed.forEach((d, i) => assert.equal(d.remaining, limit - 1 - i, `limit ${limit} at ${now}, hit ${i + 1}`));
      }
    }
  });

  test('large limits and other periods', () => {
    for (const [limit, period] of [[1200, MINUTE], [10_000, MINUTE], [7, 1000], [13, 3_600_000]] as const) {
      assert.equal(new Key(limit, period).drain(T0).allowed.length, limit, `${limit} per ${period} ms`);
    }
  });

  test('a long idle time does not bank more than one burst', () => {
    const k = new Key(4);
    k.drain(T0);
    assert.equal(k.drain(T0 + 24 * 3600_000).allowed.length, 4);
  });
});

describe('denial', () => {
  test('retryAfterSec is the wait for the next slot, at least 1 s', () => {
    const k = new Key(3);
    const { denied } = k.drain(T0);
    assert.equal(denied.retryAfterSec, 20);
    assert.equal(denied.resetSec, 60);
    const d2 = k.hit(T0 + 19_500);
    assert.equal(d2.allowed, false);
    assert.equal(d2.retryAfterSec, 1, 'half a second left still says 1 s');
  });

  test('retryAfterSec ≥ 1 even when the next slot is milliseconds away', () => {
    const k = new Key(1000, 1000); // one per millisecond
    const { denied } = k.drain(T0);
    assert.equal(denied.allowed, false);
    assert.ok(denied.retryAfterSec >= 1, `retryAfterSec ${denied.retryAfterSec}`);
    assert.equal(denied.retryAfterSec, 1);
    assert.equal(k.hit(T0 + 1).allowed, true);
  });

  test('retryAfterSec is always ≥ 1 and waiting that long is enough', () => {
    for (const limit of [1, 2, 3, 7, 9, 60, 61, 1200]) {
      const k = new Key(limit);
      const { denied } = k.drain(T0);
      assert.ok(denied.retryAfterSec >= 1);
      assert.equal(k.hit(T0 + denied.retryAfterSec * 1000).allowed, true, `limit ${limit}: retry after ${denied.retryAfterSec} s`);
    }
  });

  test('a denied request does not use up budget or move the TAT', () => {
    const k = new Key(2);
    k.drain(T0);
    const tat = k.tat;
    for (let i = 0; i < 50; i++) {
      const r = gcra(k.tat, 2, MINUTE, T0 + i * 100);
      assert.equal(r.decision.allowed, false);
      assert.equal(r.tat, tat);
    }
    // Denials did not push the next slot back.
    assert.equal(k.hit(T0 + 30_000).allowed, true);
  });
});

describe('refill', () => {
  test('budget refills one per period/limit', () => {
    const k = new Key(3); // one every 20 s
    k.drain(T0);
    assert.equal(k.hit(T0 + 19_999).allowed, false);
    const one = k.hit(T0 + 20_000);
    assert.equal(one.allowed, true);
    assert.equal(one.remaining, 0);
    assert.equal(k.hit(T0 + 20_000).allowed, false, 'exactly one slot came back');

    // 40 s later two more slots are back.
    const { allowed } = k.drain(T0 + 60_000);
    assert.equal(allowed.length, 2);
    // A full period after the last hit, the whole burst is back.
    assert.equal(k.drain(T0 + 120_000).allowed.length, 3);
  });

  test('remaining reports the slots available right now', () => {
    const k = new Key(6); // one every 10 s
    k.drain(T0);
    assert.equal(k.hit(T0 + 35_000).remaining, 2, '3.5 slots back, one used now → 2 left');
    assert.equal(k.hit(T0 + 35_000).remaining, 1);
    assert.equal(k.hit(T0 + 35_000).remaining, 0);
    assert.equal(k.hit(T0 + 35_000).allowed, false);
  });

  test('resetSec is the time until the budget is full again', () => {
    const k = new Key(3);
    assert.equal(k.hit(T0).resetSec, 20);
    assert.equal(k.hit(T0).resetSec, 40);
    assert.equal(k.hit(T0).resetSec, 60);
    assert.equal(k.hit(T0 + 30_000).resetSec, 50);
  });

  test('a steady stream at exactly the rate is never refused, for limits whose interval is not a whole number', () => {
    for (const limit of [7, 9, 11, 13, 17, 19, 29, 97, 106, 130]) {
      const k = new Key(limit);
      k.drain(T0);
      const interval = MINUTE / limit;
      for (let i = 1; i <= 2000; i++) {
        const now = T0 + Math.ceil(i * interval);
        assert.equal(k.hit(now).allowed, true, `limit ${limit}, request ${i} at +${now - T0} ms`);
      }
    }
  });

  test('over any window, no more than one burst plus the refill is allowed', () => {
    let seed = 12345;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (const limit of [1, 3, 7, 60]) {
      const k = new Key(limit);
      let now = T0;
      let allowed = 0;
      for (let i = 0; i < 5000; i++) {
        now += Math.floor(rnd() * (MINUTE / limit) * 0.5);
        if (k.hit(now).allowed) allowed++;
      }
      const ceiling = limit + Math.floor(((now - T0) * limit) / MINUTE);
      assert.ok(allowed <= ceiling, `limit ${limit}: ${allowed} allowed, at most ${ceiling}`);
      assert.ok(allowed >= ceiling / 2, `limit ${limit}: only ${allowed} of ${ceiling} allowed`);
    }
  });
});
