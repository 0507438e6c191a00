/** `damhub users …` (library accounts) and `damhub index` (scan with a progress bar). */
import fs from 'node:fs';
import { availableParallelism, hostname } from 'node:os';
import path from 'node:path';
import { systemClock } from '../clock.js';
import { addAccount, changePassword, normaliseWriteFolders } from '../providers/library/accounts.js';
import { isWithin } from '../providers/library/paths.js';
import type { LibraryIndexStore } from '../providers/library/index/contract.js';
import { PgLibraryIndex } from '../providers/library/index/postgres.js';
import { libraryPgSchema } from '../providers/library/index/postgres-schema.js';
import { LibraryIndex } from '../providers/library/index/sqlite.js';
import { IndexerLease } from '../providers/library/indexer-lease.js';
import { createPgPool, migratePg } from '../stores/postgres/index.js';
import { Renditions } from '../providers/library/renditions.js';
import { DEFAULT_SCAN_CONCURRENCY, LibraryScanner } from '../providers/library/scanner.js';
import { ImageSimilarity, librarySources } from '../providers/library/similarity/index.js';
import { dataOpt, parse, UsageError } from './args.js';
import { claimLibraryRoot, libraryFolder } from '../providers/library/root-marker.js';
import { defaultConfig } from '../config.js';
import { ImagePool, MIN_DECODER_MEMORY_MB, type ImageWork } from '../images/pool.js';

/** Whether the data directory has a library index of its own (the SQLite file; PostgreSQL is the cluster's). */
export function hasLibraryIndex(data: string | undefined): boolean {
  return fs.existsSync(path.join(path.resolve(data ?? process.env.DAMHUB_DATA_DIR ?? '.damhub'), 'library', 'library.sqlite'));
}

function libraryDataDir(data: string | undefined): string {
  const dir = path.join(path.resolve(data ?? process.env.DAMHUB_DATA_DIR ?? '.damhub'), 'library');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

const dbOpt = { 'database-url': { type: 'string' } } as const;

/**
 * The library index these commands work on: PostgreSQL when --database-url (or DATABASE_URL) is
 * given, the cluster's shared index (migrated first, as `damhub migrate` would); else the
 * embedded SQLite file in the data directory.
 */
export async function openIndex(values: { data?: string; 'database-url'?: string }): Promise<{ index: LibraryIndexStore; pool: import('pg').Pool | null; close(): Promise<void> }> {
  const url = values['database-url'] || process.env.DATABASE_URL;
  if (url) {
    const pool = createPgPool(url);
    try {
      await migratePg(pool);
      await libraryPgSchema(pool);
    } catch (e) {
      await pool.end();
      throw e;
    }
    return { index: new PgLibraryIndex(pool), pool, close: () => pool.end() };
  }
  const index = new LibraryIndex(path.join(libraryDataDir(values.data), 'library.sqlite'));
  return { index, pool: null, close: async () => index.close() };
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

/** A password from standard input (--password-stdin) or DAMHUB_USER_PASSWORD, never from the command line (shell history, ps). */
async function passwordInput(stdin: boolean | undefined): Promise<string> {
  if (stdin) return readStdin();
  if (process.env.DAMHUB_USER_PASSWORD) return process.env.DAMHUB_USER_PASSWORD;
  throw new UsageError('give the password on standard input with --password-stdin (or in DAMHUB_USER_PASSWORD)');
}

export async function usersCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === 'add') {
    const { values, positionals } = parse(rest, { ...dataOpt, ...dbOpt, 'password-stdin': { type: 'boolean' }, folders: { type: 'string' }, 'write-folders': { type: 'string' } }, true);
    if (positionals.length !== 1) throw new UsageError('users add takes one user name');
    const list = (v: string | undefined) => (v ? v.split(',').map((f) => f.trim()).filter(Boolean) : []);
    const folders = list(values.folders);
    const writeFolders = list(values['write-folders']);
    try {
      normaliseWriteFolders(writeFolders);
    } catch (e) {
      throw new UsageError(`--write-folders: ${(e as Error).message} (or / for the whole library)`);
    }
    const password = await passwordInput(values['password-stdin']);
    const { index, close } = await openIndex(values);
    try {
      const acc = await addAccount(index, positionals[0]!, password, folders, Date.now(), { writeFolders });
      process.stdout.write(`added ${acc.name}${acc.folders.length ? ` (limited to ${acc.folders.join(', ')})` : ''}${acc.writeFolders.length ? `, may write in ${writeFoldersText(acc.writeFolders)}` : ''}\n`);
      for (const w of await unknownFolders(index, acc.folders)) process.stderr.write(`damhub: warning: ${w}\n`);
      for (const w of await unknownFolders(index, acc.writeFolders.filter((f) => f !== ''), 'writes')) process.stderr.write(`damhub: warning: ${w}\n`);
      for (const w of acc.writeFolders) {
        if (acc.folders.length && !acc.folders.some((f) => isWithin(w, f))) process.stderr.write(`damhub: warning: write folder ${w || '/'} is outside the folders the account sees (${acc.folders.join(', ')}): it may not write there\n`);
      }
    } finally {
      await close();
    }
    return 0;
  }
  if (sub === 'passwd') {
    const { values, positionals } = parse(rest, { ...dataOpt, ...dbOpt, 'password-stdin': { type: 'boolean' } }, true);
    if (positionals.length !== 1) throw new UsageError('users passwd takes one user name');
    const password = await passwordInput(values['password-stdin']);
    const { index, close } = await openIndex(values);
    try {
      await changePassword(index, positionals[0]!, password);
      process.stdout.write(`changed the password of ${positionals[0]}; its signed-in sessions keep working until they end\n`);
    } finally {
      await close();
    }
    return 0;
  }
  if (sub === 'list' || sub === 'remove') {
    const { values, positionals } = parse(rest, { ...dataOpt, ...dbOpt }, true);
    const { index, close } = await openIndex(values);
    try {
      if (sub === 'list') {
        // A third column only for accounts that may write: the two-column lines stay as they were.
        for (const a of await index.listAccounts()) process.stdout.write(`${a.name}\t${a.folders.length ? a.folders.join(',') : '(whole library)'}${a.writeFolders.length ? `\twrites: ${writeFoldersText(a.writeFolders)}` : ''}\n`);
      } else {
        if (positionals.length !== 1) throw new UsageError('users remove takes one user name');
        if (!(await index.removeAccount(positionals[0]!))) throw new Error(`no user ${positionals[0]}: damhub users list shows the names`);
        process.stdout.write(`removed user ${positionals[0]}\n`);
      }
    } finally {
      await close();
    }
    return 0;
  }
  throw new UsageError(`unknown users command ${JSON.stringify(sub ?? '')}`);
}

