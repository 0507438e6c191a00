/**
 * The reference image of a search by image: a base64 data URI, or the downloadUrl of an asset
 * this hub issued (resolved internally, signature checked, no network round trip).
 * Fetching arbitrary http(s) URLs (with SSRF protection) is not enabled yet; see issue 4.
 */
import fs from 'node:fs';
import { hubError, validationError } from '../errors.js';
import type { Hub } from '../hub.js';

export const MAX_IMAGE_BYTES = 20 * 1024 * 1024;
const DATA_URI = /^data:(image\/[a-z0-9.+-]+);base64,([A-Za-z0-9+/]+={0,2})$/i;

export async function decodeImageReference(ref: string, hub: Hub): Promise<Buffer> {
  const s = ref.trim();
  if (s.startsWith('data:')) {
    const m = DATA_URI.exec(s.replace(/\s+/g, ''));
    if (!m) throw validationError('dataBase64 must be data:image/<type>;base64,<data> with standard base64');
    if ((m[2]!.length * 3) / 4 > MAX_IMAGE_BYTES) throw hubError('hub-payload-too-large', `the reference image is over ${MAX_IMAGE_BYTES} bytes`);
    const buf = Buffer.from(m[2]!, 'base64');
    if (buf.length === 0) throw validationError('dataBase64 holds an empty image');
    return buf;
  }
  let url: URL;
  try {
    url = new URL(s);
  } catch {
    throw validationError('dataBase64 must be a data URI or an http(s) URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw validationError('dataBase64 URLs must be http or https');
  const own = new URL(hub.config.publicUrl);
  const m = /^\/api\/v1\/assets\/download\/([^/]+)\/([^/]+)\/(\d+)$/.exec(url.pathname);
  if (url.origin === own.origin && m) {
    hub.mediaUrls.verify(url.pathname, Object.fromEntries(url.searchParams));
    const provider = hub.providers.get(decodeURIComponent(m[1]!));
    if (!provider?.media) throw validationError('the downloadUrl names no provider with media');
    const media = await provider.media({ assetId: decodeURIComponent(m[2]!), version: Number(m[3]), rendition: 'original' });
    if (media.kind === 'inline') return media.body;
    if (media.size > MAX_IMAGE_BYTES) throw hubError('hub-payload-too-large', `the reference image is over ${MAX_IMAGE_BYTES} bytes`);
    return fs.promises.readFile(media.path);
  }
  throw validationError('fetching external image URLs is not enabled on this hub yet; send a data URI or a downloadUrl from a result');
}
