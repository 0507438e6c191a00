/**
 * Search-by-image speed at library scale: top-50 latency through the real HTTP route
 * (POST /api/v1/assets/search on a listening hub, sequential requests from a client on a thread
 * of its own, each a ~15 KB JPEG data URI: parse, verify-decode, describe, scan, 50 assets mapped
 * and serialised; from the request to the response's last byte), side by side with
 * the in-process scan alone and an exact float32 brute-force scan baseline, at 100,000 and then
 * 1,000,000 descriptors in one run. Recall is the overlap of the hub's first page with the exact
 * float32 top 50 (same cut-off and near-duplicate boost).
 *
 * Scale is synthetic: the library holds 20 real scenes; the other descriptors are clustered
 * vectors (2,000 clusters with a decaying per-component spread, like DCT descriptors, plus 100
 * perturbations of each real scene at varied distances so top-50 lists are crowded), inserted
 * into the in-memory index directly and as asset rows in the library's SQLite (so hits map to
 * assets as in production).
 *
 * The in-process scan (`sim.search`) is asynchronous: it is awaited, or it would time nothing and
 * run during the next HTTP request (it did until issue 22; past "index scan" figures were 0).
 *
 *   flock /tmp/damhub-cpu.lock npm run bench:image-speed [-- --sizes 100000,1000000 --queries 60]
 *   node dist/bench/image-speed.js --sizes 2000 --queries 5 --event-loop-seconds 2   # smoke check
 *
 * Then, at the largest size (issue 22, "a free event loop"): checkToken p50/p99 on the same node
 * with no other load, and again while two clients post search-by-image requests back to back
 * (both load generators in child processes; `--event-loop-seconds` per window, 0 skips it).
 *
 * Ends with RESULT lines per size: HTTP p95 (target ≤ 15 ms, issue 22) and recall@50 against the
 * exact ranking (target ≥ 0.95), plus p50s and the scan and exact-scan figures without a target.
 * Its temp data (the hub's data dir and library, ~1.1 GB at 1M) is in the run's temp root
 * (bench/lib.ts), removed however the run ends.
 */
import { checkTokenLoad, checkTokenWhile, childJson, type ClientAnswer, REPO_ROOT, reportResults, result, samples, scaleTag, TEMP_ROOT, ThreadClient, timeAsync, timeSync } from './lib.js';
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { embeddedLibrary } from '../src/catalog.js';
import { parseArgs } from 'node:util';
import type { AddressInfo } from 'node:net';
import { DIM, describeImage, hamming, SCALE, type Descriptor } from '../src/providers/library/similarity/descriptor.js';
import { DEFAULT_CUTOFF, MAX_BOOST, NEAR_DUPLICATE_BITS } from '../src/providers/library/similarity/vector-index.js';
import { rng, sceneJpeg, transform } from '../test/helpers/scenes.js';
import { startLibraryHub } from '../test/helpers/library.js';
import type { LibraryIndex } from '../src/providers/library/index/sqlite.js';

const { values } = parseArgs({ options: { sizes: { type: 'string', default: '100000,1000000' }, queries: { type: 'string', default: '60' }, 'event-loop-seconds': { type: 'string', default: '10' } } });
const EVENT_LOOP_SEC = Number(values['event-loop-seconds']);
if (!(EVENT_LOOP_SEC >= 0)) throw new Error('--event-loop-seconds: 0 (skip) or more');
const sizes = values.sizes!.split(',').map(Number);
const QUERIES = Number(values.queries);
if (!(QUERIES >= 5)) throw new Error('--queries: at least 5 (the warm-up uses the first 5)');
const K = 50;
const REAL = 20;

