/**
 * The library's search engine against a naive reference implementation on random documents,
 * plus its index integration (change sequence, other processes, compaction).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import test from 'node:test';
import type { ActiveFilters, AssetRow, FacetKey } from '../../src/providers/library/index/contract.js';
import { LibraryIndex } from '../../src/providers/library/index/sqlite.js';
import { DateOrder } from '../../src/providers/library/search/aggregates.js';
import { SearchEngine } from '../../src/providers/library/search/engine.js';
import { readSnapshot, writeSnapshot } from '../../src/providers/library/search/snapshot.js';
import { withShardSize } from '../../src/providers/library/large-map.js';
import { tokenize } from '../../src/providers/library/search/tokenize.js';
import { FIELD_WEIGHTS, type EngineQuery, type SearchDoc, type SearchField } from '../../src/providers/library/search/types.js';
import { tempDir } from '../helpers/hub.js';
import { mulberry32 } from '../helpers/random.js';


const WORDS = ['sun', 'sunset', 'sunny', 'beach', 'boat', 'boats', 'harbour', 'café', 'mountain', 'snow', 'city', 'night', 'red', 'blue'];
const FOLDERS = ['', 'A', 'A/x', 'A/y', 'B', 'B/z'];

function randomDoc(r: () => number, rowid: number): SearchDoc {
  const pick = <T>(a: readonly T[]) => a[Math.floor(r() * a.length)]!;
  const words = (n: number) => Array.from({ length: Math.floor(r() * n) }, () => pick(WORDS)).join(' ');
  return {
    rowid,
    folderPath: pick(FOLDERS),
    kind: pick(['image', 'image', 'document']),
    ext: pick(['jpg', 'png', 'pdf']),
    year: r() < 0.1 ? null : 2020 + Math.floor(r() * 4),
    orientation: pick(['landscape', 'portrait', 'square', null]),
    mtimeMs: Math.floor(r() * 1000) * 1000,
    fields: { name: `${words(3)}.jpg`, path: words(2), title: words(2), caption: words(4), keywords: words(3), other: words(2) },
    keywords: [...new Set(Array.from({ length: Math.floor(r() * 4) }, () => pick(['sea', 'sky', 'boats', 'people', 'Night'])))],
  };
}

const tokensOf = new WeakMap<SearchDoc, { t: string; w: number }[]>();

/** The reference: the same rules written the slow, obvious way. */
function reference(docs: Map<number, SearchDoc>, q: EngineQuery) {
  const within = (p: string, root: string) => root === '' || p === root || p.startsWith(`${root}/`);
  const value = (d: SearchDoc, f: FacetKey): string[] => {
    if (f === 'keyword') return [...new Set(d.keywords.map((k) => k.toLowerCase()))];
    const v = f === 'type' ? d.kind : f === 'ext' ? d.ext : f === 'year' ? (d.year === null ? null : String(d.year)) : d.orientation;
    return v ? [v] : [];
  };
  const passes = (d: SearchDoc, skip: FacetKey | null) => (Object.entries(q.filters) as [FacetKey, string[]][])
    .every(([f, vals]) => f === skip || !vals.length || value(d, f).some((v) => vals.includes(v)));
  const inScope = [...docs.values()].filter((d) => within(d.folderPath, q.folderPath) && (!q.allowedRoots || q.allowedRoots.some((root) => within(d.folderPath, root))));
  const matches = inScope.filter((d) => {
    const tokens = Object.values(d.fields).flatMap(tokenize);
    return q.words.every((w) => tokens.some((t) => t.startsWith(w)));
  });
  const hits = matches.filter((d) => passes(d, null));
  const facets = {} as Record<FacetKey, Map<string, number>>;
  for (const f of ['type', 'ext', 'keyword', 'year', 'orientation'] as FacetKey[]) {
    const m = new Map<string, number>();
    for (const d of matches) if (passes(d, f)) for (const v of value(d, f)) m.set(v, (m.get(v) ?? 0) + 1);
    facets[f] = m;
  }
  // Without words the order is defined without scores: newest first, then row id.
  const newestFirst = [...hits].sort((a, b) => b.mtimeMs - a.mtimeMs || a.rowid - b.rowid).map((d) => d.rowid);
  // With words, BM25F (k1 1.2, b 0.75) over the live documents, every word a prefix; for a limited
  // account, over the live documents of its folders only (nothing outside them moves its ranking).
  const visible = (d: SearchDoc) => !q.allowedRoots || q.allowedRoots.some((root) => within(d.folderPath, root));
  const live = [...docs.values()].filter(visible);
  const weighted = (d: SearchDoc) => tokensOf.get(d) ?? tokensOf.set(d, (Object.keys(FIELD_WEIGHTS) as SearchField[]).flatMap((f) => tokenize(d.fields[f]).map((t) => ({ t, w: FIELD_WEIGHTS[f] })))).get(d)!;
  const dl = (d: SearchDoc) => weighted(d).reduce((a, x) => a + x.w, 0);
  const avgdl = live.reduce((a, d) => a + dl(d), 0) / live.length;
  const dfs = new Map(q.words.map((word) => [word, live.filter((x) => weighted(x).some(({ t }) => t.startsWith(word))).length]));
  const score = new Map(hits.map((d) => [d.rowid, q.words.reduce((acc, word) => {
    const df = dfs.get(word)!;
    const tf = weighted(d).filter(({ t }) => t.startsWith(word)).reduce((a, x) => a + x.w, 0);
    const idf = Math.log(1 + (live.length - df + 0.5) / (df + 0.5));
    return acc + (idf * tf * 2.2) / (tf + 1.2 * (0.25 + (0.75 * dl(d)) / avgdl));
  }, 0)]));
  return { ids: new Set(newestFirst), newestFirst, score, facets };
}

