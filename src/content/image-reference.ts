/**
 * The reference image of a search by image, from the body's `dataBase64`:
 * - a base64 data URI (`data:image/<type>;base64,<data>`), strictly validated;
 * - the downloadUrl (or thumbnailUrl, conversion URL) of an asset this hub issued: resolved
 *   internally (signature checked, no network round trip);
 * - any other http(s) URL: fetched with SSRF protection (safe-fetch.ts).
 * Whatever the source, the bytes must decode as a raster image within the pixel limit; the
 * Content-Type or media type a client claims is not trusted.
 *
 * Errors (docs/image-search.md): malformed input or an undecodable image → 400
 * hub-validation-error; over the byte or pixel limit → 413 hub-payload-too-large; an address
 * the fetch policy refuses → 403 hub-access-denied; the remote host failing, timing out or
 * redirecting too often → 400 hub-validation-error naming the cause. Never a 5xx.
 */
import fs from 'node:fs';
import sharp, { type Metadata } from 'sharp';
import { hubError, validationError } from '../errors.js';
import type { Hub } from '../hub.js';
import { FetchError, safeFetch } from './safe-fetch.js';

const DATA_URI = /^data:(image\/[a-z0-9.+-]+);base64,([A-Za-z0-9+/]*={0,2})$/i;
/** Raster formats accepted as a reference (SVG is not: it is a document that may reference others). */
const RASTER = new Set(['jpeg', 'png', 'webp', 'gif', 'tiff', 'avif', 'heif']);

export async function decodeImageReference(ref: string, hub: Hub): Promise<Buffer> {
  const bytes = await referenceBytes(ref.trim(), hub);
  await verifyImage(bytes, hub.config.imageMaxPixels);
  return bytes;
}

async function referenceBytes(s: string, hub: Hub): Promise<Buffer> {
  const maxBytes = hub.config.imageMaxBytes;
  const tooLarge = (what: string) => hubError('hub-payload-too-large', `${what} is over the limit of ${maxBytes} bytes`, { message: 'The reference image is too large.' });
  if (/^data:/i.test(s)) {
    const m = DATA_URI.exec(s.replace(/\s+/g, ''));
    if (!m) throw validationError('dataBase64 must be data:image/<type>;base64,<data> with standard base64');
    const b64 = m[2]!;
    if (b64.length % 4 !== 0) throw validationError('dataBase64: the base64 data is truncated (its length is not a multiple of 4)');
    if ((b64.length / 4) * 3 > maxBytes + 2) throw tooLarge('the reference image');
    const buf = Buffer.from(b64, 'base64');
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
  // The hub's own signed media URLs (downloadUrl, thumbnailUrl, conversions): read directly.
  const m = /^\/api\/v1\/assets\/(?:download\/([^/]+)\/([^/]+)\/(\d+)|thumbnail\/([^/]+)\/([^/]+)\/(\d+)\/([^/]+))$/.exec(url.pathname);
  if (url.origin === own.origin && m) {
    const [providerId, assetId, version, rendition] = m[1] ? [m[1], m[2]!, m[3]!, 'original'] : [m[4]!, m[5]!, m[6]!, decodeURIComponent(m[7]!)];
    // As the download route would: the binding must still be live, not only the signature valid.
    await hub.mediaUrls.verify(url.pathname, Object.fromEntries(url.searchParams), decodeURIComponent(providerId));
    const provider = hub.providers.get(decodeURIComponent(providerId));
    if (!provider?.media) throw validationError('the URL names no provider with media');
    const media = await provider.media({ assetId: decodeURIComponent(assetId), version: Number(version), rendition });
    if (media.kind === 'inline') return media.body;
    if (media.size > maxBytes) throw tooLarge('the asset behind the downloadUrl');
    return fs.promises.readFile(media.path);
  }
  try {
    return await safeFetch(url.href, {
      allow: hub.config.imageFetchAllow,
      connectTimeoutMs: hub.config.imageFetchConnectTimeoutMs,
      totalTimeoutMs: hub.config.imageFetchTimeoutMs,
      maxBytes,
      maxRedirects: hub.config.imageFetchMaxRedirects,
    });
  } catch (e) {
    if (!(e instanceof FetchError)) throw e;
    switch (e.kind) {
      case 'too-large': throw hubError('hub-payload-too-large', `dataBase64: ${e.message}`, { message: 'The reference image is too large.' });
      case 'refused': throw hubError('hub-access-denied', `image-fetch-address-policy: ${e.message}`, { message: 'The reference image URL points to an address this hub does not fetch from.' });
      case 'invalid-url': throw validationError(`dataBase64: ${e.message}`);
      default: throw hubError('hub-validation-error', `dataBase64: the image URL could not be fetched: ${e.message}`, { message: 'The reference image could not be fetched.' });
    }
  }
}

/**
 * Decodes the image (header first, then the pixels at a reduced size) so that a non-image, a
 * truncated file or an image bomb is refused before any search work.
 */
async function verifyImage(bytes: Buffer, maxPixels: number): Promise<void> {
  let meta: Metadata;
  try {
    meta = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch {
    throw validationError('dataBase64: the content is not an image (it could not be decoded)');
  }
  if (!meta.format || !RASTER.has(meta.format)) throw validationError(`dataBase64: ${meta.format ?? 'this'} images are not accepted; send JPEG, PNG, WebP, GIF, TIFF, AVIF or HEIF`);
  const w = meta.width ?? 0, h = meta.height ?? 0;
  if (!w || !h) throw validationError('dataBase64: the image has no dimensions');
  if (w * h > maxPixels) {
    throw hubError('hub-payload-too-large', `dataBase64: the image declares ${w}×${h} pixels, over the limit of ${maxPixels}`, { message: 'The reference image has too many pixels.' });
  }
  try {
    await sharp(bytes, { limitInputPixels: maxPixels, failOn: 'error' }).resize(64, 64, { fit: 'inside' }).raw().toBuffer();
  } catch (e) {
    throw validationError(`dataBase64: the image is damaged or truncated (${(e as Error).message.split('\n')[0]})`);
  }
}
