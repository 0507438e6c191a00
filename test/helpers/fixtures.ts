/**
 * Builders for real image files carrying known EXIF, IPTC and XMP, for tests that check what the
 * library provider reads back. Everything is written by sharp/libvips except IPTC, which sharp
 * cannot write: it is inserted as a JPEG APP13 "Photoshop 3.0" segment built here by the IPTC IIM
 * specification.
 *
 * libvips quirks the builders work around (sharp 0.35):
 * - EXIF Orientation and X/YResolution/ResolutionUnit passed to withExif are overwritten from the
 *   image's own orientation and density, so they are set through withMetadata({ orientation }) and
 *   the density (through a TIFF with resolutionUnit 'cm' when dots per centimetre are wanted).
 * - withMetadata embeds an sRGB ICC profile and converts to sRGB: a 'gray' image therefore cannot
 *   carry an orientation (it would no longer be grey).
 * - PNG XMP is written as a compressed zTXt chunk, which exifr 7 does not read (it reads iTXt).
 */
import fs from 'node:fs';
import path from 'node:path';
import sharp, { type Sharp } from 'sharp';

// ---------------------------------------------------------------------------------------------
// Field sets
// ---------------------------------------------------------------------------------------------

export interface ExifFields {
  /** IFD0 Model */
  model?: string;
  /** IFD0 Copyright */
  copyright?: string;
  /** 1..8 */
  orientation?: number;
  /** X/YResolution (both `value`) and ResolutionUnit: 'inch' → 2, 'cm' → 3. */
  resolution?: { value: number; unit: 'inch' | 'cm' };
  /** Exif IFD, wall clock "YYYY:MM:DD HH:MM:SS" */
  dateTimeOriginal?: string;
  /** Exif IFD, e.g. "+02:00" */
  offsetTimeOriginal?: string;
  /** Exif IFD rational, e.g. "1/250" */
  exposureTime?: string;
  /** Exif IFD rational, e.g. "28/10" */
  fNumber?: string;
  /** Exif IFD ISOSpeedRatings */
  iso?: number;
}

/** A text value, or raw bytes written as they are (to test decoding of odd encodings). */
export type IptcText = string | Buffer;

/** IPTC IIM record 2 datasets (names as in the IIM specification). */
export interface IptcFields {
  objectName?: IptcText; // 2:05
  category?: IptcText; // 2:15
  supplementalCategories?: IptcText[]; // 2:20, repeatable
  keywords?: IptcText[]; // 2:25, repeatable
  specialInstructions?: IptcText; // 2:40
  city?: IptcText; // 2:90
  provinceState?: IptcText; // 2:95
  countryName?: IptcText; // 2:101 Country-PrimaryLocationName
  headline?: IptcText; // 2:105
  credit?: IptcText; // 2:110
  copyrightNotice?: IptcText; // 2:116
  caption?: IptcText; // 2:120 Caption-Abstract
  writer?: IptcText; // 2:122 Writer-Editor
}

/**
 * 'utf-8' declares UTF-8 with 1:90 = ESC % G and encodes strings as UTF-8; 'latin1' writes no
 * declaration and encodes strings as ISO-8859-1 (characters above U+00FF are refused).
 */
export type IptcCharset = 'utf-8' | 'latin1';

export interface LangAlternative {
  lang: string;
  value: string;
}

export interface XmpFields {
  /** dc:title; a plain string is written as the x-default alternative. */
  title?: string | LangAlternative[];
  description?: string | LangAlternative[];
  rights?: string | LangAlternative[];
  /** dc:subject bag */
  subject?: string[];
  headline?: string; // photoshop:Headline
  credit?: string; // photoshop:Credit
  city?: string; // photoshop:City
  state?: string; // photoshop:State
  country?: string; // photoshop:Country
  /** photoshop:SupplementalCategories bag */
  supplementalCategories?: string[];
  documentId?: string; // xmpMM:DocumentID
  instanceId?: string; // xmpMM:InstanceID
  originalDocumentId?: string; // xmpMM:OriginalDocumentID
  /** How simple (non-array) properties are spelled: as elements (default) or as attributes. */
  style?: 'elements' | 'attributes';
}

