/**
 * Media types from file names, for the whole hub: one database (mime-db, read through mime-types;
 * docs/dependencies.md) instead of a table per connector. Five hand-kept tables used to answer
 * differently for the same file (`.md`, `.heic`, `.psd`, `.ai` were known to one connector and
 * application/octet-stream to the next); a name now means the same type wherever it is listed.
 *
 * Only the lookup lives here. What the hub does with a type (which types it makes thumbnails of,
 * what counts as a document) is its own decision, kept as a short list beside the code that
 * acts on it. Sniffing a type from the bytes is another job (file-type, in ../metadata/sniff.ts).
 */
import path from 'node:path';
import { types as MIME_DB_TYPES } from 'mime-types';

/** What a file of unknown type is served as (RFC 2046 section 4.5.1). */
export const UNKNOWN_MIME_TYPE = 'application/octet-stream';

/**
 * The few answers the hub gives where mime-db (1.54) has none or a deprecated one, for files a
 * DAM holds. Each is the type its own specification names; keep this list this short.
 */
const BESIDES_MIME_DB: ReadonlyMap<string, string> = new Map(Object.entries({
  // Adobe InDesign documents: no registered type; the one Adobe's servers and DAMs send (and
  // file-type's answer for the same bytes).
  indd: 'application/x-indesign',
  // XMP sidecar files: the XMP specification (part 3) names RDF/XML's type for them.
  xmp: 'application/rdf+xml',
  // RFC 9512 registers application/yaml and lists text/yaml as a deprecated alias of it.
  yaml: 'application/yaml',
  yml: 'application/yaml',
}));

/**
 * Types that say nothing about the content: a server that sends one has no idea either (S3's
 * default for an object stored without a type is binary/octet-stream), so the name decides.
 */
const SAYS_NOTHING = new Set([UNKNOWN_MIME_TYPE, 'binary/octet-stream']);

/** type/subtype in the characters RFC 6838 section 4.2 allows, parameters excluded. */
const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;

/** The type of a file extension (`md`, `.md` and `MD` alike), or undefined when none is known. */
export function mimeTypeOfExtension(extension: string): string | undefined {
  const ext = extension.replace(/^\./, '').toLowerCase();
  if (!ext) return undefined;
  // Own keys only: an extension such as "constructor" must not find Object's prototype.
  return BESIDES_MIME_DB.get(ext) ?? (Object.hasOwn(MIME_DB_TYPES, ext) ? MIME_DB_TYPES[ext] : undefined);
}

/**
 * The type of a file by its name's last extension; application/octet-stream for a name without
 * one (`README`, `.profile`) or with one nobody registered.
 */
export function mimeTypeOfName(name: string): string {
  return mimeTypeOfExtension(path.posix.extname(name)) ?? UNKNOWN_MIME_TYPE;
}

/**
 * What an upstream declared, when it says something: its type and subtype in lower case, without
 * parameters; undefined when it is missing, malformed or only says "bytes".
 */
export function declaredMimeType(declared: unknown): string | undefined {
  if (typeof declared !== 'string') return undefined;
  const type = declared.split(';')[0]!.trim().toLowerCase();
  return MEDIA_TYPE.test(type) && !SAYS_NOTHING.has(type) ? type : undefined;
}

/** The type an upstream declared for a file when it says something, else the one its name gives. */
export function mimeTypeOf(name: string, declared?: unknown): string {
  return declaredMimeType(declared) ?? mimeTypeOfName(name);
}
