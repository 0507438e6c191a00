/**
 * Media type and kind of a file: file-type sniffs the media type from the content (extensions
 * lie); the extension is only a fallback for text formats that have no magic number.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileTypeFromFile } from 'file-type';
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

/** Formats file-type cannot sniff (no magic number), keyed by lower-case extension. */
const MIME_BY_EXTENSION: Record<string, string> = {
  svg: 'image/svg+xml', txt: 'text/plain', text: 'text/plain', log: 'text/plain', csv: 'text/csv',
  tsv: 'text/tab-separated-values', json: 'application/json', md: 'text/markdown', markdown: 'text/markdown',
  html: 'text/html', htm: 'text/html', css: 'text/css', js: 'text/javascript', mjs: 'text/javascript',
  xml: 'application/xml', yaml: 'application/yaml', yml: 'application/yaml', ics: 'text/calendar',
  vtt: 'text/vtt', srt: 'application/x-subrip', xmp: 'application/rdf+xml', rtf: 'application/rtf',
};

export async function sniffMimeType(file: string, warnings: string[]): Promise<string> {
  const byExtension = MIME_BY_EXTENSION[path.extname(file).slice(1).toLowerCase()];
  let sniffed: string | undefined;
  try {
    sniffed = (await fileTypeFromFile(file))?.mime;
  } catch (e) {
    warnings.push(`file-type: ${firstLine(e)}`);
  }
  // file-type reports any XML document (an SVG with an <?xml?> prolog too) as application/xml;
  // the extension then tells which XML vocabulary it is.
  if (sniffed === 'application/xml' && byExtension?.includes('xml')) return byExtension;
  return sniffed ?? byExtension ?? 'application/octet-stream';
}

const DOCUMENT_MIMES = /^(text\/|application\/(pdf|msword|rtf|json|xml|yaml|rdf\+xml|epub\+zip|postscript|x-subrip|vnd\.ms-|vnd\.openxmlformats-officedocument\.|vnd\.oasis\.opendocument\.|vnd\.apple\.(pages|numbers|keynote)))/;

export function kindOf(mimeType: string): AssetKind {
  if (mimeType.startsWith('image/')) return 'image';
  if (mimeType.startsWith('video/')) return 'video';
  if (mimeType.startsWith('audio/')) return 'audio';
  if (DOCUMENT_MIMES.test(mimeType)) return 'document';
  return 'other';
}
