/**
 * Keyword search in cluster mode (issue 6): the per-node engine caught up from the PostgreSQL
 * index (what `GET /assets/search` does: the change-sequence check, then the engine's page of 51,
 * exact total and five facets), side by side with the same answer asked of PostgreSQL itself
 * through a `tsvector` column with a GIN index (ts_rank order, LIMIT 51, count(*) and five facet
 * GROUP BYs in one statement). In-process timing, medians; the database is created and dropped.
 *
 *   node dist/bench/library-pg-search.js [--assets 200000] [--runs 15]
 *
 * The tsvector column and its index exist only in this benchmark's database: the hub does not
 * keep them (docs/library.md, "Cluster mode"). Smoke check: --assets 2000 --runs 3.
 *
 * Ends with RESULT lines (bench/lib.ts) per query: the engine's p50, PostgreSQL's p50 and their
 * ratio, without targets (docs/benchmarks.md records none for this benchmark). The database is
 * dropped however the run ends.
 */
import { median, onInterrupt, reportResults, result, timeAsync } from './lib.js';
import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { PgLibraryIndex } from '../src/providers/library/index/postgres.js';
import { searchText } from '../src/providers/library/index/rows.js';
import { migrateLibraryPg } from '../src/providers/library/index/postgres-schema.js';
import { createPgPool, migratePg } from '../src/stores/postgres/index.js';
import { mulberry32 } from '../test/helpers/random.js';

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ''), process.argv[i + 1]!);
const N = Number(args.get('assets') ?? 200_000);
const RUNS = Number(args.get('runs') ?? 15);
const ADMIN = process.env.DAMHUB_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const SYL = ['ka', 'ro', 'mi', 'su', 'te', 'na', 'lo', 'pi', 'da', 've', 'gu', 'shi', 'bre', 'tor', 'quin', 'ax', 'el', 'ym', 'or', 'ule'];
const r = mulberry32(11);
const VOCAB = (() => {
  const out = new Set<string>();
  while (out.size < 20_000) out.add(Array.from({ length: 2 + Math.floor(r() * 3) }, () => SYL[Math.floor(r() * SYL.length)]).join(''));
  return [...out].filter((w) => w !== 'photo');
})();
// Zipf-like: word i drawn with probability ∝ 1/(i+1).
const CDF = (() => {
  const c = new Float64Array(VOCAB.length);
  let acc = 0;
  for (let i = 0; i < c.length; i++) c[i] = acc += 1 / (i + 1);
  for (let i = 0; i < c.length; i++) c[i]! /= acc;
  return c;
})();
const word = () => {
  const u = r();
  let lo = 0;
  let hi = CDF.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (CDF[mid]! < u) lo = mid + 1;
    else hi = mid;
  }
  return VOCAB[lo]!;
};
const EXTS: [string, string, string][] = [['jpg', 'image/jpeg', 'image'], ['png', 'image/png', 'image'], ['pdf', 'application/pdf', 'document'], ['mp4', 'video/mp4', 'video']];

