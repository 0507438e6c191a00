/**
 * XMP, decoded here rather than taken from exifr's parsed output: its XMP parser turns "007" into 7
 * and "true" into true and leaves "&amp;" undecoded.
 */
import type { Xmp } from '../model.js';
import { clean, setIf } from './values.js';

export const DC = 'http://purl.org/dc/elements/1.1/';
export const PHOTOSHOP = 'http://ns.adobe.com/photoshop/1.0/';
export const XMP_MM = 'http://ns.adobe.com/xap/1.0/mm/';

export function mapXmp(xmp: XmpPacket | undefined, iccProfileDescription: string | undefined): Xmp {
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

export function xmpFrom(fromExifr: unknown, fromSharp: Buffer | undefined): XmpPacket | undefined {
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
export class XmpPacket {
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
