/**
 * The built-in image descriptor used by search by image: a 64-component int8 vector plus a 64-bit
 * perceptual hash, both computed from one decode of the image to 40×40 RGB, of which the central
 * 32×32 is described.
 *
 * - Structure: the low-frequency 2-D DCT coefficients of the 32×32 luma (the DC term dropped, so
 *   a global brightness offset does not count; the vector is L2-normalised, so a global gain does
 *   not either). Low frequencies survive resizing, recompression, blur, small rotations and
 *   moderate crops; higher ones are weighted up a little (natural images have a 1/f spectrum, and
 *   without it the first two coefficients would dominate every comparison).
 * - Colour layout: mean chroma (Cb, Cr) of a 3×3 grid, so two pictures of the same structure in
 *   different colours are told apart.
 * - pHash: the signs of the 8×8 luma DCT block against its median (the classic perceptual hash),
 *   used to boost near-duplicates (see vector-index.ts).
 *
 * The cosine of two vectors is their int8 dot product / 127²; see docs/image-search.md.
 */
import sharp from 'sharp';
import type { OutputSpec } from '../../../images/jobs.js';

export const DIM = 64;
/** int8 scale: a unit vector's components are stored as round(x·127). */
export const SCALE = 127;
const N = 32;
/**
 * Border dropped before describing (pixels of the N+2·MARGIN decode, per side): rotations fill the
 * corners, crops cut the edges, and letterboxing adds bars there; the centre is what stays.
 */
const MARGIN = 4;
const DECODE = N + 2 * MARGIN;
const LUMA_COEFS = DIM - 18;
const CHROMA_GRID = 3;
/** Weight of the chroma layout relative to the (unit-norm) luma structure. */
const CHROMA_WEIGHT = 0.55;
/** Frequency emphasis: coefficient (u,v) is multiplied by (u+v)^ALPHA. */
const ALPHA = 0.6;

export interface Descriptor {
  /** DIM signed bytes, an L2-normalised float vector × 127. */
  vector: Int8Array;
  /** 64-bit perceptual hash, big-endian. */
  phash: Uint8Array;
}

export interface DecodeLimits {
  /** Refuse images declaring more pixels than this (image bombs). */
  limitInputPixels: number;
  /** sharp's failOn: 'error' for untrusted query images, 'none' at indexing time. */
  failOn: 'none' | 'truncated' | 'error' | 'warning';
}

/**
 * The decode a descriptor needs (EXIF orientation applied, alpha flattened on white, stretched to
 * 40×40 with a cubic kernel, sRGB): what the image pool (src/images/worker.ts) produces from
 * untrusted bytes, so the server never decodes them itself.
 */
export const DESCRIPTOR_OUTPUT: OutputSpec = { width: DECODE, height: DECODE, fit: 'fill' };

/**
 * Decodes an image in THIS process and describes it: for benchmarks and trusted inputs only. The
 * hub decodes untrusted images in its image pool (DESCRIPTOR_OUTPUT) and calls describeDecoded.
 */
export async function describeImage(input: Buffer | string, limits: DecodeLimits): Promise<Descriptor> {
  const { data } = await sharp(input, { limitInputPixels: limits.limitInputPixels, failOn: limits.failOn })
    .rotate() // honour EXIF orientation, as renditions do
    .flatten({ background: '#ffffff' })
    .resize(DECODE, DECODE, { fit: 'fill', kernel: 'cubic' })
    .removeAlpha()
    .toColourspace('srgb')
    .raw()
    .toBuffer({ resolveWithObject: true });
  return describeDecoded(data);
}

/** The descriptor of a DESCRIPTOR_OUTPUT decode (40×40 RGB). */
export function describeDecoded(data: Uint8Array): Descriptor {
  if (data.length !== DECODE * DECODE * 3) throw new Error(`unexpected decode of ${data.length} bytes, ${DECODE}×${DECODE}×3 expected`);
  const centre = new Uint8Array(N * N * 3);
  for (let r = 0; r < N; r++) centre.set(data.subarray(((r + MARGIN) * DECODE + MARGIN) * 3, ((r + MARGIN) * DECODE + MARGIN + N) * 3), r * N * 3);
  return describePixels(centre);
}

// Coefficient order: by total frequency u+v, then u; DC (0,0) excluded.
const ORDER: [number, number][] = [];
for (let s = 1; ORDER.length < LUMA_COEFS; s++) for (let u = 0; u <= s && ORDER.length < LUMA_COEFS; u++) if (u < N && s - u < N) ORDER.push([u, s - u]);
const MAXF = Math.max(8, ...ORDER.map(([u, v]) => Math.max(u, v) + 1));
// Cosine basis rows for the frequencies used: COS[u*N + x] = cos(π(2x+1)u / 2N).
const COS = new Float64Array(MAXF * N);
for (let u = 0; u < MAXF; u++) for (let x = 0; x < N; x++) COS[u * N + x] = Math.cos((Math.PI * (2 * x + 1) * u) / (2 * N));

