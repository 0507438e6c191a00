/**
 * Thumbnails of connector items, made the same way for every connector (docs/connectors.md,
 * "Thumbnails"). Two sources:
 *
 * - the vendor's rendition, when the connector gives a `thumbnail` hook (Dropbox, Drive);
 * - hub-made from the original, through the connector's `download` hook (WebDAV, S3).
 *
 * Either way the upstream bytes are untrusted: they are streamed to a private temp file under a
 * byte cap and a time budget (a body that never ends is cut; the process holds one chunk at a
 * time), must start like a raster image, and are decoded and re-encoded in the hub's image pool under the per-file decode budget (src/images/), to the library's thumbnail
 * size and format (256 px JPEG). The result goes through the disk cache (thumb-cache.ts).
 *
 * What a picker sees when it goes wrong, decided here once:
 * - the upstream refuses (401/403/404, gone, unavailable): the connector's `integration-*` error,
 *   as for any other call — the user must know the file is not theirs to see;
 * - the bytes are no good (not an image, corrupt, over the decode budget or the byte cap, too
 *   slow): a generic icon (200, SVG, not cached by the browser), as the library does for files it
 *   cannot render — a tile, never a 500;
 * - the image pool is saturated: 503 `hub-unavailable` (try again), never cached.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { hubError } from '../../errors.js';
import { ImageJobError, type ImageWork } from '../../images/pool.js';
import { discard, type UpstreamResponse } from './http.js';
import type { ThumbCache } from './thumb-cache.js';

/**
 * The types the hub makes thumbnails of from a connector's original (WebDAV, S3): the raster
 * formats its image pool decodes (src/images/budget.ts, RASTER_FORMATS). Not SVG, which the
 * library does rasterise: a server's SVG is untrusted content (scripts, external references).
 */
export const HUB_THUMBNAIL_TYPES: ReadonlySet<string> = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp', 'image/tiff', 'image/avif', 'image/heic', 'image/heif']);

/** The library's thumbnail (src/providers/library/renditions.ts), so both look alike in a picker. */
export const THUMBNAIL = { size: 256, quality: 80 } as const;
/** The intermediate the render job makes on the way (the thumbnail is made from it). */
const PREVIEW = { size: 512, quality: 80 } as const;

export interface ThumbnailBudget {
  /** Largest upstream body read for one thumbnail (original or vendor rendition); over it: icon. */
  maxBytes: number;
  /** Longest wait for the whole upstream body; past it the body is cut: icon. */
  timeoutMs: number;
}

export type Thumbnail =
  | { kind: 'image'; bytes: Buffer; cached: boolean }
  | { kind: 'icon'; reason: string };

/** The cache key: provider, account scope, item and ETag/version, hashed (thumb-cache.ts). */
export function thumbnailKey(providerId: string, scope: string, item: Record<string, unknown>): string {
  return createHash('sha256').update(JSON.stringify([providerId, scope, canonical(item)])).digest('hex');
}

/** Default account scope: a hash of the connection's whole credentials (two accounts never share). */
export function credentialScope(cred: Record<string, unknown>): string {
  return createHash('sha256').update(JSON.stringify(canonical(cred))).digest('hex');
}

function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v && typeof v === 'object') return Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical((v as Record<string, unknown>)[k])]));
  return v;
}

class BadBytes extends Error {}

/**
 * Streams `body` into `file` (created private, never there before) one chunk at a time: the
 * process holds one chunk, whatever the original's size. At most `max` bytes within `timeoutMs`;
 * the first bytes must look like a raster image (sniffed as they arrive: a 48 MiB text file is
 * refused after its first chunk). Past the cap, the deadline or a bad sniff the body is cut
 * (BadBytes: an icon). When `signal` fires (no client waits any more) the body is destroyed,
 * which aborts the upstream request, and the signal's reason is thrown.
 */
export async function spoolCapped(body: UpstreamResponse['body'], file: string, max: number, timeoutMs: number, signal?: AbortSignal): Promise<number> {
  let cut: BadBytes | null = null;
  const stop = (why: BadBytes | null) => {
    cut ??= why;
    discard(body);
  };
  const timer = setTimeout(() => stop(new BadBytes(`the upstream body did not end within ${timeoutMs} ms`)), timeoutMs);
  const onAbort = () => stop(null);
  signal?.addEventListener('abort', onAbort, { once: true });
  let out: fs.promises.FileHandle | undefined;
  let size = 0;
  let head: Buffer | null = Buffer.alloc(0);
  try {
    if (signal?.aborted) throw signal.reason;
    out = await fs.promises.open(file, 'wx', 0o600);
    for await (const chunk of body) {
      const c = chunk as Buffer;
      size += c.length;
      if (size > max) throw new BadBytes(`the upstream body is over the cap of ${max} bytes`);
      if (head) {
        head = Buffer.concat([head, c.subarray(0, SNIFF_BYTES)]);
        if (head.length >= SNIFF_BYTES) {
          if (!looksRaster(head)) throw new BadBytes('the upstream bytes are not a raster image');
          head = null;
        }
      }
      // Awaited: the next chunk is not pulled before this one is on disk (backpressure upstream).
      await out.write(c);
    }
    if (head && !looksRaster(head)) throw new BadBytes('the upstream bytes are not a raster image');
    return size;
  } catch (e) {
    if (signal?.aborted) throw signal.reason;
    if (cut) throw cut;
    if (e instanceof BadBytes) throw e;
    if (!out) throw e; // the temp file could not be made: the hub's trouble, not the bytes'
    throw new BadBytes(`the upstream body could not be read (${(e as Error).message})`);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
    discard(body);
    await out?.close();
  }
}

