/**
 * The hub's favicon: browsers ask every page's origin for /favicon.ico, and a 404 there is a
 * console error on the reference and demo pages and a warning line in the log for each visit.
 * Drawn once from SVG with sharp (already a dependency) and wrapped in the ICO container, which
 * may hold a PNG since Windows Vista and is read so by every current browser.
 */
import sharp from 'sharp';

const SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="32" height="32" viewBox="0 0 32 32">
<rect width="32" height="32" rx="7" fill="#1f4e99"/>
<path d="M9 8h7a8 8 0 0 1 0 16H9z" fill="none" stroke="#ffffff" stroke-width="3.5"/></svg>`;

let icon: Promise<Buffer> | null = null;

export function favicon(): Promise<Buffer> {
  icon ??= sharp(Buffer.from(SVG)).png().toBuffer().then((png) => {
    const header = Buffer.alloc(22);
    header.writeUInt16LE(0, 0); // reserved
    header.writeUInt16LE(1, 2); // type: icon
    header.writeUInt16LE(1, 4); // one image
    header.writeUInt8(32, 6); // width
    header.writeUInt8(32, 7); // height
    header.writeUInt8(0, 8); // no palette
    header.writeUInt8(0, 9); // reserved
    header.writeUInt16LE(1, 10); // colour planes
    header.writeUInt16LE(32, 12); // bits per pixel
    header.writeUInt32LE(png.length, 14); // image size
    header.writeUInt32LE(22, 18); // image offset
    return Buffer.concat([header, png]);
  });
  return icon;
}

/** The reference page's header logo: the icon and the name. */
export const DOCS_LOGO = `<svg xmlns="http://www.w3.org/2000/svg" width="150" height="32" viewBox="0 0 150 32">
<rect width="32" height="32" rx="7" fill="#1f4e99"/>
<path d="M9 8h7a8 8 0 0 1 0 16H9z" fill="none" stroke="#ffffff" stroke-width="3.5"/>
<text x="42" y="23" font-family="sans-serif" font-size="20" font-weight="600" fill="#ffffff">damhub</text></svg>`;
