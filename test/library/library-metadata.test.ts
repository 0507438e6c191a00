/**
 * The library provider's file readers: streaming hashes (checked against whole-buffer digests
 * computed here independently) and embedded metadata (checked against the values the fixtures
 * wrote, including the SPEC.md section 6 precedence and charset rules).
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import exifr from 'exifr';
import { fileAttributesHash, hashBytes, hashFile, hashStream } from '../../src/providers/library/hashes.js';
import { extractMetadata, formatResolution, kindOf, parseExifDateTime } from '../../src/providers/metadata/index.js';
import {
  insertJpegSegment, jpegWithMetadata, photoshopIptcSegment, iptcIim, pngWithMetadata, webpWithMetadata, writeTree, xmpPacket,
  type JpegFixture,
} from '../helpers/fixtures.js';

const MiB = 1024 * 1024;
let dir: string;

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'damhub-metadata-'));
});
after(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

let counter = 0;
function write(name: string, content: Buffer | string): string {
  const file = path.join(dir, `${counter++}-${name}`);
  fs.writeFileSync(file, content);
  return file;
}

async function jpegFile(opts: JpegFixture): Promise<string> {
  return write('fixture.jpg', await jpegWithMetadata(opts));
}

// ---------------------------------------------------------------------------------------------
// Hashes
// ---------------------------------------------------------------------------------------------

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest();

/** The SPEC definition, computed from the whole buffer by slicing. */
function expectedHashes(buf: Buffer) {
  const blocks: Buffer[] = [];
  for (let at = 0; at < buf.length; at += 4 * MiB) blocks.push(sha256(buf.subarray(at, at + 4 * MiB)));
  return {
    md5: createHash('md5').update(buf).digest('hex'),
    sha1: createHash('sha1').update(buf).digest('hex'),
    sha256: createHash('sha256').update(buf).digest('hex'),
    sha512: createHash('sha512').update(buf).digest('hex'),
    crc32: zlib.crc32(buf).toString(16).padStart(8, '0'),
    sha256Split4MB: sha256(Buffer.concat(blocks)).toString('hex'),
    sha256First16MB: createHash('sha256').update(buf.subarray(0, 16 * MiB)).digest('hex'),
    size: buf.length,
  };
}

