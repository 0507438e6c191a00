/**
 * Pixel dimensions and the EXIF/IPTC/XMP fields the library fills, for a connector's asset detail,
 * read from the head of the file only: one ranged GET of at most HEAD_BYTES (JPEG, PNG, WebP and
 * TIFF put their header and metadata blocks first), under the thumbnail time budget, parsed by the
 * same code as the library's (src/providers/metadata/) with the header read in the image pool.
 * A server that ignores Range answers 200 with the whole file: its body is cut at HEAD_BYTES all
 * the same. Any failure leaves the asset as listed: the detail never fails for its metadata.
 * It takes one of the hub-wide read slots (src/net/read-slots.ts) or is skipped when none is free,
 * and stops when the call does (deadline, or the client left).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ImageWork } from '../../images/pool.js';
import { extractMetadata, type ExtractedMetadata } from '../metadata/index.js';
import type { Asset } from '../model.js';
import { discard, type UpstreamResponse } from './http.js';

/** Enough for the EXIF APP1 segment (≤ 64 KB) and most XMP packets, small enough to be cheap. */
export const HEAD_BYTES = 256 * 1024;

/**
 * Reads the first HEAD_BYTES of `up` (cut there, at `timeoutMs`, and when `signal` fires: the call's
 * deadline passed or its client left), whatever the status said.
 */
async function headBytes(up: UpstreamResponse, timeoutMs: number, signal?: AbortSignal): Promise<Buffer | null> {
  if (up.status !== 200 && up.status !== 206) {
    discard(up.body);
    return null;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  const timer = setTimeout(() => discard(up.body), timeoutMs);
  const onAbort = () => discard(up.body);
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    if (signal?.aborted) return null;
    for await (const chunk of up.body) {
      chunks.push(chunk as Buffer);
      size += (chunk as Buffer).length;
      if (size >= HEAD_BYTES) break; // leaving the loop destroys the stream: the rest is never read
    }
  } catch {
    if (!size) return null; // cut at the deadline or failed before anything came
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
    discard(up.body);
  }
  if (signal?.aborted) return null;
  return Buffer.concat(chunks).subarray(0, HEAD_BYTES);
}

export async function readImageHead(up: UpstreamResponse, images: ImageWork, timeoutMs: number, signal?: AbortSignal): Promise<ExtractedMetadata | null> {
  const bytes = await headBytes(up, timeoutMs, signal);
  if (!bytes?.length) return null;
  const dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'damhub-head-'));
  try {
    const file = path.join(dir, 'head');
    await fs.promises.writeFile(file, bytes, { mode: 0o600 });
    const m = await extractMetadata(file, images);
    return m.kind === 'image' ? m : null;
  } catch {
    return null;
  } finally {
    await fs.promises.rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** Fills an asset's dimensions and metadata fields from the head read, as the library maps its own. */
export function withImageHead(a: Asset, m: ExtractedMetadata | null): Asset {
  if (!m) return a;
  if (m.width) a.xSizePx = m.width;
  if (m.height) a.ySizePx = m.height;
  if (Object.keys(m.exif).length) a.exif = m.exif;
  if (Object.keys(m.iptc).length) a.iptc = m.iptc;
  if (Object.keys(m.xmp).length) a.xmp = m.xmp;
  // What the DAM itself says (object headers, properties) wins over what the file embeds.
  a.title ??= m.title;
  a.caption ??= m.caption;
  a.copyright ??= m.copyright;
  for (const k of ['title', 'caption', 'copyright'] as const) if (a[k] === undefined) delete a[k];
  if (m.colorSpace) a.colorSpace = m.colorSpace;
  if (m.keywords.length) a.keywords = m.keywords;
  if (m.width && m.height) (a.values ??= []).push({ id: 'dimensions', type: 'TEXT', name: 'Dimensions', value: `${m.width} × ${m.height}` });
  if (m.exif.cameraModel) (a.values ??= []).push({ id: 'cameraModel', type: 'TEXT', name: 'Camera model', value: m.exif.cameraModel });
  return a;
}