/** An engine's answer to every page of q checked against the reference (ids, order without words, totals, facets). */
function assertLikeReference(engine: SearchEngine, docs: Map<number, SearchDoc>, q: EngineQuery, where: string): void {
  const ref = reference(docs, q);
  const { first, ids, totals } = traverse(engine, q);
  assert.equal(first.total, ref.ids.size, where);
  assert.ok(totals.every((t) => t === ref.ids.size), `${where}: the total is the same on every page`);
  assert.equal(ids.length, new Set(ids).size, `${where}: no asset twice across pages`);
  assert.deepEqual(new Set(ids), ref.ids, where);
  if (!q.words.length) assert.deepEqual(ids, ref.newestFirst, `${where}: newest first`);
  for (let i = 1; i < ids.length && q.words.length; i++) {
    const [a, b] = [ref.score.get(ids[i - 1]!)!, ref.score.get(ids[i]!)!];
    const tie = Math.abs(a - b) <= 1e-9 * Math.max(1, a);
    assert.ok(a > b || (tie && ids[i - 1]! < ids[i]!), `${where}: ranked by BM25, then row id (${ids[i - 1]} ${a} before ${ids[i]} ${b})`);
  }
  for (const [f, m] of Object.entries(ref.facets) as [FacetKey, Map<string, number>][]) {
    const expected = [...m.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 30).map(([value, count]) => ({ value, count }));
    assert.deepEqual(first.facets[f], expected, `${where}: facet ${f}`);
  }
}

function randomQuery(r: () => number): EngineQuery {
  const pick = <T>(a: readonly T[]) => a[Math.floor(r() * a.length)]!;
  const words = Array.from({ length: Math.floor(r() * 4) }, () => {
    const w = tokenize(pick(WORDS))[0]!;
    return r() < 0.3 ? w.slice(0, 2) : w;
  });
  const filters: ActiveFilters = {};
  if (r() < 0.3) filters.type = [pick(['image', 'document'])];
  if (r() < 0.3) filters.ext = [pick(['jpg', 'png', 'pdf']), pick(['jpg', 'png'])];
  if (r() < 0.3) filters.keyword = [pick(['sea', 'sky', 'boats', 'night'])];
  if (r() < 0.2) filters.year = [pick(['2020', '2021', '2022'])];
  if (r() < 0.2) filters.orientation = [pick(['landscape', 'portrait'])];
  return {
    words,
    folderPath: pick(['', '', 'A', 'B']),
    allowedRoots: r() < 0.2 ? [pick(['A/x', 'B', 'A'])] : null,
    filters,
    limit: 1 + Math.floor(r() * 7),
    after: null,
    params: null,
  };
}

function pick<T>(r: () => number, a: readonly T[]): T {
  return a[Math.floor(r() * a.length)]!;
}

