/**
 * Soak: a steady mixed workload against the real server process on loopback — token exchange,
 * refresh, browse, keyword search, search by image and downloads of signed URLs — bounded in
 * time and in request count. Every 10 s (or `sampleMs`) it records throughput, p99 latency,
 * errors and the server's resident set size; at the end it fits a line through the RSS samples of
 * the second half (after warm-up) and reports the slope.
 *
 *   npm run soak                        10 minutes (SOAK_SECONDS, SOAK_MAX_REQUESTS, SOAK_WORKERS)
 *   node dist/bench/soak.js --json      the same, the summary as JSON
 *
 * The test suite runs a short variant (test/e2e/soak-short.test.ts) through runSoak(), so this
 * module imports bench/lib.ts only when run as a benchmark (first thing in the block at the end):
 * the run's temp root (the library, the data dir) is then removed however the run ends, and the
 * run ends with RESULT lines: 0 unexpected answers and 0 5xx (the exit code's criteria) and an
 * RSS trend ≤ 1 MiB/min ("flat", docs/reliability.md); throughput and latencies without a target.
 * Smoke check: SOAK_SECONDS=5 SOAK_IMAGES=10 SOAK_WORKERS=2 SOAK_SAMPLE_MS=1000.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import sharp from 'sharp';
import { libraryLoginOverHttp } from '../test/helpers/library.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = path.join(REPO_ROOT, 'bin/damhub.js');

export type Op = 'exchange' | 'refresh' | 'browse' | 'search' | 'imageSearch' | 'download' | 'health';
/** Out of 100: how often each operation is picked. */
const DEFAULT_MIX: [Op, number][] = [['browse', 30], ['search', 20], ['download', 20], ['imageSearch', 8], ['refresh', 10], ['exchange', 7], ['health', 5]];
/** SOAK_MIX="browse=50,download=50" runs another mix (to find which operation a memory trend comes from). */
const MIX: [Op, number][] = process.env.SOAK_MIX
  ? process.env.SOAK_MIX.split(',').map((kv) => {
    const [op, w] = kv.split('=');
    if (!DEFAULT_MIX.some(([o]) => o === op) || !(Number(w) > 0)) throw new Error(`SOAK_MIX: "${kv}" is not <operation>=<weight> with an operation of ${DEFAULT_MIX.map(([o]) => o).join(', ')}`);
    return [op as Op, Number(w)];
  })
  : DEFAULT_MIX;
const MIX_TOTAL = MIX.reduce((a, [, w]) => a + w, 0);

export interface Sample {
  atSec: number;
  requests: number;
  rps: number;
  p99Ms: number;
  errors: number;
  rssMiB: number;
  /** The server's V8 heap in use and its memory outside the heap (buffers), from its /metrics: tells a JS leak from native growth. */
  heapUsedMiB: number;
  externalMiB: number;
  /** V8 heap committed (used + kept free after collections). */
  heapTotalMiB: number;
  /** RSS split from /proc/<pid>/smaps_rollup: anonymous (heap, malloc) vs file-backed (code, mapped files). */
  anonMiB: number;
  fileMiB: number;
}

export interface SoakResult {
  seconds: number;
  requests: number;
  byOp: Record<Op, number>;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** Answers outside the expected statuses, and network failures. */
  unexpected: number;
  fiveXx: number;
  firstErrors: string[];
  samples: Sample[];
  rssStartMiB: number;
  rssEndMiB: number;
  rssMaxMiB: number;
  /** Least-squares slope of RSS over the second half of the run. */
  rssSlopeMiBPerMin: number;
}

export interface SoakOptions {
  seconds: number;
  maxRequests: number;
  workers: number;
  sampleMs: number;
  images: number;
  log?: (line: string) => void;
  /** Called with the server process when it starts (the benchmark kills it if interrupted). */
  onServer?: (child: ChildProcess) => void;
}

function run(args: string[], env: NodeJS.ProcessEnv, input = ''): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`damhub ${args.join(' ')} exited ${code}: ${out}`))));
    child.stdin.end(input);
  });
}

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

/** Two gauges of prom-client's default metrics, in MiB. */
async function heapOf(base: string): Promise<{ heapUsedMiB: number; externalMiB: number; heapTotalMiB: number }> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const gauge = (name: string) => Math.round((Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? 0) / 1048576) * 10) / 10;
  return {
    heapUsedMiB: gauge('damhub_nodejs_heap_size_used_bytes'),
    externalMiB: gauge('damhub_nodejs_external_memory_bytes'),
    heapTotalMiB: gauge('damhub_nodejs_heap_size_total_bytes'),
  };
}