/** Bytes enough to tell the raster formats looksRaster knows. */
const SNIFF_BYTES = 12;

/** Whether the bytes start like a raster format the pool decodes (never SVG from upstream). */
export function looksRaster(b: Buffer): boolean {
  if (b.length < 12) return false;
  if (b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return true; // JPEG
  if (b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return true; // PNG
  const a4 = b.toString('latin1', 0, 4);
  if (a4 === 'GIF8') return true;
  if (a4 === 'RIFF' && b.toString('latin1', 8, 12) === 'WEBP') return true;
  if (a4 === 'II*\0' || a4 === 'MM\0*') return true; // TIFF
  if (b.toString('latin1', 4, 8) === 'ftyp') return /^(avif|avis|heic|heix|mif1|msf1|hevc)$/.test(b.toString('latin1', 8, 12));
  return false;
}

/**
 * Upstream answer → thumbnail: status checked, body streamed to a private temp file under the byte
 * cap and the time budget (content sniffed as it arrives), decoded and re-encoded in the image
 * pool. BadBytes and decode failures become an icon; the pool being busy becomes 503; the signal
 * firing (no client waits any more) aborts the read or the decode; anything else (the upstream's
 * own errors) propagates.
 */
export async function renderUpstream(up: UpstreamResponse, images: ImageWork, budget: ThumbnailBudget, signal?: AbortSignal, owner?: string): Promise<Thumbnail> {
  if (up.status !== 200) {
    discard(up.body);
    return { kind: 'icon', reason: `the upstream answered ${up.status}` };
  }
  const declared = Number(first(up.headers['content-length']));
  if (Number.isFinite(declared) && declared > budget.maxBytes) {
    discard(up.body);
    return { kind: 'icon', reason: `the original is ${declared} bytes, over the thumbnail cap of ${budget.maxBytes}` };
  }
  // The pool's render job reads a file: the original goes to a private temp dir for the job's length.
  let dir: string;
  try {
    dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'damhub-thumb-'));
  } catch (e) {
    discard(up.body);
    throw e;
  }
  try {
    const source = path.join(dir, 'source');
    await spoolCapped(up.body, source, budget.maxBytes, budget.timeoutMs, signal);
    return { kind: 'image', bytes: await render(source, dir, images, signal, owner), cached: false };
  } catch (e) {
    if (e instanceof BadBytes) return { kind: 'icon', reason: e.message };
    if (e instanceof ImageJobError) {
      // As for a search-by-image reference at capacity: try again shortly, nothing was cached.
      if (e.kind === 'busy' || e.kind === 'aborted') throw hubError('hub-unavailable', `thumbnail: ${e.message}`, { headers: { 'retry-after': '1' } });
      return { kind: 'icon', reason: e.message };
    }
    throw e;
  } finally {
    await fs.promises.rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** Decodes the original at `source` in the pool (header checked against the budget first) into the thumbnail JPEG. */
async function render(source: string, dir: string, images: ImageWork, signal?: AbortSignal, owner?: string): Promise<Buffer> {
  const thumb = path.join(dir, 'thumbnail.jpg');
  await images.pool.run({
    op: 'render', source, budget: images.budget,
    preview: { file: path.join(dir, 'preview.jpg'), ...PREVIEW },
    thumbnail: { file: thumb, ...THUMBNAIL },
  }, { timeoutMs: images.timeoutMs, signal, owner });
  return fs.promises.readFile(thumb);
}

function first(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** The ETag of an upstream answer without weak marker or quotes, for comparing with a listing's. */
export function etagOf(up: UpstreamResponse): string | undefined {
  return normalEtag(first(up.headers.etag));
}

export function normalEtag(v: string | undefined): string | undefined {
  return v?.replace(/^W\//, '').replace(/^"|"$/g, '') || undefined;
}

/**
 * One thumbnail through the cache: a hit is served from disk; a miss runs `produce` once for all
 * concurrent callers and stores an image result unless `produce` says the bytes are not the
 * version the key names (the file changed since it was listed: served, never stored under the old
 * version's key). `signal`: this caller's client left; the production is aborted (its signal
 * fires) once no caller waits for it any more (ThumbCache.once).
 */
export async function cachedThumbnail(cache: ThumbCache, key: string, produce: (signal: AbortSignal) => Promise<Thumbnail & { stale?: boolean }>, signal?: AbortSignal): Promise<Thumbnail> {
  const hit = await cache.get(key);
  if (hit) return { kind: 'image', bytes: hit, cached: true };
  return cache.once(key, async (production) => {
    const t = await produce(production);
    if (t.kind === 'image' && !t.stale) await cache.put(key, t.bytes);
    return t.kind === 'image' ? { kind: 'image', bytes: t.bytes, cached: false } : t;
  }, signal);
}

/** A neutral tile for an image the hub could not make a thumbnail of. */
export function iconSvg(name: string): string {
  const ext = path.extname(name).slice(1, 6).toUpperCase().replace(/[^A-Z0-9]/g, '') || 'IMG';
  return `<svg xmlns="http://www.w3.org/2000/svg" width="256" height="256" viewBox="0 0 256 256"><rect x="48" y="24" width="160" height="208" rx="14" fill="#5b8def"/><path d="M168 24v40h40" fill="none" stroke="#fff" stroke-width="6" opacity=".6"/><text x="128" y="160" font-family="sans-serif" font-size="40" font-weight="700" fill="#fff" text-anchor="middle">${ext}</text></svg>`;
}