/** Every page of a query, following keyset positions like the provider's cursor does. */
function traverse(engine: SearchEngine, q: EngineQuery) {
  const ids: number[] = [];
  let first = engine.search(q);
  const totals = [first.total];
  let page = first;
  for (let guard = 0; guard < 1000; guard++) {
    ids.push(...page.rowids);
    if (page.rowids.length < q.limit) break;
    const last = page.rowids.length - 1;
    page = engine.search({ ...q, after: { key: page.keys[last]!, rowid: page.rowids[last]! }, params: first.params });
    totals.push(page.total);
  }
  return { first, ids, totals };
}

test('random documents and queries: hits, totals, paging and facet counts equal the reference', () => {
  for (const seed of [1, 2, 3, 4, 5]) {
    const r = mulberry32(seed);
    // The second engine treats every term as frequent (counts, bitmap, block bounds: FrequentList),
    // as a large library does its most frequent ones; the third also merges the lists of every
    // prefix matching several terms (MergedPrefixes), as it does for prefixes matching many; the
    // fourth merges them without making them frequent (too few documents).
    // The fifth keeps its facet values (keywords, folders) in LargeMap shards of 16 entries,
    // as a library past 2^23 assets or terms does (large-map.ts): the same answers across shards.
    const engines = [new SearchEngine(), new SearchEngine({ termCountsMinDocs: 1 }), new SearchEngine({ termCountsMinDocs: 1, mergeMinPostings: 2 }), new SearchEngine({ mergeMinPostings: 2 }),
      withShardSize(16, () => new SearchEngine())];
    const docs = new Map<number, SearchDoc>();
    const put = (d: SearchDoc) => {
      docs.set(d.rowid, d);
      for (const e of engines) e.upsert(d);
    };
    // Changes: some removed, some replaced (after queries too, so that merged lists are kept current).
    const change = (count: number) => {
      for (let i = 0; i < count; i++) {
        const id = 1 + Math.floor(r() * 300);
        if (r() < 0.5) {
          docs.delete(id);
          for (const e of engines) e.remove(id);
        } else put(randomDoc(r, id));
      }
    };
    for (let i = 1; i <= 300; i++) put(randomDoc(r, i));
    for (const e of engines) e.trim(); // as after a build from the index: counts are taken, later documents still grow every array
    change(40);
    for (let qi = 0; qi < 60; qi++) {
      const q = randomQuery(r);
      engines.forEach((e, i) => assertLikeReference(e, docs, q, `seed ${seed} engine ${i} query ${qi} ${JSON.stringify(q)}`));
      for (let i = 1; i < engines.length; i++) assert.deepEqual(engines[i]!.search(q), engines[0]!.search(q), `seed ${seed} query ${qi}: the same page, keys and facets in engine ${i}`);
      if (qi % 20 === 19) change(15);
    }
    // Compaction renumbers documents without changing any answer.
    for (const engine of engines) {
      const q = { words: ['b'], folderPath: '', allowedRoots: null, filters: {}, limit: 500, after: null, params: null };
      const before = engine.search(q);
      engine.compact();
      assert.equal(engine.deadDocuments, 0);
      const after = engine.search(q);
      assert.deepEqual(after.rowids, before.rowids);
      assert.deepEqual(after.facets, before.facets);
    }
    for (let qi = 0; qi < 20; qi++) {
      const q = randomQuery(r);
      engines.forEach((e, i) => assertLikeReference(e, docs, q, `seed ${seed} engine ${i} after compaction, query ${qi} ${JSON.stringify(q)}`));
    }
  }
});

