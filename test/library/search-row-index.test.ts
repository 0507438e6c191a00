/**
 * The search engine's row id → document lookup (search/row-index.ts) against a Map, through
 * growth and deletions in long probe runs (consecutive and colliding row ids).
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { RowIndex } from '../../src/providers/library/search/row-index.js';
import { mulberry32 } from '../helpers/random.js';

test('row index: the lookups of a Map through adds, deletions and growth', () => {
  for (const [seed, space] of [[1, 300], [2, 5000], [3, 1 << 30]] as const) {
    const r = mulberry32(seed);
    // As the document table: a row id column that only grows, a document per add, dead ones stay.
    let rowids = new Int32Array(16);
    let n = 0;
    const index = new RowIndex();
    const ref = new Map<number, number>();
    // Row ids 1024 apart share their slot's low bits in a small table: long probe runs to delete from.
    const rowidOf = () => (r() < 0.3 ? 1024 * Math.floor(r() * 40) : Math.floor(r() * space));
    for (let step = 0; step < 20_000; step++) {
      const rowid = rowidOf();
      const d = ref.get(rowid);
      assert.equal(index.get(rowid, rowids), d, `seed ${seed} step ${step}: lookup of ${rowid}`);
      if (d !== undefined) {
        index.delete(rowid, rowids);
        ref.delete(rowid);
      }
      if (d === undefined || r() < 0.5) {
        if (n === rowids.length) {
          const grown = new Int32Array(n * 2);
          grown.set(rowids);
          rowids = grown;
        }
        rowids[n] = rowid;
        index.add(n, rowids);
        ref.set(rowid, n++);
      }
      assert.equal(index.size, ref.size);
    }
    for (const [rowid, d] of ref) assert.equal(index.get(rowid, rowids), d);
    for (let i = 0; i < 1000; i++) {
      const rowid = rowidOf();
      assert.equal(index.get(rowid, rowids), ref.get(rowid));
    }
  }
});
