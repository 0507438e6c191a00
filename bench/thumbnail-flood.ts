/**
 * Thumbnail floods (issue 28, item 1): a hub user points the WebDAV connector at a server they
 * control holding large originals, lists the folder, and asks for many hub-made thumbnails at once.
 * A real hub process (`damhub serve`), a loopback WebDAV server of our own (test/helpers/flood-dav.ts)
 * serving 96 distinct 48 MiB JPEG originals, and:
 *
 * - 48 concurrent thumbnail requests for 48 distinct originals, read to their end;
 * - 48 more for the other 48 originals, each abandoned by its client 300 ms after it was sent
 *   (sent interleaved with the first 48, all at once).
 *
 * Measured while it runs: the hub's RSS growth (VmHWM minus the RSS before), the bytes under the
 * hub's TMPDIR (sampled every 20 ms), checkToken p99 from another process (bench/lib.ts), and, 2 s
 * after the last client left, how many upstream reads are still open (a production still running).
 *
 *   npm run bench:thumbnail-flood -- [--size-mib 48] [--count 48]
 *
 * Prints `RESULT name value unit target <op> value met|missed` lines (bench/lib.ts).
 */
import { checkTokenWhile, onInterrupt, reportResults, result, rssOf } from './lib.js';
import http from 'node:http';
import { parseArgs } from 'node:util';
import { startFloodDav } from '../test/helpers/flood-dav.js';
import { startConnectorHub } from '../test/helpers/connector-process.js';

const { values } = parseArgs({ options: { 'size-mib': { type: 'string', default: '48' }, count: { type: 'string', default: '48' } } });
const sizeMiB = Number(values['size-mib']);
const count = Number(values.count);
const MiB = 1024 * 1024;

const dav = await startFloodDav({ files: 2 * count, size: sizeMiB * MiB });
onInterrupt(() => dav.close());
const hub = await startConnectorHub({ DAMHUB_LOG_LEVEL: 'error' });
onInterrupt(() => hub.stop());

/** One GET; `abandonAfterMs`: the client destroys the request then (its socket closes). */
function get(url: string, abandonAfterMs?: number): Promise<{ status: number; bytes: number; abandoned: boolean }> {
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false }, (res) => {
      let bytes = 0;
      res.on('data', (d: Buffer) => (bytes += d.length));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes, abandoned: false }));
      res.on('error', () => resolve({ status: res.statusCode ?? 0, bytes, abandoned: true }));
    });
    req.on('error', () => resolve({ status: 0, bytes: 0, abandoned: true }));
    if (abandonAfterMs !== undefined) setTimeout(() => req.destroy(), abandonAfterMs);
  });
}

try {
  const s = await hub.session('flooder', dav.url);
  const tiles = s.assets.filter((a) => a.thumbnailUrl);
  if (tiles.length !== 2 * count) throw new Error(`expected ${2 * count} thumbnail URLs, got ${tiles.length}`);
  const pid = hub.server.child.pid!;
  const rssBefore = rssOf(pid).currentMiB;
  let peakTemp = 0;
  const sampler = setInterval(() => {
    peakTemp = Math.max(peakTemp, hub.tempUsage().bytes);
  }, 20);
  let lastClientLeft = 0;
  const statuses = new Map<number, number>();
  const { checks } = await checkTokenWhile(`${hub.url}/api/v1/auth/checkToken`, s.headers.authorization!, 8, async () => {
    // Interleaved, so that abandoned requests are among those that get a read slot or wait for one.
    const all = tiles.slice(0, count).flatMap((t, i) => [get(t.thumbnailUrl), get(tiles[count + i]!.thumbnailUrl, 300)]);
    const answers = await Promise.all(all);
    lastClientLeft = Date.now();
    for (const a of answers) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
    return answers;
  });
  // 2 s after the last client left (or got its answer), no upstream read may still be open.
  const wait = Math.max(0, lastClientLeft + 2000 - Date.now());
  await new Promise((r) => setTimeout(r, wait));
  const stillOpen = dav.stats.open;
  const tempAfter = hub.tempUsage();
  clearInterval(sampler);
  const rssAfter = rssOf(pid);
  console.log(`${count} kept + ${count} abandoned thumbnail requests for distinct ${sizeMiB} MiB originals`);
  console.log(`answers by status: ${[...statuses].map(([k, v]) => `${k}: ${v}`).join(', ')}`);
  console.log(`upstream: ${dav.stats.gets} GETs, ${(dav.stats.bodyBytes / MiB).toFixed(0)} MiB sent, ${dav.stats.finished} sent whole, ${dav.stats.closedEarly} closed early, ${stillOpen} still open 2 s after the last client left`);
  console.log(`hub RSS ${rssBefore.toFixed(0)} MiB before, peak ${rssAfter.peakMiB.toFixed(0)} MiB; temp files peak ${(peakTemp / MiB).toFixed(0)} MiB, ${tempAfter.entries} entries left`);
  console.log(`checkToken from another process during the flood: p50 ${checks.p50.toFixed(2)} ms, p99 ${checks.p99.toFixed(2)} ms`);
  result('thumbnail-flood-rss-growth', Math.max(0, rssAfter.peakMiB - rssBefore), 'MiB', ['<=', 256], 'non-negative');
  result('thumbnail-flood-temp-peak', peakTemp / MiB, 'MiB', ['<=', 256], 'non-negative');
  result('thumbnail-flood-checktoken-p99', checks.p99, 'ms', ['<=', 50]);
  result('thumbnail-flood-open-after-2s', stillOpen, 'reads', ['<=', 0], 'non-negative');
  result('thumbnail-flood-upstream-mib', dav.stats.bodyBytes / MiB, 'MiB', null, 'non-negative');
  reportResults();
} finally {
  await hub.stop();
  await dav.close();
}