test('a limited account learns nothing of other folders: two libraries that differ only outside its folders give it the same pages, keys, totals, facets and ranking parameters', () => {
  const inside = (d: SearchDoc) => d.folderPath === 'A' || d.folderPath.startsWith('A/');
  for (const seed of [7, 8, 9]) {
    const r = mulberry32(seed);
    const mine = Array.from({ length: 400 }, (_, i) => randomDoc(r, i + 1)).filter(inside);
    // The other library: the same documents in A (same row ids), and others outside A, different
    // in number, words and row ids (some interleaved with A's), some of them later removed.
    const others = (n: number, from: number) => Array.from({ length: n }, (_, i) => randomDoc(r, from + i)).filter((d) => !inside(d));
    const libraries = [
      { docs: others(300, 1000), removed: [] as number[] },
      { docs: [...others(900, 5000), ...others(60, 401).map((d) => ({ ...d, fields: { ...d.fields, caption: `${d.fields.caption} harbour harbour boat sun` } }))], removed: [5001, 5002, 5003] },
    ];
    const build = (opts: ConstructorParameters<typeof SearchEngine>[0], lib: { docs: SearchDoc[]; removed: number[] }) => {
      const e = new SearchEngine(opts);
      // Interleaved: outside documents before, among and after the account's.
      const all = [...lib.docs.slice(0, 20), ...mine, ...lib.docs.slice(20)];
      for (const d of all) e.upsert(d);
      e.trim();
      for (const id of lib.removed) e.remove(id);
      return e;
    };
    for (const opts of [{}, { termCountsMinDocs: 1 }, { termCountsMinDocs: 1, mergeMinPostings: 2 }]) {
      const [a, b] = libraries.map((lib) => build(opts, lib));
      for (let qi = 0; qi < 40; qi++) {
        const q: EngineQuery = { ...randomQuery(r), allowedRoots: [pick(r, ['A', 'A/x', 'A/y'])] };
        if (qi % 3 === 0) q.folderPath = '';
        const pa = traverse(a!, q);
        const pb = traverse(b!, q);
        const where = `seed ${seed} ${JSON.stringify(opts)} query ${qi} ${JSON.stringify(q)}`;
        assert.deepEqual(pb.first, pa.first, `${where}: first page`);
        assert.deepEqual(pb.ids, pa.ids, `${where}: every page`);
        assert.deepEqual(pb.totals, pa.totals, where);
      }
    }
  }
});

test('merged prefix lists stay current through changes: many-word queries rank to the same bits as without them', () => {
  // Words are taken rarest first and their scores summed in that order, so a merged list must
  // know how many postings its terms hold, as the terms themselves would tell (MergedPrefixes).
  const r = mulberry32(21);
  const engines = [new SearchEngine(), new SearchEngine({ mergeMinPostings: 2 })];
  const put = (d: SearchDoc) => {
    for (const e of engines) e.upsert(d);
  };
  for (let i = 1; i <= 400; i++) put(randomDoc(r, i));
  const prefixes = ['s', 'b', 'c', 'sun', 'bo', 'h', 'n', 'r', 'm'];
  const query = (): EngineQuery => ({
    words: Array.from({ length: 3 + Math.floor(r() * 4) }, () => prefixes[Math.floor(r() * prefixes.length)]!),
    folderPath: '', allowedRoots: null, filters: {}, limit: 400, after: null, params: null,
  });
  for (let round = 0; round < 6; round++) {
    for (let qi = 0; qi < 40; qi++) {
      const q = query();
      assert.deepEqual(engines[1]!.search(q), engines[0]!.search(q), `round ${round} query ${JSON.stringify(q.words)}`);
    }
    for (let i = 0; i < 60; i++) put(randomDoc(r, 1 + Math.floor(r() * 500)));
  }
});

test('a frequent word ranks by block bounds: ties across blocks go to the lowest row ids, on every page and under filters', () => {
  // Identical documents (every key ties), numbered in the opposite order of their row ids, so the
  // page's row ids sit in the list's last blocks; changes after the bounds were taken move them.
  const engines = [new SearchEngine(), new SearchEngine({ termCountsMinDocs: 1 })];
  const docs = new Map<number, SearchDoc>();
  const put = (d: SearchDoc) => {
    docs.set(d.rowid, d);
    for (const e of engines) e.upsert(d);
  };
  const doc = (rowid: number, caption: string): SearchDoc => ({
    rowid, folderPath: 'A', kind: 'image', ext: rowid % 3 ? 'jpg' : 'png', year: 2020 + (rowid % 2), orientation: 'landscape', mtimeMs: 0,
    fields: { name: 'x.jpg', path: 'a', title: '', caption, keywords: '', other: '' }, keywords: rowid % 5 ? ['sea'] : ['sky'],
  });
  for (let rowid = 1000; rowid >= 1; rowid--) put(doc(rowid, 'harbour'));
  for (const e of engines) e.trim();
  for (const rowid of [7, 400, 999]) put(doc(rowid, 'harbour harbour')); // a better key, in the last block
  for (const rowid of [3, 8]) {
    docs.delete(rowid);
    for (const e of engines) e.remove(rowid);
  }
  const base = { words: ['harbour'], folderPath: '', allowedRoots: null, limit: 7, after: null, params: null };
  for (const filters of [{}, { ext: ['png'] }, { keyword: ['sky'] }, { ext: ['jpg'], year: ['2021'], keyword: ['sea'] }] as ActiveFilters[]) {
    const q = { ...base, filters };
    engines.forEach((e, i) => assertLikeReference(e, docs, q, `engine ${i} ${JSON.stringify(filters)}`));
    assert.deepEqual(engines[1]!.search(q), engines[0]!.search(q), JSON.stringify(filters));
  }
  assert.deepEqual(engines[1]!.search({ ...base, filters: {} }).rowids, [7, 400, 999, 1, 2, 4, 5]);
});

