/**
 * The child process of the image pool (pool.ts): every decode of untrusted image bytes runs here,
 * one job at a time, so that a costly decode uses this process's CPU, memory and libuv threads,
 * never the server's, and can be stopped by killing the process (native work in flight cannot be
 * stopped any other way). The parent sends a job, this process answers one message per job.
 *
 * Each job reads the header first (sharp's metadata(): header only; for a JPEG also its marker
 * stream, jpeg.ts), checks the declared size and the decode budget (budget.ts), and only then
 * decodes the first page, once.
 *
 * The pool may start this process under a memory limit (pool.ts, imageDecoderMemoryMb). A decoder
 * that hits it gets an allocation failure: the job is answered 'out-of-memory' and this process
 * then exits, since a process that ran out of memory halfway through native code is not trusted
 * with the next job (the pool forks a fresh one).
 */
import fs from 'node:fs';
import sharp, { type Metadata, type Sharp } from 'sharp';
import { decodeCost, MAX_JPEG_SCANS, overBudgetMessage, RASTER_FORMATS } from './budget.js';
import { jpegStructure } from './jpeg.js';
import type { JobReply, WorkerJob } from './jobs.js';

// One libvips thread per job (the pool's size is the concurrency) and no operation cache: jobs are
// unrelated, and the cache would only hold memory between them.
sharp.concurrency(1);
sharp.cache(false);

class JobFailure extends Error {
  constructor(readonly kind: 'over-budget' | 'undecodable' | 'unsupported' | 'out-of-memory', message: string) {
    super(message);
  }
}

/** How libjpeg, libvips/GLib and V8 word an allocation that failed. */
const OUT_OF_MEMORY = /insufficient memory|out of memory|failed to allocate|cannot allocate|memory allocation failed|array buffer allocation failed/i;

/** A decode failure: out of memory (the process's limit) or damaged content. */
function decodeFailure(e: unknown, what: string): JobFailure {
  const msg = (e as Error)?.message?.split('\n')[0] ?? String(e);
  if (OUT_OF_MEMORY.test((e as Error)?.message ?? '')) return new JobFailure('out-of-memory', `decoding the image ran out of the decoder's memory limit (${msg})`);
  return new JobFailure('undecodable', `${what} (${msg})`);
}

/**
 * Library files may also be SVG (the renditions always rendered them; an owner's drawings), never
 * a search-by-image reference: an SVG's cost lies in its content, which only the deadline bounds.
 */
const RENDERABLE = new Set([...RASTER_FORMATS, 'svg']);

async function header(input: Buffer | string, target: number, budget: number, maxPixels: number, accepted: Set<string> = RASTER_FORMATS): Promise<{ format: string; width: number; height: number }> {
  let meta: Metadata;
  try {
    meta = await sharp(input, { limitInputPixels: false }).metadata();
  } catch (e) {
    if (OUT_OF_MEMORY.test((e as Error)?.message ?? '')) throw decodeFailure(e, '');
    throw new JobFailure('undecodable', 'the content is not an image (it could not be decoded)');
  }
  if (!meta.format || !accepted.has(meta.format)) throw new JobFailure('unsupported', `${meta.format ?? 'this'} images are not accepted; send JPEG, PNG, WebP, GIF, TIFF, AVIF or HEIF`);
  // A JPEG's scans and coefficient buffer cost at full size whatever the output (budget.ts).
  let jpeg: ReturnType<typeof jpegStructure> = null;
  try {
    jpeg = meta.format === 'jpeg' ? jpegStructure(input) : null;
  } catch {
    throw new JobFailure('undecodable', 'the JPEG file could not be read');
  }
  const c = decodeCost(meta, target, jpeg);
  if (!c.width || !c.height) throw new JobFailure('undecodable', 'the image has no dimensions');
  if (c.width * c.height > maxPixels) throw new JobFailure('over-budget', `the image declares ${c.width}×${c.height} pixels, over the limit of ${maxPixels}`);
  if (jpeg && jpeg.scans.length > MAX_JPEG_SCANS) throw new JobFailure('over-budget', `the JPEG image has ${jpeg.scans.length} scans, over the limit of ${MAX_JPEG_SCANS} (each scan walks the whole image)`);
  if (c.cost > budget) throw new JobFailure('over-budget', overBudgetMessage(c, budget));
  return { format: c.format, width: c.width, height: c.height };
}

