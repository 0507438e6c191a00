/**
 * Issue 3 benchmark: indexing a generated set of JPEGs (2–12 MP) with the embedded library, against
 * sharp alone producing the same renditions (same sizes, formats, options and number of files in
 * flight as src/providers/library/renditions.ts and the scanner's default concurrency).
 *
 *   node dist/bench/index-library.js --generate-only [--count 5000]      # make/reuse the image set
 *   node dist/bench/index-library.js --count 1000 --rounds 3             # both sides per round
 *   node dist/bench/index-library.js --count 5000 --side library --round 1   # one side of a round
 *   node dist/bench/index-library.js --summarize /work/bench-data/results/index-5000.jsonl
 *
 * The set lives in --data (default /work/bench-data) and is described by a manifest, so runs reuse
 * it. Each side of each round runs in its own child process (so peak RSS is per side) over the
 * first --count files of the set, hard-linked into a fresh folder; the library side indexes into a
 * fresh data dir exactly as `damhub index` does (LibraryIndex + Renditions + LibraryScanner.scan).
 * Rounds alternate which side goes first (odd rounds start with --start-with, default library).
 * Each side's result is appended as one JSON line to --results (default
 * <data>/results/index-<count>.jsonl); --summarize pairs the lines by round and prints per-round
 * ratios, medians, CPU per file and peak RSS, so the two sides of a round may come from two
 * invocations (at 5,000 files one side takes 3–4 minutes).
 *
 * The run folder (<data>/run: hard links and both sides' output) is removed when the run ends,
 * however it ends (bench/lib.ts); the image set and the results file are kept. The summary ends
 * with RESULT lines: the median ratio library / sharp alone, target ≥ 0.9 (issue 22), and each
 * side's files/s and peak RSS without a target. Smoke check: --count 3 --data <a scratch dir>.
 */
import { median, removeOnExit, reportResults, result, rssOf, trackChild } from './lib.js';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { insertJpegSegment, iptcIim, photoshopIptcSegment, xmpPacket } from '../test/helpers/fixtures.js';
import { DEFAULT_SCAN_CONCURRENCY } from '../src/providers/library/scanner.js';
import { mulberry32 } from '../test/helpers/random.js';

const { values: args } = parseArgs({
  options: {
    data: { type: 'string', default: '/work/bench-data' },
    count: { type: 'string', default: '5000' },
    rounds: { type: 'string', default: '1' },
    concurrency: { type: 'string' },
    'start-with': { type: 'string', default: 'library' },
    results: { type: 'string' },
    'generate-only': { type: 'boolean', default: false },
    'gen-concurrency': { type: 'string', default: '2' },
    summarize: { type: 'string' },
    side: { type: 'string' },
    round: { type: 'string' },
    child: { type: 'string' },
    root: { type: 'string' },
    out: { type: 'string' },
  },
});

const SET_VERSION = 1;
const PER_FOLDER = 250;

interface ManifestFile { rel: string; width: number; height: number; bytes: number; exif: boolean; iptc: boolean }
interface Manifest { version: number; files: ManifestFile[] }

/** `poolRssMB`: the library's image-pool processes, sum of their peaks (not in maxRssMB; absent in results of older runs). */
interface SideResult { side: 'library' | 'sharp'; files: number; seconds: number; filesPerSec: number; maxRssMB: number; cpuPercent: number; poolRssMB?: number; failed?: number }

// ---------------------------------------------------------------------------------------------
// Image set
// ---------------------------------------------------------------------------------------------


const ASPECTS: [number, number][] = [[4, 3], [3, 2], [16, 9], [1, 1], [3, 4], [2, 3], [9, 16], [5, 4]];
const WORDS = ['sunset', 'harbour', 'mountain', 'forest', 'city', 'portrait', 'product', 'studio', 'autumn', 'beach', 'river', 'bridge', 'market', 'night', 'snow', 'desert'];
const MODELS = ['Canon EOS R5', 'NIKON Z 7_2', 'ILCE-7RM4', 'X-T4', 'iPhone 14 Pro'];