function writeFoldersText(folders: string[]): string {
  return folders.map((f) => (f === '' ? '/ (whole library)' : f)).join(', ');
}

/**
 * The folders of an account that the library index does not know, said (the account is added all
 * the same: the folder may appear later). A misspelt folder used to give an account that sees
 * nothing, in silence.
 */
async function unknownFolders(index: LibraryIndexStore, folders: string[], does: 'sees' | 'writes' = 'sees'): Promise<string[]> {
  if (!folders.length) return [];
  if (!(await index.folder(''))) {
    // Said once, for the folders it sees; write folders are checked the same way once indexed.
    if (does === 'writes') return [];
    return [`the library of this data directory has not been indexed yet, so ${folders.join(', ')} could not be checked: the account sees only what is in ${folders.length > 1 ? 'these folders' : 'this folder'} once it is indexed (damhub index --library DIR, or a running hub)`];
  }
  const out: string[] = [];
  for (const f of folders) {
    if (await index.folder(f)) continue;
    const top = (await index.childFolders('')).map((c) => c.path).sort();
    const shown = top.length > 10 ? `${top.slice(0, 10).join(', ')}, …` : top.join(', ');
    const effect = does === 'sees' ? 'the account sees nothing there until it exists and is indexed' : 'the account writes there once it exists (made on disk or through the hub)';
    out.push(`${does === 'sees' ? 'folder' : 'write folder'} ${f} is not in the library (its top folders: ${shown || 'none'}): ${effect}; folders are paths from the library root, e.g. projects/alpha`);
  }
  return out;
}

