/**
 * IPTC IIM, decoded here rather than taken from exifr's parsed output: exifr (7.1) decodes IPTC as
 * Latin-1 regardless of the CodedCharacterSet (1:90) it never reads.
 */
import type { Iptc } from '../model.js';
import { clean, firstLine, setIf } from './values.js';

/** IPTC IIM record 2 dataset numbers used by the mapping. */
export const IPTC = {
  objectName: 5, category: 15, supplementalCategories: 20, keywords: 25, specialInstructions: 40, city: 90,
  provinceState: 95, countryName: 101, headline: 105, credit: 110, copyrightNotice: 116, caption: 120, writer: 122,
} as const;

export function mapIptc(iptc: IptcDatasets): Iptc {
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

/** Decoded record 2 datasets: every occurrence of a repeatable dataset, in file order. */
export class IptcDatasets {
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
export function iptcFrom(block: Buffer | undefined, exifrIptc: Record<string, unknown> | undefined, warnings: string[]): IptcDatasets {
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