/** One image: a smooth multi-stop gradient with soft shapes drawn small, upscaled, plus film-like noise. */
async function makeImage(i: number): Promise<{ buf: Buffer; width: number; height: number; exif: boolean; iptc: boolean }> {
  const r = mulberry32(i * 7919 + 17);
  const mp = 2 + r() * 10; // 2–12 MP
  const [aw, ah] = ASPECTS[Math.floor(r() * ASPECTS.length)]!;
  const width = Math.round(Math.sqrt((mp * 1e6 * aw) / ah));
  const height = Math.round((width * ah) / aw);
  // Draw at half scale in JS (gradient, shapes, grain), then let libvips upscale: smooth and
  // compressible like a photo, with fine noise so the JPEG is not trivially small.
  const sw = Math.ceil(width / 2), sh = Math.ceil(height / 2);
  const px = new Uint8ClampedArray(sw * sh * 3);
  const grain = 8 + r() * 16;
  const c0 = [r() * 255, r() * 255, r() * 255], c1 = [r() * 255, r() * 255, r() * 255];
  const shapes = Array.from({ length: 3 + Math.floor(r() * 6) }, () => ({
    x: r() * sw, y: r() * sh, rad: (0.05 + r() * 0.25) * Math.min(sw, sh), col: [r() * 255, r() * 255, r() * 255], square: r() < 0.4,
  }));
  for (let y = 0; y < sh; y++) {
    for (let x = 0; x < sw; x++) {
      const t = (x / sw + y / sh) / 2;
      let c = [c0[0]! + (c1[0]! - c0[0]!) * t, c0[1]! + (c1[1]! - c0[1]!) * t, c0[2]! + (c1[2]! - c0[2]!) * t];
      for (const s of shapes) {
        const dx = x - s.x, dy = y - s.y;
        const inside = s.square ? Math.max(Math.abs(dx), Math.abs(dy)) < s.rad : dx * dx + dy * dy < s.rad * s.rad;
        if (inside) c = [(c[0]! + s.col[0]!) / 2, (c[1]! + s.col[1]!) / 2, (c[2]! + s.col[2]!) / 2];
      }
      const o = (y * sw + x) * 3;
      const g = (r() - 0.5) * grain;
      px[o] = c[0]! + g; px[o + 1] = c[1]! + g; px[o + 2] = c[2]! + g;
    }
  }
  let img = sharp(px, { raw: { width: sw, height: sh, channels: 3 } }).resize(width, height, { kernel: 'linear' });
  // Most files carry camera EXIF (every fifth one none); every third carries IPTC + XMP.
  const exif = i % 5 !== 0;
  const iptc = i % 3 === 0;
  const word = (k: number) => WORDS[(i * 7 + k * 3) % WORDS.length]!;
  if (exif) {
    const d = new Date(Date.UTC(2015, 0, 1) + Math.floor(r() * 3650) * 86_400_000 + Math.floor(r() * 86_400) * 1000).toISOString();
    img = img.withExif({
      IFD0: { Model: MODELS[i % MODELS.length]!, Copyright: `© ${2015 + (i % 10)} Bench Studio` },
      IFD2: { DateTimeOriginal: `${d.slice(0, 10).replace(/-/g, ':')} ${d.slice(11, 19)}`, OffsetTimeOriginal: '+01:00', ExposureTime: `1/${[60, 125, 250, 500][i % 4]}`, FNumber: `${[18, 28, 40, 56, 80][i % 5]}/10`, ISOSpeedRatings: String([100, 200, 400, 800][i % 4]) },
    }).withMetadata({ orientation: [1, 1, 1, 6, 1, 8, 3][i % 7]! });
  }
  if (iptc) img = img.withXmp(xmpPacket({ title: `${word(0)} ${word(1)} #${i}`, subject: [word(0), word(1), word(2)], rights: 'Bench Studio', city: 'Lyon' }));
  let buf: Buffer = await img.jpeg({ quality: 85 }).toBuffer();
  if (iptc) buf = insertJpegSegment(buf, photoshopIptcSegment(iptcIim({ objectName: `${word(0)} #${i}`, keywords: [word(0), word(1), word(2)], caption: `A ${word(1)} near the ${word(2)}, frame ${i}.`, city: 'Lyon', copyrightNotice: '© Bench Studio' })));
  return { buf, width, height, exif, iptc };
}

