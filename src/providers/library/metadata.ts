/**
 * What the library provider knows about a file from its bytes: media type, kind, pixel size, colour
 * space and the embedded EXIF / IPTC / XMP metadata, mapped onto the seed's Asset fields by the
 * rules of SPEC.md section 6 ("Where embedded metadata fills the seed's fields").
 *
 * Sources, and why each is used:
 * - file-type sniffs the media type from the content (extensions lie); the extension is only a
 *   fallback for text formats that have no magic number.
 * - sharp reads the image header: pixel size as stored (EXIF orientation NOT applied; the
 *   orientation goes to `exif.orientation`), colour space, and the raw ICC / IPTC / XMP / EXIF
 *   blocks as the decoder found them (ICC reassembled across APP2 segments, PNG zTXt XMP...).
 * - exifr parses EXIF (and finds the XMP packet) straight from the file, tolerating damaged files.
 *   It also parses the ICC profile sharp hands us (exifr's own ICC reader only sees the first
 *   JPEG APP2 segment and logs to the console when a profile is longer).
 * - IPTC and XMP values are decoded here rather than taken from exifr's parsed output, because exifr
 *   (7.1) decodes IPTC as Latin-1 regardless of the CodedCharacterSet (1:90) it never reads, and its
 *   XMP parser turns "007" into 7 and "true" into true and leaves "&amp;" undecoded.
 *
 * extractMetadata never throws for bad content (corrupt, truncated, empty, not an image): problems
 * become `warnings`. It rejects only when the path itself cannot be read: ENOENT, EACCES, or
 * EISDIR for a directory.
 */
import fs from 'node:fs';
import path from 'node:path';
import exifr from 'exifr';
import { fileTypeFromFile } from 'file-type';
import type { Metadata as ImageHeader } from 'sharp';
import { defaultImageWork, type ImageWork } from '../../images/pool.js';
import type { Exif, Iptc, Xmp } from '../model.js';

export type AssetKind = 'image' | 'video' | 'audio' | 'document' | 'other';

export interface ExtractedMetadata {
  mimeType: string;
  kind: AssetKind;
  width?: number;
  height?: number;
  colorSpace?: string;
  title?: string;
  caption?: string;
  copyright?: string;
  keywords: string[];
  categories: string[];
  exif: Exif;
  iptc: Iptc;
  xmp: Xmp;
  /** problems met (corrupt image, unreadable metadata), for logs */
  warnings: string[];
}

/**
 * `images`: the pool whose child reads the image header (sharp's metadata() is header-only, yet a
 * hostile file can make it slow: a TIFF of a million IFDs takes seconds), under the indexing
 * deadline; default the shared fallback pool.
 */
export async function extractMetadata(file: string, images: ImageWork = defaultImageWork()): Promise<ExtractedMetadata> {
  const size = await assertReadableFile(file);
  const warnings: string[] = [];
  const mimeType = await sniffMimeType(file, warnings);
  const result: ExtractedMetadata = {
    mimeType, kind: kindOf(mimeType), keywords: [], categories: [], exif: {}, iptc: {}, xmp: {}, warnings,
  };
  if (size === 0) {
    warnings.push('empty file');
    return result;
  }
  if (result.kind === 'image') await readImage(file, result, images);
  return result;
}

// ---------------------------------------------------------------------------------------------
// Media type and kind
// ---------------------------------------------------------------------------------------------

