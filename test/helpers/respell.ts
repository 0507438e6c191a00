/**
 * Other spellings of the same compact JWS/JWE: each decodes (leniently, as Node's decoders and so
 * jose do) to the same bytes as the original, but is not the canonical base64url text.
 */

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

export interface Respelling {
  /** Which segment (0-based) and how, for assertion messages. */
  what: string;
  token: string;
}

/** The segment with `=` padding to a multiple of 4, or null when it needs none. */
export function padded(seg: string): string | null {
  const r = seg.length % 4;
  return r === 0 ? null : seg + '='.repeat(4 - r);
}

/** The segment with its last character's lowest (unused) bit flipped (same bytes), or null when it has no unused bits. */
export function unusedBitsSet(seg: string): string | null {
  if (seg.length % 4 < 2) return null;
  const i = ALPHABET.indexOf(seg[seg.length - 1]!);
  return seg.slice(0, -1) + ALPHABET[i ^ 1]!;
}

/** Every padded and unused-bit respelling of every segment of `token` that exists. */
export function respellings(token: string): Respelling[] {
  const segs = token.split('.');
  const out: Respelling[] = [];
  segs.forEach((seg, i) => {
    for (const [how, alt] of [['padded', padded(seg)], ['unused bit flipped', unusedBitsSet(seg)]] as const) {
      if (alt === null || alt === seg) continue;
      out.push({ what: `part ${i} ${how}`, token: segs.map((s, j) => (j === i ? alt : s)).join('.') });
    }
  });
  return out;
}

/** Decodes as Node does (leniently) and says whether two segments carry the same bytes. */
export function sameBytes(a: string, b: string): boolean {
  return Buffer.from(a.replace(/=+$/, ''), 'base64url').equals(Buffer.from(b.replace(/=+$/, ''), 'base64url'));
}