test('searches without words: whole-library counts and the date order stay exact as documents change, are rebuilt, or are given up', () => {
  const r = mulberry32(11);
  const engines = [new SearchEngine(), new SearchEngine({ comboCountsBudget: 50 })]; // the second gives its counts up at once
  const docs = new Map<number, SearchDoc>();
  const put = (d: SearchDoc) => {
    docs.set(d.rowid, d);
    for (const e of engines) e.upsert(d);
  };
  for (let i = 1; i <= 400; i++) put(randomDoc(r, i));
  const queries = (label: string) => {
    for (let qi = 0; qi < 40; qi++) {
      const q = { ...randomQuery(r), words: [], folderPath: '', allowedRoots: null };
      if (qi % 2) delete q.filters.keyword; // the counted path (a keyword filter takes the engine's pass)
      engines.forEach((e, i) => assertLikeReference(e, docs, q, `${label}, engine ${i}, query ${qi} ${JSON.stringify(q)}`));
    }
  };
  queries('built');
  // Changes after the date order was built: removals, replacements (a new document number), new rows.
  for (let i = 0; i < 120; i++) {
    const id = 1 + Math.floor(r() * 450);
    if (r() < 0.3) {
      docs.delete(id);
      for (const e of engines) e.remove(id);
    } else put(randomDoc(r, id));
  }
  queries('changed');
  // Enough late documents that the order is rebuilt (more than 4,096 since it was built).
  for (let i = 0; i < 4200; i++) put(randomDoc(r, 1 + Math.floor(r() * 450)));
  queries('rebuilt');
  for (const e of engines) e.compact();
  queries('compacted');
});

test('the date order sorts exactly: negative, fractional and equal times, ties by row id', () => {
  const r = mulberry32(5);
  const n = 3000;
  const alive = new Uint8Array(n).map(() => (r() < 0.9 ? 1 : 0));
  const times = [0, -1, -1.5, 1e12, 1e12 + 0.25, 1.7e12, -8.64e15, 8.64e15, 1.7e12 + 1];
  const mtime = Float64Array.from({ length: n }, () => (r() < 0.5 ? times[Math.floor(r() * times.length)]! : (r() - 0.3) * 2e12));
  const rowid = Int32Array.from({ length: n }, (_, i) => 1 + ((i * 7919) % n));
  const combo = Int32Array.from({ length: n }, () => Math.floor(r() * 5));
  const order = DateOrder.build(n, alive, mtime, rowid, (d) => combo[d]!, 5);
  for (let c = 0; c < 5; c++) {
    const expected = [...Array(n).keys()].filter((d) => alive[d] && combo[d] === c).sort((a, b) => mtime[b]! - mtime[a]! || rowid[a]! - rowid[b]!);
    assert.deepEqual([...order.docs.subarray(order.starts[c], order.starts[c + 1])], expected, `combination ${c}`);
  }
});