/** 32×32 RGB (row-major, 3 bytes per pixel) → descriptor. Exported for tests and benchmarks. */
export function describePixels(rgb: Uint8Array): Descriptor {
  const y = new Float64Array(N * N);
  const chromaSum = new Float64Array(CHROMA_GRID * CHROMA_GRID * 2); // (Cb, Cr) sums per grid cell
  const counts = new Float64Array(CHROMA_GRID * CHROMA_GRID);
  for (let i = 0, p = 0; i < N * N; i++, p += 3) {
    const r = rgb[p]!, g = rgb[p + 1]!, b = rgb[p + 2]!;
    y[i] = 0.299 * r + 0.587 * g + 0.114 * b;
    const cell = Math.floor(((i / N) | 0) * CHROMA_GRID / N) * CHROMA_GRID + Math.floor((i % N) * CHROMA_GRID / N);
    chromaSum[cell * 2] += -0.168736 * r - 0.331264 * g + 0.5 * b;
    chromaSum[cell * 2 + 1] += 0.5 * r - 0.418688 * g - 0.081312 * b;
    counts[cell]++;
  }
  // Separable DCT restricted to the MAXF lowest frequencies: rows first, then columns.
  const tmp = new Float64Array(N * MAXF); // tmp[yRow*MAXF + v] = Σx y[yRow][x]·cos(v,x)
  for (let r = 0; r < N; r++) {
    for (let v = 0; v < MAXF; v++) {
      let s = 0;
      for (let x = 0; x < N; x++) s += y[r * N + x]! * COS[v * N + x]!;
      tmp[r * MAXF + v] = s;
    }
  }
  const coef = (u: number, v: number) => {
    let s = 0;
    for (let r = 0; r < N; r++) s += tmp[r * MAXF + v]! * COS[u * N + r]!;
    return s;
  };
  const luma = new Float64Array(LUMA_COEFS);
  ORDER.forEach(([u, v], i) => {
    luma[i] = coef(u, v) * Math.pow(u + v, ALPHA);
  });
  normalise(luma);
  const chroma = new Float64Array(chromaSum.length);
  for (let c = 0; c < counts.length; c++) {
    chroma[c * 2] = chromaSum[c * 2]! / counts[c]!;
    chroma[c * 2 + 1] = chromaSum[c * 2 + 1]! / counts[c]!;
  }
  // Chroma is scaled by the luma contrast scale so a global gain (brightness) leaves the ratio alone.
  const lumaEnergy = Math.sqrt(ORDER.reduce((s, [u, v]) => s + coef(u, v) ** 2, 0)) / N || 1;
  const full = new Float64Array(DIM);
  full.set(luma, 0);
  for (let i = 0; i < chroma.length; i++) full[LUMA_COEFS + i] = (chroma[i]! / Math.max(lumaEnergy, 8)) * CHROMA_WEIGHT;
  normalise(full);
  const vector = new Int8Array(DIM);
  for (let i = 0; i < DIM; i++) vector[i] = Math.max(-127, Math.min(127, Math.round(full[i]! * SCALE)));

  // pHash: 8×8 block (DC included as in the classic definition) against its median.
  const block: number[] = [];
  for (let u = 0; u < 8; u++) for (let v = 0; v < 8; v++) block.push(u === 0 && v === 0 ? 0 : coef(u, v));
  const median = [...block.slice(1)].sort((a, b) => a - b)[31]!;
  const phash = new Uint8Array(8);
  for (let i = 1; i < 64; i++) if (block[i]! > median) phash[i >> 3]! |= 0x80 >> (i & 7);
  return { vector, phash };
}

function normalise(v: Float64Array): void {
  let s = 0;
  for (const x of v) s += x * x;
  const n = Math.sqrt(s);
  if (n > 1e-9) for (let i = 0; i < v.length; i++) v[i] = v[i]! / n;
}

/** Cosine similarity of two stored vectors. */
export function cosine(a: Int8Array, b: Int8Array): number {
  let s = 0;
  for (let i = 0; i < DIM; i++) s += a[i]! * b[i]!;
  return s / (SCALE * SCALE);
}

/** Hamming distance of two 64-bit hashes. */
export function hamming(a: Uint8Array, b: Uint8Array): number {
  let d = 0;
  for (let i = 0; i < 8; i++) {
    let x = a[i]! ^ b[i]!;
    while (x) {
      x &= x - 1;
      d++;
    }
  }
  return d;
}