describe('hashFile', () => {
  const sizes = [0, 1, 4 * MiB - 1, 4 * MiB, 4 * MiB + 1, 9 * MiB + 12345, 16 * MiB, 17 * MiB];
  for (const size of sizes) {
    test(`every digest matches a whole-buffer computation (${size} bytes)`, async () => {
      const buf = randomBytes(size);
      const file = write(`random-${size}.bin`, buf);
      assert.deepEqual(await hashFile(file), expectedHashes(buf));
      assert.deepEqual(await hashBytes(buf), expectedHashes(buf), 'hashBytes over the same bytes in memory');
    });
  }

  test('chunks that straddle 4 MiB and 16 MiB boundaries are split correctly', async () => {
    const buf = randomBytes(17 * MiB + 5);
    const sizes = [1, 4 * MiB - 2, 3, 999_983, 4 * MiB + 7, 65_537, 12 * MiB];
    const chunks: Buffer[] = [];
    for (let at = 0, i = 0; at < buf.length; i++) {
      const size = sizes[i % sizes.length];
      chunks.push(buf.subarray(at, at + size));
      at += size;
    }
    assert.equal(Buffer.concat(chunks).length, buf.length);
    assert.deepEqual(await hashStream(chunks), expectedHashes(buf));
    // Byte-sized chunks around the first block boundary.
    const small = randomBytes(4 * MiB + 3);
    const bytewise = [small.subarray(0, 4 * MiB - 2), ...[...small.subarray(4 * MiB - 2)].map((b) => Buffer.from([b]))];
    assert.deepEqual(await hashStream(bytewise), expectedHashes(small));
  });

  test('an empty file: Split4MB is the SHA-256 of the empty concatenation', async () => {
    const h = await hashFile(write('empty.bin', Buffer.alloc(0)));
    const emptySha256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
    assert.equal(h.sha256Split4MB, emptySha256);
    assert.equal(h.sha256First16MB, emptySha256);
    assert.equal(h.crc32, '00000000');
    assert.equal(h.size, 0);
  });

  test('a file of exactly one block: Split4MB is the SHA-256 of that one block digest', async () => {
    const buf = randomBytes(4 * MiB);
    const h = await hashFile(write('one-block.bin', buf));
    assert.equal(h.sha256Split4MB, sha256(sha256(buf)).toString('hex'));
  });

  test('crc32 keeps leading zeros (8 hex digits)', async () => {
    let buf = Buffer.alloc(0);
    for (let i = 0; i < 65536; i++) {
      buf = Buffer.from([i >> 8, i & 0xff]);
      if (zlib.crc32(buf) < 0x10000000) break;
    }
    const h = await hashFile(write('small-crc.bin', buf));
    assert.match(h.crc32, /^0[0-9a-f]{7}$/);
    assert.equal(parseInt(h.crc32, 16), zlib.crc32(buf));
  });

  test('all hex is lower case', async () => {
    const h = await hashFile(write('case.bin', randomBytes(1000)));
    for (const [k, v] of Object.entries(h)) if (k !== 'size') assert.match(String(v), /^[0-9a-f]+$/, k);
  });

  test('aborting rejects with AbortError; a missing file rejects with ENOENT', async () => {
    const file = write('abort.bin', randomBytes(8 * MiB));
    const before = new AbortController();
    before.abort();
    await assert.rejects(hashFile(file, before.signal), { name: 'AbortError' });
    const during = new AbortController();
    const pending = hashFile(file, during.signal);
    during.abort();
    await assert.rejects(pending, { name: 'AbortError' });
    await assert.rejects(hashFile(path.join(dir, 'missing.bin')), { code: 'ENOENT' });
  });

  test('fileAttributesHash is <size>-<whole ms>', () => {
    assert.equal(fileAttributesHash(1234, 1_700_000_000_123.9), '1234-1700000000123');
    assert.equal(fileAttributesHash(0, 0), '0-0');
  });
});

// ---------------------------------------------------------------------------------------------
// Metadata: a fully tagged JPEG
// ---------------------------------------------------------------------------------------------

const FULL: JpegFixture = {
  width: 64,
  height: 48,
  exif: {
    model: 'Hub Camera X100',
    copyright: 'EXIF Copyright Holder',
    orientation: 6,
    resolution: { value: 300, unit: 'inch' },
    dateTimeOriginal: '2021:06:15 14:30:00',
    offsetTimeOriginal: '+02:00',
    exposureTime: '1/250',
    fNumber: '28/10',
    iso: 400,
  },
  xmp: {
    title: [{ lang: 'de', value: 'Titel auf Deutsch' }, { lang: 'x-default', value: 'XMP Title 日本' }],
    description: 'XMP description',
    rights: '© XMP Rights Owner',
    subject: ['sunset', 'beach', 'Zürich', 'xmp-only'],
    headline: 'XMP Headline',
    credit: 'XMP Credit',
    city: 'Genève',
    state: 'GE',
    country: 'Switzerland',
    supplementalCategories: ['Travel', 'Nature'],
    documentId: 'xmp.did:0001',
    instanceId: 'xmp.iid:0002',
    originalDocumentId: 'xmp.did:0000',
  },
  iptc: {
    objectName: 'IPTC Object Name',
    category: 'TRV',
    supplementalCategories: ['Nature', 'Outdoors'],
    keywords: ['beach', 'été', '日本'],
    specialInstructions: 'Do not crop',
    city: 'Zürich',
    provinceState: 'Zürich Canton',
    countryName: 'Schweiz',
    headline: 'IPTC Headline',
    credit: 'IPTC Credit',
    copyrightNotice: 'IPTC Copyright',
    caption: 'IPTC caption – éü 日本',
    writer: 'Editor Ünal',
  },
};

