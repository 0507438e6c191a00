/**
 * LargeMap (src/providers/library/large-map.ts): the library's maps past V8's 2^24 entries per Map.
 * Against a plain Map under random operations with tiny shards (every boundary crossed), and the
 * default shard kept below the limit. The search engine and the vector index are checked across
 * shards in search-engine.test.ts and image-search.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { LARGE_MAP_SHARD, LargeMap, withShardSize } from '../../src/providers/library/large-map.js';

type Op = { op: 'set'; k: number; v: number } | { op: 'delete'; k: number } | { op: 'get'; k: number } | { op: 'clear' };

const ops = fc.array(fc.oneof(
  { weight: 6, arbitrary: fc.record({ op: fc.constant('set' as const), k: fc.integer({ min: 0, max: 40 }), v: fc.integer() }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('delete' as const), k: fc.integer({ min: 0, max: 40 }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('get' as const), k: fc.integer({ min: 0, max: 40 }) }) },
  { weight: 1, arbitrary: fc.constant({ op: 'clear' as const }) },
), { maxLength: 300 });

test('behaves as a Map under random sets, deletes, gets and clears: values, size, insertion order, delete during iteration', () => {
  fc.assert(fc.property(fc.integer({ min: 1, max: 5 }), ops, (shard, list: Op[]) => {
    const m = new LargeMap<number, number>(shard);
    const ref = new Map<number, number>();
    for (const o of list) {
      if (o.op === 'set') {
        assert.equal(m.set(o.k, o.v), m);
        ref.set(o.k, o.v);
      } else if (o.op === 'delete') assert.equal(m.delete(o.k), ref.delete(o.k));
      else if (o.op === 'get') {
        assert.equal(m.get(o.k), ref.get(o.k));
        assert.equal(m.has(o.k), ref.has(o.k));
      } else {
        m.clear();
        ref.clear();
      }
      assert.equal(m.size, ref.size);
    }
    assert.deepEqual([...m], [...ref]);
    assert.deepEqual([...m.keys()], [...ref.keys()]);
    assert.deepEqual([...m.values()], [...ref.values()]);
    for (const [k] of m) if (k % 2 === 0) m.delete(k);
    for (const [k] of ref) if (k % 2 === 0) ref.delete(k);
    assert.deepEqual([...m], [...ref]);
  }), { numRuns: 300, seed: 20261126 });
});

test('a full shard starts the next; an emptied shard before the last is dropped', () => {
  const m = new LargeMap<number, string>(3);
  for (let i = 0; i < 10; i++) m.set(i, `v${i}`);
  assert.equal(m.shardCount, 4);
  m.set(4, 'again'); // an existing key stays in its shard
  assert.equal(m.shardCount, 4);
  for (const k of [3, 4, 5]) m.delete(k);
  assert.equal(m.shardCount, 3);
  assert.deepEqual([...m.keys()], [0, 1, 2, 6, 7, 8, 9]);
  assert.equal(m.get(7), 'v7');
  m.set(3, 'back'); // the last shard has room
  assert.equal(m.shardCount, 3);
  assert.deepEqual([...m.keys()], [0, 1, 2, 6, 7, 8, 9, 3]);
});

test('an undefined value is a value, not a missing key, in any shard', () => {
  const m = new LargeMap<string, number | undefined>(1);
  m.set('a', 1).set('b', undefined).set('c', 3);
  assert.equal(m.shardCount, 3);
  assert.equal(m.has('b'), true);
  assert.equal(m.get('b'), undefined);
  assert.equal(m.get('c'), 3);
});

test('the default shard stays below V8\'s 2^24 entries per Map; shard sizes outside 1..2^24-1 are refused; withShardSize is scoped', () => {
  assert.ok(LARGE_MAP_SHARD < 2 ** 24 && LARGE_MAP_SHARD >= 2 ** 20);
  assert.throws(() => new LargeMap(0), RangeError);
  assert.throws(() => new LargeMap(2 ** 24), RangeError);
  const small = withShardSize(2, () => new LargeMap<number, number>());
  small.set(1, 1).set(2, 2).set(3, 3);
  assert.equal(small.shardCount, 2);
  const normal = new LargeMap<number, number>();
  for (let i = 0; i < 100; i++) normal.set(i, i);
  assert.equal(normal.shardCount, 1, 'outside withShardSize the default applies again');
});