/** Anonymous and file-backed resident memory (Linux smaps_rollup), in MiB. */
function smapsOf(pid: number): { anonMiB: number; fileMiB: number } {
  const text = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
  const anon = kb('Anonymous');
  return { anonMiB: Math.round((anon / 1024) * 10) / 10, fileMiB: Math.round(((kb('Rss') - anon) / 1024) * 10) / 10 };
}

function rssMiB(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round((kb / 1024) * 10) / 10;
}

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function slope(points: [number, number][]): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((s, p) => s + p[0], 0) / n;
  const my = points.reduce((s, p) => s + p[1], 0) / n;
  const num = points.reduce((s, p) => s + (p[0] - mx) * (p[1] - my), 0);
  const den = points.reduce((s, p) => s + (p[0] - mx) ** 2, 0);
  return den === 0 ? 0 : num / den;
}

export async function runSoak(o: SoakOptions): Promise<SoakResult> {
  const log = o.log ?? (() => {});
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'damhub-soak-'));
  const data = path.join(tmp, 'data');
  const library = path.join(tmp, 'library');
  for (let i = 0; i < o.images; i++) {
    const dir = path.join(library, `folder-${i % 8}`, `sub-${i % 3}`);
    fs.mkdirSync(dir, { recursive: true });
    const img = await sharp({ create: { width: 96, height: 64, channels: 3, background: { r: (i * 37) % 256, g: (i * 91) % 256, b: (i * 53) % 256 } } }).jpeg().toBuffer();
    fs.writeFileSync(path.join(dir, `picture-${i}-${['sky', 'sea', 'tree', 'city'][i % 4]}.jpg`), img);
  }
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const kid = 'soak-key';
  const jwksFile = path.join(tmp, 'jwks.json');
  fs.writeFileSync(jwksFile, JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' }] }));
  const issuer = 'https://soak.partner.example/';
  await run(['partners', 'add', '--issuer', issuer, '--jwks-file', jwksFile, '--data', data, '--rate-limit', '1000000'], {});
  await run(['users', 'add', 'soak', '--password-stdin', '--data', data], {}, 'soak-password');
  await run(['index', '--library', library, '--data', data], {});

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  // SOAK_NODE_FLAGS: V8/Node flags for the server (e.g. --max-old-space-size=256) to compare memory behaviour.
  const nodeFlags = (process.env.SOAK_NODE_FLAGS ?? '').split(' ').filter(Boolean);
  const server = spawn(process.execPath, [...nodeFlags, CLI, 'serve', '--port', String(port), '--public-url', base, '--data', data, '--library', library], {
    cwd: REPO_ROOT, env: { ...process.env, DAMHUB_LOG_LEVEL: 'warn', DAMHUB_USER_RATE_LIMIT: '0' }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  o.onServer?.(server);
  let serverOut = '';
  server.stdout!.on('data', (d) => (serverOut += d));
  server.stderr!.on('data', (d) => (serverOut += d));
  await new Promise<void>((resolve, reject) => {
    const check = () => serverOut.includes('damhub listening on') && resolve();
    server.stdout!.on('data', check);
    server.on('exit', (code) => reject(new Error(`server exited ${code}: ${serverOut}`)));
  });

  const api = `${base}/api/v1`;
  const sign = (sub: string) => new SignJWT({ email: `${sub}@soak.example` }).setProtectedHeader({ alg: 'RS256', kid })
    .setIssuer(issuer).setAudience('urn:damhub').setSubject(sub).setIssuedAt().setExpirationTime('5m').setJti(`${sub}-${Math.random()}`).sign(privateKey as CryptoKey);

  interface Session { access: string; refresh: string; dam: string }
  const exchange = async (sub: string) => {
    const r = await fetch(`${api}/auth/exchangeToken`, { method: 'POST', headers: { authorization: `Bearer ${await sign(sub)}` } });
    if (r.status !== 200) throw new Error(`exchange ${r.status} ${await r.text()}`);
    return (await r.json()) as { access_token: string; refresh_token: string };
  };
  const damLogin = async (access: string) => {
    // As a browser does it: the form page's cookie binds the login (issue 28).
    return libraryLoginOverHttp(base, access, 'soak', 'soak-password');
  };
  const sessions: Session[] = [];
  for (let w = 0; w < o.workers; w++) {
    const p = await exchange(`soak-${w}`);
    sessions.push({ access: p.access_token, refresh: p.refresh_token, dam: await damLogin(p.access_token) });
  }
  const reference = `data:image/jpeg;base64,${(await sharp({ create: { width: 48, height: 32, channels: 3, background: { r: 40, g: 120, b: 200 } } }).jpeg().toBuffer()).toString('base64')}`;

  const byOp = Object.fromEntries(DEFAULT_MIX.map(([op]) => [op, 0])) as Record<Op, number>;
  const latencies: number[] = [];
  let window: number[] = [];
  let requests = 0;
  let unexpected = 0;
  let fiveXx = 0;
  let windowErrors = 0;
  const firstErrors: string[] = [];
  const samples: Sample[] = [];
  const started = Date.now();
  const deadline = started + o.seconds * 1000;
  const rssStart = rssMiB(server.pid!);
  let lastSample = started;
  let lastCount = 0;
  let rng = 0x50ac;
  const rand = () => {
    rng = (rng * 1103515245 + 12345) & 0x7fffffff;
    return rng / 0x7fffffff;
  };
  const pick = (): Op => {
    let x = rand() * MIX_TOTAL;
    for (const [op, w] of MIX) if ((x -= w) < 0) return op;
    return 'browse';
  };
  const media: string[] = [];
  const folders: string[] = ['root'];
  const words = ['sky', 'sea', 'tree', 'city', 'picture', 'folder', 'nothing-matches'];

  const fail = (what: string) => {
    unexpected++;
    windowErrors++;
    if (firstErrors.length < 10) firstErrors.push(what);
  };

  const timed = async (op: Op, url: string, init: RequestInit, ok: number[]): Promise<Response | null> => {
    const t0 = performance.now();
    try {
      const r = await fetch(url, init);
      const body = await r.arrayBuffer();
      const ms = performance.now() - t0;
      latencies.push(ms);
      window.push(ms);
      requests++;
      byOp[op]++;
      if (r.status >= 500) fiveXx++;
      if (!ok.includes(r.status)) {
        fail(`${op} ${r.status} ${Buffer.from(body).toString('utf8').slice(0, 200)}`);
        return null;
      }
      return new Response(body, { status: r.status, headers: r.headers });
    } catch (e) {
      requests++;
      fail(`${op} network: ${(e as Error).message}`);
      return null;
    }
  };

  const worker = async (w: number) => {
    const s = sessions[w]!;
    const content = () => ({ authorization: `Bearer ${s.access}`, 'provider-authorization': `Bearer ${s.dam}` });
    while (Date.now() < deadline && requests < o.maxRequests) {
      const op = pick();
      switch (op) {
        case 'exchange': {
          const jwt = await sign(`soak-${w}`);
          const r = await timed(op, `${api}/auth/exchangeToken`, { method: 'POST', headers: { authorization: `Bearer ${jwt}` } }, [200]);
          if (r) {
            const p = (await r.json()) as { access_token: string; refresh_token: string };
            s.access = p.access_token;
            s.refresh = p.refresh_token;
          }
          break;
        }
        case 'refresh': {
          const r = await timed(op, `${api}/auth/refreshToken`, { headers: { authorization: `Bearer ${s.access}`, 'provider-authorization': `Bearer ${s.refresh}` } }, [200]);
          if (r) {
            const p = (await r.json()) as { access_token: string; refresh_token: string };
            s.access = p.access_token;
            s.refresh = p.refresh_token;
          }
          break;
        }
        case 'browse': {
          const folder = folders[Math.floor(rand() * folders.length)]!;
          const r = await timed(op, `${api}/assets/folder/${encodeURIComponent(folder)}?size=${1 + Math.floor(rand() * 20)}`, { headers: content() }, [200]);
          if (r) {
            const page = (await r.json()) as { folders: { id: string }[]; assets: { downloadUrl?: string; thumbnailUrl?: string }[] };
            for (const f of page.folders) if (folders.length < 64 && !folders.includes(f.id)) folders.push(f.id);
            for (const a of page.assets) for (const u of [a.downloadUrl, a.thumbnailUrl]) if (u && media.length < 256) media.push(u);
          }
          break;
        }
        case 'search': {
          const q = words[Math.floor(rand() * words.length)]!;
          await timed(op, `${api}/assets/search?query=${q}&size=10`, { headers: content() }, [200]);
          break;
        }
        case 'imageSearch':
          await timed(op, `${api}/assets/search?size=5`, { method: 'POST', headers: { ...content(), 'content-type': 'application/json' }, body: JSON.stringify({ dataBase64: reference }) }, [200]);
          break;
        case 'download': {
          if (!media.length) break;
          // Signed URLs expire; one that did is refreshed by the next browse of the same folder.
          const u = media[Math.floor(rand() * media.length)]!;
          const r = await timed(op, u, {}, [200, 403]);
          if (r?.status === 403) media.splice(media.indexOf(u), 1);
          break;
        }
        case 'health':
          await timed(op, `${base}/healthz`, {}, [200]);
          break;
      }
      const now = Date.now();
      if (w === 0 && now - lastSample >= o.sampleMs) {
        window.sort((x, y) => x - y);
        const sample: Sample = {
          atSec: Math.round((now - started) / 1000),
          requests,
          rps: Math.round(((requests - lastCount) / ((now - lastSample) / 1000)) * 10) / 10,
          p99Ms: Math.round(percentile(window, 99) * 10) / 10,
          errors: windowErrors,
          rssMiB: rssMiB(server.pid!),
          ...(await heapOf(base)),
          ...smapsOf(server.pid!),
        };
        samples.push(sample);
        log(`t=${sample.atSec}s requests=${sample.requests} rps=${sample.rps} p99=${sample.p99Ms}ms errors=${sample.errors} rss=${sample.rssMiB}MiB heap=${sample.heapUsedMiB}/${sample.heapTotalMiB}MiB external=${sample.externalMiB}MiB anon=${sample.anonMiB}MiB file=${sample.fileMiB}MiB`);
        window = [];
        windowErrors = 0;
        lastSample = now;
        lastCount = requests;
      }
    }
  };

  let rssEnd = rssStart;
  try {
    await Promise.all(sessions.map((_, w) => worker(w)));
  } finally {
    rssEnd = rssMiB(server.pid!);
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  {
    latencies.sort((x, y) => x - y);
    const secs = (Date.now() - started) / 1000;
    const half = samples.filter((s) => s.atSec >= (samples.at(-1)?.atSec ?? 0) / 2);
    const result: SoakResult = {
      seconds: Math.round(secs),
      requests,
      byOp,
      rps: Math.round((requests / secs) * 10) / 10,
      p50Ms: Math.round(percentile(latencies, 50) * 10) / 10,
      p99Ms: Math.round(percentile(latencies, 99) * 10) / 10,
      unexpected,
      fiveXx,
      firstErrors,
      samples,
      rssStartMiB: rssStart,
      rssEndMiB: rssEnd,
      rssMaxMiB: Math.max(rssStart, rssEnd, ...samples.map((s) => s.rssMiB)),
      rssSlopeMiBPerMin: Math.round(slope(half.map((s) => [s.atSec / 60, s.rssMiB])) * 100) / 100,
    };
    return result;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  // First: the run's private temp root (TMPDIR) and its clean-up, the RESULT lines.
  const lib = await import('./lib.js');
  const env = (name: string, d: number) => Number(process.env[name] ?? d);
  const result = await runSoak({
    onServer: lib.trackChild,
    seconds: env('SOAK_SECONDS', 600),
    maxRequests: env('SOAK_MAX_REQUESTS', 5_000_000),
    workers: env('SOAK_WORKERS', 8),
    sampleMs: env('SOAK_SAMPLE_MS', 10_000),
    images: env('SOAK_IMAGES', 300),
    log: (l) => process.stdout.write(`${l}\n`),
  });
  if (process.argv.includes('--json')) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  else {
    const { samples, ...summary } = result;
    process.stdout.write(`\nsummary ${JSON.stringify(summary)}\n\n| t (s) | requests | req/s | p99 (ms) | errors | RSS (MiB) | anon (MiB) | file (MiB) | heap used/committed (MiB) | external (MiB) |\n|---|---|---|---|---|---|---|---|---|---|\n`);
    for (const s of samples) process.stdout.write(`| ${s.atSec} | ${s.requests} | ${s.rps} | ${s.p99Ms} | ${s.errors} | ${s.rssMiB} | ${s.anonMiB} | ${s.fileMiB} | ${s.heapUsedMiB}/${s.heapTotalMiB} | ${s.externalMiB} |\n`);
  }
  // Flat within noise is under 1 MiB/min; the figure is reported either way (docs/reliability.md).
  process.stdout.write(`RSS trend over the second half: ${result.rssSlopeMiBPerMin} MiB/min${result.rssSlopeMiBPerMin > 1 ? ' — GROWING' : ' — flat'}\n`);
  process.exitCode = result.unexpected === 0 ? 0 : 1;
  lib.result('soak-requests', result.requests, 'requests');
  lib.result('soak-rps', result.rps, 'req/s');
  lib.result('soak-p50', result.p50Ms, 'ms');
  lib.result('soak-p99', result.p99Ms, 'ms');
  lib.result('soak-unexpected-answers', result.unexpected, 'answers', ['<=', 0], 'non-negative');
  lib.result('soak-5xx', result.fiveXx, 'answers', ['<=', 0], 'non-negative');
  // The trend needs two samples in the second half; with fewer it was not measured (slope() says 0).
  const half = result.samples.filter((x) => x.atSec >= (result.samples.at(-1)?.atSec ?? 0) / 2);
  if (half.length >= 2) lib.result('soak-rss-trend', result.rssSlopeMiBPerMin, 'MiB/min', ['<=', 1], 'finite');
  else process.stdout.write(`RSS trend not measured: ${half.length} sample(s) in the second half (SOAK_SAMPLE_MS ${env('SOAK_SAMPLE_MS', 10_000)})\n`);
  lib.reportResults();
}