test('ranking: a word in the name outranks the same word in the path; ties break by row id; no words = newest first', () => {
  const engine = new SearchEngine();
  const base = { kind: 'image', ext: 'jpg', year: 2024, orientation: 'landscape', keywords: [] };
  const empty = { name: '', path: '', title: '', caption: '', keywords: '', other: '' };
  engine.upsert({ ...base, rowid: 1, folderPath: 'Harbour', mtimeMs: 3000, fields: { ...empty, name: 'x.jpg', path: 'Harbour' } });
  engine.upsert({ ...base, rowid: 2, folderPath: 'B', mtimeMs: 1000, fields: { ...empty, name: 'harbour.jpg', path: 'B' } });
  engine.upsert({ ...base, rowid: 3, folderPath: 'B', mtimeMs: 2000, fields: { ...empty, name: 'harbour.jpg', path: 'B' } });
  const q: EngineQuery = { words: ['harb'], folderPath: '', allowedRoots: null, filters: {}, limit: 10, after: null, params: null };
  assert.deepEqual(engine.search(q).rowids, [2, 3, 1]);
  assert.deepEqual(engine.search({ ...q, words: [] }).rowids, [1, 3, 2]);
  assert.deepEqual(engine.search({ ...q, words: ['zzz'] }).rowids, []);
  assert.deepEqual(tokenize('Ünïcödé_Café-Straße 日本 写真.JPG'), ['unicode', 'cafe', 'straße', '日本', '写真', 'jpg']);
});

test('later pages keep the first page ranking while the index changes between them', () => {
  const engine = new SearchEngine();
  const empty = { name: '', path: '', title: '', caption: '', keywords: '', other: '' };
  const doc = (rowid: number, name: string): SearchDoc => ({ rowid, folderPath: '', kind: 'image', ext: 'jpg', year: null, orientation: null, mtimeMs: rowid, keywords: [], fields: { ...empty, name } });
  for (let i = 1; i <= 20; i++) engine.upsert(doc(i, `sea ${'word '.repeat(i % 5)}`));
  const q: EngineQuery = { words: ['sea'], folderPath: '', allowedRoots: null, filters: {}, limit: 5, after: null, params: null };
  const p1 = engine.search(q);
  // Many new documents change the word's idf and the average length.
  for (let i = 100; i < 200; i++) engine.upsert(doc(i, i % 2 ? 'sea' : 'other words entirely here'));
  const last = p1.rowids.length - 1;
  const p2 = engine.search({ ...q, after: { key: p1.keys[last]!, rowid: p1.rowids[last]! }, params: p1.params });
  for (const id of p2.rowids) assert.ok(!p1.rowids.includes(id), 'nothing from page 1 repeats');
  const fresh = engine.search({ ...q, limit: 1000 });
  assert.equal(p2.total, fresh.total, 'the total is current');
});

test('the index feeds the engine through its change sequence, also from another process', async () => {
  const dir = tempDir('damhub-engine-');
  const file = path.join(dir, 'library.sqlite');
  const writer = new LibraryIndex(file);
  const reader = new LibraryIndex(file); // another process's connection to the same file
  const row = (i: number, name: string, keywords: string[] = []): AssetRow => ({
    id: `asset${String(i).padStart(17, '0')}`, relPath: `F/${name}`, folderPath: 'F', name, ext: 'jpg', size: 1, mtimeMs: i, createdMs: i,
    mimeType: 'image/jpeg', kind: 'image', width: 2, height: 1, version: 1, versionComment: null,
    meta: { keywords, categories: [], iptc: {}, xmp: {} } as unknown as AssetRow['meta'], hashes: null, blob: null, indexedAt: i,
  });
  const search = (idx: LibraryIndex, words: string[]) => idx.searchEngine().search({ words, folderPath: '', allowedRoots: null, filters: {}, limit: 10, after: null, params: null });
  writer.upsertAsset(row(1, 'lighthouse.jpg', ['Coast']), null);
  assert.equal(search(reader, ['lighth']).total, 1);
  assert.deepEqual(search(reader, []).facets.keyword, [{ value: 'coast', count: 1 }]);
  writer.upsertAsset(row(2, 'lighthouse at night.jpg'), null);
  writer.upsertAsset(row(1, 'renamed.jpg'), null);
  assert.equal(search(reader, ['lighth']).total, 1, 'a change replaces the old text');
  assert.equal(search(reader, ['renamed']).total, 1);
  writer.removeAsset('F/lighthouse at night.jpg');
  assert.equal(search(reader, ['lighth']).total, 0, 'a removal reaches the other connection');
  assert.equal(search(writer, []).total, 1);
  writer.close();
  reader.close();
});

