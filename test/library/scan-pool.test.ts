/**
 * Descriptor scans in worker threads (src/providers/library/similarity/scan-pool.ts): a large
 * index's queryAsync answers exactly what the same query scanned on the main thread answers
 * (folder filter, keyset, blend, one or several workers), puts and removals made while a scan runs
 * never give a removed asset or a stale score, and a pool that stops falls back to the main thread.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { DIM, SCALE, type Descriptor } from '../../src/providers/library/similarity/descriptor.js';
import { PARALLEL_MIN, VectorIndex, type QueryOptions } from '../../src/providers/library/similarity/vector-index.js';
import { rng } from '../helpers/scenes.js';

const rand = rng(11);
/** Clustered unit vectors, so that queries near a centre have many candidates above the cut-off. */
const centres = Array.from({ length: 40 }, () => Array.from({ length: DIM }, () => rand() - 0.5));
function descriptor(centre = Math.floor(rand() * centres.length), spread = 0.35): Descriptor {
  const c = centres[centre]!;
  const f = c.map((x) => x + (rand() - 0.5) * spread);
  const n = Math.hypot(...f);
  return { vector: Int8Array.from(f, (x) => Math.round((x / n) * SCALE)), phash: Uint8Array.from({ length: 8 }, () => Math.floor(rand() * 256)) };
}

const N = PARALLEL_MIN + 20_000;
const folders = ['A', 'A/x', 'B', 'C/y/z'];
function build(workers?: number): VectorIndex {
  const index = new VectorIndex(1024, workers);
  const r = rng(5);
  const save = rand;
  for (let i = 0; i < N; i++) {
    const c = Math.floor(r() * centres.length);
    index.put(`a${String(i).padStart(6, '0')}`, folders[i % folders.length]!, descriptorFrom(r, c));
  }
  void save;
  return index;
}
function descriptorFrom(r: () => number, c: number): Descriptor {
  const f = centres[c]!.map((x) => x + (r() - 0.5) * 0.35);
  const n = Math.hypot(...f);
  return { vector: Int8Array.from(f, (x) => Math.round((x / n) * SCALE)), phash: Uint8Array.from({ length: 8 }, () => Math.floor(r() * 256)) };
}

const two = build(2);
const one = build(1);
after(async () => {
  await two.close();
  await one.close();
});

const base: QueryOptions = { k: 51, after: null, cutoff: 0.6, folderAllowed: null };

test('queryAsync over worker slices answers exactly what the main-thread scan answers', async () => {
  for (let qi = 0; qi < 6; qi++) {
    const q = descriptor(qi);
    const variants: QueryOptions[] = [
      base,
      { ...base, folderAllowed: (f) => f === 'A' || f.startsWith('A/') },
      { ...base, k: 5, cutoff: 0.8 },
      { ...base, blend: { weight: 0.4, embeddingScore: (id) => (id.endsWith('7') ? 0.95 : null) } },
    ];
    for (const [vi, opts] of variants.entries()) {
      const here = two.query(q, opts);
      assert.ok(here.total > 0, `query ${qi} variant ${vi} has hits`);
      assert.deepEqual(await two.queryAsync(q, opts), here, `query ${qi} variant ${vi}: two workers`);
      assert.deepEqual(await one.queryAsync(q, opts), one.query(q, opts), `query ${qi} variant ${vi}: one worker`);
    }
    assert.deepEqual(two.scans, { inWorkers: 6 * qi + 4, fellBack: 0 }, 'scanned by the workers, none failed');
    // The next page continues strictly after the last hit, in both.
    const first = await two.queryAsync(q, base);
    const last = first.hits[first.hits.length - 1]!;
    assert.deepEqual(await two.queryAsync(q, { ...base, after: last }), two.query(q, { ...base, after: last }));
  }
});

test('concurrent queries share the workers and each gets its own answer', async () => {
  const qs = Array.from({ length: 8 }, (_, i) => descriptor(i));
  const answers = await Promise.all(qs.map((q) => two.queryAsync(q, base)));
  answers.forEach((a, i) => assert.deepEqual(a, two.query(qs[i]!, base), `query ${i}`));
  assert.equal(two.scans.fellBack, 0);
});

test('puts and removals while a scan runs: no removed asset, every score that of the vectors ranked', async () => {
  const index = build(2);
  try {
    const q = descriptor(3);
    const pending = index.queryAsync(q, { ...base, k: 500 });
    // While the workers scan: remove a hundred assets (their slots refilled from the end) and replace others.
    const removed = new Set<string>();
    for (let i = 0; i < 400; i += 4) {
      const id = `a${String(i).padStart(6, '0')}`;
      index.remove(id);
      removed.add(id);
    }
    for (let i = 1; i < 400; i += 4) index.put(`a${String(i).padStart(6, '0')}`, 'A', descriptor(3, 0.05));
    const got = await pending;
    assert.deepEqual(index.scans, { inWorkers: 1, fellBack: 0 });
    const now = index.query(q, { ...base, k: N });
    const scoreNow = new Map(now.hits.map((h) => [h.id, h.score]));
    for (const h of got.hits) {
      assert.ok(!removed.has(h.id), `${h.id} was removed`);
      assert.equal(h.score, scoreNow.get(h.id), `${h.id}: the score of its vector as ranked`);
    }
  } finally {
    await index.close();
  }
});

test('a pool closed under a running query: the query is answered on the main thread; later queries start new workers', async () => {
  const index = build(2);
  const q = descriptor(9);
  const pending = index.queryAsync(q, base);
  await index.close();
  assert.deepEqual(await pending, index.query(q, base));
  assert.deepEqual(index.scans, { inWorkers: 0, fellBack: 1 });
  assert.deepEqual(await index.queryAsync(q, base), index.query(q, base));
  assert.deepEqual(index.scans, { inWorkers: 1, fellBack: 1 }, 'new workers after the close');
  await index.close();
});

test('a small index scans on the calling thread (no worker round trip)', async () => {
  const small = new VectorIndex(16, 2);
  for (let i = 0; i < 100; i++) small.put(`s${i}`, '', descriptor(1));
  const q = descriptor(1);
  assert.deepEqual(await small.queryAsync(q, base), small.query(q, base));
  assert.deepEqual(small.scans, { inWorkers: 0, fellBack: 0 });
  await small.close();
});

test('the scan threads can be changed on a loaded index: 0 scans on the calling thread, another count starts a pool of that size', async () => {
  const index = build(2);
  try {
    const q = descriptor(1);
    const want = index.query(q, base);
    assert.deepEqual(await index.queryAsync(q, base), want);
    assert.equal(index.scans.inWorkers, 1);
    index.workers = 0;
    assert.deepEqual(await index.queryAsync(q, base), want);
    assert.equal(index.scans.inWorkers, 1, 'workers = 0: scanned on the calling thread');
    index.workers = 1;
    assert.deepEqual(await index.queryAsync(q, base), want);
    assert.equal(index.scans.inWorkers, 2, 'one worker: a new pool of one');
  } finally {
    await index.close();
  }
});
