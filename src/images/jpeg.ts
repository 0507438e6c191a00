/**
 * The structure of a JPEG file, read from its marker stream before any pixel is decoded: the
 * frame (SOF: size, progressive or not, each component's sampling factors) and every scan (SOS:
 * which components it codes). The decode budget (budget.ts) needs both, because two costs of a
 * JPEG decode do not shrink with shrink-on-load:
 *
 * - memory: a progressive file (or a sequential one whose components come in separate scans) is
 *   decoded into a buffer of ALL its DCT coefficients at full resolution — 128 bytes per 8×8
 *   block per component, 2 bytes per sample — before any output, whatever the output size;
 * - time: each scan walks every block of the components it codes, so a few hundred kilobytes of
 *   near-empty scans can keep a decoder busy for seconds.
 *
 * Parsing the marker stream correctly matters, since an attacker writes it: a marker segment has
 * a 2-byte length that counts itself; after an SOS header comes entropy-coded data, in which a
 * 0xFF byte is followed by 0x00 (a stuffed 0xFF data byte) or by a restart marker RST0–RST7
 * (0xD0–0xD7), both part of the data; any other marker ends the scan. 0xFF fill bytes may precede
 * any marker. Only the first frame is counted (what libjpeg decodes); the parse stops at EOI, at
 * a second SOI or at the end of the bytes, never reading past `size`.
 */
import fs from 'node:fs';

export interface JpegComponent {
  id: number;
  /** Horizontal and vertical sampling factors (1–4). */
  h: number;
  v: number;
}

export interface JpegStructure {
  width: number;
  height: number;
  /** SOF2/SOF6/SOF10/SOF14: progressive DCT. */
  progressive: boolean;
  components: JpegComponent[];
  /** One entry per SOS: the ids of the components the scan codes. */
  scans: number[][];
}

/** Random access to the bytes: a Buffer, or a file read with pread in chunks. */
type Read = (pos: number, len: number) => Buffer;

const CHUNK = 64 * 1024;

/** The structure of `input` (bytes or a file path); null when it is not a JPEG with a frame. */
export function jpegStructure(input: Buffer | string): JpegStructure | null {
  if (Buffer.isBuffer(input)) return parse((pos, len) => input.subarray(pos, Math.min(input.length, pos + len)), input.length);
  const fd = fs.openSync(input, 'r');
  try {
    const size = fs.fstatSync(fd).size;
    const read: Read = (pos, len) => {
      const n = Math.max(0, Math.min(len, size - pos));
      const b = Buffer.allocUnsafe(n);
      const got = n ? fs.readSync(fd, b, 0, n, pos) : 0;
      return b.subarray(0, got);
    };
    return parse(read, size);
  } finally {
    fs.closeSync(fd);
  }
}

const isSof = (m: number) => m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc;
const isRst = (m: number) => m >= 0xd0 && m <= 0xd7;

