/**
 * The ICC profile's description and the colour space's name. exifr parses the profile sharp hands
 * us (exifr's own ICC reader only sees the first JPEG APP2 segment and logs to the console when a
 * profile is longer).
 */
import exifr from 'exifr';
import { clean, firstLine } from './values.js';

export async function iccDescription(icc: Buffer | undefined, warnings: string[]): Promise<string | undefined> {
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

export function colorSpaceName(space: string): string {
  return COLOR_SPACE_NAMES[space] ?? space;
}
