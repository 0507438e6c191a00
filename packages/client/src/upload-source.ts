/**
 * What `upload()` and `update()` accept as the file, in one shape for both transports: a Blob or
 * File (browsers, and Node ≥ 20), bytes (a Buffer is a Uint8Array), or a stream with its length
 * (a Node Readable, any async iterable of bytes, or a web ReadableStream). `@damhub/client/node`'s
 * `fileSource(path)` makes the last from a file on disk. No Node module is imported here: the
 * same code runs in the picker's browser bundle.
 */

/** A stream of bytes whose length is known up front (the hub checks the declared length before reading). */
export interface StreamSource {
  stream: AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>;
  /** The exact number of bytes the stream yields. */
  size: number;
  /** The file name, when the call gives none. */
  name?: string;
  /** The media type sent as Content-Type (default application/octet-stream). */
  type?: string;
}

export type UploadSource = Blob | ArrayBuffer | ArrayBufferView | StreamSource;

const isBlob = (s: unknown): s is Blob => typeof Blob !== 'undefined' && s instanceof Blob;
const isStreamSource = (s: unknown): s is StreamSource => !!s && typeof s === 'object' && 'stream' in s && 'size' in s;

export function sizeOf(s: UploadSource): number {
  if (isBlob(s)) return s.size;
  if (isStreamSource(s)) return s.size;
  return (s as ArrayBuffer | ArrayBufferView).byteLength;
}

/** A File's own name, or a stream source's; undefined for plain bytes and Blobs. */
export function nameOf(s: UploadSource): string | undefined {
  if (isBlob(s)) {
    const n = (s as Partial<File>).name;
    return typeof n === 'string' && n ? n : undefined;
  }
  if (isStreamSource(s)) return s.name;
  return undefined;
}

export function typeOf(s: UploadSource): string {
  const t = isBlob(s) ? s.type : isStreamSource(s) ? s.type : undefined;
  return t || 'application/octet-stream';
}

function asBytes(s: ArrayBuffer | ArrayBufferView): Uint8Array {
  return s instanceof Uint8Array ? s : ArrayBuffer.isView(s) ? new Uint8Array(s.buffer, s.byteOffset, s.byteLength) : new Uint8Array(s);
}

/** The chunks of a stream source, whichever kind of stream it is. */
async function* chunksOf(stream: StreamSource['stream']): AsyncGenerator<Uint8Array> {
  if (typeof (stream as ReadableStream<Uint8Array>).getReader === 'function' && !(Symbol.asyncIterator in stream)) {
    const reader = (stream as ReadableStream<Uint8Array>).getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        yield value;
      }
    } finally {
      reader.releaseLock();
    }
  }
  for await (const c of stream as AsyncIterable<Uint8Array | string>) yield typeof c === 'string' ? new TextEncoder().encode(c) : c;
}

/**
 * A body a request can send again (the plain POST is small: at most the tus threshold). A stream
 * is read into memory once, so the SDK's own retries resend the same bytes; a stream that yields
 * another length than it declared is refused before anything is sent.
 */
export async function replayable(s: UploadSource): Promise<Blob | Uint8Array> {
  if (isBlob(s)) return s;
  if (!isStreamSource(s)) return asBytes(s as ArrayBuffer | ArrayBufferView);
  const out = new Uint8Array(s.size);
  let n = 0;
  for await (const c of chunksOf(s.stream)) {
    if (n + c.byteLength > s.size) throw new RangeError(`the stream yields more than its declared size of ${s.size} bytes`);
    out.set(c, n);
    n += c.byteLength;
  }
  if (n !== s.size) throw new RangeError(`the stream ended after ${n} of its declared ${s.size} bytes`);
  return out;
}

/**
 * The body as a stream that counts what the transport pulled (Node's fetch pulls as it sends, so
 * this is the upload's progress there). Chunks of 64 KiB keep the reports frequent.
 */
export function countingStream(body: Blob | Uint8Array, onCount: (sent: number) => void): ReadableStream<Uint8Array> {
  const STEP = 64 * 1024;
  let offset = 0;
  const size = body instanceof Uint8Array ? body.byteLength : body.size;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (offset >= size) {
        controller.close();
        return;
      }
      const end = Math.min(size, offset + STEP);
      const chunk = body instanceof Uint8Array ? body.subarray(offset, end) : new Uint8Array(await body.slice(offset, end).arrayBuffer());
      offset = end;
      controller.enqueue(chunk);
      onCount(offset);
    },
  }, { highWaterMark: 0 });
}

/** tus-js-client's source interface (its `fileReader` option), for every kind of UploadSource in every runtime. */
export interface TusFileSource {
  size: number;
  slice(start: number, end: number): Promise<{ value: Blob | Uint8Array; done: boolean }>;
  close(): void;
}

/**
 * Slices for tus-js-client. A Blob is sliced where it lies (a browser sends the slice straight
 * from disk; in Node it is read into memory one chunk at a time, the chunk size bounding memory).
 * A stream cannot seek: the bytes from the start of the last slice on are kept, because after a
 * dropped connection tus asks the server for its offset and resends from there, which is never
 * before the start of the chunk that was in flight.
 */
/**
 * tus-js-client measures a slice by `.size` (a Blob's), and Node's HTTP stack of it sets
 * Content-Length from it: bytes get the property too.
 */
function sized(b: Uint8Array): Uint8Array & { size: number } {
  return Object.assign(b, { size: b.byteLength });
}

export function tusFileSource(s: UploadSource, blobsAsBytes: boolean): TusFileSource {
  const size = sizeOf(s);
  if (isBlob(s)) {
    return {
      size,
      async slice(start, end) {
        const part = s.slice(start, Math.min(end, size));
        return { value: blobsAsBytes ? sized(new Uint8Array(await part.arrayBuffer())) : part, done: end >= size };
      },
      close() {},
    };
  }
  if (!isStreamSource(s)) {
    const bytes = asBytes(s as ArrayBuffer | ArrayBufferView);
    return { size, slice: async (start, end) => ({ value: sized(bytes.subarray(start, Math.min(end, size))), done: end >= size }), close() {} };
  }
  const it = chunksOf(s.stream)[Symbol.asyncIterator]();
  let buf = new Uint8Array(0);
  let bufStart = 0;
  let ended = false;
  return {
    size,
    async slice(start, end) {
      if (start < bufStart) throw new Error(`tus asked for bytes from ${start}, but the stream was read past them (kept from ${bufStart})`);
      // Drop what lies before this slice: tus never asks for it again.
      if (start > bufStart) {
        buf = buf.subarray(Math.min(buf.length, start - bufStart));
        bufStart = start;
      }
      const want = Math.min(end, size) - start;
      const parts: Uint8Array[] = [buf];
      let have = buf.length;
      while (have < want && !ended) {
        const r = await it.next();
        if (r.done) {
          ended = true;
          break;
        }
        parts.push(r.value);
        have += r.value.byteLength;
      }
      if (parts.length > 1) {
        const joined = new Uint8Array(have);
        let o = 0;
        for (const p of parts) {
          joined.set(p, o);
          o += p.byteLength;
        }
        buf = joined;
      }
      if (start + buf.length < Math.min(end, size) && ended) throw new RangeError(`the stream ended after ${start + buf.length} of its declared ${size} bytes`);
      return { value: sized(buf.subarray(0, want)), done: start + want >= size };
    },
    close() {
      void it.return?.(undefined);
    },
  };
}
