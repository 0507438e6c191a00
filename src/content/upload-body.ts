/**
 * An upload's bytes on their way from the client to a provider, under the limits (docs/writes.md
 * "Type and size"): counted as they pass, so a body longer than it declared or than
 * DAMHUB_MAX_UPLOAD_BYTES fails at the byte that crosses the line, and its head sniffed (file-type),
 * so bytes that are not what the name says (`.jpg` that is a PDF) fail before the provider has
 * more than the first few KiB. A failure errors the stream: the provider discards what it wrote
 * (contract.ts UploadBody), and the engine answers the failure (`failure`), not the provider's
 * reading of it.
 */
import { Transform, type TransformCallback } from 'node:stream';
import { fileTypeFromBuffer } from 'file-type';
import { hubError, type HubError } from '../errors.js';
import { mimeTypeOfName, UNKNOWN_MIME_TYPE } from '../providers/kit/mime.js';
import { typeByName } from '../providers/metadata/sniff.js';

/** Bytes file-type needs to recognise every format it knows. */
export const SNIFF_BYTES = 4100;

export function tooLarge(limit: number, got: number | string): HubError {
  return hubError('hub-payload-too-large', `the upload is ${got} bytes; the limit is ${limit} bytes (DAMHUB_MAX_UPLOAD_BYTES)`);
}

/**
 * Whether `head` (the first bytes, or all of a shorter file) can be a file named `name`: null when
 * it can, else why not. Bytes file-type recognises must be the type the name gives; a name whose
 * type file-type always recognises must have such bytes; other types (text, SVG) pass.
 */
export async function contentMismatch(name: string, head: Buffer): Promise<string | null> {
  const named = mimeTypeOfName(name);
  const sniffed = head.length ? await fileTypeFromBuffer(head) : undefined;
  if (sniffed) {
    if (named === UNKNOWN_MIME_TYPE || named === sniffed.mime) return null;
    return `the content is ${sniffed.mime} (.${sniffed.ext}), not ${named} as the name ${JSON.stringify(name)} says`;
  }
  if (named !== UNKNOWN_MIME_TYPE && typeByName(name) === undefined) return `the content is not ${named} as the name ${JSON.stringify(name)} says`;
  return null;
}

export class UploadGuard extends Transform {
  /** Bytes passed so far. */
  bytes = 0;
  /** Why the guard failed the stream (the answer to give), or null. */
  failure: HubError | null = null;
  private head: Buffer[] = [];
  private headBytes = 0;
  private sniffed = false;

  constructor(private readonly o: { name: string; limit: number; declared: number | null }) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.o.limit) return done(this.fail(tooLarge(this.o.limit, `more than ${this.o.limit}`)));
    if (this.o.declared !== null && this.bytes > this.o.declared) {
      return done(this.fail(hubError('hub-validation-error', `the body is longer than the ${this.o.declared} bytes its Content-Length declared`)));
    }
    if (this.sniffed) return done(null, chunk);
    this.head.push(chunk);
    this.headBytes += chunk.length;
    if (this.headBytes < SNIFF_BYTES) return done();
    this.sniff().then(() => done(), (e: Error) => done(e));
  }

  override _flush(done: TransformCallback): void {
    if (this.o.declared !== null && this.bytes < this.o.declared) {
      return done(this.fail(hubError('hub-validation-error', `the body ended after ${this.bytes} of the ${this.o.declared} bytes its Content-Length declared`)));
    }
    if (this.sniffed) return done();
    this.sniff().then(() => done(), (e: Error) => done(e));
  }

  /** Checks the head, then lets it through. */
  private async sniff(): Promise<void> {
    this.sniffed = true;
    const head = Buffer.concat(this.head);
    this.head = [];
    const wrong = await contentMismatch(this.o.name, head);
    if (wrong) throw this.fail(hubError('hub-unsupported-media-type', wrong));
    this.push(head);
  }

  private fail(e: HubError): HubError {
    this.failure ??= e;
    return e;
  }
}