function setDir(): string {
  return path.join(args.data!, 'jpeg-set');
}

function readManifest(): Manifest {
  try {
    const m = JSON.parse(fs.readFileSync(path.join(setDir(), 'manifest.json'), 'utf8')) as Manifest;
    if (m.version === SET_VERSION) return m;
  } catch { /* none yet */ }
  return { version: SET_VERSION, files: [] };
}

/** Makes the first `count` images (reusing what the manifest lists) and returns their entries. */
async function ensureSet(count: number): Promise<ManifestFile[]> {
  const dir = setDir();
  fs.mkdirSync(dir, { recursive: true });
  const m = readManifest();
  if (m.files.length >= count) return m.files.slice(0, count);
  const started = Date.now();
  let next = m.files.length;
  const made: ManifestFile[] = [...m.files];
  const save = () => fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ version: SET_VERSION, files: made.filter(Boolean) }));
  const worker = async () => {
    while (next < count) {
      const i = next++;
      const rel = `f${String(Math.floor(i / PER_FOLDER)).padStart(3, '0')}/img-${String(i).padStart(5, '0')}.jpg`;
      const img = await makeImage(i);
      fs.mkdirSync(path.join(dir, path.dirname(rel)), { recursive: true });
      fs.writeFileSync(path.join(dir, rel), img.buf);
      made[i] = { rel, width: img.width, height: img.height, bytes: img.buf.length, exif: img.exif, iptc: img.iptc };
      if (i % 100 === 99) {
        // Keep the manifest a prefix of finished files so an interrupted generation resumes.
        let n = 0;
        while (made[n]) n++;
        fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ version: SET_VERSION, files: made.slice(0, n) }));
        process.stderr.write(`generated ${n}/${count} (${((Date.now() - started) / 1000).toFixed(0)} s)\n`);
      }
    }
  };
  await Promise.all(Array.from({ length: Number(args['gen-concurrency']) }, worker));
  save();
  return made.slice(0, count);
}

// ---------------------------------------------------------------------------------------------
// The two sides (each runs in a child process: `--child library|sharp --root DIR --out DIR`)
// ---------------------------------------------------------------------------------------------

function listFiles(root: string): string[] {
  const out: string[] = [];
  const visit = (rel: string) => {
    for (const e of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) visit(r);
      else out.push(r);
    }
  };
  visit('');
  return out.sort();
}

async function childLibrary(root: string, out: string, concurrency: number): Promise<SideResult> {
  const { LibraryIndex } = await import('../src/providers/library/index/sqlite.js');
  const { Renditions } = await import('../src/providers/library/renditions.js');
  const { LibraryScanner } = await import('../src/providers/library/scanner.js');
  const { systemClock } = await import('../src/clock.js');
  const started = performance.now();
  // Exactly what `damhub index` does (src/cli/library.ts), minus the progress bar.
  const index = new LibraryIndex(path.join(out, 'library.sqlite'));
  const renditions = new Renditions(path.join(out, 'renditions'));
  const scanner = new LibraryScanner(root, index, renditions, out, systemClock);
  const report = await scanner.scan({ concurrency });
  index.close();
  const seconds = (performance.now() - started) / 1000;
  const files = report.added + report.updated + report.unchanged;
  // The renditions are made in the image pool's child processes (src/images/pool.ts): their peak
  // RSS and, once they have exited, their CPU time count for this side too (process.resourceUsage()
  // is this process alone: without them the library's CPU per file and RSS read low).
  const pool = renditions.images.pool;
  const poolRssMB = pool.pids().reduce((sum, pid) => sum + rssOf(pid).peakMiB, 0); // MiB, as maxRssMB
  await pool.close();
  return { side: 'library', files, seconds, filesPerSec: files / seconds, ...usage(seconds), poolRssMB, failed: report.failed.length };
}

