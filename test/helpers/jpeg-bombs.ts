/**
 * Progressive-JPEG bombs (issue 28, item 3), made by the tests and the benchmark:
 *
 * - `coefficientBomb`: a small progressive JPEG whose frame header (SOF2) is rewritten to declare
 *   a huge size. libjpeg allocates the full-resolution coefficient buffer (2 bytes per sample per
 *   component) from the header alone, before reading any scan, so the file stays a few hundred
 *   bytes while its decoder needs gigabytes; the missing entropy data is only a warning.
 * - `scanBomb`: a real progressive JPEG of flat content whose last scans (each with the Huffman
 *   tables it uses) are repeated until the file has `scans` scans: near-empty scans compress to a
 *   few bytes each, yet each one makes the decoder walk every block of its components.
 */
import sharp from 'sharp';

interface Segment {
  marker: number;
  /** The whole segment, marker included (for SOS: its entropy-coded data too). */
  bytes: Buffer;
}

/** Splits a JPEG into marker segments (SOS segments keep their entropy-coded data). */
export function segments(jpeg: Buffer): Segment[] {
  const out: Segment[] = [{ marker: 0xd8, bytes: jpeg.subarray(0, 2) }];
  let pos = 2;
  while (pos < jpeg.length) {
    const marker = jpeg[pos + 1]!;
    if (marker === 0xd9) {
      out.push({ marker, bytes: jpeg.subarray(pos, pos + 2) });
      break;
    }
    let end = pos + 2 + jpeg.readUInt16BE(pos + 2);
    if (marker === 0xda) {
      // Entropy-coded data: up to the next marker that is neither a stuffed 0xFF nor a restart.
      while (end < jpeg.length && !(jpeg[end] === 0xff && jpeg[end + 1] !== 0x00 && !(jpeg[end + 1]! >= 0xd0 && jpeg[end + 1]! <= 0xd7))) end++;
    }
    out.push({ marker, bytes: jpeg.subarray(pos, end) });
    pos = end;
  }
  return out;
}

/**
 * A JPEG declaring `width`×`height` (channels 1: grayscale; 3: YCbCr 4:4:4), a few hundred bytes:
 * progressive by default (the coefficient bomb), or baseline (only its declared size is large).
 */
export async function jpegDeclaring(width: number, height: number, o: { channels?: 1 | 3; progressive?: boolean } = {}): Promise<Buffer> {
  const progressive = o.progressive ?? true;
  let img = sharp({ create: { width: 16, height: 16, channels: 3, background: '#777777' } });
  if ((o.channels ?? 1) === 1) img = img.toColourspace('b-w');
  const small = await img.jpeg({ progressive, chromaSubsampling: '4:4:4', quality: 50 }).toBuffer();
  const out = Buffer.from(small);
  for (const s of segments(out)) {
    if (s.marker !== (progressive ? 0xc2 : 0xc0)) continue;
    s.bytes.writeUInt16BE(height, 5);
    s.bytes.writeUInt16BE(width, 7);
  }
  return out;
}

/** The progressive coefficient bomb: its decoder needs 2 bytes per declared sample per component. */
export const coefficientBomb = (width: number, height: number, channels: 1 | 3 = 1) => jpegDeclaring(width, height, { channels });

/** Writes bits MSB first, stuffing a 0x00 after each 0xFF byte, padding the last byte with 1s. */
class BitWriter {
  private readonly out: number[] = [];
  private acc = 0;
  private n = 0;
  write(value: number, bits: number): void {
    for (let i = bits - 1; i >= 0; i--) {
      this.acc = (this.acc << 1) | ((value >> i) & 1);
      if (++this.n === 8) this.flushByte();
    }
  }
  private flushByte(): void {
    this.out.push(this.acc);
    if (this.acc === 0xff) this.out.push(0x00);
    this.acc = 0;
    this.n = 0;
  }
  end(): Buffer {
    if (this.n > 0) this.write((1 << (8 - this.n)) - 1, 8 - this.n);
    return Buffer.from(this.out);
  }
}

const seg = (marker: number, body: Buffer | number[]) => {
  const b = Buffer.from(body);
  const head = Buffer.alloc(4);
  head[0] = 0xff;
  head[1] = marker;
  head.writeUInt16BE(b.length + 2, 2);
  return Buffer.concat([head, b]);
};

/**
 * A valid grayscale progressive JPEG, `width`×`height`, flat grey, with exactly `scans` scans
 * (a legitimate progression up to 1 + 63 × 14 = 883 scans): one DC scan, then for each AC coefficient in turn a first scan at a
 * point transform of 13 followed by its refinement scans (13→12, …, 1→0), as a legitimate
 * successive-approximation script may. Every AC coefficient is zero, so each AC scan is a few
 * end-of-band runs (about 50 bytes for 7000×7000), yet libjpeg walks every block in each of them.
 * Written by hand (libjpeg's default scripts have 6–10 scans; sharp cannot take a scan script).
 */
export function scanBomb(width: number, height: number, scans: number): Buffer {
  const blocks = Math.ceil(width / 8) * Math.ceil(height / 8);
  const parts: Buffer[] = [Buffer.from([0xff, 0xd8])];
  parts.push(seg(0xdb, [0x00, ...Array(64).fill(1)])); // one quantisation table, all 1
  parts.push(seg(0xc2, [8, height >> 8, height & 255, width >> 8, width & 255, 1, 1, 0x11, 0]));
  // DC table 0: one symbol (category 0, i.e. "no difference"), code '0'.
  parts.push(seg(0xc4, [0x00, 1, ...Array(15).fill(0), 0x00]));
  // AC table 0: the 15 end-of-band-run symbols EOB0..EOB14 (0x00, 0x10, … 0xE0), 4-bit codes 0..14.
  parts.push(seg(0xc4, [0x10, 0, 0, 0, 15, ...Array(12).fill(0), ...Array.from({ length: 15 }, (_, k) => k << 4)]));
  // The DC scan: one '0' bit per block, every block is mid-grey once dequantised.
  const dc = new BitWriter();
  for (let i = 0; i < blocks; i++) dc.write(0, 1);
  parts.push(seg(0xda, [1, 1, 0x00, 0, 0, 0x00]), dc.end());
  // An AC scan of all-zero coefficients: the whole band is one end-of-band run, split into runs
  // of at most 32767 blocks (EOB14 + 14 extra bits).
  const acData = () => {
    const w = new BitWriter();
    for (let left = blocks; left > 0;) {
      const run = Math.min(left, 32767);
      const n = Math.floor(Math.log2(run));
      w.write(n, 4);
      if (n > 0) w.write(run - (1 << n), n);
      left -= run;
    }
    return w.end();
  };
  const data = acData();
  let made = 1;
  for (let k = 1; k <= 63 && made < scans; k++) {
    for (let al = 13; al >= 0 && made < scans; al--) {
      const ah = al === 13 ? 0 : al + 1;
      parts.push(seg(0xda, [1, 1, 0x00, k, k, (ah << 4) | al]), data);
      made++;
    }
  }
  // Past the legitimate script (883 scans), the last refinement again: libjpeg only warns.
  for (; made < scans; made++) parts.push(seg(0xda, [1, 1, 0x00, 63, 63, 0x10]), data);
  parts.push(Buffer.from([0xff, 0xd9]));
  return Buffer.concat(parts);
}