test('one call to the index answers a search: account, scope, the engine\'s answer and the page\'s rows', async () => {
  const index = new LibraryIndex(path.join(tempDir('damhub-engine-'), 'library.sqlite'));
  const row = (i: number, folder: string, name: string): AssetRow => ({
    id: `asset${String(i).padStart(17, '0')}`, relPath: `${folder}/${name}`, folderPath: folder, name, ext: 'jpg', size: 1, mtimeMs: i, createdMs: i,
    mimeType: 'image/jpeg', kind: 'image', width: 2, height: 1, version: 1, versionComment: null,
    meta: { keywords: [], categories: [], iptc: {}, xmp: {} } as unknown as AssetRow['meta'], hashes: null, blob: null, indexedAt: i,
  });
  for (let i = 1; i <= 5; i++) index.upsertAsset(row(i, i % 2 ? 'A' : 'B', `harbour ${i}.jpg`), null);
  index.addAccount({ id: 'acc1', name: 'ann', passwordHash: 'x', folders: ['A'], writeFolders: [], createdAt: 0 });
  const query: EngineQuery = { words: ['harb'], folderPath: 'A', allowedRoots: ['A'], filters: {}, limit: 3, after: null, params: null };
  const seen: [string | null, boolean][] = [];
  const answer = await index.search({
    accountId: 'acc1', scope: 'A', pageSize: 2,
    query: (account, scopeExists) => {
      seen.push([account?.name ?? null, scopeExists]);
      return query;
    },
  });
  assert.deepEqual(seen, [['ann', true]]);
  const expected = index.searchEngine().search(query);
  assert.deepEqual(answer.result, expected);
  assert.deepEqual(answer.rows, index.assetsByRowids(expected.rowids.slice(0, 2)));
  assert.deepEqual(answer.rows.map((r) => r.relPath), ['A/harbour 1.jpg', 'A/harbour 3.jpg']);
  // By id, as search by image reads its page of hits: in the order asked, unknown ids skipped.
  const ids = (n: number) => `asset${String(n).padStart(17, '0')}`;
  assert.deepEqual(index.assetsByIds([ids(4), 'nope', ids(1), ids(5)]).map((r) => r.relPath), ['B/harbour 4.jpg', 'A/harbour 1.jpg', 'A/harbour 5.jpg']);
  assert.deepEqual(index.assetsByIds([]), []);
  assert.deepEqual(index.assetsByIds([ids(2)]), [index.asset(ids(2))]);
  // What the query function is told, and a refusal: it throws, and nothing more happens.
  const told = (accountId: string, scope: string | null) => {
    let got: [string | null, boolean] = ['?', false];
    assert.throws(() => index.search({ accountId, scope, pageSize: 1, query: (account, scopeExists) => {
      got = [account?.name ?? null, scopeExists];
      throw new Error('refused');
    } }), /refused/);
    return got;
  };
  assert.deepEqual(told('nobody', null), [null, true]);
  assert.deepEqual(told('acc1', 'C'), ['ann', false]);
  index.close();
});

