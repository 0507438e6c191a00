/**
 * Media type and kind of a file: file-type sniffs the media type from the content (extensions
 * lie); the name's extension (the hub's one database, ../kit/mime.ts) decides only for formats
 * file-type cannot recognise from bytes: text formats without a magic number, SVG.
 */
import fs from 'node:fs';
import { fileTypeFromFile, supportedMimeTypes } from 'file-type';
import { mimeTypeOfName, UNKNOWN_MIME_TYPE } from '../kit/mime.js';
import { firstLine } from './values.js';

export type AssetKind = 'image' | 'video' | 'audio' | 'document' | 'other';

/** Rejects (ENOENT, EACCES, EISDIR) before any parsing, so only path problems ever reject. */
export async function assertReadableFile(file: string): Promise<number> {
  const stat = await fs.promises.stat(file);
  if (stat.isDirectory()) throw Object.assign(new Error(`EISDIR: illegal operation on a directory, read '${file}'`), { code: 'EISDIR', path: file });
  const handle = await fs.promises.open(file, 'r');
  await handle.close();
  return stat.size;
}

/**
 * The types file-type recognises from bytes whenever a file is of that type. Not XML: file-type
 * knows it by its `<?xml` declaration, which XML 1.0 (section 2.8) makes optional.
 */
const FILE_TYPE_KNOWS: ReadonlySet<string> = new Set([...supportedMimeTypes].filter((t) => t !== 'application/xml'));

/**
 * The type a file's name gives it when its bytes cannot: a type file-type knows from bytes but did
 * not find in them is not taken from the name (an empty or damaged `x.jpg` is not a JPEG to decode).
 */
export function typeByName(name: string): string | undefined {
  const named = mimeTypeOfName(name);
  return named === UNKNOWN_MIME_TYPE || FILE_TYPE_KNOWS.has(named) ? undefined : named;
}

/** `name`: the file's name (its bytes may sit in a snapshot without one). */
export async function sniffMimeType(file: string, name: string, warnings: string[]): Promise<string> {
  const named = mimeTypeOfName(name);
  let sniffed: string | undefined;
  try {
    sniffed = (await fileTypeFromFile(file))?.mime;
  } catch (e) {
    warnings.push(`file-type: ${firstLine(e)}`);
  }
  // file-type reports any XML document (an SVG with an <?xml?> prolog too) as application/xml;
  // the extension then tells which XML vocabulary it is.
  if (sniffed === 'application/xml' && /[/+]xml$/.test(named)) return named;
  return sniffed ?? typeByName(name) ?? UNKNOWN_MIME_TYPE;
}

const DOCUMENT_MIMES = /^(text\/|application\/(pdf|msword|rtf|json|xml|yaml|rdf\+xml|epub\+zip|postscript|x-subrip|vnd\.ms-|vnd\.openxmlformats-officedocument\.|vnd\.oasis\.opendocument\.|vnd\.apple\.(pages|numbers|keynote)))/;

export function kindOf(mimeType: string): AssetKind {
  if (mimeType.startsWith('image/')) return 'image';
  if (mimeType.startsWith('video/')) return 'video';
  if (mimeType.startsWith('audio/')) return 'audio';
  if (DOCUMENT_MIMES.test(mimeType)) return 'document';
  return 'other';
}
