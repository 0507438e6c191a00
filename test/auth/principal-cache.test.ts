/**
 * The principal cache (src/auth/principal-cache.ts): a verified access token answers from memory
 * for up to its TTL, never past the token's exp, and memory holds only recently used tokens.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { PrincipalCache } from '../../src/auth/principal-cache.js';
import type { HubPrincipal } from '../../src/auth/sessions.js';
import { ManualClock } from '../../src/clock.js';

const T0 = Date.UTC(2026, 5, 1, 12);
const principal = (sub: string, expSec = T0 / 1000 + 3600) => ({ user: { id: sub }, claims: { sub, exp: expSec } }) as unknown as HubPrincipal;

describe('principal cache', () => {
  test('answers within the TTL and not after it', () => {
    const clock = new ManualClock(T0);
    const cache = new PrincipalCache(clock, 1000);
    cache.set('t1', principal('u1'));
    clock.advance(999);
    assert.equal(cache.get('t1')?.user.id, 'u1');
    clock.advance(1);
    assert.equal(cache.get('t1'), undefined);
  });

  test('never answers past the token\'s own exp', () => {
    const clock = new ManualClock(T0);
    const cache = new PrincipalCache(clock, 60_000);
    cache.set('t1', principal('u1', T0 / 1000 + 2));
    clock.advance(1999);
    assert.ok(cache.get('t1'));
    clock.advance(1);
    assert.equal(cache.get('t1'), undefined);
  });

  test('tokens nobody asks for again are dropped once expired, not kept until the size cap', () => {
    const clock = new ManualClock(T0);
    const cache = new PrincipalCache(clock, 1000, 10_000);
    for (let i = 0; i < 500; i++) cache.set(`old-${i}`, principal(`u${i}`));
    assert.equal(cache.size, 500);
    clock.advance(1000);
    cache.set('new', principal('u-new'));
    assert.equal(cache.size, 1);
    assert.equal(cache.get('new')?.user.id, 'u-new');
  });

  test('at the size cap the oldest entry makes room', () => {
    const clock = new ManualClock(T0);
    const cache = new PrincipalCache(clock, 1000, 3);
    for (const t of ['a', 'b', 'c', 'd']) cache.set(t, principal(t));
    assert.equal(cache.size, 3);
    assert.equal(cache.get('a'), undefined);
    assert.equal(cache.get('d')?.user.id, 'd');
  });

  test('a TTL of zero disables it', () => {
    const cache = new PrincipalCache(new ManualClock(T0), 0);
    cache.set('t1', principal('u1'));
    assert.equal(cache.get('t1'), undefined);
    assert.equal(cache.size, 0);
  });
});
