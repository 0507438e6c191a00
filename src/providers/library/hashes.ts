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
  return complete(digests.result());
}

/**
 * The same digests over bytes already in memory (the scanner reads a file once, hashes that
 * buffer and writes it out as the version snapshot; metadata and renditions then read the
 * snapshot). Fed in READ_CHUNK slices, yielding to the event loop in
 * between, so a large buffer never stalls a serving hub for more than one slice's hashing.
 */
export async function hashBytes(bytes: Uint8Array): Promise<FileHashes> {
  const digests = new DigestSet();
  for (let at = 0; at < bytes.length; at += READ_CHUNK) {
    if (at > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    digests.update(bytes.subarray(at, at + READ_CHUNK));
  }
  return complete(digests.result());
}

/** All the digests, in their usual order, from the results of sets that together cover every part. */
export function complete(...parts: (Partial<FileHashes> & { size: number })[]): FileHashes {
  const all: Partial<FileHashes> = Object.assign({}, ...parts);
  const { md5, sha1, sha256, sha512, crc32, sha256Split4MB, sha256First16MB } = all;
  if (!md5 || !sha1 || !sha256 || !sha512 || !crc32 || !sha256Split4MB || !sha256First16MB) throw new Error('a digest is missing');
  if (parts.some((p) => p.size !== parts[0]!.size)) throw new Error('the digests were computed over different lengths');
  return { md5, sha1, sha256, sha512, crc32, sha256Split4MB, sha256First16MB, size: parts[0]!.size };
}

/** `<size>-<modified ms>`: the cheap "FileAttributes" hash; sub-millisecond mtime is dropped. */
export function fileAttributesHash(size: number, mtimeMs: number): string {
  return `${size}-${Math.floor(mtimeMs)}`;
}

/**
 * All the running digests, fed chunk by chunk in file order.
 *
 * SHA-256 runs over the bytes once: the digest of the first 4 MiB block and of the first 16 MiB
 * are copies of the whole-file SHA-256 state taken at those offsets (Hash.copy()), so only the
 * blocks after the first are hashed a second time, for sha256Split4MB. For a file of up to 4 MiB
 * (most images) that makes sha256, sha256Split4MB and sha256First16MB cost one SHA-256 pass.
 */
/**
 * A subset of the digests: 'sha256' stands for sha256, sha256Split4MB and sha256First16MB (they
 * share one SHA-256 state). An upload's bytes are hashed in lanes, each lane one subset on its
 * own thread (hash-lanes.ts), and the lanes' results merged.
 */
export type DigestPart = 'md5' | 'sha1' | 'sha512' | 'sha256' | 'crc32';
export const ALL_PARTS: readonly DigestPart[] = ['md5', 'sha1', 'sha512', 'sha256', 'crc32'];

export class DigestSet {
  private readonly names: ('md5' | 'sha1' | 'sha512')[];
  private readonly others: Hash[];
  private readonly withSha256: boolean;
  private readonly withCrc: boolean;
  private readonly sha256 = createHash('sha256');
  private crc = 0;
  /** Outer hash of sha256Split4MB: fed the binary digest of each block as it closes. */
  private readonly splitOuter = createHash('sha256');
  /** Blocks after the first (the first one's digest is a copy of the whole-file state). */
  private block: Hash | null = null;
  private blockFilled = 0;
  private prefix: string | null = null;
  private size = 0;

  constructor(parts: readonly DigestPart[] = ALL_PARTS) {
    this.names = (['md5', 'sha1', 'sha512'] as const).filter((n) => parts.includes(n));
    this.others = this.names.map((algo) => createHash(algo));
    this.withSha256 = parts.includes('sha256');
    this.withCrc = parts.includes('crc32');
  }

  update(chunk: Uint8Array): void {
    for (const h of this.others) h.update(chunk);
    if (this.withCrc) this.crc = zlib.crc32(chunk, this.crc);
    if (!this.withSha256) {
      this.size += chunk.length;
      return;
    }
    let offset = 0;
    while (offset < chunk.length) {
      // Feed SHA-256 up to the next boundary where a copy of its state is needed.
      const boundary = this.size < SPLIT_BLOCK_SIZE ? SPLIT_BLOCK_SIZE : this.size < FIRST_PREFIX_SIZE ? FIRST_PREFIX_SIZE : Infinity;
      const take = Math.min(boundary - this.size, chunk.length - offset);
      const part = offset === 0 && take === chunk.length ? chunk : chunk.subarray(offset, offset + take);
      this.sha256.update(part);
      if (this.size >= SPLIT_BLOCK_SIZE) this.updateBlocks(part);
      this.size += take;
      offset += take;
      if (this.size === SPLIT_BLOCK_SIZE) this.splitOuter.update(this.sha256.copy().digest());
      if (this.size === FIRST_PREFIX_SIZE) this.prefix = this.sha256.copy().digest('hex');
    }
  }

  /** The digests of this set's parts (all of FileHashes for the full set), and the size. */
  result(): Partial<FileHashes> & { size: number } {
    const out: Partial<FileHashes> & { size: number } = { size: this.size };
    this.names.forEach((n, i) => (out[n] = this.others[i]!.digest('hex')));
    // zlib.crc32 returns an unsigned 32-bit number; pad so leading zero nibbles are kept.
    if (this.withCrc) out.crc32 = (this.crc >>> 0).toString(16).padStart(8, '0');
    if (!this.withSha256) return out;
    const whole = this.sha256.digest();
    // The first block closes at 4 MiB; a shorter non-empty file is one block (its digest is the
    // whole file's). A partial last block counts; an empty one (size a multiple of 4 MiB, or an
    // empty file) does not exist, so an empty file's value is SHA-256 of nothing.
    if (this.size > 0 && this.size < SPLIT_BLOCK_SIZE) this.splitOuter.update(whole);
    if (this.block && this.blockFilled > 0) this.splitOuter.update(this.block.digest());
    out.sha256 = whole.toString('hex');
    out.sha256Split4MB = this.splitOuter.digest('hex');
    // Files of up to 16 MiB: the prefix is the whole file.
    out.sha256First16MB = this.prefix ?? whole.toString('hex');
    return out;
  }

  /**
   * Blocks 2, 3...: read chunks do not line up with block boundaries, so a chunk may finish one
   * block and start the next; each block digest goes straight into the outer hash, which is
   * equivalent to hashing their concatenation at the end.
   */
  private updateBlocks(part: Uint8Array): void {
    let offset = 0;
    while (offset < part.length) {
      this.block ??= createHash('sha256');
      const take = Math.min(SPLIT_BLOCK_SIZE - this.blockFilled, part.length - offset);
      this.block.update(offset === 0 && take === part.length ? part : part.subarray(offset, offset + take));
      this.blockFilled += take;
      offset += take;
      if (this.blockFilled === SPLIT_BLOCK_SIZE) {
        this.splitOuter.update(this.block.digest());
        this.block = null;
        this.blockFilled = 0;
      }
    }
  }
}
