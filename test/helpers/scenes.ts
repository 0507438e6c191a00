/**
 * Generated reference scenes for the image benchmarks and tests: seeded, so every run builds the
 * same set. Each scene is a gradient background, a turbulence texture, 5–12 shapes (circles,
 * rectangles, triangles, lines) in random colours and a short caption, rendered by sharp (librsvg).
 */
import sharp from 'sharp';

export function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    // xorshift32: small and deterministic
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 0x1_0000_0000;
  };
}

export function sceneSvg(seed: number, width = 640, height = 480): string {
  const r = rng(seed * 7919 + 17);
  const col = () => `rgb(${Math.floor(r() * 256)},${Math.floor(r() * 256)},${Math.floor(r() * 256)})`;
  const parts: string[] = [];
  const angle = Math.floor(r() * 360);
  parts.push(`<defs><linearGradient id="g" gradientTransform="rotate(${angle} 0.5 0.5)"><stop offset="0" stop-color="${col()}"/><stop offset="1" stop-color="${col()}"/></linearGradient>`
    + `<filter id="t"><feTurbulence type="fractalNoise" baseFrequency="${(0.005 + r() * 0.05).toFixed(3)}" numOctaves="3" seed="${seed % 1000}"/><feColorMatrix type="saturate" values="0"/></filter></defs>`);
  parts.push(`<rect width="${width}" height="${height}" fill="url(#g)"/>`);
  parts.push(`<rect width="${width}" height="${height}" filter="url(#t)" opacity="${(0.15 + r() * 0.35).toFixed(2)}"/>`);
  const shapes = 5 + Math.floor(r() * 8);
  for (let i = 0; i < shapes; i++) {
    const x = r() * width, y = r() * height, s = 20 + r() * 180, op = (0.5 + r() * 0.5).toFixed(2);
    switch (Math.floor(r() * 4)) {
      case 0: parts.push(`<circle cx="${x.toFixed(0)}" cy="${y.toFixed(0)}" r="${(s / 2).toFixed(0)}" fill="${col()}" opacity="${op}"/>`); break;
      case 1: parts.push(`<rect x="${x.toFixed(0)}" y="${y.toFixed(0)}" width="${s.toFixed(0)}" height="${(s * (0.3 + r())).toFixed(0)}" fill="${col()}" opacity="${op}" transform="rotate(${Math.floor(r() * 90)} ${x.toFixed(0)} ${y.toFixed(0)})"/>`); break;
      case 2: parts.push(`<polygon points="${x.toFixed(0)},${y.toFixed(0)} ${(x + s).toFixed(0)},${(y + r() * s).toFixed(0)} ${(x + r() * s).toFixed(0)},${(y - s).toFixed(0)}" fill="${col()}" opacity="${op}"/>`); break;
      default: parts.push(`<line x1="${x.toFixed(0)}" y1="${y.toFixed(0)}" x2="${(x + s * 2 * (r() - 0.5)).toFixed(0)}" y2="${(y + s * 2 * (r() - 0.5)).toFixed(0)}" stroke="${col()}" stroke-width="${(3 + r() * 15).toFixed(0)}"/>`);
    }
  }
  parts.push(`<text x="${(r() * width * 0.6).toFixed(0)}" y="${(40 + r() * (height - 60)).toFixed(0)}" font-family="sans-serif" font-size="${(24 + r() * 40).toFixed(0)}" fill="${col()}">Scene ${seed}</text>`);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">${parts.join('')}</svg>`;
}

/** A scene as a JPEG (quality 90): landscape by default, every fifth one portrait. */
export async function sceneJpeg(seed: number): Promise<Buffer> {
  const portrait = seed % 5 === 4;
  return sharp(Buffer.from(sceneSvg(seed, portrait ? 480 : 640, portrait ? 640 : 480))).jpeg({ quality: 90 }).toBuffer();
}

export type TransformName = 'resize50' | 'crop10' | 'jpeg35' | 'bright15' | 'blur' | 'rotate3' | StressName;
export const TRANSFORMS: TransformName[] = ['resize50', 'crop10', 'jpeg35', 'bright15', 'blur', 'rotate3'];
/** Harder edits beyond the targets, to show where the descriptor stops working. */
export type StressName = 'crop25' | 'rotate8' | 'combined';
export const STRESS: StressName[] = ['crop25', 'rotate8', 'combined'];

/** The benchmark's edits: what a user's copy of a library picture typically went through. */
export async function transform(img: Buffer, t: TransformName): Promise<Buffer> {
  const meta = await sharp(img).metadata();
  const w = meta.width!, h = meta.height!;
  const s = sharp(img);
  switch (t) {
    case 'resize50': return s.resize(Math.round(w / 2), Math.round(h / 2)).jpeg({ quality: 90 }).toBuffer();
    // 10% off each dimension: 5% from every edge.
    case 'crop10': return s.extract({ left: Math.round(w * 0.05), top: Math.round(h * 0.05), width: Math.round(w * 0.9), height: Math.round(h * 0.9) }).jpeg({ quality: 90 }).toBuffer();
    case 'jpeg35': return s.jpeg({ quality: 35 }).toBuffer();
    case 'bright15': return s.modulate({ brightness: 1.15 }).jpeg({ quality: 90 }).toBuffer();
    case 'blur': return s.blur(2.5).jpeg({ quality: 90 }).toBuffer();
    // The canvas grows to hold the rotated picture; the corners are filled black.
    case 'rotate3': return s.rotate(3).jpeg({ quality: 90 }).toBuffer();
    case 'crop25': return s.extract({ left: Math.round(w * 0.125), top: Math.round(h * 0.125), width: Math.round(w * 0.75), height: Math.round(h * 0.75) }).jpeg({ quality: 90 }).toBuffer();
    case 'rotate8': return s.rotate(8).jpeg({ quality: 90 }).toBuffer();
    // Half size, 10% crop, 3° rotation, +15% brightness and JPEG q35 at once.
    case 'combined': {
      const step = await sharp(img).extract({ left: Math.round(w * 0.05), top: Math.round(h * 0.05), width: Math.round(w * 0.9), height: Math.round(h * 0.9) }).rotate(3).toBuffer();
      return sharp(step).resize(Math.round(w / 2)).modulate({ brightness: 1.15 }).jpeg({ quality: 35 }).toBuffer();
    }
  }
}
