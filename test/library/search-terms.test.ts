/**
 * The search engine's term dictionary (search/terms.ts) against a Map of strings to posting
 * arrays: the same postings per term, the same terms per prefix in JavaScript's string order,
 * through growth, trims, renumbering and a snapshot's round trip.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import type { Postings } from '../../src/providers/library/search/postings.js';
import { SMALL_MAX, TermDictionary, type TermExport, type TermState } from '../../src/providers/library/search/terms.js';
import { mulberry32 } from '../helpers/random.js';

// Letters whose UTF-16 order differs from code point order (U+FF21 sorts after the surrogate pair
// of U+1F600 in UTF-16), a lone surrogate, digits and plain ASCII, so that order is JavaScript's.
const ALPHABET = ['a', 'b', 'c', 'é', '0', '1', '\uff21', '\u{1f600}', '\ud800', 'z'];

type Entry = { docs: number[]; tf: number[] };

function randomTerm(r: () => number): string {
  let s = '';
  for (let i = 0, n = 1 + Math.floor(r() * 4); i < n; i++) s += ALPHABET[Math.floor(r() * ALPHABET.length)];
  return s;
}

const entries = (p: Postings): Entry => ({ docs: [...p.docs.subarray(0, p.n)], tf: [...p.tf.subarray(0, p.n)] });

/** The dictionary's terms, decoded from its columns, in its sorted order. */
function sortedTerms(st: TermExport | TermState): string[] {
  return [...st.termOrder].map((t) => String.fromCharCode(...st.termChars.subarray(t ? st.termEnds[t - 1]! : 0, st.termEnds[t]!)));
}

/** What the dictionary must answer for `prefix`: every term starting with it, as its postings. */
function expected(ref: Map<string, Entry>, prefix: string, sorted: boolean): Entry[] {
  const terms = [...ref.keys()].filter((t) => t.startsWith(prefix));
  if (sorted) terms.sort();
  return terms.map((t) => ref.get(t)!);
}

function assertLike(dict: TermDictionary, ref: Map<string, Entry>, r: () => number, where: string): void {
  for (let i = 0; i < 30; i++) {
    const prefix = i === 0 ? '' : randomTerm(r).slice(0, 1 + Math.floor(r() * 2));
    const got = dict.expand(prefix).map(entries);
    // Terms met since the last sort come after the sorted ones: compare as sets, and the order after a trim.
    const key = (e: Entry) => JSON.stringify(e);
    assert.deepEqual(got.map(key).sort(), expected(ref, prefix, true).map(key).sort(), `${where}: prefix ${JSON.stringify(prefix)}`);
  }
}

test('term dictionary: the postings and prefixes of a Map, in JavaScript string order, through growth, trims, renumbering and snapshots', () => {
  for (const seed of [1, 2, 3]) {
    const r = mulberry32(seed);
    let dict = new TermDictionary();
    const ref = new Map<string, Entry>();
    let doc = 0;
    const addDocs = (count: number) => {
      for (let i = 0; i < count; i++, doc++) {
        const terms = new Set(Array.from({ length: 1 + Math.floor(r() * 5) }, () => randomTerm(r)));
        // A unique term per document, as file numbers are: most terms have a single posting.
        terms.add(`#${doc}`);
        for (const t of terms) {
          const tf = 1 + Math.floor(r() * 20);
          const p = dict.add(t, doc, tf);
          const e = ref.get(t) ?? { docs: [], tf: [] };
          e.docs.push(doc);
          e.tf.push(tf);
          ref.set(t, e);
          // A list of its own past SMALL_MAX postings, none for fewer (the dictionary's columns and arena).
          assert.equal(p === null, e.docs.length <= SMALL_MAX);
          if (p) assert.deepEqual(entries(p), e);
        }
      }
    };
    addDocs(3000); // past the growth of every column, and of the slot table several times
    assert.equal(dict.size, ref.size);
    assertLike(dict, ref, r, `seed ${seed} built`);
    dict.trim();
    assert.deepEqual(sortedTerms(dict.exportState()), [...ref.keys()].sort(), 'sorted after a trim');
    const all = dict.expand('').map(entries);
    assert.deepEqual(all, expected(ref, '', true), 'every term in sorted order after a trim');
    addDocs(5000); // more than 4,096 new terms: a query sorts them in
    assertLike(dict, ref, r, `seed ${seed} grown after a trim`);

    // A snapshot's round trip: the lists' chunks as one array, as snapshot.ts reads them.
    const ex = dict.exportState();
    const concat = <T extends Int32Array | Uint16Array>(chunks: Iterable<T>, Ctor: new (n: number) => T): T => {
      const out = new Ctor([...chunks].reduce((n, c) => n + c.length, 0));
      let at = 0;
      for (const c of chunks) {
        out.set(c, at);
        at += c.length;
      }
      return out;
    };
    const st: TermState = { ...ex, termChars: ex.termChars.slice(), listDocs: concat(ex.listDocs, Int32Array), listTf: concat(ex.listTf, Uint16Array) };
    assert.ok(TermDictionary.validState(st));
    assert.ok(!TermDictionary.validState({ ...st, termEnds: st.termEnds.subarray(1) }), 'a damaged snapshot is refused');
    dict = TermDictionary.fromState(st);
    assert.deepEqual(dict.expand('').map(entries), expected(ref, '', true), 'loaded: every term in sorted order');
    addDocs(500); // a loaded dictionary grows its snapshot's arrays
    assertLike(dict, ref, r, `seed ${seed} loaded and grown`);

    // Renumbering: every third document dies, the others close up; terms left without postings go.
    const map = new Int32Array(doc).fill(-1);
    let m = 0;
    for (let d = 0; d < doc; d++) if (d % 3 !== 0) map[d] = m++;
    dict = dict.remap(map);
    for (const [t, e] of [...ref]) {
      const kept = e.docs.map((d, i) => [map[d]!, e.tf[i]!] as const).filter(([d]) => d >= 0);
      if (kept.length) ref.set(t, { docs: kept.map(([d]) => d), tf: kept.map(([, tf]) => tf) });
      else ref.delete(t);
    }
    doc = m;
    assert.equal(dict.size, ref.size);
    assert.deepEqual(dict.expand('').map(entries), expected(ref, '', true), 'renumbered: every term in sorted order');
    addDocs(300);
    assertLike(dict, ref, r, `seed ${seed} renumbered and grown`);
  }
});