export interface ImageFixture {
  width?: number;
  height?: number;
  /**
   * Colour space and embedded ICC profile: 'srgb' (default, sRGB profile), 'p3' (Display P3
   * profile), 'cmyk' (libvips' built-in CMYK profile), 'gray' (single channel, no profile).
   */
  colour?: 'srgb' | 'p3' | 'cmyk' | 'gray';
  exif?: ExifFields;
  /** Fields to build a packet from, or a complete packet written verbatim. */
  xmp?: XmpFields | string;
}

export interface JpegFixture extends ImageFixture {
  iptc?: IptcFields;
  /** Default 'utf-8'. */
  iptcCharset?: IptcCharset;
}

// ---------------------------------------------------------------------------------------------
// Images
// ---------------------------------------------------------------------------------------------

/** A JPEG (default 64x48 gradient) with the requested EXIF, XMP and IPTC. */
export async function jpegWithMetadata(opts: JpegFixture = {}): Promise<Buffer> {
  const jpeg = await (await tagged(opts)).jpeg({ quality: 85 }).toBuffer();
  if (!opts.iptc) return jpeg;
  return insertJpegSegment(jpeg, photoshopIptcSegment(iptcIim(opts.iptc, opts.iptcCharset ?? 'utf-8')));
}

/** A PNG (sharp writes EXIF as an eXIf chunk and XMP as a zTXt chunk; PNG has no IPTC). */
export async function pngWithMetadata(opts: ImageFixture = {}): Promise<Buffer> {
  return (await tagged(opts)).png().toBuffer();
}

/** A WebP with the same metadata (EXIF and XMP chunks of the RIFF container). */
export async function webpWithMetadata(opts: ImageFixture = {}): Promise<Buffer> {
  return (await tagged(opts)).webp().toBuffer();
}

/** The shared pipeline: pixels, density, EXIF, orientation, ICC profile, XMP. */
async function tagged(opts: ImageFixture): Promise<Sharp> {
  const { exif = {}, colour = 'srgb' } = opts;
  if (colour === 'gray' && exif.orientation !== undefined) throw new Error('a gray fixture cannot carry an orientation (withMetadata converts to sRGB)');
  let img = await withDensity(gradient(opts.width ?? 64, opts.height ?? 48), exif.resolution);
  if (colour === 'gray') img = img.toColourspace('b-w'); // greyscale() alone still writes 3 channels
  const tags = exifTags(exif);
  if (tags) img = img.withExif(tags);
  if (exif.orientation !== undefined) img = img.withMetadata({ orientation: exif.orientation });
  if (colour !== 'gray') img = img.withIccProfile(colour);
  if (opts.xmp !== undefined) img = img.withXmp(typeof opts.xmp === 'string' ? opts.xmp : xmpPacket(opts.xmp));
  return img;
}

/** Distinct pixels per position, so fixtures of different sizes hash differently. */
function gradient(width: number, height: number): Sharp {
  const pixels = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      pixels[i] = Math.round((x * 255) / Math.max(1, width - 1));
      pixels[i + 1] = Math.round((y * 255) / Math.max(1, height - 1));
      pixels[i + 2] = 128;
    }
  }
  return sharp(pixels, { raw: { width, height, channels: 3 } });
}

/**
 * libvips writes X/YResolution and ResolutionUnit from the image's density and resolution unit,
 * and only a TIFF round trip sets the unit to centimetres.
 */
async function withDensity(img: Sharp, resolution: ExifFields['resolution']): Promise<Sharp> {
  if (!resolution) return img;
  if (resolution.unit === 'inch') return img.withDensity(resolution.value);
  const tiff = await img.withDensity(resolution.value * 2.54).tiff({ resolutionUnit: 'cm' }).toBuffer();
  return sharp(tiff);
}

