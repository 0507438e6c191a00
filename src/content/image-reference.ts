/**
 * The reference image of a search by image, from the body's `dataBase64`:
 * - a base64 data URI (`data:image/<type>;base64,<data>`), strictly validated;
 * - the downloadUrl (or thumbnailUrl, conversion URL) of an asset this hub issued: resolved
 *   internally (signature checked, no network round trip);
 * - any other http(s) URL: fetched with SSRF protection (src/net/safe-fetch.ts).
 * Whatever the source, the bytes must decode as a raster image (not SVG: a document that may
 * reference others) within the pixel limit and the decode budget; the Content-Type or media type
 * a client claims is not trusted.
 *
 * Errors (docs/image-search.md): malformed input or an undecodable image → 400
 * hub-validation-error; over the byte or pixel limit, the decode budget or the decoder's memory
 * limit → 413 hub-payload-too-large; image decoding at capacity → 503 hub-unavailable; an address
 * the fetch policy refuses → 403 hub-access-denied; the remote host failing, timing out or
 * redirecting too often → 400 hub-validation-error naming the cause. Never a 5xx.
 */
import fs from 'node:fs';
import { hubError, isHubError, validationError } from '../errors.js';
import type { OutputSpec, ReferenceImage } from '../images/jobs.js';
import { ImageJobError, type ImagePool } from '../images/pool.js';
import type { Provider } from '../providers/contract.js';
import type { SignedMediaUrls } from './media-urls.js';
import { FetchError, safeFetch, type SafeFetchOptions } from '../net/safe-fetch.js';
import { ReadsBusy, type ReadSlots } from '../net/read-slots.js';

/** What reading and decoding a reference image takes (the surfaces build it from the hub's configuration). */
export interface ReferenceDeps {
  /** The hub's public URL: media URLs under it are the hub's own, read without a fetch. */
  publicUrl: string;
  mediaUrls: Pick<SignedMediaUrls, 'verify'>;
  providers: { get(id: string): Provider | undefined };
  imagePool: Pick<ImagePool, 'analyse'>;
  /** The hub-wide bound on reads of originals it did not index (a fetched reference takes a slot); absent: unbounded (unit tests). */
  reads?: Pick<ReadSlots, 'acquire'>;
  /** Largest reference image, fetched or sent inline (imageMaxBytes). */
  maxBytes: number;
  /** imageMaxPixels, imageDecodeBudget, imageDecodeTimeoutMs. */
  decode: { maxPixels: number; budget: number; timeoutMs: number };
  /** How an http(s) reference is fetched (imageFetchAllow, imageFetch*TimeoutMs, imageFetchMaxRedirects). */
  fetch: Omit<SafeFetchOptions, 'maxBytes'>;
}

const DATA_URI = /^data:(image\/[a-z0-9.+-]+);base64,([A-Za-z0-9+/]*={0,2})$/i;


/** With no output asked for, the decode still proves the image whole, at this tiny size. */
const VERIFY_OUTPUT: OutputSpec = { width: 8, height: 8, fit: 'fill' };

/** The bytes of a reference, decoded and verified (the MCP tools' thumbnails). */
export async function decodeImageReference(ref: string, deps: ReferenceDeps, opts: { signal?: AbortSignal } = {}): Promise<Buffer> {
  const bytes = await referenceBytes(ref, deps, opts.signal);
  await decodeReference(bytes, deps, opts);
  return bytes;
}

/**
 * The bytes of a reference (data URI, the hub's own media URL, or a fetched URL); not decoded.
 * A fetch takes one of the hub-wide read slots first (503 + Retry-After when none is free and
 * the queue is full, before any connection), and is aborted when `signal` fires (the client left).
 */
