/**
 * Names every write provider shares (the checks themselves are the write engine's,
 * src/content/names.ts): the length limit, and the "keep both" names of `onConflict: rename`, so
 * that the library, WebDAV and S3 answer a taken name alike.
 */

/** The longest name in UTF-8 bytes (NAME_MAX of Linux filesystems, S3 and WebDAV servers' common limit). */
export const MAX_NAME_BYTES = 255;

/**
 * The n-th "keep both" name for `name` (n ≥ 2): `photo (2).jpg`, `notes (3)`. Providers try them
 * in order for `onConflict: rename`; the result is a valid name whenever `name` is (the suffix
 * goes before the extension and the stem is shortened to stay within MAX_NAME_BYTES).
 */
export function alternativeName(name: string, n: number): string {
  const dot = name.lastIndexOf('.');
  const [stem, ext] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ''];
  const suffix = ` (${n})`;
  let s = stem;
  while (Buffer.byteLength(s + suffix + ext, 'utf8') > MAX_NAME_BYTES) s = [...s].slice(0, -1).join('');
  return `${s}${suffix}${ext}`;
}