/** This benchmark's percentile since issue 4 (rank floor(p·n), a little above nearest rank); throws on an empty set. */
const pct = (xs: number[], p: number) => {
  const s = [...samples(xs, 'image-speed samples')].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const mb = (b: number) => `${(b / 1024 / 1024).toFixed(0)} MB`;

// ── the hub, its real scenes and the queries ─────────────────────────────────────────────────
const files: Record<string, Buffer> = {};
const scenes: Buffer[] = [];
for (let i = 0; i < REAL; i++) {
  scenes.push(await sceneJpeg(1000 + i));
  files[`Real/scene-${i}.jpg`] = scenes[i]!;
}
const lib = await startLibraryHub(files);
const address = await lib.t.app.listen({ host: '127.0.0.1', port: 0 });
const url = `http://127.0.0.1:${(lib.t.app.server.address() as AddressInfo).port}/api/v1/assets/search?size=${K}`;
/** The HTTP client, on a thread of its own (bench/lib.ts ThreadClient): its fetch and JSON parse do not run on the hub's event loop. */
const client = new ThreadClient();
const sim = embeddedLibrary(lib.t.hub.providers)!.similarity;
const db = (embeddedLibrary(lib.t.hub.providers)!.index as LibraryIndex).db;
const queryImages: { body: string; q: Descriptor }[] = [];
for (let i = 0; i < QUERIES; i++) {
  const img = await transform(scenes[i % REAL]!, (['resize50', 'crop10', 'jpeg35', 'rotate3', 'bright15', 'blur'] as const)[Math.floor(i / REAL) % 6]);
  queryImages.push({ body: JSON.stringify({ dataBase64: `data:image/jpeg;base64,${img.toString('base64')}` }), q: await describeImage(img, { limitInputPixels: 5e7, failOn: 'error' }) });
}
const realDescriptors = (db.prepare('SELECT asset_id FROM similarity_descriptors WHERE vec IS NOT NULL ORDER BY asset_id').all() as { asset_id: string }[]).map((r) => ({ id: r.asset_id, d: readDescriptor(r.asset_id) }));
function readDescriptor(id: string): Descriptor {
  const r = db.prepare('SELECT vec, phash FROM similarity_descriptors WHERE asset_id = ?').get(id) as { vec: Buffer; phash: Buffer };
  return { vector: new Int8Array(Uint8Array.from(r.vec).buffer), phash: Uint8Array.from(r.phash) };
}

// ── synthetic descriptors ────────────────────────────────────────────────────────────────────
const rand = rng(42);
const gauss = () => Math.sqrt(-2 * Math.log(rand() + 1e-12)) * Math.cos(2 * Math.PI * rand());
const spread = Float64Array.from({ length: DIM }, (_, d) => 1 / Math.sqrt(1 + d / 6));
const centres = Array.from({ length: 2000 }, () => Float64Array.from({ length: DIM }, (_, d) => gauss() * spread[d]!));
const maxN = Math.max(...sizes);
const floats = new Float32Array(maxN * DIM); // the exact baseline's copy, slot order = insertion order
const phashes = new Uint8Array(maxN * 8);
const ids: string[] = [];
let n = 0;
const unit = (v: Float64Array) => {
  const s = Math.sqrt(v.reduce((a, x) => a + x * x, 0)) || 1;
  return v.map((x) => x / s);
};
function addOne(id: string, f: Float64Array, phash: Uint8Array) {
  const vector = new Int8Array(DIM);
  for (let d = 0; d < DIM; d++) {
    floats[n * DIM + d] = f[d]!;
    vector[d] = Math.max(-127, Math.min(127, Math.round(f[d]! * SCALE)));
  }
  phashes.set(phash, n * 8);
  ids.push(id);
  n++;
  sim.index.put(id, 'Synthetic', { vector, phash });
}
for (const r of realDescriptors) addOne(r.id, Float64Array.from(r.d.vector, (x) => x / SCALE), r.d.phash);
const insertRows = db.prepare(`WITH RECURSIVE c(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM c WHERE i + 1 < ?)
  INSERT INTO assets (id, rel_path, folder_path, name, ext, size, mtime_ms, created_ms, mime, kind, width, height, year, orientation, version, version_comment, meta, hashes, blob, indexed_at)
  SELECT printf('s%021d', i), 'Synthetic/' || i || '.jpg', 'Synthetic', i || '.jpg', t.ext, t.size, t.mtime_ms, t.created_ms, t.mime, t.kind, t.width, t.height, t.year, t.orientation, 1, t.version_comment, t.meta, t.hashes, t.blob, t.indexed_at
  FROM c, (SELECT * FROM assets LIMIT 1) t`);
function grow(to: number) {
  const from = n;
  db.transaction(() => insertRows.run(from, to))();
  for (let i = from; i < to; i++) {
    let f: Float64Array;
    if (i - from < REAL * 100 && from === REAL) {
      // Perturbations of the real scenes at varied distances: crowded top-50 lists for the queries.
      const base = realDescriptors[(i - from) % REAL]!.d.vector;
      const sigma = 0.05 + 0.25 * rand();
      f = unit(Float64Array.from(base, (x) => x / SCALE + gauss() * sigma / Math.sqrt(DIM) * 4));
    } else {
      const c = centres[Math.floor(rand() * centres.length)]!;
      f = new Float64Array(DIM);
      let s2 = 0;
      for (let d = 0; d < DIM; d++) {
        const x = c[d]! + gauss() * spread[d]! * 0.6;
        f[d] = x;
        s2 += x * x;
      }
      const norm = Math.sqrt(s2);
      for (let d = 0; d < DIM; d++) f[d] = f[d]! / norm;
    }
    const ph = new Uint8Array(8);
    for (let b = 0; b < 8; b++) ph[b] = Math.floor(rand() * 256);
    addOne(`s${String(i).padStart(21, '0')}`, f, ph);
  }
}

/** Exact baseline: float32 cosine over every vector, the same boost and cut-off, top K by (score desc, id asc). */
function exact(q: Descriptor): string[] {
  const qf = Float32Array.from(q.vector, (x) => x / SCALE);
  const hits: { s: number; id: string }[] = [];
  for (let i = 0; i < n; i++) {
    let s = 0;
    const o = i * DIM;
    for (let d = 0; d < DIM; d++) s += floats[o + d]! * qf[d]!;
    if (s < DEFAULT_CUTOFF - MAX_BOOST) continue;
    const h = hamming(q.phash, phashes.subarray(i * 8, i * 8 + 8));
    s += h <= NEAR_DUPLICATE_BITS ? MAX_BOOST * (1 - h / (NEAR_DUPLICATE_BITS + 1)) : 0;
    if (s >= DEFAULT_CUTOFF) hits.push({ s, id: ids[i]! });
  }
  hits.sort((a, b) => b.s - a.s || (a.id < b.id ? -1 : 1));
  return hits.slice(0, K).map((h) => h.id);
}

console.log(`hub at ${address}; ${REAL} real scenes; queries: ${QUERIES} edited scenes (${(queryImages[0]!.body.length / 1024).toFixed(0)} KB bodies)`);
const rows: string[] = [];
/** The in-process scan's p50 at the last (largest) size, for the event-loop figures. */
let lastScanP50 = 0;
for (const size of sizes) {
  const t0 = Date.now();
  grow(size);
  const loadSec = (Date.now() - t0) / 1000;
  const rssIndex = process.memoryUsage().rss;
  // Warm-up, then three passes over the queries: HTTP (one request after the other, nothing else
  // running in the hub's process), the in-process scan alone, the exact baseline. Until issue 22
  // the three alternated per query, so every request followed 80–150 ms of the baseline's
  // JavaScript on the hub's thread (and the garbage collection it left behind).
  for (let i = 0; i < 5; i++) await post(queryImages[i]!.body);
  const httpMs: number[] = [], scanMs: number[] = [], exactMs: number[] = [], recalls: number[] = [];
  let totals = 0;
  const pages: string[][] = [];
  for (const qi of queryImages) {
    // Timed by the client thread, from the request to the response's last byte.
    const page = await post(qi.body);
    httpMs.push(page.ms);
    totals += page.totalAssetsCount;
    pages.push(page.assetIds);
  }
  for (const qi of queryImages) scanMs.push((await timeAsync(() => sim.search(qi.q, { k: K + 1, after: null, folderAllowed: null }))).ms);
  queryImages.forEach((qi, i) => {
    const { value: truth, ms } = timeSync(() => exact(qi.q));
    exactMs.push(ms);
    const got = new Set(pages[i]);
    recalls.push(truth.length ? truth.filter((id) => got.has(id)).length / truth.length : 1);
  });
  const recall = recalls.reduce((a, b) => a + b, 0) / recalls.length;
  const row = `| ${size.toLocaleString('en')} | ${pct(httpMs, 50).toFixed(1)} / ${pct(httpMs, 95).toFixed(1)} | ${pct(scanMs, 50).toFixed(1)} / ${pct(scanMs, 95).toFixed(1)} | ${pct(exactMs, 50).toFixed(1)} / ${pct(exactMs, 95).toFixed(1)} | ${(pct(exactMs, 50) / pct(scanMs, 50)).toFixed(1)}× | ${recall.toFixed(4)} | ${Math.round(totals / queryImages.length)} | ${mb(sim.index.bytes)} | ${mb(rssIndex)} | ${loadSec.toFixed(1)} s |`;
  rows.push(row);
  console.log(row);
  const tag = scaleTag(size);
  result(`image-search-http-p50-${tag}`, pct(httpMs, 50), 'ms');
  // Issue 22: ≤ 15 ms at a million descriptors, ≤ 50 ms at ten million.
  result(`image-search-http-p95-${tag}`, pct(httpMs, 95), 'ms', ['<=', size >= 10_000_000 ? 50 : 15]);
  result(`image-search-recall50-${tag}`, recall, 'ratio', ['>=', 0.95]);
  result(`image-search-scan-p50-${tag}`, pct(scanMs, 50), 'ms');
  lastScanP50 = pct(scanMs, 50);
  result(`image-search-scan-p95-${tag}`, pct(scanMs, 95), 'ms');
  result(`image-search-exact-p95-${tag}`, pct(exactMs, 95), 'ms');
  console.log(`${size}: done`);
}
// ── the event loop under search by image, at the largest size ────────────────────────────────
// checkToken p99 on this node with no other load, then while two clients post search-by-image
// requests back to back. Both clients run in child processes, so that only the hub's own work
// is on this process's event loop.
if (EVENT_LOOP_SEC > 0) {
  const tag = scaleTag(Math.max(...sizes));
  const check = `${address}/api/v1/auth/checkToken`;
  const idle = await checkTokenLoad(check, lib.headers.authorization!, EVENT_LOOP_SEC);
  const bodies = path.join(TEMP_ROOT, 'image-search-bodies.json');
  fs.writeFileSync(bodies, JSON.stringify(queryImages.map((q) => q.body)));
  const { checks: busy, searches } = await checkTokenWhileSearching(check, bodies);
  // The same with every scan on the event loop (the index's scan workers off), for comparison.
  sim.index.workers = 0;
  const { checks: onLoop, searches: searchesOnLoop } = await checkTokenWhileSearching(check, bodies);
  sim.index.workers = undefined;
  console.log(`\ncheckToken p50 / p99 (ms): idle ${idle.p50.toFixed(3)} / ${idle.p99.toFixed(3)}; during search by image ${busy.p50.toFixed(3)} / ${busy.p99.toFixed(3)} (${searches} searches answered meanwhile, ${(searches / (EVENT_LOOP_SEC + 2)).toFixed(1)}/s); the same with the scans on the event loop ${onLoop.p50.toFixed(3)} / ${onLoop.p99.toFixed(3)} (${searchesOnLoop} searches)`);
  result(`checktoken-p99-idle-${tag}`, idle.p99, 'ms');
  result(`checktoken-p99-during-image-search-${tag}`, busy.p99, 'ms');
  // No target in the issue. The question is whether the scan holds the event loop: if it did, a
  // token check arriving during a scan would wait for the rest of it, and with two clients keeping
  // the node busy the p99 would be at least the scan's own time (printed beside it). What remains
  // is the search's main-thread work (body, rows, mapping, serialisation: a few ms a request).
  // A first target of ours (p99 busy ≤ 2 × idle) was set when the clients measured whole
  // milliseconds (idle read 0); at µs resolution an idle check is ≈ 0.2 ms, so the ratio compares
  // a request's own cost with a queue and says nothing about the scan: it is printed without one.
  result(`checktoken-p99-during-image-search-over-idle-${tag}`, busy.p99 / idle.p99, 'ratio');
  result(`checktoken-p99-during-image-search-over-scan-p50-${tag}`, busy.p99 / lastScanP50, 'ratio');
  result(`checktoken-p99-during-image-search-scans-on-event-loop-${tag}`, onLoop.p99, 'ms');
  result(`image-searches-during-checktoken-scans-on-event-loop-${tag}`, searchesOnLoop, 'requests');
  result(`image-searches-during-checktoken-${tag}`, searches, 'requests');
}

const peak = process.resourceUsage().maxRSS * 1024;
console.log(`\n| descriptors | HTTP top-50 p50 / p95 (ms) | index scan p50 / p95 (ms) | exact float32 scan p50 / p95 (ms) | scan speed-up | recall@50 vs exact | mean totalAssetsCount | index typed arrays | process RSS after load | load time |\n|---|---|---|---|---|---|---|---|---|---|`);
for (const r of rows) console.log(r);
console.log(`\nmachine: ${os.cpus().length} cores, load average at the end ${os.loadavg().map((x) => x.toFixed(1)).join(' / ')} (1/5/15 min)`);
console.log(`peak RSS of the whole run (hub + client + the float32 baseline copy): ${mb(peak)}`);
await client.close();
await lib.t.close();
reportResults();

/** One search by image through the client thread; a kept-alive connection the server closed while the next size was loaded is retried once on a new one. */
async function post(body: string, retry = true): Promise<{ ms: number; assetIds: string[]; totalAssetsCount: number }> {
  let r: ClientAnswer;
  try {
    r = await client.request({ url, method: 'POST', headers: { ...lib.headers, 'content-type': 'application/json' }, body });
  } catch (e) {
    if (retry) return post(body, false);
    throw e;
  }
  if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${r.body.code}`);
  return { ms: r.ms, assetIds: r.body.assetIds ?? [], totalAssetsCount: r.body.totalAssetsCount ?? 0 };
}

/** Two clients in a child process posting search-by-image requests back to back for `seconds`; resolves to how many were answered (200). */
async function searchLoad(target: string, bodiesFile: string, seconds: number): Promise<number> {
  const script = `
    const bodies = JSON.parse(require('fs').readFileSync(${JSON.stringify(bodiesFile)}, 'utf8'));
    const headers = { ...${JSON.stringify(lib.headers)}, 'content-type': 'application/json' };
    const end = Date.now() + ${seconds * 1000};
    let ok = 0, bad = 0;
    const loop = async (k) => { for (let i = k; Date.now() < end; i += 2) { const r = await fetch(${JSON.stringify(target)}, { method: 'POST', headers, body: bodies[i % bodies.length] }); await r.arrayBuffer(); r.status === 200 ? ok++ : bad++; } };
    Promise.all([loop(0), loop(1)]).then(() => { process.stdout.write(JSON.stringify({ ok, bad })); });`;
  const { ok, bad } = await childJson<{ ok: number; bad: number }>(script, 'search-by-image load');
  if (bad !== 0) throw new Error(`search-by-image load: ${bad} failed requests`);
  return ok;
}

/** checkToken measured while two clients post search-by-image requests (checkTokenWhile). */
async function checkTokenWhileSearching(check: string, bodies: string): Promise<{ checks: { p50: number; p99: number }; searches: number }> {
  const { checks, load } = await checkTokenWhile(check, lib.headers.authorization!, EVENT_LOOP_SEC, (seconds) => searchLoad(url, bodies, seconds));
  return { checks, searches: load };
}
