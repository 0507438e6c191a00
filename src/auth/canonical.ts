/**
 * Canonical base64url (RFC 7515 section 2 / RFC 4648 section 5 without padding) for the segments
 * of compact JWS/JWE tokens. A byte string has exactly one canonical spelling, but decoders
 * (Node's Buffer, atob, and so jose on Node 20) also accept others: `=` padding, and a last
 * character whose unused low bits are not zero. Anything keyed on a token's text (replay, caches)
 * would see those spellings as new tokens, so every token the hub reads must be canonical first.
 */

const ALPHABET = /^[A-Za-z0-9_-]*$/;

/** True when `s` is the one unpadded base64url spelling of the bytes it decodes to. */
export function isCanonicalBase64url(s: string): boolean {
  // Alphabet only (no padding, no whitespace, no +/); then decoding and encoding again must give
  // the same text, which fails exactly for non-zero unused bits and an impossible length (4n+1).
  return ALPHABET.test(s) && Buffer.from(s, 'base64url').toString('base64url') === s;
}

/**
 * True when `token` has `parts` dot-separated segments, each canonical base64url. Empty segments
 * are allowed (a JWE with `dir` has an empty encrypted key); whether a segment may be empty is
 * the JOSE library's to judge.
 */
export function isCanonicalCompact(token: string, parts: 3 | 5): boolean {
  const segments = token.split('.');
  return segments.length === parts && segments.every(isCanonicalBase64url);
}