/** sharp's withExif shape: IFD0 = main image, IFD2 = Exif sub-IFD; values as strings. */
function exifTags(exif: ExifFields): { IFD0?: Record<string, string>; IFD2?: Record<string, string> } | undefined {
  const ifd0 = defined({ Model: exif.model, Copyright: exif.copyright });
  const ifd2 = defined({
    DateTimeOriginal: exif.dateTimeOriginal,
    OffsetTimeOriginal: exif.offsetTimeOriginal,
    ExposureTime: exif.exposureTime,
    FNumber: exif.fNumber,
    ISOSpeedRatings: exif.iso === undefined ? undefined : String(exif.iso),
  });
  if (!ifd0 && !ifd2) return undefined;
  return { ...(ifd0 && { IFD0: ifd0 }), ...(ifd2 && { IFD2: ifd2 }) };
}

function defined(record: Record<string, string | undefined>): Record<string, string> | undefined {
  const entries = Object.entries(record).filter((e): e is [string, string] => e[1] !== undefined);
  return entries.length ? Object.fromEntries(entries) : undefined;
}

// ---------------------------------------------------------------------------------------------
// IPTC IIM and the JPEG APP13 segment
// ---------------------------------------------------------------------------------------------

const IPTC_DATASETS: [keyof IptcFields, number][] = [
  ['objectName', 5], ['category', 15], ['supplementalCategories', 20], ['keywords', 25], ['specialInstructions', 40],
  ['city', 90], ['provinceState', 95], ['countryName', 101], ['headline', 105], ['credit', 110],
  ['copyrightNotice', 116], ['caption', 120], ['writer', 122],
];

/**
 * IIM datasets: the UTF-8 declaration (1:90) when asked, the record version (2:00 = 4), then the
 * record 2 datasets in ascending number order, repeatable ones in the order given.
 */
export function iptcIim(fields: IptcFields, charset: IptcCharset = 'utf-8'): Buffer {
  const parts: Buffer[] = [];
  if (charset === 'utf-8') parts.push(iimDataset(1, 90, Buffer.from([0x1b, 0x25, 0x47]))); // ESC % G
  parts.push(iimDataset(2, 0, Buffer.from([0x00, 0x04])));
  for (const [key, dataset] of IPTC_DATASETS) {
    const value = fields[key];
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) parts.push(iimDataset(2, dataset, encodeIptc(v, charset)));
  }
  return Buffer.concat(parts);
}

function encodeIptc(value: IptcText, charset: IptcCharset): Buffer {
  if (Buffer.isBuffer(value)) return value;
  if (charset === 'utf-8') return Buffer.from(value, 'utf8');
  if (/[^\u0000-\u00ff]/.test(value)) throw new Error(`"${value}" cannot be written in Latin-1`);
  return Buffer.from(value, 'latin1');
}

/** Tag marker 0x1C, record, dataset number, 2-byte big-endian length (standard datasets only). */
function iimDataset(record: number, dataset: number, data: Buffer): Buffer {
  if (data.length > 0x7fff) throw new Error('IIM extended datasets are not supported by this builder');
  const header = Buffer.from([0x1c, record, dataset, 0, 0]);
  header.writeUInt16BE(data.length, 3);
  return Buffer.concat([header, data]);
}

/**
 * A complete APP13 segment: marker FF ED, 2-byte length (counting itself), "Photoshop 3.0\0", and
 * one image resource "8BIM", id 0x0404 (IPTC-NAA), empty Pascal name padded to 2 bytes, 4-byte
 * size, the IIM data padded to an even length.
 */
export function photoshopIptcSegment(iim: Buffer): Buffer {
  const size = Buffer.alloc(4);
  size.writeUInt32BE(iim.length);
  const resource = Buffer.concat([Buffer.from('8BIM', 'latin1'), Buffer.from([0x04, 0x04, 0x00, 0x00]), size, iim, Buffer.alloc(iim.length % 2)]);
  const payload = Buffer.concat([Buffer.from('Photoshop 3.0\0', 'latin1'), resource]);
  if (payload.length + 2 > 0xffff) throw new Error('IPTC block too large for one APP13 segment');
  const header = Buffer.from([0xff, 0xed, 0, 0]);
  header.writeUInt16BE(payload.length + 2, 2);
  return Buffer.concat([header, payload]);
}