test('term dictionary: listsFrom gives the terms with enough postings, and one-posting terms lists of their own when asked', () => {
  const dict = new TermDictionary();
  dict.add('a', 0, 1);
  dict.add('a', 1, 2);
  dict.add('b', 1, 3);
  assert.deepEqual(dict.listsFrom(2).map(entries), [{ docs: [0, 1], tf: [1, 2] }]);
  const lists = dict.listsFrom(1);
  assert.deepEqual(lists.map(entries), [{ docs: [0, 1], tf: [1, 2] }, { docs: [1], tf: [3] }]);
  // 'b' keeps that list from then on: a new posting goes into it.
  assert.equal(dict.add('b', 2, 4), lists[1]);
  assert.deepEqual(entries(lists[1]!), { docs: [1, 2], tf: [3, 4] });
});

test('term dictionary: small lists move through the arena as they grow, and the holes they leave are packed away', () => {
  // Terms growing together, round by round: each moves to a larger stretch at 3, 5 and 9
  // postings and out of the arena past SMALL_MAX, leaving holes; the odd ones stop at 5 and stay.
  const dict = new TermDictionary();
  const ref = new Map<string, Entry>();
  const K = 20_000;
  let doc = 0;
  for (let round = 0; round < SMALL_MAX + 3; round++) {
    for (let k = 0; k < K; k++, doc++) {
      if (k % 2 === 1 && round >= 5) continue;
      const t = `w${k}`;
      dict.add(t, doc, 1 + (doc % 7));
      const e = ref.get(t) ?? { docs: [], tf: [] };
      e.docs.push(doc);
      e.tf.push(1 + (doc % 7));
      ref.set(t, e);
    }
    assert.deepEqual(dict.expand('w1').map(entries).sort((a, b) => a.docs[0]! - b.docs[0]!), expected(ref, 'w1', true).sort((a, b) => a.docs[0]! - b.docs[0]!), `round ${round}`);
  }
  assert.deepEqual(dict.expand('').map(entries).sort((a, b) => a.docs[0]! - b.docs[0]!), [...ref.values()].sort((a, b) => a.docs[0]! - b.docs[0]!));
  // Packed while growing: the arena holds the odd terms' stretches (8 entries each) and what the
  // last packing left behind, not every stretch ever used (≈ 40 per term).
  const arena = dict.exportState().smallDocs.length;
  assert.ok(arena < (K / 2) * 8 * 2, `arena of ${arena} entries`);
  dict.trim();
  assert.equal(dict.exportState().smallDocs.length, (K / 2) * 8, 'a trim leaves no hole');
  assert.deepEqual(dict.expand('').map(entries).sort((a, b) => a.docs[0]! - b.docs[0]!), [...ref.values()].sort((a, b) => a.docs[0]! - b.docs[0]!));
});
