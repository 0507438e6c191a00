/** How text becomes search terms, the same for documents and queries. */

const ASCII = /^[\x00-\x7f]*$/;
const ASCII_WORD = /[a-z0-9]+/g;

/** Unicode folding shared by documents and queries: NFKD, marks dropped, lower case, letter/digit runs. */
export function tokenize(s: string): string[] {
  if (!s) return [];
  // Plain ASCII (most file names and much metadata) needs no Unicode folding.
  if (ASCII.test(s)) return s.toLowerCase().match(ASCII_WORD) ?? [];
  return s.normalize('NFKD').replace(/\p{M}+/gu, '').toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}
