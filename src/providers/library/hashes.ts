/**
 * Content digests of a library file (SPEC.md section 6, "Hashes"), all computed from ONE streaming
 * read so that indexing a large video costs a single pass over the disk, never a full buffer.
 *
 * Every digest is lower-case hex. Definitions:
 * - md5, sha1, sha256, sha512, crc32: of the whole file (crc32 is the zlib/PNG CRC-32, 8 hex digits).
 * - sha256Split4MB: SHA-256 over the concatenated *binary* SHA-256 digests of the consecutive
 *   4 MiB (4 194 304 byte) blocks of the file, the last block possibly shorter. An empty file has
 *   no blocks, so its value is the SHA-256 of the empty concatenation, i.e. SHA-256("")
 *   (e3b0c442…b855) — the same convention as Dropbox's content hash, which uses this scheme.
 *   A file of exactly N × 4 MiB has N blocks (no trailing empty block).
 * - sha256First16MB: SHA-256 of the first 16 MiB (the whole file when it is shorter).
 */
import { createHash, type Hash } from 'node:crypto';
import fs from 'node:fs';
import zlib from 'node:zlib';

export interface FileHashes {
  md5: string;
  sha1: string;
  sha256: string;
  sha512: string;
  crc32: string;
  sha256Split4MB: string;
  sha256First16MB: string;
  size: number;
}

const MiB = 1024 * 1024;
export const SPLIT_BLOCK_SIZE = 4 * MiB;
export const FIRST_PREFIX_SIZE = 16 * MiB;
/** Large reads keep the syscall and hash-update overhead negligible next to the hashing itself. */
const READ_CHUNK = MiB;

/**
 * Reads the file once and returns all its digests. Rejects with the file system error (ENOENT,
 * EACCES, EISDIR...) or with an AbortError when `signal` fires mid-read.
 */
export async function hashFile(path: string, signal?: AbortSignal): Promise<FileHashes> {
  signal?.throwIfAborted();
  return hashStream(fs.createReadStream(path, { highWaterMark: READ_CHUNK, signal }) as AsyncIterable<Buffer>);
}

/** The same digests over any byte stream (an upload, a remote download), chunked however it comes. */
export async function hashStream(chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<FileHashes> {
  const digests = new DigestSet();
  for await (const chunk of chunks) digests.update(chunk);
  return digests.result();
}

/** `<size>-<modified ms>`: the cheap "FileAttributes" hash; sub-millisecond mtime is dropped. */
export function fileAttributesHash(size: number, mtimeMs: number): string {
  return `${size}-${Math.floor(mtimeMs)}`;
}

/** All the running digests, fed chunk by chunk in file order. */
class DigestSet {
  private readonly whole = ['md5', 'sha1', 'sha256', 'sha512'].map((algo) => createHash(algo));
  private crc = 0;
  private readonly split = new BlockDigest(SPLIT_BLOCK_SIZE);
  private readonly prefix = new PrefixDigest(FIRST_PREFIX_SIZE);
  private size = 0;

  update(chunk: Uint8Array): void {
    for (const h of this.whole) h.update(chunk);
    this.crc = zlib.crc32(chunk, this.crc);
    this.split.update(chunk);
    this.prefix.update(chunk);
    this.size += chunk.length;
  }

  result(): FileHashes {
    const [md5, sha1, sha256, sha512] = this.whole.map((h) => h.digest('hex'));
    return {
      md5, sha1, sha256, sha512,
      // zlib.crc32 returns an unsigned 32-bit number; pad so leading zero nibbles are kept.
      crc32: (this.crc >>> 0).toString(16).padStart(8, '0'),
      sha256Split4MB: this.split.digest(),
      sha256First16MB: this.prefix.digest(),
      size: this.size,
    };
  }
}

/**
 * SHA-256 of the concatenated SHA-256 digests of fixed-size blocks. Read chunks do not line up with
 * block boundaries, so a chunk may finish one block and start the next; each block digest goes
 * straight into the outer hash, which is equivalent to hashing their concatenation at the end.
 */
class BlockDigest {
  private readonly outer = createHash('sha256');
  private block: Hash = createHash('sha256');
  private filled = 0;

  constructor(private readonly blockSize: number) {}

  update(chunk: Uint8Array): void {
    let offset = 0;
    while (offset < chunk.length) {
      const take = Math.min(this.blockSize - this.filled, chunk.length - offset);
      this.block.update(chunk.subarray(offset, offset + take));
      this.filled += take;
      offset += take;
      if (this.filled === this.blockSize) this.closeBlock();
    }
  }

  digest(): string {
    // A partial last block counts; an empty one (file size a multiple of the block size, or an
    // empty file) does not exist.
    if (this.filled > 0) this.closeBlock();
    return this.outer.digest('hex');
  }

  private closeBlock(): void {
    this.outer.update(this.block.digest());
    this.block = createHash('sha256');
    this.filled = 0;
  }
}

/** SHA-256 of the first `limit` bytes; later bytes are ignored. */
class PrefixDigest {
  private readonly hash = createHash('sha256');
  private remaining: number;

  constructor(limit: number) {
    this.remaining = limit;
  }

  update(chunk: Uint8Array): void {
    if (this.remaining === 0) return;
    const part = chunk.length <= this.remaining ? chunk : chunk.subarray(0, this.remaining);
    this.hash.update(part);
    this.remaining -= part.length;
  }

  digest(): string {
    return this.hash.digest('hex');
  }
}