async function run(job: WorkerJob): Promise<unknown> {
  if (job.op === 'analyse') {
    const input = typeof job.input === 'string' ? job.input : Buffer.from(job.input.buffer, job.input.byteOffset, job.input.byteLength);
    const target = Math.max(...job.outputs.map((o) => Math.max(o.width, o.height)));
    // Several outputs come from one intermediate of 4× the largest (below): the shrink-on-load the
    // budget counts on is the one that intermediate allows.
    const side = job.outputs.length === 1 ? target : Math.max(256, 4 * target);
    const h = await header(input, side, job.budget, job.maxPixels);
    // pages: 1 — only the first page or frame of a multi-page image is ever decoded.
    const open = () => sharp(input, { limitInputPixels: false, failOn: job.failOn, pages: 1, page: 0, sequentialRead: true }).rotate().flatten({ background: '#ffffff' });
    const finish = (p: Sharp, o: (typeof job.outputs)[number]) =>
      p.resize(o.width, o.height, { fit: o.fit, position: 'centre', kernel: 'cubic' }).removeAlpha().toColourspace('srgb').raw().toBuffer({ resolveWithObject: true });
    let outputs: Buffer[];
    try {
      if (job.outputs.length === 1) {
        // One output: straight from the file to it, as the descriptor always was.
        outputs = [(await finish(open(), job.outputs[0]!)).data];
      } else {
        // Several outputs from ONE decode: an intermediate at 4× the largest output (enough for
        // a good cubic reduction to each), then each output from it.
        const mid = await open().resize(side, side, { fit: 'inside', withoutEnlargement: true }).removeAlpha().toColourspace('srgb').raw().toBuffer({ resolveWithObject: true });
        const raw = { width: mid.info.width, height: mid.info.height, channels: 3 as const };
        outputs = [];
        for (const o of job.outputs) outputs.push((await finish(sharp(mid.data, { raw }), o)).data);
      }
    } catch (e) {
      throw decodeFailure(e, 'the image is damaged or truncated');
    }
    return { ...h, outputs };
  }
  if (job.op === 'render') {
    const h = await header(job.source, job.preview.size, job.budget, job.maxPixels ?? Number.MAX_SAFE_INTEGER, RENDERABLE);
    let preview: Buffer;
    try {
      // failOn 'none': a truncated library file still yields what could be decoded.
      preview = await sharp(job.source, { failOn: 'none', limitInputPixels: false, pages: 1, page: 0, sequentialRead: true })
        .rotate()
        .resize(job.preview.size, job.preview.size, { fit: 'inside', withoutEnlargement: true })
        .flatten({ background: '#ffffff' })
        .jpeg({ quality: job.preview.quality, mozjpeg: false })
        .toBuffer();
    } catch (e) {
      throw decodeFailure(e, 'the image could not be decoded');
    }
    const thumb = await sharp(preview).resize(job.thumbnail.size, job.thumbnail.size, { fit: 'inside', withoutEnlargement: true }).jpeg({ quality: job.thumbnail.quality }).toBuffer();
    await writeAtomic(job.preview.file, preview);
    await writeAtomic(job.thumbnail.file, thumb);
    return h;
  }
  if (job.op === 'probe') {
    try {
      return await sharp(job.source, { limitInputPixels: false }).metadata();
    } catch (e) {
      throw new JobFailure('undecodable', (e as Error).message.split('\n')[0] ?? 'unreadable header');
    }
  }
  if (job.op === 'ping') return { pid: process.pid };
  throw new Error(`unknown job ${(job as { op: string }).op}`);
}

async function writeAtomic(file: string, data: Buffer): Promise<void> {
  const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  await fs.promises.writeFile(tmp, data);
  await fs.promises.rename(tmp, file);
}

process.on('message', (msg: { id: number; job: WorkerJob }) => {
  run(msg.job).then(
    (result) => process.send!({ id: msg.id, ok: true, result } satisfies JobReply),
    (e: unknown) => {
      const f = e instanceof JobFailure ? e : OUT_OF_MEMORY.test((e as Error)?.message ?? '') ? decodeFailure(e, '') : null;
      const reply: JobReply = { id: msg.id, ok: false, kind: f?.kind ?? 'failed', message: (f ?? (e as Error)).message.split('\n')[0] ?? 'failed' };
      // Out of memory: answer, then go (the pool forks a fresh process for the next job).
      if (f?.kind === 'out-of-memory') process.send!(reply, () => process.exit(0));
      else process.send!(reply);
    },
  );
});
// The parent going away (crash, kill) ends this process too.
process.on('disconnect', () => process.exit(0));
// sharp is loaded: from now on a job's deadline measures its decode, not this process's start.
process.send!({ ready: true });