/**
 * sharp alone: the same two renditions renditions.ts makes, with the same options, written to
 * files, `concurrency` files in flight (the scanner's default). Nothing else: no hashing, no
 * metadata, no copy, no index.
 */
async function childSharp(root: string, out: string, concurrency: number): Promise<SideResult> {
  const { RENDITIONS } = await import('../src/providers/library/renditions.js');
  const started = performance.now();
  const files = listFiles(root);
  let next = 0;
  const worker = async () => {
    while (next < files.length) {
      const i = next++;
      const src = path.join(root, files[i]!);
      const dir = path.join(out, String(i));
      fs.mkdirSync(dir, { recursive: true });
      const buf = await sharp(src, { failOn: 'none', limitInputPixels: 268_402_689, sequentialRead: true })
        .rotate()
        .resize(RENDITIONS.preview.size, RENDITIONS.preview.size, { fit: 'inside', withoutEnlargement: true })
        .flatten({ background: '#ffffff' })
        .jpeg({ quality: RENDITIONS.preview.quality, mozjpeg: false })
        .toBuffer();
      await fs.promises.writeFile(path.join(dir, '1-preview.jpg'), buf);
      const small = await sharp(buf).resize(RENDITIONS.thumbnail.size, RENDITIONS.thumbnail.size, { fit: 'inside', withoutEnlargement: true }).jpeg({ quality: RENDITIONS.thumbnail.quality }).toBuffer();
      await fs.promises.writeFile(path.join(dir, '1-thumbnail.jpg'), small);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - started) / 1000;
  return { side: 'sharp', files: files.length, seconds, filesPerSec: files.length / seconds, ...usage(seconds) };
}

/**
 * Peak RSS of this process and its CPU use over the timed part: all threads, user + system, plus
 * the CPU of child processes that have exited (the library's image pool: /proc/self/stat's cutime
 * and cstime), so both sides count every core they used.
 */
function usage(seconds: number): { maxRssMB: number; cpuPercent: number } {
  const u = process.resourceUsage();
  return { maxRssMB: u.maxRSS / 1024, cpuPercent: ((cpuMicros() - cpuAtStart) / 1e6 / seconds) * 100 };
}
let cpuAtStart = 0;

/** This process's CPU time and that of its exited children, in µs. */
function cpuMicros(): number {
  const u = process.resourceUsage();
  return u.userCPUTime + u.systemCPUTime + childrenCpuMicros();
}

/** cutime + cstime of /proc/self/stat (fields 16 and 17, in clock ticks of 1/100 s on Linux). */
function childrenCpuMicros(): number {
  try {
    const stat = fs.readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from 3 (state) on
    return (Number(fields[13]) + Number(fields[14])) * 10_000;
  } catch {
    return 0;
  }
}

function runChild(side: string, root: string, out: string, concurrency: number): Promise<SideResult> {
  return new Promise((resolve, reject) => {
    const child = trackChild(spawn(process.execPath, [new URL(import.meta.url).pathname, '--child', side, '--root', root, '--out', out, '--concurrency', String(concurrency)], { stdio: ['ignore', 'pipe', 'inherit'] }));
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`${side} child exited ${code}: ${stdout}`));
      resolve(JSON.parse(stdout.trim().split('\n').pop()!) as SideResult);
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Rounds and report
// ---------------------------------------------------------------------------------------------

/** One side of one round, as appended to the results file. */
interface ResultLine extends SideResult { at: string; count: number; concurrency: number; round: number; position: number }

/**
 * Pairs the lines of a results file by round (a round's two sides may come from two invocations,
 * `--side library --round 7` and `--side sharp --round 7`) and prints per-round ratios, medians
 * and peak RSS.
 */
function summarize(lines: ResultLine[]): void {
  const byRound = new Map<number, Partial<Record<'library' | 'sharp', ResultLine>>>();
  for (const l of lines) byRound.set(l.round, { ...byRound.get(l.round), [l.side]: l });
  const rounds = [...byRound.entries()].filter(([, r]) => r.library && r.sharp).sort((x, y) => x[0] - y[0]).map(([n, r]) => ({ n, library: r.library!, sharp: r.sharp!, ratio: r.library!.filesPerSec / r.sharp!.filesPerSec }));
  if (!rounds.length) return void console.log('no complete round yet');
  const fmt = (n: number, d = 1) => n.toFixed(d);
  const cpuMs = (s: SideResult) => (s.cpuPercent / 100 / s.filesPerSec) * 1000;
  console.log(`\n${rounds.length} round(s) of ${[...new Set(rounds.map((r) => r.library.count))].join('/')} files, ${rounds[0]!.library.concurrency} in flight`);
  console.log('| round | first | library files/s | sharp alone files/s | ratio | library CPU ms/file | sharp CPU ms/file | library peak RSS MB | sharp peak RSS MB |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const r of rounds) {
    const first = r.library.at < r.sharp.at ? 'library' : 'sharp';
    console.log(`| ${r.n} | ${first} | ${fmt(r.library.filesPerSec)} | ${fmt(r.sharp.filesPerSec)} | ${fmt(r.ratio, 3)} | ${fmt(cpuMs(r.library))} | ${fmt(cpuMs(r.sharp))} | ${fmt(r.library.maxRssMB, 0)} | ${fmt(r.sharp.maxRssMB, 0)} |`);
  }
  const lib = rounds.map((r) => r.library), sh = rounds.map((r) => r.sharp);
  console.log(`medians: library ${fmt(median(lib.map((s) => s.filesPerSec)))} files/s, sharp alone ${fmt(median(sh.map((s) => s.filesPerSec)))} files/s, ratio ${fmt(median(rounds.map((r) => r.ratio)), 3)} (target ≥ 0.9, issue 22); CPU per file library ${fmt(median(lib.map(cpuMs)))} ms, sharp alone ${fmt(median(sh.map(cpuMs)))} ms`);
  const pool = lib.some((s) => s.poolRssMB !== undefined) ? Math.max(...lib.map((s) => s.poolRssMB ?? 0)) : null;
  console.log(`peak RSS: library ${fmt(Math.max(...lib.map((s) => s.maxRssMB)), 0)} MB${pool === null ? ' (its image pool not measured: results of an older run)' : ` + its image pool ${fmt(pool, 0)} MB`}, sharp alone ${fmt(Math.max(...sh.map((s) => s.maxRssMB)), 0)} MB`);
  const count = [...new Set(rounds.map((r) => r.library.count))].join('-');
  result(`indexing-vs-sharp-${count}`, median(rounds.map((r) => r.ratio)), 'x', ['>=', 0.9]);
  result(`indexing-library-files-per-s-${count}`, median(lib.map((s) => s.filesPerSec)), 'files/s');
  result(`indexing-sharp-files-per-s-${count}`, median(sh.map((s) => s.filesPerSec)), 'files/s');
  result(`indexing-library-cpu-per-file-${count}`, median(lib.map(cpuMs)), 'ms');
  result(`indexing-library-peak-rss-${count}`, Math.max(...lib.map((s) => s.maxRssMB)), 'MB');
  if (pool !== null) result(`indexing-library-pool-peak-rss-${count}`, pool, 'MB');
  result(`indexing-sharp-peak-rss-${count}`, Math.max(...sh.map((s) => s.maxRssMB)), 'MB');
  reportResults();
}

function readLines(file: string): ResultLine[] {
  if (!fs.existsSync(file)) return [];
  return fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as ResultLine);
}

async function main(): Promise<void> {
  if (args.child) {
    const fn = args.child === 'library' ? childLibrary : childSharp;
    // Module loading is not timed.
    await Promise.all(['index/sqlite', 'renditions', 'scanner'].map((m) => import(`../src/providers/library/${m}.js`)));
    cpuAtStart = cpuMicros();
    const r = await fn(args.root!, args.out!, Number(args.concurrency ?? DEFAULT_SCAN_CONCURRENCY));
    process.stdout.write(`${JSON.stringify(r)}\n`);
    return;
  }
  if (args.summarize) {
    summarize(readLines(args.summarize));
    return;
  }
  const count = Number(args.count);
  const files = await ensureSet(count);
  const total = files.reduce((s, f) => s + f.bytes, 0);
  const mps = files.map((f) => (f.width * f.height) / 1e6);
  console.log(`set: ${files.length} JPEGs in ${setDir()}, ${(total / 2 ** 30).toFixed(2)} GiB, ${Math.min(...mps).toFixed(1)}–${Math.max(...mps).toFixed(1)} MP (mean ${(mps.reduce((a, b) => a + b, 0) / mps.length).toFixed(1)}), ${files.filter((f) => f.exif).length} with EXIF, ${files.filter((f) => f.iptc).length} with IPTC+XMP`);
  if (args['generate-only']) return;

  // Both sides get the library's own default number of files in flight unless told otherwise.
  const concurrency = Number(args.concurrency ?? DEFAULT_SCAN_CONCURRENCY);
  const resultsFile = args.results ?? path.join(args.data!, 'results', `index-${count}.jsonl`);
  fs.mkdirSync(path.dirname(resultsFile), { recursive: true });
  const runDir = removeOnExit(path.join(args.data!, 'run'));
  fs.rmSync(runDir, { recursive: true, force: true });
  // The files to index: hard links to the first `count` images of the set, in the same folders.
  const root = path.join(runDir, 'library');
  for (const f of files) {
    fs.mkdirSync(path.join(root, path.dirname(f.rel)), { recursive: true });
    fs.linkSync(path.join(setDir(), f.rel), path.join(root, f.rel));
  }
  // Warm the page cache so neither side pays for the first read from disk.
  for (const f of files) fs.readFileSync(path.join(root, f.rel));

  // Round numbers continue those already in the results file unless --round is given (to run
  // the two sides of one round in two invocations, each within the shared CPU lock's time).
  const previous = readLines(resultsFile);
  const firstRound = args.round ? Number(args.round) : Math.max(0, ...previous.map((l) => l.round)) + 1;
  const only = args.side as 'library' | 'sharp' | undefined;
  if (only && only !== 'library' && only !== 'sharp') throw new Error('--side is library or sharp');
  for (let i = 0; i < Number(args.rounds); i++) {
    const round = firstRound + i;
    // Alternate which side goes first: odd rounds start with --start-with, even rounds with the other.
    const startWith = args['start-with'] === 'sharp' ? 'sharp' : 'library';
    const other = startWith === 'library' ? 'sharp' : 'library';
    const order = only ? [only] : round % 2 ? [startWith, other] : [other, startWith];
    for (const [position, side] of order.entries()) {
      const out = path.join(runDir, `out-${side}`);
      fs.rmSync(out, { recursive: true, force: true });
      fs.mkdirSync(out, { recursive: true });
      const r = await runChild(side, root, out, concurrency);
      if (r.files !== files.length) throw new Error(`${side} handled ${r.files} of ${files.length} files`);
      if (r.failed) throw new Error(`${side}: ${r.failed} files failed`);
      console.log(`round ${round} ${side}: ${r.filesPerSec.toFixed(1)} files/s (${r.seconds.toFixed(1)} s), peak RSS ${r.maxRssMB.toFixed(0)} MB, CPU ${r.cpuPercent.toFixed(0)} %`);
      fs.appendFileSync(resultsFile, `${JSON.stringify({ ...r, at: new Date().toISOString(), count, concurrency, round, position } satisfies ResultLine)}\n`);
      fs.rmSync(out, { recursive: true, force: true });
    }
  }
  summarize(readLines(resultsFile).filter((l) => l.count === count && l.concurrency === concurrency));
  console.log(`(rounds appended to ${resultsFile}; cpus: ${os.cpus().length}, UV_THREADPOOL_SIZE ${process.env.UV_THREADPOOL_SIZE ?? 'default (4)'}, sharp concurrency ${sharp.concurrency()})`);
}

await main();