describe('extractMetadata: a JPEG with EXIF, IPTC (UTF-8) and XMP', () => {
  test('maps every field from its source', async () => {
    const m = await extractMetadata(await jpegFile(FULL));
    assert.deepEqual(m.warnings, []);
    assert.equal(m.mimeType, 'image/jpeg');
    assert.equal(m.kind, 'image');
    // Pixel size as stored, although orientation 6 displays it as 48x64.
    assert.equal(m.width, 64);
    assert.equal(m.height, 48);
    assert.equal(m.colorSpace, 'sRGB');
    assert.equal(m.title, 'XMP Title 日本'); // the x-default alternative, not the first one
    assert.equal(m.caption, 'XMP description');
    assert.equal(m.copyright, '© XMP Rights Owner');
    assert.deepEqual(m.keywords, ['beach', 'été', '日本', 'sunset', 'Zürich', 'xmp-only']);
    assert.deepEqual(m.categories, ['Nature', 'Outdoors', 'Travel', 'TRV']);
    assert.deepEqual(m.iptc, {
      headline: 'IPTC Headline',
      caption: 'IPTC caption – éü 日本',
      captionWriter: 'Editor Ünal',
      instructions: 'Do not crop',
      copyrightNotice: 'IPTC Copyright',
      credit: 'IPTC Credit',
      city: 'Zürich',
      provinceState: 'Zürich Canton',
      countryName: 'Schweiz',
    });
    assert.deepEqual(m.xmp, {
      headline: 'XMP Headline',
      credit: 'XMP Credit',
      city: 'Genève',
      provinceState: 'GE',
      countryName: 'Switzerland',
      originalDocumentId: 'xmp.did:0000',
      documentId: 'xmp.did:0001',
      instanceId: 'xmp.iid:0002',
      iccProfileDescription: 'sRGB',
    });
    assert.deepEqual(m.exif, {
      cameraModel: 'Hub Camera X100',
      orientation: '6',
      exposureTime: 0.004,
      apertureValue: '2.8',
      isoSpeedRatings: '400',
      width: 64,
      height: 48,
      resolution: '300x300 dpi',
      dateTimeOriginal: Date.UTC(2021, 5, 15, 12, 30, 0), // 14:30 at +02:00
    });
  });

  test('the result is the same whatever the process time zone', async () => {
    const file = await jpegFile({ exif: { dateTimeOriginal: '2021:01:10 08:00:00' } });
    const withOffset = await jpegFile({ exif: { dateTimeOriginal: '2021:01:10 08:00:00', offsetTimeOriginal: '-05:00' } });
    const saved = process.env.TZ;
    try {
      for (const tz of ['UTC', 'America/New_York', 'Asia/Tokyo']) {
        process.env.TZ = tz;
        assert.equal(new Date(Date.UTC(2021, 0, 1)).getTimezoneOffset(), { UTC: 0, 'America/New_York': 300, 'Asia/Tokyo': -540 }[tz], 'TZ took effect');
        assert.equal((await extractMetadata(file)).exif.dateTimeOriginal, Date.UTC(2021, 0, 10, 8, 0, 0), `no offset → UTC (${tz})`);
        assert.equal((await extractMetadata(withOffset)).exif.dateTimeOriginal, Date.UTC(2021, 0, 10, 13, 0, 0), `-05:00 (${tz})`);
      }
    } finally {
      if (saved === undefined) delete process.env.TZ;
      else process.env.TZ = saved;
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Precedence and merging
// ---------------------------------------------------------------------------------------------

describe('extractMetadata: first source present wins', () => {
  test('IPTC fills title, caption and copyright when XMP has none', async () => {
    const m = await extractMetadata(await jpegFile({
      exif: { copyright: 'EXIF Copyright' },
      xmp: { headline: 'only a headline' },
      iptc: { objectName: 'IPTC Name', caption: 'IPTC Caption', copyrightNotice: 'IPTC Notice' },
    }));
    assert.equal(m.title, 'IPTC Name');
    assert.equal(m.caption, 'IPTC Caption');
    assert.equal(m.copyright, 'IPTC Notice');
  });

  test('XMP beats IPTC for each of title, caption and copyright independently', async () => {
    const m = await extractMetadata(await jpegFile({
      xmp: { title: 'XMP Title' },
      iptc: { objectName: 'IPTC Name', caption: 'IPTC Caption', copyrightNotice: 'IPTC Notice' },
    }));
    assert.equal(m.title, 'XMP Title');
    assert.equal(m.caption, 'IPTC Caption');
    assert.equal(m.copyright, 'IPTC Notice');
  });

  test('EXIF Copyright is the last resort', async () => {
    const m = await extractMetadata(await jpegFile({ exif: { copyright: 'EXIF Copyright', model: 'Cam' } }));
    assert.equal(m.copyright, 'EXIF Copyright');
    assert.equal(m.title, undefined);
    assert.equal(m.caption, undefined);
    assert.deepEqual(m.iptc, {});
  });

  test('keywords: IPTC first, then XMP, trimmed, empty dropped, de-duplicated (also across NFC/NFD)', async () => {
    const m = await extractMetadata(await jpegFile({
      iptc: { keywords: [' alpha ', 'beta', '', 'Café', 'beta'] },
      xmp: { subject: ['gamma', 'alpha', 'Cafe\u0301', '  ', 'delta'] },
    }));
    assert.deepEqual(m.keywords, ['alpha', 'beta', 'Café', 'gamma', 'delta']);
  });

  test('categories: IPTC SupplementalCategories, XMP SupplementalCategories, IPTC Category', async () => {
    const m = await extractMetadata(await jpegFile({
      iptc: { supplementalCategories: ['One', 'Two'], category: 'CAT' },
      xmp: { supplementalCategories: ['Two', 'Three'] },
    }));
    assert.deepEqual(m.categories, ['One', 'Two', 'Three', 'CAT']);
  });

  test('IPTC only: iptc.* filled, xmp.* holds only the ICC description', async () => {
    const m = await extractMetadata(await jpegFile({ iptc: { headline: 'H', credit: 'C', writer: 'W' } }));
    assert.deepEqual(m.iptc, { headline: 'H', credit: 'C', captionWriter: 'W' });
    assert.deepEqual(m.xmp, { iccProfileDescription: 'sRGB' });
    assert.deepEqual(m.keywords, []);
  });
});

// ---------------------------------------------------------------------------------------------
// Character sets
// ---------------------------------------------------------------------------------------------

describe('extractMetadata: IPTC character sets', () => {
  test('Latin-1 IPTC (no CodedCharacterSet) decodes accented text', async () => {
    const m = await extractMetadata(await jpegFile({
      iptcCharset: 'latin1',
      iptc: { caption: 'Crème brûlée für Sie', city: 'Zürich', keywords: ['été', 'Ärger'], objectName: 'Ñandú' },
    }));
    assert.equal(m.caption, 'Crème brûlée für Sie');
    assert.equal(m.title, 'Ñandú');
    assert.equal(m.iptc.city, 'Zürich');
    assert.deepEqual(m.keywords, ['été', 'Ärger']);
  });

  test('UTF-8 IPTC (1:90 = ESC % G) decodes accents and CJK', async () => {
    const m = await extractMetadata(await jpegFile({
      iptcCharset: 'utf-8',
      iptc: { caption: 'Crème brûlée für Sie', city: '日本 東京', keywords: ['été', '日本'] },
    }));
    assert.equal(m.caption, 'Crème brûlée für Sie');
    assert.equal(m.iptc.city, '日本 東京');
    assert.deepEqual(m.keywords, ['été', '日本']);
  });

  test('UTF-8 bytes without the declaration are read as Latin-1, as the spec says', async () => {
    const m = await extractMetadata(await jpegFile({ iptcCharset: 'latin1', iptc: { city: Buffer.from('Zürich', 'utf8') } }));
    assert.equal(m.iptc.city, 'ZÃ¼rich');
  });

  test('"Latin-1" 0x80-0x9F bytes are read as Windows-1252 punctuation', async () => {
    const m = await extractMetadata(await jpegFile({ iptcCharset: 'latin1', iptc: { caption: Buffer.from([0x93, 0x48, 0x69, 0x94, 0x20, 0x96, 0x20, 0x80]) } }));
    assert.equal(m.caption, '“Hi” – €');
  });

  test('the fixture APP13 segment is read by an independent reader (exifr)', async () => {
    const jpeg = await jpegWithMetadata({ iptcCharset: 'latin1', iptc: { headline: 'Plain', keywords: ['k1', 'k2'], writer: 'W' } });
    const parsed = await exifr.parse(jpeg, { tiff: false, iptc: true, mergeOutput: false });
    assert.deepEqual(parsed.iptc, { ApplicationRecordVersion: '\x00\x04', Keywords: ['k1', 'k2'], Headline: 'Plain', Writer: 'W' });
  });

  test('an IPTC block after other Photoshop resources, with a named resource, is found', async () => {
    const base = await jpegWithMetadata({});
    const iim = iptcIim({ headline: 'Found it' });
    const other = Buffer.concat([Buffer.from('8BIM', 'latin1'), Buffer.from([0x03, 0xed, 0x03, 0x61, 0x62, 0x63]), Buffer.from([0, 0, 0, 3]), Buffer.from([1, 2, 3, 0])]);
    const segment = photoshopIptcSegment(iim);
    // Splice the extra resource between "Photoshop 3.0\0" and the IPTC resource, fixing the length.
    const payload = Buffer.concat([segment.subarray(4, 18), other, segment.subarray(18)]);
    const header = Buffer.from([0xff, 0xed, 0, 0]);
    header.writeUInt16BE(payload.length + 2, 2);
    const m = await extractMetadata(write('resources.jpg', insertJpegSegment(base, Buffer.concat([header, payload]))));
    assert.equal(m.iptc.headline, 'Found it');
  });
});

// ---------------------------------------------------------------------------------------------
// XMP spellings
// ---------------------------------------------------------------------------------------------

describe('extractMetadata: XMP', () => {
  test('simple properties written as attributes', async () => {
    const m = await extractMetadata(await jpegFile({
      xmp: { style: 'attributes', headline: 'Attr & Headline', city: 'Bern', state: 'BE', country: 'CH', credit: 'Cr', documentId: 'd', instanceId: 'i', originalDocumentId: 'o' },
    }));
    assert.deepEqual(m.xmp, {
      headline: 'Attr & Headline', credit: 'Cr', city: 'Bern', provinceState: 'BE', countryName: 'CH',
      originalDocumentId: 'o', documentId: 'd', instanceId: 'i', iccProfileDescription: 'sRGB',
    });
  });

  test('values are kept as text: entities decoded, no number/boolean coercion, CDATA, other prefixes, pantry ignored', async () => {
    const packet = `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
<rdf:Description rdf:about="" xmlns:d="http://purl.org/dc/elements/1.1/" xmlns:photoshop="http://ns.adobe.com/photoshop/1.0/"
  xmlns:xmpMM="http://ns.adobe.com/xap/1.0/mm/" photoshop:Credit="0012" photoshop:City='Tom &amp; Jerry &#233;&#x65E5;'>
 <xmpMM:Pantry><rdf:Bag><rdf:li><rdf:Description xmpMM:DocumentID="placed-doc">
   <d:title><rdf:Alt><rdf:li xml:lang="x-default">Placed document title</rdf:li></rdf:Alt></d:title>
 </rdf:Description></rdf:li></rdf:Bag></xmpMM:Pantry>
 <d:title><rdf:Alt><rdf:li xml:lang="x-default">1.50</rdf:li></rdf:Alt></d:title>
 <d:description><rdf:Alt><rdf:li xml:lang="en"><![CDATA[<b>bold</b> & raw]]></rdf:li></rdf:Alt></d:description>
 <d:subject><rdf:Seq><rdf:li>007</rdf:li><rdf:li>true</rdf:li><rdf:li>1e3</rdf:li><rdf:li>&lt;tag&gt;</rdf:li></rdf:Seq></d:subject>
 <photoshop:Headline>  padded  </photoshop:Headline>
 <xmpMM:DocumentID>real-doc</xmpMM:DocumentID>
</rdf:Description></rdf:RDF></x:xmpmeta>`;
    const m = await extractMetadata(await jpegFile({ xmp: packet }));
    assert.equal(m.title, '1.50');
    assert.equal(m.caption, '<b>bold</b> & raw');
    assert.deepEqual(m.keywords, ['007', 'true', '1e3', '<tag>']);
    assert.equal(m.xmp.credit, '0012');
    assert.equal(m.xmp.city, 'Tom & Jerry é日');
    assert.equal(m.xmp.headline, 'padded');
    assert.equal(m.xmp.documentId, 'real-doc');
    assert.deepEqual(m.warnings, []);
  });

  test('the fixture packet is well formed enough for a strict reader (sanity)', () => {
    const p = xmpPacket({ title: 'a < b', subject: ['x & y'] });
    assert.match(p, /a &lt; b/);
    assert.match(p, /x &amp; y/);
  });
});

// ---------------------------------------------------------------------------------------------
// EXIF details
// ---------------------------------------------------------------------------------------------

describe('extractMetadata: EXIF details', () => {
  test('resolution in dots per centimetre', async () => {
    const m = await extractMetadata(await jpegFile({ exif: { model: 'M', resolution: { value: 100, unit: 'cm' } } }));
    assert.equal(m.exif.resolution, '100x100 dpcm');
  });

  test('orientation is the numeric code as a string, dimensions are not swapped', async () => {
    const m = await extractMetadata(await jpegFile({ width: 30, height: 20, exif: { orientation: 8 } }));
    assert.equal(m.exif.orientation, '8');
    assert.equal(m.width, 30);
    assert.equal(m.height, 20);
    assert.equal(m.exif.width, 30);
    assert.equal(m.exif.height, 20);
  });

  test('formatResolution', () => {
    assert.equal(formatResolution(300, 300, 2), '300x300 dpi');
    assert.equal(formatResolution(72, 72, 3), '72x72 dpcm');
    assert.equal(formatResolution(72, 96, undefined), '72x96 dpi');
    assert.equal(formatResolution(118.1102, 118.1102, 3), '118.11x118.11 dpcm');
    assert.equal(formatResolution(72, undefined, 1), '72x72');
    assert.equal(formatResolution(undefined, 72, 2), undefined);
  });

  test('parseExifDateTime: wall clock + offset, UTC without, invalid values rejected with a warning', () => {
    assert.equal(parseExifDateTime('2020:02:29 23:59:59', undefined), Date.UTC(2020, 1, 29, 23, 59, 59));
    assert.equal(parseExifDateTime('2020:02:29 23:59:59', '+05:30'), Date.UTC(2020, 1, 29, 18, 29, 59));
    assert.equal(parseExifDateTime('2020:01:01 00:30:00', '+0100'), Date.UTC(2019, 11, 31, 23, 30, 0));
    assert.equal(parseExifDateTime('2020:01:01 00:00:00', '-08:00'), Date.UTC(2020, 0, 1, 8, 0, 0));
    const warnings: string[] = [];
    assert.equal(parseExifDateTime('2021:02:30 10:00:00', undefined, warnings), undefined);
    assert.equal(parseExifDateTime('0000:00:00 00:00:00', undefined, warnings), undefined);
    assert.equal(parseExifDateTime('    ', undefined, warnings), undefined);
    assert.equal(warnings.length, 2);
    assert.equal(parseExifDateTime('2021:03:01 10:00:00', 'bogus', warnings), Date.UTC(2021, 2, 1, 10, 0, 0));
    assert.equal(warnings.length, 3);
  });

  test('CMYK and grey images: colour space names; CMYK profile description read', async () => {
    const cmyk = await extractMetadata(await jpegFile({ colour: 'cmyk' }));
    assert.equal(cmyk.colorSpace, 'CMYK');
    assert.equal(typeof cmyk.xmp.iccProfileDescription, 'string');
    assert.notEqual(cmyk.xmp.iccProfileDescription, 'sRGB');
    const gray = await extractMetadata(await jpegFile({ colour: 'gray', exif: { model: 'G' } }));
    assert.equal(gray.colorSpace, 'Gray');
    assert.equal(gray.xmp.iccProfileDescription, undefined);
    const p3 = await extractMetadata(await jpegFile({ colour: 'p3' }));
    assert.equal(p3.colorSpace, 'sRGB'); // libvips' interpretation: RGB; the profile tells P3
    assert.match(p3.xmp.iccProfileDescription ?? '', /P3/);
  });
});

// ---------------------------------------------------------------------------------------------
// Other formats
// ---------------------------------------------------------------------------------------------

describe('extractMetadata: other image formats', () => {
  test('PNG: EXIF (eXIf) and XMP (zTXt, read through sharp)', async () => {
    const file = write('tagged.png', await pngWithMetadata({
      width: 20, height: 10,
      exif: { model: 'PNG Cam', dateTimeOriginal: '2022:12:31 23:59:59' },
      xmp: { title: 'PNG title', subject: ['png'] },
    }));
    const m = await extractMetadata(file);
    assert.equal(m.mimeType, 'image/png');
    assert.equal(m.width, 20);
    assert.equal(m.height, 10);
    assert.equal(m.title, 'PNG title');
    assert.deepEqual(m.keywords, ['png']);
    assert.equal(m.exif.cameraModel, 'PNG Cam');
    assert.equal(m.exif.dateTimeOriginal, Date.UTC(2022, 11, 31, 23, 59, 59));
    assert.deepEqual(m.warnings, []);
  });

  test('WebP: EXIF and XMP from the blocks sharp finds (exifr cannot open WebP)', async () => {
    const file = write('tagged.webp', await webpWithMetadata({ exif: { model: 'WebP Cam', iso: 800 }, xmp: { title: 'WebP title' } }));
    const m = await extractMetadata(file);
    assert.equal(m.mimeType, 'image/webp');
    assert.equal(m.exif.cameraModel, 'WebP Cam');
    assert.equal(m.exif.isoSpeedRatings, '800');
    assert.equal(m.title, 'WebP title');
    assert.deepEqual(m.warnings, []);
  });

  test('SVG (with an XML prolog): image/svg+xml with its size', async () => {
    const m = await extractMetadata(write('drawing.svg', '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="120" height="80"><rect width="10" height="10"/></svg>'));
    assert.equal(m.mimeType, 'image/svg+xml');
    assert.equal(m.kind, 'image');
    assert.equal(m.width, 120);
    assert.equal(m.height, 80);
  });
});

// ---------------------------------------------------------------------------------------------
// Bad and non-image files: never a throw
// ---------------------------------------------------------------------------------------------

describe('extractMetadata: bad and non-image files', () => {
  test('a corrupt JPEG: image/jpeg with warnings', async () => {
    const m = await extractMetadata(write('corrupt.jpg', Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe1, 0x00, 0x40]), randomBytes(500)])));
    assert.equal(m.mimeType, 'image/jpeg');
    assert.equal(m.kind, 'image');
    assert.ok(m.warnings.length > 0);
    assert.equal(m.width, undefined);
  });

  test('a truncated JPEG keeps what its header says', async () => {
    const full = await jpegWithMetadata({ ...FULL, width: 200, height: 150 });
    const m = await extractMetadata(write('truncated.jpg', full.subarray(0, Math.floor(full.length * 0.8))));
    assert.equal(m.mimeType, 'image/jpeg');
    assert.equal(m.width, 200);
    assert.equal(m.title, 'XMP Title 日本');
    assert.equal(m.exif.cameraModel, 'Hub Camera X100');
  });

  test('a JPEG cut inside its metadata: no throw', async () => {
    const full = await jpegWithMetadata(FULL);
    const m = await extractMetadata(write('cut.jpg', full.subarray(0, 200)));
    assert.equal(m.mimeType, 'image/jpeg');
    assert.ok(m.warnings.length > 0);
  });

  test('a zero-byte file', async () => {
    const m = await extractMetadata(write('empty.jpg', Buffer.alloc(0)));
    assert.equal(m.mimeType, 'application/octet-stream');
    assert.equal(m.kind, 'other');
    assert.deepEqual(m.warnings, ['empty file']);
    assert.deepEqual(m.keywords, []);
    assert.deepEqual(m.exif, {});
  });

  test('text, JSON, CSV and Markdown by extension; a PDF by content', async () => {
    const cases: [string, string, string][] = [
      ['notes.txt', 'hello world\n', 'text/plain'],
      ['data.json', '{"a": 1}', 'application/json'],
      ['table.csv', 'a,b\n1,2\n', 'text/csv'],
      ['readme.md', '# Title\n', 'text/markdown'],
      ['paper.pdf', '%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n', 'application/pdf'],
      ['mislabelled.txt', '%PDF-1.4\nrest', 'application/pdf'],
    ];
    for (const [name, content, mime] of cases) {
      const m = await extractMetadata(write(name, content));
      assert.equal(m.mimeType, mime, name);
      assert.equal(m.kind, 'document', name);
      assert.deepEqual(m.warnings, [], name);
    }
  });

  test('unknown binary content is application/octet-stream', async () => {
    const m = await extractMetadata(write('blob.bin', Buffer.from([0x00, 0x01, 0x02, 0x03, 0xfe, 0xed])));
    assert.equal(m.mimeType, 'application/octet-stream');
    assert.equal(m.kind, 'other');
  });

  test('only path problems reject', async () => {
    await assert.rejects(extractMetadata(path.join(dir, 'does-not-exist.jpg')), { code: 'ENOENT' });
    await assert.rejects(extractMetadata(dir), { code: 'EISDIR' });
  });

  test('kindOf', () => {
    assert.equal(kindOf('image/heic'), 'image');
    assert.equal(kindOf('video/mp4'), 'video');
    assert.equal(kindOf('audio/mpeg'), 'audio');
    assert.equal(kindOf('application/vnd.openxmlformats-officedocument.wordprocessingml.document'), 'document');
    assert.equal(kindOf('text/html'), 'document');
    assert.equal(kindOf('application/zip'), 'other');
  });
});

describe('writeTree', () => {
  test('creates nested folders and writes buffers and strings', () => {
    const root = path.join(dir, 'tree');
    writeTree(root, { 'a/b/c.txt': 'text', 'a/d.bin': Buffer.from([1, 2, 3]), 'top.txt': '' });
    assert.equal(fs.readFileSync(path.join(root, 'a', 'b', 'c.txt'), 'utf8'), 'text');
    assert.deepEqual([...fs.readFileSync(path.join(root, 'a', 'd.bin'))], [1, 2, 3]);
    assert.equal(fs.statSync(path.join(root, 'top.txt')).size, 0);
  });
});
