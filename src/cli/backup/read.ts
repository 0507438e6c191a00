/**
 * Reads a damhub backup and checks it against its manifest while streaming it once: the manifest
 * must come first and be one damhub can read; every other entry must be a regular file the
 * manifest lists, of the listed size and SHA-256; none may be missing or repeated. With `into`,
 * each file is written under that folder as it is checked (owner-only); without, nothing is
 * written (`damhub restore --check`). Any failure rejects with a one-line BackupError; what was
 * written under `into` is then the caller's to remove.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Parser, type ReadEntry } from 'tar';
import { BackupError, MANIFEST_MAX_BYTES, MANIFEST_NAME, parseManifest, type BackupFile, type BackupManifest } from './manifest.js';

export interface ReadOptions {
  /** Folder to write the files into; null to check only. */
  into: string | null;
  /** Called with the manifest before any file is read; throws to refuse the archive. */
  accept?(manifest: BackupManifest): void;
}

export async function readBackup(archive: string, opts: ReadOptions): Promise<BackupManifest> {
  const what = archive;
  let input: fs.ReadStream;
  try {
    fs.accessSync(archive, fs.constants.R_OK);
    if (!fs.statSync(archive).isFile()) throw new BackupError(`${archive} is not a file: give --in the backup file damhub backup wrote`);
    input = fs.createReadStream(archive);
  } catch (e) {
    if (e instanceof BackupError) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'it does not exist' : code === 'EACCES' ? 'permission denied' : (code ?? (e as Error).message);
    throw new BackupError(`cannot read ${archive}: ${why}`);
  }
  let manifest: BackupManifest | null = null;
  let expected = new Map<string, BackupFile>();
  const seen = new Set<string>();
  let entries = 0;
  /** The file being written, closed when the read fails halfway through it. */
  let openFd: number | null = null;

  return new Promise<BackupManifest>((resolve, reject) => {
    let failed = false;
    const parser = new Parser({ strict: true });
    const fail = (e: unknown) => {
      if (failed) return;
      failed = true;
      if (openFd !== null) fs.closeSync(openFd);
      input.destroy();
      parser.abort(e instanceof Error ? e : new Error(String(e)));
      reject(e instanceof BackupError ? e : tarError(e, what, entries > 0));
    };
    const guarded = <A extends unknown[]>(f: (...a: A) => void) => (...a: A) => {
      if (failed) return;
      try {
        f(...a);
      } catch (e) {
        fail(e);
      }
    };

    parser.on('entry', guarded((entry: ReadEntry) => {
      entries++;
      if (!manifest) {
        if (entries > 1 || entry.path !== MANIFEST_NAME || entry.type !== 'File') {
          throw new BackupError(`${what} is not a damhub backup: it does not begin with ${MANIFEST_NAME} (its first entry is ${JSON.stringify(entry.path)})`);
        }
        if (entry.size > MANIFEST_MAX_BYTES) throw new BackupError(`${what} is not a damhub backup: its manifest is ${entry.size} bytes`);
        const chunks: Buffer[] = [];
        entry.on('data', guarded((c: Buffer) => chunks.push(c)));
        entry.on('end', guarded(() => {
          manifest = parseManifest(Buffer.concat(chunks).toString('utf8'), what);
          expected = new Map(manifest.files.map((f) => [f.path, f]));
          opts.accept?.(manifest);
        }));
        return;
      }
      const file = expected.get(entry.path);
      if (!file) throw new BackupError(`${what} is damaged or not a damhub backup: it holds ${JSON.stringify(entry.path)}, which its manifest does not list`);
      if (entry.type !== 'File') throw new BackupError(`${what} is damaged: ${entry.path} is a ${entry.type}, not a file`);
      if (seen.has(file.path)) throw new BackupError(`${what} is damaged: it holds ${file.path} twice`);
      seen.add(file.path);
      if (entry.size !== file.size) throw new BackupError(`${what} is damaged: ${file.path} is ${entry.size} bytes, its manifest says ${file.size}`);
      const hash = createHash('sha256');
      const fd = opts.into ? openForWrite(opts.into, file.path) : null;
      openFd = fd;
      entry.on('data', guarded((c: Buffer) => {
        hash.update(c);
        if (fd !== null) writeAll(fd, c);
      }));
      entry.on('end', guarded(() => {
        if (fd !== null) {
          openFd = null;
          try {
            fs.fsyncSync(fd);
          } finally {
            fs.closeSync(fd);
          }
        }
        if (hash.digest('hex') !== file.sha256) throw new BackupError(`${what} is damaged: ${file.path} does not match its SHA-256 in the manifest`);
      }));
    }));
    parser.on('error', fail);
    input.on('error', fail);
    parser.on('end', guarded(() => {
      if (!manifest) throw new BackupError(`${what} is not a damhub backup: it holds no ${MANIFEST_NAME}`);
      const missing = manifest.files.filter((f) => !seen.has(f.path));
      if (missing.length) throw new BackupError(`${what} is incomplete: ${missing.length} of ${manifest.files.length} files are missing (first: ${missing[0]!.path}); it may have been cut short`);
      resolve(manifest);
    }));
    input.pipe(parser);
  });
}

/** node-tar's warnings as one line about the archive; before its first entry, the file is no tar at all. */
function tarError(e: unknown, what: string, sawEntry: boolean): BackupError {
  const err = e as { code?: string; message?: string };
  if (err.code?.startsWith('TAR_')) {
    if (!sawEntry) return new BackupError(`${what} is not a damhub backup (not a tar archive)`);
    return new BackupError(`${what} is damaged or cut short: ${(err.message ?? err.code).replace(/^TAR_\w+: /, '')}`);
  }
  return new BackupError(`cannot read ${what}: ${err.message ?? String(e)}`);
}

function openForWrite(root: string, rel: string): number {
  const file = path.join(root, ...rel.split('/'));
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  // 'wx': a path listed twice or clashing with another cannot overwrite what was written.
  return fs.openSync(file, 'wx', 0o600);
}

function writeAll(fd: number, buf: Buffer): void {
  let off = 0;
  while (off < buf.length) off += fs.writeSync(fd, buf, off, buf.length - off);
}
