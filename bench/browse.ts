/**
 * Folder browse of a 200-asset page (GET /api/v1/assets/folder/{id}?size=200) under autocannon vs
 * a bare node:http server answering the same bytes; peak RSS of the hub.
 * Run: npm run bench:browse [-- --rounds 5 --duration 10 --connections 50 --assets 220 --page-cache off --event-loop-seconds 10]
 * (--page-cache off measures the uncached path: every request reads, maps and serialises the page;
 * smoke check: --rounds 1 --duration 1 --connections 4 --assets 200).
 * Ends with RESULT lines (bench/lib.ts): the median ratio damhub / bare node:http, target ≥ 0.5,
 * and the hub's p99 over its p50, target ≤ 5 with the page cache off (issue 22; no target recorded
 * with it on); then checkToken's p99 on the same node idle and during the browse load (no target;
 * --event-loop-seconds 0 skips it).
 */
import { checkTokenLoad, checkTokenWhile, load, profileArgs, REPO_ROOT, reportResults, result, rssOf, sideBySide, startChild, table, sameBytesHeaders } from './lib.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { freePort } from '../test/helpers/process.js';
import { libraryLoginOverHttp } from '../test/helpers/library.js';

const { values } = parseArgs({ options: {
  rounds: { type: 'string', default: '5' },
  duration: { type: 'string', default: '10' },
  connections: { type: 'string', default: '50' },
  assets: { type: 'string', default: '220' },
  'page-cache': { type: 'string', default: 'on' },
  'event-loop-seconds': { type: 'string', default: '10' },
} });
const EVENT_LOOP_SEC = Number(values['event-loop-seconds']);
if (!(EVENT_LOOP_SEC >= 0)) throw new Error('--event-loop-seconds: 0 (skip) or more');
const pageCache = values['page-cache'] !== 'off';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'damhub-bench-browse-'));
const lib = path.join(dir, 'library');
const data = path.join(dir, 'data');
const hubPort = await freePort();
const barePort = await freePort();
const hubUrl = `http://127.0.0.1:${hubPort}`;
const api = `${hubUrl}/api/v1`;

// A folder of small real JPEGs with XMP title/description/keywords and an EXIF camera model, so
// every row carries the metadata a real library would (keywords, values, hashes, conversions).
const count = Number(values.assets);
if (!(count >= 200)) throw new Error('--assets: at least 200 (the benchmark browses a page of 200)');
const words = ['sunset', 'beach', 'city', 'forest', 'mountain', 'river', 'portrait', 'studio', 'night', 'snow'];
fs.mkdirSync(path.join(lib, 'Shoot 2026'), { recursive: true });
fs.mkdirSync(path.join(lib, 'Shoot 2026', 'Selects'), { recursive: true });
const started = Date.now();
for (let i = 0; i < count; i++) {
  const kw = [words[i % 10]!, words[(i * 7 + 3) % 10]!, `set${i % 4}`];
  const xmp = `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/">`
    + `<dc:title><rdf:Alt><rdf:li xml:lang="x-default">Frame ${i}</rdf:li></rdf:Alt></dc:title>`
    + `<dc:description><rdf:Alt><rdf:li xml:lang="x-default">A ${kw[0]} picture, frame ${i} of the shoot</rdf:li></rdf:Alt></dc:description>`
    + `<dc:rights><rdf:Alt><rdf:li xml:lang="x-default">© bench</rdf:li></rdf:Alt></dc:rights>`
    + `<dc:subject><rdf:Bag>${kw.map((k) => `<rdf:li>${k}</rdf:li>`).join('')}</rdf:Bag></dc:subject></rdf:Description></rdf:RDF></x:xmpmeta>`;
  const w = 48 + (i % 5) * 8;
  const h = 32 + (i % 3) * 8;
  await sharp({ create: { width: w, height: h, channels: 3, background: { r: (i * 37) % 256, g: (i * 91) % 256, b: (i * 13) % 256 } } })
    .withExif({ IFD0: { Make: 'Bench', Model: `Cam ${i % 3}` } })
    .withXmp(xmp)
    .jpeg({ quality: 80 })
    .toFile(path.join(lib, 'Shoot 2026', `frame ${String(i).padStart(4, '0')}.jpg`));
}
fs.writeFileSync(path.join(lib, 'Shoot 2026', 'Selects', 'pick.jpg'), await sharp({ create: { width: 40, height: 40, channels: 3, background: '#888' } }).jpeg().toBuffer());
console.log(`generated ${count + 1} JPEGs in ${Date.now() - started} ms`);