export async function referenceBytes(ref: string, deps: ReferenceDeps, signal?: AbortSignal): Promise<Buffer> {
  const s = ref.trim();
  const maxBytes = deps.maxBytes;
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
  const own = new URL(deps.publicUrl);
  // The hub's own signed media URLs (downloadUrl, thumbnailUrl, conversions): read directly.
  const m = /^\/api\/v1\/assets\/(?:download\/([^/]+)\/([^/]+)\/(\d+)|thumbnail\/([^/]+)\/([^/]+)\/(\d+)\/([^/]+))$/.exec(url.pathname);
  if (url.origin === own.origin && m) {
    const [providerId, assetId, version, rendition] = m[1] ? [m[1], m[2]!, m[3]!, 'original'] : [m[4]!, m[5]!, m[6]!, decodeURIComponent(m[7]!)];
    // As the download route would: the binding must still be live, not only the signature valid.
    await deps.mediaUrls.verify(url.pathname, Object.fromEntries(url.searchParams), decodeURIComponent(providerId));
    const provider = deps.providers.get(decodeURIComponent(providerId));
    if (!provider?.media) throw validationError('the URL names no provider with media');
    const media = await provider.media({ assetId: decodeURIComponent(assetId), version: Number(version), rendition });
    if (media.kind === 'inline') return media.body;
    if (media.size > maxBytes) throw tooLarge('the asset behind the downloadUrl');
    return fs.promises.readFile(media.path);
  }
  let slot;
  try {
    // A URL of the hub's own (a connector's thumbnail link, which the MCP tools fetch) is bounded
    // by the route that serves it, which takes a slot itself: holding one here too could leave both
    // waiting for each other.
    slot = url.origin === own.origin ? undefined : await deps.reads?.acquire(signal);
  } catch (e) {
    if (e instanceof ReadsBusy) throw hubError('hub-unavailable', `reference image: ${e.message}; try again shortly`, { headers: { 'retry-after': '1' } });
    throw e;
  }
  try {
    return await safeFetch(url.href, { ...deps.fetch, maxBytes, signal });
  } catch (e) {
    if (signal?.aborted) throw signal.reason;
    if (!(e instanceof FetchError)) throw e;
    switch (e.kind) {
      case 'too-large': throw hubError('hub-payload-too-large', `dataBase64: ${e.message}`, { message: 'The reference image is too large.' });
      case 'refused': throw hubError('hub-access-denied', `image-fetch-address-policy: ${e.message}`, { message: 'The reference image URL points to an address this hub does not fetch from.' });
      case 'invalid-url': throw validationError(`dataBase64: ${e.message}`);
      default: throw hubError('hub-validation-error', `dataBase64: the image URL could not be fetched: ${e.message}`, { message: 'The reference image could not be fetched.' });
    }
  } finally {
    slot?.release();
  }
}

/**
 * Decodes a reference image ONCE, in the image pool (src/images/pool.ts): the header first, the
 * declared size and the decode budget checked (src/images/budget.ts), then the first page decoded
 * straight into the raw outputs the provider asked for (the descriptor's 40×40, the model's input),
 * so that a non-image, a truncated file, an image bomb or an image too costly to decode is refused
 * before any search work, and the search does not decode it again.
 *
 * `signal`: the request's end or the provider deadline; the decode is killed when it fires.
 * `owner`: who asks (partner + hub user): the pool serves waiting decodes fairly across owners.
 */
export async function decodeReference(bytes: Buffer, deps: ReferenceDeps, opts: { outputs?: OutputSpec[]; signal?: AbortSignal; owner?: string } = {}): Promise<ReferenceImage> {
  const outputs = opts.outputs?.length ? opts.outputs : [VERIFY_OUTPUT];
  const { budget, maxPixels, timeoutMs } = deps.decode;
  try {
    const r = await deps.imagePool.analyse(
      { input: bytes, outputs, budget, maxPixels, failOn: 'error' },
      { signal: opts.signal, timeoutMs, owner: opts.owner },
    );
    return { bytes, format: r.format, width: r.width, height: r.height, outputs: r.outputs.map((b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength)) };
  } catch (e) {
    if (!(e instanceof ImageJobError)) throw e;
    throw referenceError(e, opts.signal);
  }
}

/** What a failed decode means for the client: never a 5xx for its image. */
function referenceError(e: ImageJobError, signal?: AbortSignal): Error {
  switch (e.kind) {
    case 'over-budget':
      return hubError('hub-payload-too-large', `dataBase64: ${e.message}`, { message: 'The reference image is too large or too costly to decode.' });
    case 'timeout':
      return hubError('hub-payload-too-large', `dataBase64: ${e.message} (imageDecodeTimeoutMs); the decoder was stopped`, { message: 'The reference image is too costly to decode.' });
    case 'undecodable':
    case 'unsupported':
      return validationError(`dataBase64: ${e.message}`);
    case 'out-of-memory':
      return hubError('hub-payload-too-large', `dataBase64: ${e.message}; the decoder was stopped`, { message: 'The reference image is too costly to decode.' });
    case 'crashed':
      return validationError(`dataBase64: the image could not be decoded (${e.message})`);
    case 'aborted':
      // The provider deadline's own error (504) when it was the deadline; else the client left.
      return isHubError(signal?.reason) ? signal.reason : validationError(`dataBase64: ${e.message}`);
    case 'busy':
      return hubError('hub-unavailable', `image decoding is at capacity: ${e.message}`, { headers: { 'retry-after': '1' } });
    default:
      return Object.assign(hubError('hub-internal-error', 'the reference image could not be processed'), { cause: e });
  }
}
