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
 */

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

export interface DecodeCost {
  format: string;
  /** Declared size of the page that is decoded. */
  width: number;
  height: number;
  /** Pixels the decoder really produces (after shrink-on-load). */
  decodedPixels: number;
  /** decodedPixels × format weight × sample-size factor: what is compared with the budget. */
  cost: number;
}

/**
 * The cost of decoding the first page of an image for an output that fits in `target` × `target`
 * (the largest output the caller asks for; shrink-on-load never goes below it).
 */
export function decodeCost(h: ImageHeader, target: number): DecodeCost {
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
  return { format, width, height, decodedPixels, cost };
}

/** The reason an image is over budget, for the client: which format, what it declares, the budget. */
export function overBudgetMessage(c: DecodeCost, budget: number): string {
  const shrunk = c.decodedPixels < c.width * c.height ? ` (decoded at reduced size: ${c.decodedPixels} pixels)` : '';
  return `the ${c.format.toUpperCase()} image declares ${c.width}×${c.height} pixels${shrunk}; decoding it would cost ${Math.round(c.cost / 1e6)} M pixel-equivalents, over the decode budget of ${Math.round(budget / 1e6)} M (${c.format} counts ${FORMAT_WEIGHT[c.format] ?? 8}× per pixel${c.format === 'jpeg' ? ', after shrink-on-load' : ', every pixel is decoded'})`;
}
