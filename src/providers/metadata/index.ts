/**
 * What the library provider knows about a file from its bytes: media type, kind, pixel size, colour
 * space and the embedded EXIF / IPTC / XMP metadata, mapped onto the seed's Asset fields by the
 * rules of SPEC.md section 6 ("Where embedded metadata fills the seed's fields").
 *
 * Sources, and why each is used:
 * - file-type sniffs the media type from the content (extensions lie); the name's extension (mime-db,
 *   through src/providers/kit/mime.ts) is only a fallback for formats file-type cannot recognise
 *   from bytes (text formats that have no magic number, SVG).
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
import path from 'node:path';
import type { Metadata as ImageHeader } from 'sharp';
import { defaultImageWork, type ImageWork } from '../../images/pool.js';
import type { Exif, Iptc, Xmp } from '../model.js';
import { exifCopyright, exifFromBlock, mapExif, readWithExifr } from './exif.js';
import { colorSpaceName, iccDescription } from './icc.js';
import { IPTC, iptcFrom, mapIptc, type IptcDatasets } from './iptc.js';
import { assertReadableFile, kindOf, sniffMimeType, type AssetKind } from './sniff.js';
import { firstLine, positiveInt, setIf, unique } from './values.js';
import { DC, mapXmp, PHOTOSHOP, xmpFrom, type XmpPacket } from './xmp.js';

export { kindOf, typeByName, type AssetKind } from './sniff.js';
export { formatResolution, parseExifDateTime } from './exif.js';

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
 * deadline; default the shared fallback pool. `name`: the file's own name when `file` is a copy
 * under another one (the library reads a snapshot): its extension names the text formats.
 */
export async function extractMetadata(file: string, images: ImageWork = defaultImageWork(), name: string = path.basename(file)): Promise<ExtractedMetadata> {
  const size = await assertReadableFile(file);
  const warnings: string[] = [];
  const mimeType = await sniffMimeType(file, name, warnings);
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

// ---------------------------------------------------------------------------------------------
// Mapping (SPEC.md section 6): first source present wins
// ---------------------------------------------------------------------------------------------

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
