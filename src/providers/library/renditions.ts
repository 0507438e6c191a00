/**
 * Thumbnails and previews of library images, generated with sharp at indexing time and cached
 * under `<data>/library/renditions/<asset id>/<version>-<name>.jpg`. The original is decoded once
 * (into the preview), in the image pool under the per-file decode budget (src/images/); the
 * thumbnail is made from the preview. Anything sharp cannot decode gets
 * no rendition file and is served a generic icon instead, never an error.
 */
import fs from 'node:fs';
import path from 'node:path';
import { defaultImageWork, type ImageWork } from '../../images/pool.js';

export const RENDITIONS = {
  thumbnail: { size: 256, quality: 80 },
  preview: { size: 1024, quality: 82 },
} as const;
export type RenditionName = keyof typeof RENDITIONS;

/**
 * The types the library makes renditions of (others get an icon): what sharp decodes. SVG too,
 * unlike a connector's originals (kit/thumbnails.ts, HUB_THUMBNAIL_TYPES): these are the operator's own files.
 */
const DECODABLE = new Set(['image/jpeg', 'image/png', 'image/webp', 'image/gif', 'image/tiff', 'image/avif', 'image/heic', 'image/heif', 'image/svg+xml']);

export class Renditions {
  /** `images`: the pool, budget and deadline the decodes run under (src/images/pool.ts). */
  constructor(private readonly dir: string, readonly images: ImageWork = defaultImageWork()) {
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
    const { pool, budget, timeoutMs } = this.images;
    try {
      // In the image pool, under the per-file budget and deadline: a hostile file (a few KB
      // declaring 20000×20000) is refused from its header, or killed at the deadline, and the
      // asset is simply served without renditions.
      await pool.run({
        op: 'render',
        source,
        budget,
        preview: { file: preview, size: RENDITIONS.preview.size, quality: RENDITIONS.preview.quality },
        thumbnail: { file: thumb, size: RENDITIONS.thumbnail.size, quality: RENDITIONS.thumbnail.quality },
      }, { timeoutMs, background: true });
      return { ok: true };
    } catch (e) {
      return { ok: false, warning: `no rendition: ${(e as Error).message}` };
    }
  }

  /** Carries an asset's renditions to its new id (a rename or move: ids follow paths); none there: nothing to do. */
  move(fromId: string, toId: string): void {
    const to = path.join(this.dir, toId);
    fs.rmSync(to, { recursive: true, force: true });
    try {
      fs.renameSync(path.join(this.dir, fromId), to);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
  }

  /** Drops cached renditions of versions other than `keep` (they are regenerated on demand for old versions). */
  remove(assetId: string): void {
    fs.rmSync(path.join(this.dir, assetId), { recursive: true, force: true });
  }
}

/** A neutral SVG icon per kind of file, for assets without a raster rendition. */
export function iconSvg(kind: string, ext: string): string {
  const colors: Record<string, string> = { image: '#5b8def', video: '#e8833a', audio: '#9b59b6', document: '#d9534f', other: '#7f8c8d' };
  const label = (ext || kind).slice(0, 5).toUpperCase().replace(/[^A-Z0-9]/g, '');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="256" height="256" viewBox="0 0 256 256"><rect x="48" y="24" width="160" height="208" rx="14" fill="${colors[kind] ?? colors.other}"/><path d="M168 24v40h40" fill="none" stroke="#fff" stroke-width="6" opacity=".6"/><text x="128" y="160" font-family="sans-serif" font-size="40" font-weight="700" fill="#fff" text-anchor="middle">${label}</text></svg>`;
}
