/**
 * Connector thumbnails (issue 19): time to serve a WebDAV image's thumbnail through the hub, cold
 * (fetch the original from Apache mod_dav, decode in the image pool, store in the disk cache) and
 * cached (read from the disk cache), against the embedded library's thumbnail of the same image
 * (made at indexing time, served from its renditions folder). In-process (Fastify inject), so the
 * figures are the hub's work, not the loopback HTTP stack's.
 *
 *   npm run bench:thumbnails -- [--rounds 20] [--quick]
 *
 * Prints one `RESULT name value unit target <op> value met|missed` line per figure (bench/lib.ts);
 * its temp data (the servers' folders and the hubs' data directories) is in the run's temp root,
 * removed however the run ends.
 */
import { median, onInterrupt, reportResults, result } from './lib.js';
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { startApacheDav } from '../test/helpers/real-servers.js';
import { startLibraryHub } from '../test/helpers/library.js';
import { startWebdavHub } from '../test/helpers/webdav.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '20' }, quick: { type: 'boolean', default: false } } });
const rounds = values.quick ? 3 : Number(values.rounds);
const [w, h] = values.quick ? [1200, 800] : [4000, 3000];

/** A photo-like JPEG: noise over a gradient (a flat colour would decode unrealistically fast). */
async function photo(seed: number): Promise<Buffer> {
  const raw = Buffer.alloc(w * h * 3);
  let x = seed * 2654435761 >>> 0;
  for (let i = 0; i < raw.length; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    raw[i] = ((i / 3) % w) / w * 200 + (x >>> 27);
  }
  return sharp(raw, { raw: { width: w, height: h, channels: 3 } }).jpeg({ quality: 85 }).toBuffer();
}

async function timed(fn: () => Promise<{ statusCode: number; headers: Record<string, unknown> }>, expect: string): Promise<number> {
  const t0 = process.hrtime.bigint();
  const r = await fn();
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.statusCode !== 200) throw new Error(`thumbnail answered ${r.statusCode}`);
  if (expect && r.headers['x-damhub-thumbnail'] !== expect) throw new Error(`expected a ${expect} thumbnail, got ${String(r.headers['x-damhub-thumbnail'])}`);
  return ms;
}

const pic = await photo(1);
const files: Record<string, Buffer> = {};
// One copy per round (distinct bytes, so distinct ETags and cache keys): each cold load is cold.
for (let i = 0; i < rounds; i++) files[`bench/img-${i}.jpg`] = Buffer.concat([pic, Buffer.from(`round ${i}`)]);
// Apache runs detached (its own process group): stopped in `finally` when the run fails, and on
// an interrupt by onInterrupt (a Ctrl+C in the terminal does not reach it).
const dav = await startApacheDav(files);
onInterrupt(() => dav.close());
const started: { hub?: Awaited<ReturnType<typeof startWebdavHub>>; lib?: Awaited<ReturnType<typeof startLibraryHub>> } = {};
try {
  const hub = (started.hub = await startWebdavHub(dav));
  const lib = (started.lib = await startLibraryHub({ 'bench/img.jpg': pic }));
  const listing = await hub.get(`/api/v1/assets/folder/${encodeURIComponent('/bench')}?size=500`);
  const urls = listing.body.assets.map((a: { thumbnailUrl: string }) => new URL(a.thumbnailUrl));
  const libAsset = (await lib.get('/api/v1/assets/search?query=img')).body.assets[0];
  const libUrl = new URL(libAsset.thumbnailUrl);
  const cold: number[] = [];
  const cached: number[] = [];
  const library: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const u = urls[i]!;
    const inject = () => hub.t.app.inject({ method: 'GET', url: u.pathname + u.search });
    // Alternating order per round: adjacent runs share the machine's drift.
    if (i % 2) library.push(await timed(() => lib.t.app.inject({ method: 'GET', url: libUrl.pathname + libUrl.search }), ''));
    cold.push(await timed(inject, 'made'));
    cached.push(await timed(inject, 'cached'));
    if (!(i % 2)) library.push(await timed(() => lib.t.app.inject({ method: 'GET', url: libUrl.pathname + libUrl.search }), ''));
  }
  console.log(`${rounds} rounds, ${w}×${h} JPEG of ${pic.length} bytes`);
  console.log(`cold    median ${median(cold).toFixed(1)} ms  [${cold.map((x) => x.toFixed(0)).join(', ')}]`);
  console.log(`cached  median ${median(cached).toFixed(2)} ms`);
  console.log(`library median ${median(library).toFixed(2)} ms`);
  result('thumbnail-cold-ms', median(cold), 'ms', ['<=', values.quick ? 1000 : 1500]);
  result('thumbnail-cached-ms', median(cached), 'ms', ['<=', 5]);
  result('thumbnail-library-ms', median(library), 'ms');
  result('thumbnail-cached-vs-library', median(cached) / median(library), 'x', ['<=', 2]);
} finally {
  const { hub, lib } = started;
  await hub?.t.close();
  await lib?.t.close();
  await dav.close();
  for (const dir of [lib?.root, hub?.t.hub.config.dataDir, lib?.t.hub.config.dataDir]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
}
reportResults();
