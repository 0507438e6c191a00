/**
 * EXIF: exifr parses it (and finds the XMP packet) straight from the file, tolerating damaged
 * files; formats exifr cannot open (WebP, HEIF...) give their raw block through sharp. Mapped onto
 * the Asset's `exif` fields by SPEC.md section 6.
 */
import exifr from 'exifr';
import type { Exif } from '../model.js';
import { clean, decimal, firstLine, positiveInt, positiveNumber, setIf } from './values.js';

export interface ExifrOutput {
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
export const EXIFR_OPTIONS = {
  tiff: true, ifd0: {}, exif: true, gps: false, interop: false, ifd1: false, makerNote: false, userComment: false,
  xmp: { parse: false, multiSegment: true }, iptc: { translateKeys: false }, icc: false, jfif: false, ihdr: false,
  mergeOutput: false, translateKeys: true, translateValues: false, reviveValues: false, silentErrors: true,
};

export async function readWithExifr(file: string, warnings: string[]): Promise<ExifrOutput | undefined> {
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
export async function exifFromBlock(block: Buffer | undefined, warnings: string[]): Promise<Record<string, unknown>> {
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

/** EXIF Copyright may hold "photographer\0editor"; show both parts. */
export function exifCopyright(value: unknown): string | undefined {
  if (typeof value !== 'string') return clean(value);
  return clean(value.split('\0').map((s) => s.trim()).filter(Boolean).join(' / '));
}

/**
 * exif.orientation is the EXIF Orientation code as a decimal string ("1".."8"; "6" = rotate 90°
 * clockwise to display), not exifr's English label ("Rotate 90 CW"): a stable value clients can
 * switch on. exif.width/height are the EXIF pixel dimensions, else the image's own.
 */
export function mapExif(tags: Record<string, unknown>, image: { width?: number; height?: number }, warnings: string[]): Exif {
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
