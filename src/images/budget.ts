/**
 * The decode budget: what decoding an untrusted image will really cost, computed from its header
 * before a single pixel is decoded (docs/image-search.md, "Decode budget").
 *
 * Why not just width × height: the cost of a decode depends on the format. A JPEG can be decoded
 * at 1/2, 1/4 or 1/8 of its size per axis (its DCT is scaled on load), so a 50 MP photo decoded
 * for a 40 px descriptor touches under 1 MP. PNG, GIF, TIFF, AVIF and HEIF have no such shortcut:
 * every pixel is decoded, and AVIF/HEIF (AV1/HEVC intra frames) cost several times more per pixel
 * than PNG. WebP can scale while decoding, but libwebp still visits every macroblock (the CPU is
 * the full size's), so it is counted in full. Only the first page of a multi-page or animated
 * image is ever decoded (`pages: 1`), so only it is counted. 16-bit samples double the memory.
 *
 * Cost unit: one 8-bit pixel of a PNG/JPEG decode ("pixel-equivalents"). Weights come from
 * measured decode throughput on one core (bench/image-decode.ts): JPEG/PNG/TIFF ≈ 300–900 MP/s on
 * flat content, WebP and GIF about half that, AVIF/HEIF ≈ 30–40 MP/s.
 *
 * A JPEG has two costs that shrink-on-load does not reduce (issue 28; jpeg.ts reads them from the
 * marker stream): every scan walks every 8×8 block of its components (entropy decoding, at full
 * resolution), and a progressive file is first decoded into a buffer of all its coefficients at
 * full resolution (2 bytes per sample per component). So a JPEG costs the larger of
 * - time: the decoded pixels + one pixel-equivalent per 8 samples walked by each scan (measured:
 *   a scan over 49 M samples takes about as long as decoding 5–6 M pixels), and
 * - memory: the coefficient buffer's bytes / 3 (one pixel-equivalent = one decoded RGB pixel, 3 B),
 * and a file with more than MAX_JPEG_SCANS scans is refused outright (libjpeg's default scripts
 * have 6–10, mozjpeg's about 20: hundreds are only ever an attack on the decoder's time).
 */
import { coefficientBytes, scanSamples, type JpegStructure } from './jpeg.js';

/** What the header says (sharp's metadata(), which reads the header only). */
export interface ImageHeader {
  format?: string;
  width?: number;
  height?: number;
  /** Height of one page of a multi-page image (animated GIF/WebP), when it differs from height. */
  pageHeight?: number;
  pages?: number;
  /** sharp's depth name: 'uchar' (8 bit), 'ushort' (16 bit), 'float', ... */
  depth?: string;
  channels?: number;
}

/** Relative cost per decoded pixel, by sharp's format name. */
export const FORMAT_WEIGHT: Readonly<Record<string, number>> = {
  jpeg: 1,
  png: 1,
  tiff: 1,
  webp: 2,
  gif: 2,
  heif: 4, // AVIF and HEIC both report 'heif'
  avif: 4,
  // Library files only (never a reference): rasterised at its declared size at most.
  svg: 4,
};

/** Formats the hub decodes from untrusted bytes; anything else is refused before decoding. */
export const RASTER_FORMATS = new Set(['jpeg', 'png', 'tiff', 'webp', 'gif', 'heif', 'avif']);

/** More scans than this: refused whatever the size (each scan has a fixed cost too). */
export const MAX_JPEG_SCANS = 1000;

/** Samples walked by scans per pixel-equivalent (see above). */
const SAMPLES_PER_PE = 8;
/** Bytes of coefficient buffer per pixel-equivalent. */
const COEFFICIENT_BYTES_PER_PE = 3;

export interface DecodeCost {
  format: string;
  /** Declared size of the page that is decoded. */
  width: number;
  height: number;
  /** Pixels the decoder really produces (after shrink-on-load). */
  decodedPixels: number;
  /** decodedPixels × format weight × sample-size factor (JPEG: see above): what is compared with the budget. */
  cost: number;
  /** JPEG only: scans, and the bytes of the coefficient buffer (0: decoded in one sequential pass). */
  scans?: number;
  coefficientBytes?: number;
  /** JPEG only: which of its costs decided `cost`. */
  bound?: 'pixels' | 'scans' | 'coefficients';
}

/**
 * The cost of decoding the first page of an image for an output that fits in `target` × `target`
 * (the largest output the caller asks for; shrink-on-load never goes below it).
 */
export function decodeCost(h: ImageHeader, target: number, jpeg?: JpegStructure | null): DecodeCost {
  const format = h.format ?? 'unknown';
  const width = h.width ?? 0;
  const height = h.pageHeight && h.pageHeight > 0 && h.pageHeight < (h.height ?? 0) ? h.pageHeight : (h.height ?? 0);
  let shrink = 1;
  if (format === 'jpeg' && target > 0) {
    // libjpeg scales by 1/2, 1/4 or 1/8 on load; libvips picks the largest factor that still
    // leaves the image at least as large as the target on its shorter side.
    const room = Math.min(width, height) / target;
    while (shrink < 8 && room >= shrink * 2) shrink *= 2;
  }
  const decodedPixels = Math.ceil(width / shrink) * Math.ceil(height / shrink);
  const sample = h.depth === 'ushort' || h.depth === 'short' ? 2 : h.depth === 'float' || h.depth === 'uint' || h.depth === 'int' ? 4 : 1;
  const cost = decodedPixels * (FORMAT_WEIGHT[format] ?? 8) * sample;
  if (format !== 'jpeg' || !jpeg) return { format, width, height, decodedPixels, cost };
  const walked = Math.ceil(scanSamples(jpeg) / SAMPLES_PER_PE);
  const coefficients = coefficientBytes(jpeg);
  const memory = Math.ceil(coefficients / COEFFICIENT_BYTES_PER_PE);
  const time = cost + walked;
  const bound = memory > time ? 'coefficients' : walked > cost ? 'scans' : 'pixels';
  return { format, width, height, decodedPixels, cost: Math.max(time, memory), scans: jpeg.scans.length, coefficientBytes: coefficients, bound };
}

/** The reason an image is over budget, for the client: which format, what it declares, the budget. */
export function overBudgetMessage(c: DecodeCost, budget: number): string {
  const M = (n: number) => `${Math.round(n / 1e6)} M`;
  if (c.bound === 'coefficients') {
    return `the progressive JPEG image declares ${c.width}×${c.height} pixels; its decoder keeps every DCT coefficient at full size whatever the output (${Math.round((c.coefficientBytes ?? 0) / 2 ** 20)} MiB), which counts as ${M(c.cost)} pixel-equivalents, over the decode budget of ${M(budget)}`;
  }
  if (c.bound === 'scans') {
    return `the JPEG image declares ${c.width}×${c.height} pixels in ${c.scans} scans; each scan walks every block at full size, which counts as ${M(c.cost)} pixel-equivalents, over the decode budget of ${M(budget)}`;
  }
  const shrunk = c.decodedPixels < c.width * c.height ? ` (decoded at reduced size: ${c.decodedPixels} pixels)` : '';
  return `the ${c.format.toUpperCase()} image declares ${c.width}×${c.height} pixels${shrunk}; decoding it would cost ${Math.round(c.cost / 1e6)} M pixel-equivalents, over the decode budget of ${Math.round(budget / 1e6)} M (${c.format} counts ${FORMAT_WEIGHT[c.format] ?? 8}× per pixel${c.format === 'jpeg' ? ', after shrink-on-load' : ', every pixel is decoded'})`;
}