test('a search snapshot restores the engine exactly, catches up, and is ignored when it does not fit', async () => {
  const dir = tempDir('damhub-snapshot-');
  const file = path.join(dir, 'library.sqlite');
  const row = (i: number, name: string, keywords: string[] = []): AssetRow => ({
    id: `asset${String(i).padStart(17, '0')}`, relPath: `F${i % 3}/${name}`, folderPath: `F${i % 3}`, name, ext: i % 2 ? 'jpg' : 'png', size: 1, mtimeMs: i, createdMs: i,
    mimeType: 'image/jpeg', kind: 'image', width: 1 + (i % 3), height: 2, version: 1, versionComment: null,
    meta: { keywords, categories: [], iptc: {}, xmp: {}, caption: `caption ${i % 7} über` } as unknown as AssetRow['meta'], hashes: null, blob: null, indexedAt: i,
  });
  const queries: EngineQuery[] = [
    { words: ['capt'], folderPath: '', allowedRoots: null, filters: {}, limit: 7, after: null, params: null },
    { words: ['uber', 'file'], folderPath: 'F1', allowedRoots: null, filters: { ext: ['jpg'] }, limit: 50, after: null, params: null },
    { words: [], folderPath: '', allowedRoots: ['F2'], filters: { keyword: ['k3'] }, limit: 5, after: null, params: null },
  ];
  const answers = (idx: LibraryIndex) => queries.map((q) => idx.searchEngine().search(q));

  const a = new LibraryIndex(file, { snapshotMinAssets: 1 });
  for (let i = 1; i <= 60; i++) a.upsertAsset(row(i, `file ${i}.jpg`, [`k${i % 5}`, 'Shared']), null);
  a.removeAsset('F1/file 4.jpg');
  const expected = answers(a);
  a.close(); // writes the snapshot
  assert.ok(fs.existsSync(`${file}.search`));

  // While no hub runs, the index changes; the next start loads the snapshot and catches up.
  const writer = new LibraryIndex(file, { snapshotMinAssets: 10_000_000 });
  writer.upsertAsset(row(61, 'file 61.jpg', ['k1']), null);
  writer.removeAsset('F2/file 5.jpg');
  writer.close();
  const fresh = new LibraryIndex(file, { snapshotMinAssets: 10_000_000 });
  fs.renameSync(`${file}.search`, `${file}.search.keep`); // a build from the index, for reference
  const rebuilt = answers(fresh);
  fresh.close();
  fs.renameSync(`${file}.search.keep`, `${file}.search`);
  const b = new LibraryIndex(file, { snapshotMinAssets: 1 });
  assert.deepEqual(answers(b), rebuilt, 'snapshot + catch-up answers like a build from the index');
  assert.notDeepEqual(rebuilt, expected, 'the changes made while closed are visible');
  b.close();

  // A damaged snapshot, or one of another index, is ignored.
  fs.writeFileSync(`${file}.search`, Buffer.concat([fs.readFileSync(`${file}.search`).subarray(0, 200)]));
  const c = new LibraryIndex(file, { snapshotMinAssets: 10_000_000 });
  assert.deepEqual(answers(c), rebuilt);
  c.close();
  const otherFile = path.join(dir, 'other.sqlite');
  const other = new LibraryIndex(otherFile, { snapshotMinAssets: 1 });
  other.upsertAsset(row(1, 'unrelated.jpg'), null);
  other.searchEngine();
  other.close();
  fs.copyFileSync(`${otherFile}.search`, `${file}.search`);
  const d = new LibraryIndex(file, { snapshotMinAssets: 10_000_000 });
  assert.deepEqual(answers(d), rebuilt, 'a snapshot of another index file is not applied');
  d.close();
});

test('a snapshot read back is the engine written: the same answers, and the same after the same changes and a compaction', () => {
  const r = mulberry32(31);
  const file = path.join(tempDir('damhub-snapshot-file-'), 'library.sqlite.search');
  // Beside the shared words: a number per document (terms of one posting) and one of 37 rare
  // words (terms of a few postings: the term dictionary's arena), some of them non-ASCII.
  const doc = (rowid: number): SearchDoc => {
    const d = randomDoc(r, rowid);
    return { ...d, fields: { ...d.fields, name: `${d.fields.name} ${rowid} r${rowid % 37}`, other: rowid % 5 ? d.fields.other : `ß${rowid % 11} 東京${rowid % 3}` } };
  };
  const written = new SearchEngine();
  for (let i = 1; i <= 400; i++) written.upsert(doc(i));
  for (const id of [3, 50, 51, 52, 399]) written.remove(id);
  written.trim();
  writeSnapshot(file, written.exportState(), 7, 9);
  assert.equal(readSnapshot(file, 8, 9), null, 'another index');
  assert.equal(readSnapshot(file, 7, 8), null, 'a sequence from the future');
  const snap = readSnapshot(file, 7, 9);
  assert.ok(snap, 'the snapshot is read');
  assert.equal(snap.seq, 9);
  const read = SearchEngine.fromState(snap.state);
  assert.equal(read.size, written.size);
  const words = ['1', '12', '399', '40', 'r', 'r1', 'r36', 'ss', 'ß1', '東京', '東京2', 's', 'sun', 'b'];
  const compare = (label: string) => {
    for (let qi = 0; qi < 60; qi++) {
      const q = qi < words.length ? { ...randomQuery(r), words: [words[qi]!], allowedRoots: null } : randomQuery(r);
      assert.deepEqual(read.search(q), written.search(q), `${label}, query ${qi} ${JSON.stringify(q)}`);
    }
  };
  compare('read back');
  for (let i = 0; i < 200; i++) {
    const id = 1 + Math.floor(r() * 450);
    const d = doc(id);
    for (const e of [written, read]) {
      if (i % 4 === 0) e.remove(id);
      else e.upsert(d);
    }
  }
  compare('changed');
  written.compact();
  read.compact();
  compare('compacted');
});