/** Rejects (ENOENT, EACCES, EISDIR) before any parsing, so only path problems ever reject. */
async function assertReadableFile(file: string): Promise<number> {
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

async function sniffMimeType(file: string, warnings: string[]): Promise<string> {
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

// ---------------------------------------------------------------------------------------------
// Images: gather the raw sources, then map them
// ---------------------------------------------------------------------------------------------

/** Everything read from an image before mapping, each part possibly missing. */
interface ImageSources {
  header?: ImageHeader;
  /** EXIF IFD0 + Exif IFD tags by exifr name, values untranslated and dates unrevived. */
  tags: Record<string, unknown>;
  iptc: IptcDatasets;
  xmp?: XmpPacket;
  iccDescription?: string;
}

async function readImage(file: string, out: ExtractedMetadata, images: ImageWork): Promise<void> {
  const src = await readImageSources(file, out.warnings, images);
  const h = src.header;
  out.width = positiveInt(h?.width) ?? positiveInt(src.tags.ExifImageWidth) ?? positiveInt(src.tags.ImageWidth);
  out.height = positiveInt(h?.height) ?? positiveInt(src.tags.ExifImageHeight) ?? positiveInt(src.tags.ImageHeight);
  if (h?.space) out.colorSpace = colorSpaceName(h.space);
  mapDescriptive(src, out);
  out.iptc = mapIptc(src.iptc);
  out.xmp = mapXmp(src.xmp, src.iccDescription);
  out.exif = mapExif(src.tags, out, out.warnings);
}

async function readImageSources(file: string, warnings: string[], images: ImageWork): Promise<ImageSources> {
  const [header, parsed] = await Promise.all([readHeader(file, warnings, images), readWithExifr(file, warnings)]);
  const tags = parsed?.ifd0 || parsed?.exif
    ? { ...parsed.ifd0, ...parsed.exif }
    : await exifFromBlock(header?.exif, warnings);
  return {
    header,
    tags,
    iptc: iptcFrom(header?.iptc, parsed?.iptc, warnings),
    xmp: xmpFrom(parsed?.xmp, header?.xmp),
    iccDescription: await iccDescription(header?.icc, warnings),
  };
}

async function readHeader(file: string, warnings: string[], images: ImageWork): Promise<ImageHeader | undefined> {
  try {
    return await images.pool.probe(file, { timeoutMs: images.timeoutMs, background: true });
  } catch (e) {
    warnings.push(`image header unreadable: ${firstLine(e)}`);
    return undefined;
  }
}

interface ExifrOutput {
  ifd0?: Record<string, unknown>;
  exif?: Record<string, unknown>;
  iptc?: Record<string, unknown>;
  xmp?: unknown;
  errors?: unknown[];
}

/**
 * One options object for every call: exifr caches the parsed options by object identity.
 * translateValues off keeps Orientation/ResolutionUnit numeric; reviveValues off keeps EXIF dates
 * as the wall-clock strings they are (exifr would build Dates in the process's local zone).
 */
const EXIFR_OPTIONS = {
  tiff: true, ifd0: {}, exif: true, gps: false, interop: false, ifd1: false, makerNote: false, userComment: false,
  xmp: { parse: false, multiSegment: true }, iptc: { translateKeys: false }, icc: false, jfif: false, ihdr: false,
  mergeOutput: false, translateKeys: true, translateValues: false, reviveValues: false, silentErrors: true,
};

async function readWithExifr(file: string, warnings: string[]): Promise<ExifrOutput | undefined> {
  try {
    const out = (await exifr.parse(file, EXIFR_OPTIONS)) as ExifrOutput | undefined;
    for (const e of out?.errors ?? []) warnings.push(`embedded metadata: ${firstLine(e)}`);
    return out;
  } catch (e) {
    // Formats exifr does not know (GIF, WebP, SVG...) are not a problem: sharp's blocks remain.
    if (!/unknown file format/i.test(String((e as Error)?.message))) warnings.push(`embedded metadata: ${firstLine(e)}`);
    return undefined;
  }
}

/** EXIF from the raw block sharp found (WebP, HEIF... which exifr cannot open itself). */
async function exifFromBlock(block: Buffer | undefined, warnings: string[]): Promise<Record<string, unknown>> {
  if (!block || block.length < 8) return {};
  // libvips hands the block with its JPEG APP1 signature; exifr's TIFF reader wants the TIFF header.
  const tiff = block.subarray(0, 6).toString('latin1') === 'Exif\0\0' ? block.subarray(6) : block;
  try {
    return ((await exifr.sidecar(tiff, EXIFR_OPTIONS, 'tiff')) ?? {}) as Record<string, unknown>;
  } catch (e) {
    warnings.push(`EXIF unreadable: ${firstLine(e)}`);
    return {};
  }
}

async function iccDescription(icc: Buffer | undefined, warnings: string[]): Promise<string | undefined> {
  if (!icc) return undefined;
  try {
    const parsed = (await exifr.sidecar(icc, {}, 'icc')) as { ProfileDescription?: unknown } | undefined;
    return iccText(parsed?.ProfileDescription);
  } catch (e) {
    warnings.push(`ICC profile unreadable: ${firstLine(e)}`);
    return undefined;
  }
}

/** ICC v4 'mluc' descriptions with several languages come as [{lang, country, text}]: prefer English. */
function iccText(desc: unknown): string | undefined {
  if (!Array.isArray(desc)) return clean(desc);
  const entries = desc as { lang?: string; text?: unknown }[];
  return clean((entries.find((d) => d.lang === 'en') ?? entries[0])?.text);
}

const COLOR_SPACE_NAMES: Record<string, string> = {
  srgb: 'sRGB', rgb16: 'sRGB', cmyk: 'CMYK', 'b-w': 'Gray', grey16: 'Gray',
};

function colorSpaceName(space: string): string {
  return COLOR_SPACE_NAMES[space] ?? space;
}

// ---------------------------------------------------------------------------------------------
// Mapping (SPEC.md section 6): first source present wins
// ---------------------------------------------------------------------------------------------

const DC = 'http://purl.org/dc/elements/1.1/';
const PHOTOSHOP = 'http://ns.adobe.com/photoshop/1.0/';
const XMP_MM = 'http://ns.adobe.com/xap/1.0/mm/';

/** IPTC IIM record 2 dataset numbers used by the mapping. */
const IPTC = {
  objectName: 5, category: 15, supplementalCategories: 20, keywords: 25, specialInstructions: 40, city: 90,
  provinceState: 95, countryName: 101, headline: 105, credit: 110, copyrightNotice: 116, caption: 120, writer: 122,
} as const;

function mapDescriptive(src: ImageSources, out: ExtractedMetadata): void {
  const { xmp, iptc } = src;
  setIf(out, 'title', xmp?.text(DC, 'title') ?? iptc.first(IPTC.objectName));
  setIf(out, 'caption', xmp?.text(DC, 'description') ?? iptc.first(IPTC.caption));
  setIf(out, 'copyright', xmp?.text(DC, 'rights') ?? iptc.first(IPTC.copyrightNotice) ?? exifCopyright(src.tags.Copyright));
  out.keywords = unique([...iptc.all(IPTC.keywords), ...(xmp?.list(DC, 'subject') ?? [])]);
  out.categories = unique([
    ...iptc.all(IPTC.supplementalCategories),
    ...(xmp?.list(PHOTOSHOP, 'SupplementalCategories') ?? []),
    ...iptc.all(IPTC.category),
  ]);
}

/** EXIF Copyright may hold "photographer\0editor"; show both parts. */
function exifCopyright(value: unknown): string | undefined {
  if (typeof value !== 'string') return clean(value);
  return clean(value.split('\0').map((s) => s.trim()).filter(Boolean).join(' / '));
}

function mapIptc(iptc: IptcDatasets): Iptc {
  const out: Iptc = {};
  setIf(out, 'headline', iptc.first(IPTC.headline));
  setIf(out, 'caption', iptc.first(IPTC.caption));
  setIf(out, 'captionWriter', iptc.first(IPTC.writer));
  setIf(out, 'instructions', iptc.first(IPTC.specialInstructions));
  setIf(out, 'copyrightNotice', iptc.first(IPTC.copyrightNotice));
  setIf(out, 'credit', iptc.first(IPTC.credit));
  setIf(out, 'city', iptc.first(IPTC.city));
  setIf(out, 'provinceState', iptc.first(IPTC.provinceState));
  setIf(out, 'countryName', iptc.first(IPTC.countryName));
  return out;
}

function mapXmp(xmp: XmpPacket | undefined, iccProfileDescription: string | undefined): Xmp {
  const out: Xmp = {};
  if (xmp) {
    setIf(out, 'headline', xmp.text(PHOTOSHOP, 'Headline'));
    setIf(out, 'credit', xmp.text(PHOTOSHOP, 'Credit'));
    setIf(out, 'city', xmp.text(PHOTOSHOP, 'City'));
    setIf(out, 'provinceState', xmp.text(PHOTOSHOP, 'State'));
    setIf(out, 'countryName', xmp.text(PHOTOSHOP, 'Country'));
    setIf(out, 'originalDocumentId', xmp.text(XMP_MM, 'OriginalDocumentID'));
    setIf(out, 'documentId', xmp.text(XMP_MM, 'DocumentID'));
    setIf(out, 'instanceId', xmp.text(XMP_MM, 'InstanceID'));
  }
  setIf(out, 'iccProfileDescription', iccProfileDescription);
  return out;
}

/**
 * exif.orientation is the EXIF Orientation code as a decimal string ("1".."8"; "6" = rotate 90°
 * clockwise to display), not exifr's English label ("Rotate 90 CW"): a stable value clients can
 * switch on. exif.width/height are the EXIF pixel dimensions, else the image's own.
 */
function mapExif(tags: Record<string, unknown>, image: { width?: number; height?: number }, warnings: string[]): Exif {
  const out: Exif = {};
  setIf(out, 'cameraModel', clean(tags.Model));
  setIf(out, 'orientation', orientationCode(tags.Orientation));
  setIf(out, 'exposureTime', positiveNumber(tags.ExposureTime));
  setIf(out, 'apertureValue', decimal(positiveNumber(tags.FNumber)));
  setIf(out, 'isoSpeedRatings', decimal(positiveNumber(Array.isArray(tags.ISO) ? tags.ISO[0] : tags.ISO)));
  setIf(out, 'width', positiveInt(tags.ExifImageWidth) ?? image.width);
  setIf(out, 'height', positiveInt(tags.ExifImageHeight) ?? image.height);
  setIf(out, 'resolution', formatResolution(tags.XResolution, tags.YResolution, tags.ResolutionUnit));
  setIf(out, 'dateTimeOriginal', parseExifDateTime(tags.DateTimeOriginal, tags.OffsetTimeOriginal, warnings));
  return out;
}

function orientationCode(value: unknown): string | undefined {
  const n = positiveInt(value);
  return n !== undefined && n <= 8 ? String(n) : undefined;
}

const RESOLUTION_UNITS: Record<number, string> = { 2: 'dpi', 3: 'dpcm' };

/** "300x300 dpi" / "118.11x118.11 dpcm"; unit 1 ("no unit") gives the bare ratio. */
export function formatResolution(x: unknown, y: unknown, unit: unknown): string | undefined {
  const xr = positiveNumber(x);
  if (xr === undefined) return undefined;
  const yr = positiveNumber(y) ?? xr;
  // EXIF: ResolutionUnit defaults to inches when absent.
  const u = unit === undefined ? 'dpi' : RESOLUTION_UNITS[Number(unit)];
  return `${decimal(xr)}x${decimal(yr)}${u ? ` ${u}` : ''}`;
}

/**
 * EXIF dates are wall-clock "YYYY:MM:DD HH:MM:SS" with no zone; OffsetTimeOriginal ("+02:00")
 * places them, else they are read as UTC (SPEC.md section 6). Parsed by hand: never through the
 * process's local time zone.
 */
export function parseExifDateTime(value: unknown, offset: unknown, warnings: string[] = []): number | undefined {
  const text = clean(value);
  if (text === undefined) return undefined;
  const m = /^(\d{4})[:-](\d{2})[:-](\d{2})[ T](\d{2}):(\d{2}):(\d{2})/.exec(text);
  const wallClock = m ? utcMillis(m.slice(1).map(Number)) : undefined;
  if (wallClock === undefined) {
    warnings.push(`DateTimeOriginal "${text}" is not a valid date`);
    return undefined;
  }
  return wallClock - offsetMinutes(offset, warnings) * 60_000;
}

/** Date.UTC of the parts, or undefined when they do not name a real instant (e.g. 2021:02:30). */
function utcMillis([year, month, day, hour, minute, second]: number[]): number | undefined {
  const ms = Date.UTC(year, month - 1, day, hour, minute, second);
  const d = new Date(ms);
  const same = d.getUTCFullYear() === year && d.getUTCMonth() === month - 1 && d.getUTCDate() === day
    && d.getUTCHours() === hour && d.getUTCMinutes() === minute && d.getUTCSeconds() === second;
  return same ? ms : undefined;
}

function offsetMinutes(offset: unknown, warnings: string[]): number {
  const text = clean(offset);
  if (text === undefined || text === 'Z') return 0;
  const m = /^([+-])(\d{2}):?(\d{2})$/.exec(text);
  const minutes = m ? Number(m[2]) * 60 + Number(m[3]) : NaN;
  if (!m || Number(m[3]) > 59 || minutes > 14 * 60) {
    warnings.push(`OffsetTimeOriginal "${text}" ignored, DateTimeOriginal read as UTC`);
    return 0;
  }
  return m[1] === '-' ? -minutes : minutes;
}

// ---------------------------------------------------------------------------------------------
// IPTC IIM
// ---------------------------------------------------------------------------------------------

/** Decoded record 2 datasets: every occurrence of a repeatable dataset, in file order. */
class IptcDatasets {
  constructor(private readonly values: Map<number, string[]> = new Map()) {}

  first(dataset: number): string | undefined {
    return this.all(dataset)[0];
  }

  all(dataset: number): string[] {
    return (this.values.get(dataset) ?? []).map(clean).filter((s): s is string => s !== undefined);
  }
}

/**
 * IPTC from sharp's raw block when there is one (we decode it with the declared character set),
 * else from exifr's output, which only ever holds Latin-1 text and no record 1.
 */
function iptcFrom(block: Buffer | undefined, exifrIptc: Record<string, unknown> | undefined, warnings: string[]): IptcDatasets {
  if (block) {
    try {
      const parsed = parseIptcBlock(block);
      if (parsed) return parsed;
    } catch (e) {
      warnings.push(`IPTC unreadable: ${firstLine(e)}`);
    }
  }
  return exifrIptc ? iptcFromExifr(exifrIptc) : new IptcDatasets();
}

function iptcFromExifr(raw: Record<string, unknown>): IptcDatasets {
  const values = new Map<number, string[]>();
  for (const [key, value] of Object.entries(raw)) {
    const list = (Array.isArray(value) ? value : [value]).filter((v): v is string => typeof v === 'string');
    // exifr built each string with one char per byte, so the bytes come back losslessly.
    values.set(Number(key), list.map((s) => decodeLatin1(Buffer.from(s, 'latin1'))));
  }
  return new IptcDatasets(values);
}

/**
 * Accepts the forms sharp/libvips hand over: a JPEG APP13 payload ("Photoshop 3.0\0" + image
 * resources), bare Photoshop image resources ("8BIM"...), or raw IIM (TIFF tag 33723).
 */
function parseIptcBlock(block: Uint8Array): IptcDatasets | undefined {
  const buf = Buffer.from(block.buffer, block.byteOffset, block.byteLength);
  const PS = 'Photoshop 3.0\0';
  let iim: Buffer | undefined;
  if (buf.subarray(0, PS.length).toString('latin1') === PS) iim = iptcResource(buf, PS.length);
  else if (buf.subarray(0, 4).toString('latin1') === '8BIM') iim = iptcResource(buf, 0);
  else if (buf[0] === 0x1c) iim = buf;
  return iim ? decodeIim(iim) : undefined;
}

/** Walks Photoshop image resources to the IPTC-NAA one (id 0x0404). */
function iptcResource(buf: Buffer, start: number): Buffer | undefined {
  let off = start;
  while (off + 12 <= buf.length) {
    const type = buf.subarray(off, off + 4).toString('latin1');
    if (!/^(8BIM|MeSa|PHUT|AgHg|DCSR)$/.test(type)) return undefined;
    const id = buf.readUInt16BE(off + 4);
    // Pascal-string name: length byte + characters, padded to an even total.
    const nameLength = buf[off + 6];
    const sizeAt = off + 6 + nameLength + 1 + ((nameLength + 1) % 2);
    if (sizeAt + 4 > buf.length) return undefined;
    const size = buf.readUInt32BE(sizeAt);
    const dataAt = sizeAt + 4;
    if (id === 0x0404) return buf.subarray(dataAt, Math.min(dataAt + size, buf.length));
    off = dataAt + size + (size % 2); // data is padded to an even length too
  }
  return undefined;
}

/**
 * Does a CodedCharacterSet (1:90) value declare UTF-8? The ISO 2022 designations: ESC % G, or
 * ESC % / G|H|I (UTF-8 with an implementation level). Anything else, or no 1:90, is Latin-1.
 */
function declaresUtf8(value: Buffer): boolean {
  const s = value.toString('latin1');
  return s === '\x1b%G' || /^\x1b%\/[GHI]$/.test(s);
}

/** IIM datasets: 0x1C, record, dataset, 2-byte big-endian length (or an extended length). */
function decodeIim(iim: Buffer): IptcDatasets {
  const raw: { record: number; dataset: number; data: Buffer }[] = [];
  let off = 0;
  while (off + 5 <= iim.length && iim[off] === 0x1c) {
    const record = iim[off + 1];
    const dataset = iim[off + 2];
    let length = iim.readUInt16BE(off + 3);
    let dataAt = off + 5;
    if (length & 0x8000) {
      // Extended dataset: the low 15 bits give the size of the length field that follows.
      const lengthSize = length & 0x7fff;
      if (lengthSize < 1 || lengthSize > 4 || dataAt + lengthSize > iim.length) break;
      length = iim.readUIntBE(dataAt, lengthSize);
      dataAt += lengthSize;
    }
    raw.push({ record, dataset, data: iim.subarray(dataAt, Math.min(dataAt + length, iim.length)) });
    off = dataAt + length;
  }
  const utf8 = raw.some((d) => d.record === 1 && d.dataset === 90 && declaresUtf8(d.data));
  const values = new Map<number, string[]>();
  for (const d of raw) {
    if (d.record !== 2) continue;
    const text = utf8 ? new TextDecoder('utf-8').decode(d.data) : decodeLatin1(d.data);
    values.set(d.dataset, [...(values.get(d.dataset) ?? []), text]);
  }
  return new IptcDatasets(values);
}

/**
 * "Latin-1" as it is met in practice: Windows-1252, which equals ISO-8859-1 for every printable
 * character and maps the 0x80-0x9F range to the curly quotes, dashes and euro sign old Windows
 * tools wrote there (ISO-8859-1 would give invisible control characters). Done by hand because
 * Node's TextDecoder('windows-1252') decodes as plain ISO-8859-1.
 */
function decodeLatin1(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1')
    .replace(/[\u0080-\u009f]/g, (c) => CP1252_80_9F[c.charCodeAt(0) - 0x80]);
}

/** Windows-1252 0x80-0x9F; the five unassigned bytes keep their code point, as WHATWG decodes them. */
const CP1252_80_9F = '\u20ac\u0081\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\u008d\u017d\u008f'
  + '\u0090\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\u009d\u017e\u0178';

// ---------------------------------------------------------------------------------------------
// XMP
// ---------------------------------------------------------------------------------------------

function xmpFrom(fromExifr: unknown, fromSharp: Buffer | undefined): XmpPacket | undefined {
  // exifr reads JPEG extended XMP and TIFF; sharp also covers PNG zTXt, WebP, HEIF.
  const xml = typeof fromExifr === 'string' && fromExifr.trim() ? fromExifr : fromSharp?.toString('utf8');
  return xml ? new XmpPacket(xml) : undefined;
}

const RDF = 'http://www.w3.org/1999/02/22-rdf-syntax-ns#';
const CONVENTIONAL_PREFIX: Record<string, string> = { [DC]: 'dc', [PHOTOSHOP]: 'photoshop', [XMP_MM]: 'xmpMM', [RDF]: 'rdf' };
/** Attribute list of a start tag; quoted values may contain '>' and '/'. */
const ATTRS = `((?:[^>"'/]|/(?!>)|"[^"]*"|'[^']*')*)`;

interface XmpItem {
  lang?: string;
  value: string;
}

/**
 * Reads the handful of simple, language-alternative and bag/seq properties the mapping needs from
 * an XMP packet, in both RDF spellings (attribute `ns:Prop="v"` and element `<ns:Prop>`).
 * Prefixes are resolved through the packet's xmlns declarations, so a packet that binds the Dublin
 * Core namespace to another prefix still works. Not a general RDF parser: structs are ignored.
 */
class XmpPacket {
  private readonly prefixes = new Map<string, string[]>();
  private readonly xml: string;

  constructor(packet: string) {
    for (const m of packet.matchAll(/xmlns:([A-Za-z_][\w.-]*)\s*=\s*(["'])(.*?)\2/g)) {
      const list = this.prefixes.get(m[3]) ?? [];
      if (!list.includes(m[1])) this.prefixes.set(m[3], [...list, m[1]]);
    }
    // A pantry (Photoshop, Illustrator) embeds whole XMP descriptions of placed documents, with their
    // own dc:title, DocumentID...: none of it describes this file.
    const pantry = escapeRegExp(`${this.prefixesOf(XMP_MM)[0]}:Pantry`);
    this.xml = packet.replace(new RegExp(`<${pantry}[\\s>][\\s\\S]*?</${pantry}\\s*>`, 'g'), '');
  }

  /** Single text value: the x-default alternative, else the first item. */
  text(ns: string, name: string): string | undefined {
    const items = this.items(ns, name);
    return (items.find((i) => i.lang === 'x-default') ?? items[0])?.value;
  }

  /** All items of a bag/seq (or the single value). */
  list(ns: string, name: string): string[] {
    return this.items(ns, name).map((i) => i.value);
  }

  private items(ns: string, name: string): XmpItem[] {
    for (const prefix of this.prefixesOf(ns)) {
      const qname = escapeRegExp(`${prefix}:${name}`);
      const found = this.elementItems(qname) ?? this.attributeItem(qname);
      if (found) return found.flatMap((i) => {
        const value = clean(i.value);
        return value === undefined ? [] : [{ ...i, value }];
      });
    }
    return [];
  }

  private prefixesOf(ns: string): string[] {
    return this.prefixes.get(ns) ?? [CONVENTIONAL_PREFIX[ns]];
  }

  private elementItems(qname: string): XmpItem[] | undefined {
    const m = new RegExp(`<${qname}(?=[\\s/>])${ATTRS}>([\\s\\S]*?)</${qname}\\s*>`).exec(this.xml);
    if (!m) return undefined;
    const inner = m[2];
    const rdf = escapeRegExp(this.prefixesOf(RDF)[0]);
    if (!new RegExp(`<${rdf}:li[\\s/>]`).test(inner)) {
      const value = this.textContent(inner);
      return value === undefined ? undefined : [{ value }];
    }
    const items: XmpItem[] = [];
    for (const li of inner.matchAll(new RegExp(`<${rdf}:li(?=[\\s>])${ATTRS}>([\\s\\S]*?)</${rdf}:li\\s*>`, 'g'))) {
      const value = this.textContent(li[2]);
      const lang = /xml:lang\s*=\s*(["'])(.*?)\1/.exec(li[1])?.[2];
      if (value !== undefined) items.push(lang === undefined ? { value } : { lang, value });
    }
    return items;
  }

  /** Text of an element; a qualified value (<rdf:value>) inside a resource counts as its text. */
  private textContent(inner: string): string | undefined {
    const rdf = escapeRegExp(this.prefixesOf(RDF)[0]);
    const qualified = new RegExp(`<${rdf}:value(?=[\\s>])${ATTRS}>([\\s\\S]*?)</${rdf}:value\\s*>`).exec(inner);
    if (qualified) return xmlText(qualified[2]);
    if (inner.replace(CDATA, '').includes('<')) return undefined; // a struct: not a text property
    return xmlText(inner);
  }

  private attributeItem(qname: string): XmpItem[] | undefined {
    for (const tag of this.xml.matchAll(new RegExp(`<[A-Za-z_][\\w.-]*:Description(?=[\\s/>])${ATTRS}/?>`, 'g'))) {
      const m = new RegExp(`(?:^|\\s)${qname}\\s*=\\s*(?:"([^"]*)"|'([^']*)')`).exec(tag[1]);
      if (m) return [{ value: decodeEntities(m[1] ?? m[2]) }];
    }
    return undefined;
  }
}

const CDATA = /<!\[CDATA\[[\s\S]*?\]\]>/g;

/** Character data: CDATA sections verbatim, the rest with entities decoded. */
function xmlText(raw: string): string {
  return raw.split(/(<!\[CDATA\[[\s\S]*?\]\]>)/).map((part) => (part.startsWith('<![CDATA[') ? part.slice(9, -3) : decodeEntities(part))).join('');
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

function decodeEntities(s: string): string {
  return s.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (whole, ref: string) => {
    if (ref[0] !== '#') return ENTITIES[ref] ?? whole;
    const code = ref[1] === 'x' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
    return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
  });
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

// ---------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------

/**
 * Text as stored in the index: trimmed, NUL padding removed, NFC-normalised (so an NFD keyword from
 * a Mac tool and its NFC twin from IPTC de-duplicate), empty → undefined. Numbers become text.
 */
function clean(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value !== 'string') return undefined;
  // eslint-disable-next-line no-control-regex
  const s = value.replace(/\u0000+$/g, '').trim().normalize('NFC');
  return s === '' ? undefined : s;
}

function unique(values: string[]): string[] {
  return [...new Set(values.map(clean).filter((s): s is string => s !== undefined))];
}

function positiveNumber(value: unknown): number | undefined {
  const n = typeof value === 'number' ? value : typeof value === 'string' && value.trim() ? Number(value) : NaN;
  return Number.isFinite(n) && n > 0 ? n : undefined;
}

function positiveInt(value: unknown): number | undefined {
  const n = positiveNumber(value);
  return n !== undefined && Number.isInteger(n) ? n : undefined;
}

/** Up to two decimals, no trailing zeros: 2.8 → "2.8", 11 → "11", 118.1102 → "118.11". */
function decimal(n: number | undefined): string | undefined {
  return n === undefined ? undefined : String(Number(n.toFixed(2)));
}

/** Assigns only defined values, so stored objects carry no `undefined` keys. */
function setIf<T extends object, K extends keyof T>(target: T, key: K, value: T[K] | undefined): void {
  if (value !== undefined) target[key] = value;
}

function firstLine(e: unknown): string {
  const message = e instanceof Error ? e.message : String(e);
  return message.split('\n')[0].trim();
}
