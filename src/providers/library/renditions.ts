/**
 * Thumbnails and previews of library images, generated with sharp at indexing time and cached
 * under `<data>/library/renditions/<asset id>/<version>-<name>.jpg`. The original is decoded once
 * (into the preview); the thumbnail is made from the preview. Anything sharp cannot decode gets
 * no rendition file and is served a generic icon instead, never an error.
 */
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';

export const RENDITIONS = {
  thumbnail: { size: 256, quality: 80 },
  preview: { size: 1024, quality: 82 },
} as const;
export type RenditionName = keyof typeof RENDITIONS;

/** Raster formats sharp decodes (others get an icon). */
const DECODABLE = new Set(['image/jpeg', 'image/png', 'image/webp', 'image/gif', 'image/tiff', 'image/avif', 'image/heic', 'image/heif', 'image/svg+xml']);

export class Renditions {
  constructor(private readonly dir: string) {
    fs.mkdirSync(dir, { recursive: true });
  }

  file(assetId: string, version: number, name: RenditionName): string {
    return path.join(this.dir, assetId, `${version}-${name}.jpg`);
  }

  has(assetId: string, version: number, name: RenditionName): boolean {
    return fs.existsSync(this.file(assetId, version, name));
  }

  /** Returns whether renditions were made; never throws for undecodable content. */
  async generate(assetId: string, version: number, source: string, mimeType: string): Promise<{ ok: boolean; warning?: string }> {
    if (!DECODABLE.has(mimeType)) return { ok: false };
    const preview = this.file(assetId, version, 'preview');
    const thumb = this.file(assetId, version, 'thumbnail');
    fs.mkdirSync(path.dirname(preview), { recursive: true });
    try {
      // failOn 'none': a truncated JPEG still yields what could be decoded.
      const buf = await sharp(source, { failOn: 'none', limitInputPixels: 268_402_689, sequentialRead: true })
        .rotate()
        .resize(RENDITIONS.preview.size, RENDITIONS.preview.size, { fit: 'inside', withoutEnlargement: true })
        .flatten({ background: '#ffffff' })
        .jpeg({ quality: RENDITIONS.preview.quality, mozjpeg: false })
        .toBuffer();
      await writeAtomic(preview, buf);
      const small = await sharp(buf).resize(RENDITIONS.thumbnail.size, RENDITIONS.thumbnail.size, { fit: 'inside', withoutEnlargement: true }).jpeg({ quality: RENDITIONS.thumbnail.quality }).toBuffer();
      await writeAtomic(thumb, small);
      return { ok: true };
    } catch (e) {
      return { ok: false, warning: `no rendition: ${(e as Error).message}` };
    }
  }

  /** Drops cached renditions of versions other than `keep` (they are regenerated on demand for old versions). */
  remove(assetId: string): void {
    fs.rmSync(path.join(this.dir, assetId), { recursive: true, force: true });
  }
}

async function writeAtomic(file: string, data: Buffer): Promise<void> {
  const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  await fs.promises.writeFile(tmp, data);
  await fs.promises.rename(tmp, file);
}

/** A neutral SVG icon per kind of file, for assets without a raster rendition. */
export function iconSvg(kind: string, ext: string): string {
  const colors: Record<string, string> = { image: '#5b8def', video: '#e8833a', audio: '#9b59b6', document: '#d9534f', other: '#7f8c8d' };
  const label = (ext || kind).slice(0, 5).toUpperCase().replace(/[^A-Z0-9]/g, '');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="256" height="256" viewBox="0 0 256 256"><rect x="48" y="24" width="160" height="208" rx="14" fill="${colors[kind] ?? colors.other}"/><path d="M168 24v40h40" fill="none" stroke="#fff" stroke-width="6" opacity=".6"/><text x="128" y="160" font-family="sans-serif" font-size="40" font-weight="700" fill="#fff" text-anchor="middle">${label}</text></svg>`;
}