function parse(read: Read, size: number): JpegStructure | null {
  const soi = read(0, 2);
  if (soi.length < 2 || soi[0] !== 0xff || soi[1] !== 0xd8) return null;
  let frame: Omit<JpegStructure, 'scans'> | null = null;
  const scans: number[][] = [];
  let pos = 2;
  while (pos < size) {
    // A marker: 0xFF, any number of 0xFF fill bytes, then the marker code.
    const head = read(pos, 2);
    if (head.length < 2) break;
    if (head[0] !== 0xff) {
      // Garbage between segments: libjpeg skips to the next marker (with a warning); so do we.
      pos = nextMarker(read, pos, size);
      continue;
    }
    if (head[1] === 0xff) {
      pos++;
      continue;
    }
    const marker = head[1]!;
    pos += 2;
    if (marker === 0xd9 || marker === 0xd8) break; // EOI, or a second image
    if (isRst(marker) || marker === 0x01 || marker === 0x00) continue; // no length
    const lenBytes = read(pos, 2);
    if (lenBytes.length < 2) break;
    const len = lenBytes.readUInt16BE(0);
    if (len < 2) break;
    const segment = read(pos + 2, len - 2);
    if (segment.length < len - 2) break;
    pos += len;
    if (isSof(marker)) {
      if (frame) continue; // only the first frame is decoded
      if (segment.length < 6) break;
      const n = segment[5]!;
      if (segment.length < 6 + 3 * n) break;
      const components: JpegComponent[] = [];
      for (let i = 0; i < n; i++) {
        const s = segment[7 + 3 * i]!;
        components.push({ id: segment[6 + 3 * i]!, h: Math.max(1, s >> 4), v: Math.max(1, s & 15) });
      }
      const progressive = marker === 0xc2 || marker === 0xc6 || marker === 0xca || marker === 0xce;
      frame = { width: segment.readUInt16BE(3), height: segment.readUInt16BE(1), progressive, components };
    } else if (marker === 0xda) {
      const n = segment[0] ?? 0;
      const ids: number[] = [];
      for (let i = 0; i < n && 1 + 2 * i < segment.length; i++) ids.push(segment[1 + 2 * i]!);
      scans.push(ids);
      pos = endOfEntropyData(read, pos, size);
    }
  }
  return frame ? { ...frame, scans } : null;
}

/** The position of the first marker after `pos` that is not a stuffed byte or a restart marker. */
function endOfEntropyData(read: Read, pos: number, size: number): number {
  while (pos < size) {
    const chunk = read(pos, CHUNK + 1);
    if (chunk.length === 0) return size;
    let i = chunk.indexOf(0xff);
    while (i >= 0 && i + 1 < chunk.length) {
      const next = chunk[i + 1]!;
      if (next === 0x00 || isRst(next)) i = chunk.indexOf(0xff, i + 2);
      else if (next === 0xff) i = i + 1; // fill bytes before a marker
      else return pos + i;
    }
    if (i < 0) pos += chunk.length;
    else pos += i; // a 0xFF at the chunk's end: read it again with its next byte
    if (chunk.length <= 1) return size;
  }
  return size;
}

function nextMarker(read: Read, pos: number, size: number): number {
  while (pos < size) {
    const chunk = read(pos, CHUNK);
    if (chunk.length === 0) return size;
    const i = chunk.indexOf(0xff);
    if (i >= 0) return pos + i;
    pos += chunk.length;
  }
  return size;
}

/** Blocks libjpeg allocates for one component: rounded up to whole MCUs' worth of its sampling. */
function componentBlocks(s: JpegStructure, c: JpegComponent): number {
  const hMax = Math.max(...s.components.map((x) => x.h));
  const vMax = Math.max(...s.components.map((x) => x.v));
  const wBlocks = Math.ceil((s.width * c.h) / (hMax * 8));
  const hBlocks = Math.ceil((s.height * c.v) / (vMax * 8));
  return Math.ceil(wBlocks / c.h) * c.h * (Math.ceil(hBlocks / c.v) * c.v);
}

/**
 * Bytes of the full-resolution coefficient buffer libjpeg keeps for this file (0 when it decodes
 * it in one sequential pass, MCU row by MCU row): a progressive frame always buffers; a sequential
 * one buffers when its scans do not each code every component.
 */
export function coefficientBytes(s: JpegStructure): number {
  const buffered = s.progressive || s.scans.some((ids) => ids.length < s.components.length) || s.scans.length > 1;
  if (!buffered) return 0;
  let blocks = 0;
  for (const c of s.components) blocks += componentBlocks(s, c);
  return blocks * 128;
}

/** Samples (8×8 blocks × 64) walked by all scans together: each scan visits every block of its components. */
export function scanSamples(s: JpegStructure): number {
  const blocks = new Map(s.components.map((c) => [c.id, componentBlocks(s, c)]));
  let total = 0;
  for (const ids of s.scans) for (const id of ids) total += (blocks.get(id) ?? 0) * 64;
  return total;
}