const dbName = `cindex_bench_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
const admin = new pg.Client({ connectionString: ADMIN });
await admin.connect();
await admin.query(`CREATE DATABASE ${dbName}`);
const u = new URL(ADMIN);
u.pathname = `/${dbName}`;
const pool = createPgPool(u.toString(), { statementTimeoutMs: 600_000 });
onInterrupt(async () => {
  await pool.end().catch(() => undefined);
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
});
try {
  await migratePg(pool);
  await migrateLibraryPg(pool);
  // ── the library: N assets in 200 folders; "photo" in half the names ─────────────────────
  const t0 = performance.now();
  const BATCH = 5000;
  for (let start = 0; start < N; start += BATCH) {
    const cols: unknown[][] = Array.from({ length: 14 }, () => []);
    const kwRows: [number, string][] = [];
    for (let i = start; i < Math.min(N, start + BATCH); i++) {
      const [ext, mime, kind] = EXTS[i % EXTS.length]!;
      const folder = `Folder ${i % 200}/Sub ${i % 7}`;
      const name = `${i % 2 ? 'photo ' : ''}${word()} ${word()} ${i}.${ext}`;
      const keywords = [word(), word()];
      const meta = { mimeType: mime, kind, keywords, categories: [], title: `${word()} ${word()}`, caption: `${word()} ${word()} ${word()}`, iptc: {}, xmp: {} } as never;
      const w = 100 + (i % 3) * 50;
      const h = 150 - (i % 3) * 25;
      [i + 1, `${folder}/${name}`, folder, name, ext, 1000 + i, 1_600_000_000_000 + i * 1000, mime, kind, w, h, 2015 + (i % 10), w > h ? 'landscape' : w < h ? 'portrait' : 'square', searchText(name, folder, meta)]
        .forEach((v, k) => cols[k]!.push(v));
      for (const k of new Set(keywords)) kwRows.push([i + 1, k]);
    }
    const c = await pool.connect();
    try {
      await c.query(`INSERT INTO library_assets (id, rel_path, folder_path, name, ext, size, mtime_ms, created_ms, mime, kind, width, height, year, orientation,
          version, meta, indexed_at, search_text, change_seq)
        SELECT 'a' || n, p, f, nm, e, s, m, m, mi, k, w, h, y, o, 1, '{}', m, st, n
        FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[], $8::text[], $9::text[], $10::int[], $11::int[], $12::int[], $13::text[], $14::text[])
          AS t(n, p, f, nm, e, s, m, mi, k, w, h, y, o, st)`, cols);
      await c.query(`INSERT INTO library_asset_keywords (asset_rowid, keyword)
        SELECT a.rowid, t.k FROM unnest($1::bigint[], $2::text[]) AS t(n, k) JOIN library_assets a ON a.id = 'a' || t.n`, [kwRows.map((x) => x[0]), kwRows.map((x) => x[1])]);
    } finally {
      c.release();
    }
  }
  await pool.query(`UPDATE library_meta SET value = $1 WHERE key = 'change_seq'`, [N]);
  await pool.query(`ALTER TABLE library_assets ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, translate(search_text, E'\\x1f\\x1e', '  '))) STORED`);
  await pool.query('CREATE INDEX library_assets_tsv ON library_assets USING GIN (tsv)');
  await pool.query('VACUUM ANALYZE library_assets');
  await pool.query('VACUUM ANALYZE library_asset_keywords');
  console.log(`${N.toLocaleString('en')} assets written, tsvector + GIN built in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  const index = new PgLibraryIndex(pool);
  const b0 = performance.now();
  const engine = await index.searchEngine();
  console.log(`engine built from PostgreSQL: ${engine.size.toLocaleString('en')} assets in ${((performance.now() - b0) / 1000).toFixed(1)} s`);

  const pgSql = `WITH q AS (SELECT to_tsquery('simple', $1) AS q),
    m AS MATERIALIZED (SELECT a.rowid, a.kind, a.ext, a.year, a.orientation, ts_rank(a.tsv, q.q) AS score FROM library_assets a, q WHERE a.tsv @@ q.q)
    SELECT (SELECT json_agg(x) FROM (SELECT rowid, score FROM m ORDER BY score DESC, rowid LIMIT 51) x) AS page,
      (SELECT count(*) FROM m) AS total,
      (SELECT json_agg(f) FROM (SELECT kind AS v, count(*) AS n FROM m GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 30) f) AS f_type,
      (SELECT json_agg(f) FROM (SELECT ext AS v, count(*) AS n FROM m GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 30) f) AS f_ext,
      (SELECT json_agg(f) FROM (SELECT year AS v, count(*) AS n FROM m GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 30) f) AS f_year,
      (SELECT json_agg(f) FROM (SELECT orientation AS v, count(*) AS n FROM m GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 30) f) AS f_orientation,
      (SELECT json_agg(f) FROM (SELECT k.keyword AS v, count(*) AS n FROM m JOIN library_asset_keywords k ON k.asset_rowid = m.rowid GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 30) f) AS f_keyword`;

  const queries: [string, string[]][] = [
    ['common word (half the library)', ['photo']],
    ['frequent word', [VOCAB[2]!]],
    ['rare word', [VOCAB[3000]!]],
    ['two words, prefix', ['photo', VOCAB[5]!.slice(0, 3)]],
  ];
  console.log('\n| query | hits | engine (catch-up check + search) p50 | PostgreSQL tsvector/GIN p50 | ratio |');
  console.log('|---|---|---|---|---|');
  for (const [label, words] of queries) {
    const e: number[] = [];
    let hits = 0;
    for (let i = 0; i < RUNS; i++) {
      const { value: res, ms } = await timeAsync(async () => (await index.searchEngine()).search({ words, folderPath: '', allowedRoots: null, filters: {}, limit: 51, after: null, params: null }));
      e.push(ms);
      hits = res.total;
    }
    const p: number[] = [];
    let pgHits = 0;
    const tsq = words.map((w) => `${w}:*`).join(' & ');
    for (let i = 0; i < RUNS; i++) {
      const { value: row, ms } = await timeAsync(async () => (await pool.query(pgSql, [tsq])).rows[0]);
      p.push(ms);
      pgHits = Number(row.total);
    }
    if (pgHits !== hits) console.log(`  (note: PostgreSQL counted ${pgHits} for "${label}")`);
    const me = median(e);
    const mp = median(p);
    console.log(`| ${label} | ${hits.toLocaleString('en')} | ${me.toFixed(2)} ms | ${mp.toFixed(1)} ms | ${(mp / me).toFixed(0)}× |`);
    const tag = label.replace(/\(.*\)/, '').trim().replace(/\W+/g, '-');
    result(`pg-search-engine-p50-${tag}`, me, 'ms');
    result(`pg-search-postgres-p50-${tag}`, mp, 'ms');
    result(`pg-search-postgres-over-engine-${tag}`, mp / me, 'x');
  }
} finally {
  await pool.end();
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
}
reportResults();