/** Inserts a marker segment right after SOI (after a JFIF APP0, which must stay first). */
export function insertJpegSegment(jpeg: Buffer, segment: Buffer): Buffer {
  if (jpeg[0] !== 0xff || jpeg[1] !== 0xd8) throw new Error('not a JPEG');
  let at = 2;
  if (jpeg[2] === 0xff && jpeg[3] === 0xe0) at = 4 + jpeg.readUInt16BE(4);
  return Buffer.concat([jpeg.subarray(0, at), segment, jpeg.subarray(at)]);
}

// ---------------------------------------------------------------------------------------------
// XMP
// ---------------------------------------------------------------------------------------------

const NAMESPACES = {
  x: 'adobe:ns:meta/',
  rdf: 'http://www.w3.org/1999/02/22-rdf-syntax-ns#',
  dc: 'http://purl.org/dc/elements/1.1/',
  photoshop: 'http://ns.adobe.com/photoshop/1.0/',
  xmpMM: 'http://ns.adobe.com/xap/1.0/mm/',
};

/** An XMP packet (xpacket wrapper included) with the standard prefixes. */
export function xmpPacket(fields: XmpFields): string {
  const simple = defined({
    'photoshop:Headline': fields.headline, 'photoshop:Credit': fields.credit, 'photoshop:City': fields.city,
    'photoshop:State': fields.state, 'photoshop:Country': fields.country,
    'xmpMM:DocumentID': fields.documentId, 'xmpMM:InstanceID': fields.instanceId, 'xmpMM:OriginalDocumentID': fields.originalDocumentId,
  }) ?? {};
  const asAttributes = fields.style === 'attributes';
  const attributes = asAttributes ? Object.entries(simple).map(([k, v]) => ` ${k}="${escapeXml(v)}"`).join('') : '';
  const elements = [
    langAlt('dc:title', fields.title), langAlt('dc:description', fields.description), langAlt('dc:rights', fields.rights),
    bag('dc:subject', fields.subject), bag('photoshop:SupplementalCategories', fields.supplementalCategories),
    ...(asAttributes ? [] : Object.entries(simple).map(([k, v]) => `   <${k}>${escapeXml(v)}</${k}>\n`)),
  ].join('');
  const xmlns = Object.entries(NAMESPACES).filter(([p]) => p !== 'x' && p !== 'rdf').map(([p, uri]) => ` xmlns:${p}="${uri}"`).join('');
  return `<?xpacket begin="\ufeff" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="${NAMESPACES.x}">
 <rdf:RDF xmlns:rdf="${NAMESPACES.rdf}">
  <rdf:Description rdf:about=""${xmlns}${attributes}>
${elements}  </rdf:Description>
 </rdf:RDF>
</x:xmpmeta>
<?xpacket end="w"?>`;
}

function langAlt(name: string, value: string | LangAlternative[] | undefined): string {
  if (value === undefined) return '';
  const items = typeof value === 'string' ? [{ lang: 'x-default', value }] : value;
  const li = items.map((i) => `     <rdf:li xml:lang="${escapeXml(i.lang)}">${escapeXml(i.value)}</rdf:li>\n`).join('');
  return `   <${name}>\n    <rdf:Alt>\n${li}    </rdf:Alt>\n   </${name}>\n`;
}

function bag(name: string, values: string[] | undefined): string {
  if (!values) return '';
  const li = values.map((v) => `     <rdf:li>${escapeXml(v)}</rdf:li>\n`).join('');
  return `   <${name}>\n    <rdf:Bag>\n${li}    </rdf:Bag>\n   </${name}>\n`;
}

export function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

// ---------------------------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------------------------

/** Writes `files` (relative paths with '/' separators) under `root`, creating folders as needed. */
export function writeTree(root: string, files: Record<string, Buffer | string>): void {
  for (const [rel, content] of Object.entries(files)) {
    const file = path.join(root, ...rel.split('/'));
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content);
  }
}