const hub = await startChild(
  [...profileArgs(), `${REPO_ROOT}bin/damhub.js`, 'serve', '--demo', '--library', lib, '--port', String(hubPort), '--data', data],
  'damhub listening',
  // Per-user content rate limit off: it would (correctly) answer 429 to a load test.
  { DAMHUB_LOG_LEVEL: 'warn', DAMHUB_USER_RATE_LIMIT: '0', ...(pageCache ? {} : { DAMHUB_PAGE_CACHE_MB: '0' }) },
);
let bare;
try {
  const json = async (r: Response) => {
    if (!r.ok) throw new Error(`${r.url}: ${r.status} ${await r.text()}`);
    return r.json() as Promise<any>;
  };
  const { jwt } = await json(await fetch(`${hubUrl}/demo/partner-token`, { method: 'POST' }));
  const { access_token } = await json(await fetch(`${api}/auth/exchangeToken`, { method: 'POST', headers: { authorization: `Bearer ${jwt}` } }));
  const auth = { authorization: `Bearer ${access_token}` };
  // DAM login as a browser does it: open the sign-in form (its cookie binds the login), submit it, poll.
  const dam = { access_token: await libraryLoginOverHttp(hubUrl, access_token, 'demo', 'demo-password') };
  const headers = { ...auth, 'provider-authorization': `Bearer ${dam.access_token}` };

  const root = await json(await fetch(`${api}/assets/folder/root`, { headers }));
  const folderId = root.folders.find((f: { name: string }) => f.name === 'Shoot 2026').id as string;
  const url = `${api}/assets/folder/${encodeURIComponent(folderId)}?size=200`;
  const sample = await fetch(url, { headers });
  const body = Buffer.from(await sample.arrayBuffer());
  const page = JSON.parse(body.toString('utf8'));
  if (page.assets.length !== 200 || page.totalAssetsCount !== count) throw new Error(`unexpected page: ${page.assets.length} assets of ${page.totalAssetsCount}`);
  const bodyFile = path.join(dir, 'body.json');
  fs.writeFileSync(bodyFile, body);
  bare = await startChild([`${REPO_ROOT}dist/bench/bare-server.js`, String(barePort), bodyFile, sample.headers.get('content-type')!, sameBytesHeaders(sample, `${bodyFile}.headers.json`)], 'bare listening');

  const before = rssOf(hub.pid!);
  const opts = { rounds: Number(values.rounds), durationSec: Number(values.duration), connections: Number(values.connections) };
  const r = await sideBySide(
    { name: 'damhub browse', url, headers },
    { name: 'bare node:http', url: `http://127.0.0.1:${barePort}/`, headers },
    opts,
  );
  const after = rssOf(hub.pid!);
  console.log(`browse benchmark: ${opts.rounds} alternating rounds × ${opts.durationSec} s, ${opts.connections} connections, ${os.cpus().length} cores, node ${process.version}, page cache ${pageCache ? 'on' : 'off'}`);
  console.log(`page: ${page.assets.length} assets of ${page.totalAssetsCount}, ${body.length} bytes, more=${page.more ? 'yes' : 'no'}`);
  console.log(table([
    ['side', 'req/s (median)', 'p50 ms', 'p99 ms'],
    ['damhub', r.subject.rps, r.subject.p50, r.subject.p99],
    ['bare node:http', r.baseline.rps, r.baseline.p50, r.baseline.p99],
  ]));
  console.log(`per-round ratios damhub / bare node:http: ${r.ratios.map((x) => x.toFixed(3)).join(', ')}`);
  console.log(`median ratio damhub / bare node:http = ${r.ratio.toFixed(3)} (target ≥ 0.5)`);
  console.log(`hub RSS: ${before.currentMiB.toFixed(1)} MiB before load, ${after.currentMiB.toFixed(1)} MiB after; peak (VmHWM) ${after.peakMiB.toFixed(1)} MiB`);
  const mode = pageCache ? 'cached' : 'uncached';
  result(`browse-${mode}-vs-bare-node-http`, r.ratio, 'x', ['>=', 0.5]);
  result(`browse-${mode}-rps`, r.subject.rps, 'req/s');
  result(`browse-${mode}-p50`, r.subject.p50, 'ms');
  result(`browse-${mode}-p99`, r.subject.p99, 'ms');
  result(`browse-${mode}-p99-over-p50`, r.subject.p99 / r.subject.p50, 'x', pageCache ? null : ['<=', 5]);
  result(`browse-${mode}-bare-node-http-rps`, r.baseline.rps, 'req/s');
  result(`browse-${mode}-hub-peak-rss`, after.peakMiB, 'MiB');

  // The event loop under browse load: checkToken p99 (a child process, µs resolution) on the
  // same node with no other load, then while the same connections browse the page. Uncached, a
  // page is ≈ 8 ms of main-thread work, so what a token check waits for is how many pages the
  // loop assembles before it looks at its sockets again (src/content/turns.ts). No target.
  if (EVENT_LOOP_SEC > 0) {
    const check = `${api}/auth/checkToken`;
    const idle = await checkTokenLoad(check, auth.authorization, EVENT_LOOP_SEC);
    const { checks: busy, load: pages } = await checkTokenWhile(check, auth.authorization, EVENT_LOOP_SEC, (seconds) => load(url, headers, seconds, opts.connections));
    console.log(`checkToken p50 / p99 (ms): idle ${idle.p50.toFixed(3)} / ${idle.p99.toFixed(3)}; during browse ${busy.p50.toFixed(3)} / ${busy.p99.toFixed(3)} (browse meanwhile: ${pages.rps} req/s, p99 ${pages.p99} ms, ${pages.timeouts} timeouts)`);
    result(`browse-${mode}-checktoken-p99-idle`, idle.p99, 'ms');
    result(`browse-${mode}-checktoken-p99-during-browse`, busy.p99, 'ms');
  }
} finally {
  hub.kill('SIGTERM');
  bare?.kill('SIGTERM');
  fs.rmSync(dir, { recursive: true, force: true });
}
reportResults();