export async function indexCommand(args: string[]): Promise<number> {
  const { values } = parse(args, { ...dataOpt, ...dbOpt, library: { type: 'string' }, concurrency: { type: 'string' } });
  const lib = values.library ?? process.env.DAMHUB_LIBRARY;
  if (!lib) throw new UsageError('index needs --library DIR (or DAMHUB_LIBRARY)');
  const root = libraryFolder(lib);
  const concurrency = values.concurrency ? Number(values.concurrency) : DEFAULT_SCAN_CONCURRENCY;
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64) throw new UsageError('--concurrency must be 1..64');
  const dir = libraryDataDir(values.data);
  claimLibraryRoot(path.dirname(dir), root);
  const { index, pool, close } = await openIndex(values);
  // On the shared index this command is the indexer for its run: it takes the lease, or leaves
  // the index to the node that holds it (two scanners would race on versions).
  const lease = pool ? new IndexerLease(pool, `damhub-index:${hostname()}:${process.pid}`, systemClock) : null;
  if (lease) {
    let held = false;
    try {
      await lease.start({ acquired: () => void (held = true), lost: () => undefined });
    } catch (e) {
      await close();
      throw e;
    }
    if (!held) {
      const cur = await lease.current().catch(() => null);
      await lease.stop();
      await close();
      throw new Error(`${cur?.holder ?? 'another node'} is the library's indexer and keeps the index current; run damhub index when no node holds the lease`);
    }
  }
  // The same per-file budget and deadline as the server's indexer (DAMHUB_IMAGE_INDEX_DECODE_*),
  // with one decoder process per core up to --concurrency: `damhub index` has no requests to serve.
  const envInt = (name: string, fallback: number, min = 1) => {
    const v = process.env[name];
    if (v === undefined || v === '') return fallback;
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new UsageError(`${name} must be an integer of at least ${min}`);
    return n;
  };
  const timeoutMs = envInt('DAMHUB_IMAGE_INDEX_DECODE_TIMEOUT', defaultConfig().imageIndexDecodeTimeoutMs);
  const memoryMb = envInt('DAMHUB_IMAGE_DECODER_MEMORY_MB', defaultConfig().imageDecoderMemoryMb, 0);
  if (memoryMb > 0 && memoryMb < MIN_DECODER_MEMORY_MB) throw new UsageError(`DAMHUB_IMAGE_DECODER_MEMORY_MB must be 0 (no limit) or at least ${MIN_DECODER_MEMORY_MB}`);
  const images: ImageWork = {
    pool: new ImagePool({
      size: Math.max(1, Math.min(concurrency, availableParallelism())), queueMax: 0, timeoutMs,
      memoryMb,
      maxPixels: envInt('DAMHUB_IMAGE_INDEX_MAX_PIXELS', defaultConfig().imageIndexMaxPixels),
    }),
    budget: envInt('DAMHUB_IMAGE_INDEX_DECODE_BUDGET', defaultConfig().imageIndexDecodeBudget),
    timeoutMs,
  };
  const renditions = new Renditions(path.join(dir, 'renditions'), images);
  const scanner = new LibraryScanner(root, index, renditions, dir, systemClock);
  const tty = process.stderr.isTTY;
  const started = Date.now();
  let last = 0;
  try {
    const report = await scanner.scan({
      concurrency,
      onProgress: ({ done, total }) => {
        const now = Date.now();
        if (now - last < 200 && done !== total) return;
        last = now;
        const width = 30;
        const filled = total ? Math.round((done / total) * width) : width;
        const rate = done / Math.max(0.001, (now - started) / 1000);
        const line = `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total} files  ${rate.toFixed(1)} files/s`;
        process.stderr.write(tty ? `\r${line}` : `${line}\n`);
      },
    });
    if (tty) process.stderr.write('\n');
    // Descriptors for search by image, from the previews the scan just made.
    const similarity = new ImageSimilarity(index.descriptors(), librarySources(renditions, scanner), systemClock, { concurrency, load: false, images });
    const described = await similarity.refresh();
    if (described) process.stdout.write(`described ${described} images for search by image\n`);
    process.stdout.write(`indexed ${report.files} files: ${report.added} added, ${report.updated} updated, ${report.unchanged} unchanged, ${report.removed} removed, ${report.failed.length} failed\n`);
    for (const f of report.failed) process.stdout.write(`  failed: ${f.path}: ${f.error}\n`);
    for (const w of report.warnings) process.stdout.write(`  no renditions: ${w.path}: ${w.warning}\n`);
  } finally {
    await images.pool.close();
    await lease?.stop();
    await close();
  }
  return 0;
}
