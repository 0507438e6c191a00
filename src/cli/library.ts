/** `damhub users …` (library accounts) and `damhub index` (scan with a progress bar). */
import fs from 'node:fs';
import path from 'node:path';
import { systemClock } from '../clock.js';
import { addAccount } from '../providers/library/accounts.js';
import { LibraryIndex } from '../providers/library/index-store.js';
import { Renditions } from '../providers/library/renditions.js';
import { DEFAULT_SCAN_CONCURRENCY, LibraryScanner } from '../providers/library/scanner.js';
import { ImageSimilarity, librarySources } from '../providers/library/similarity/index.js';
import { dataOpt, parse, UsageError } from './main.js';

function libraryDataDir(data: string | undefined): string {
  const dir = path.join(path.resolve(data ?? process.env.DAMHUB_DATA_DIR ?? '.damhub'), 'library');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

export async function usersCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === 'add') {
    const { values, positionals } = parse(rest, { ...dataOpt, 'password-stdin': { type: 'boolean' }, folders: { type: 'string' } }, true);
    if (positionals.length !== 1) throw new UsageError('users add takes one user name');
    let password: string;
    if (values['password-stdin']) password = await readStdin();
    else if (process.env.DAMHUB_USER_PASSWORD) password = process.env.DAMHUB_USER_PASSWORD;
    else throw new UsageError('give the password on standard input with --password-stdin (or in DAMHUB_USER_PASSWORD)');
    const folders = values.folders ? values.folders.split(',').map((f) => f.trim()).filter(Boolean) : [];
    const index = new LibraryIndex(path.join(libraryDataDir(values.data), 'library.sqlite'));
    try {
      const acc = await addAccount(index, positionals[0]!, password, folders, Date.now());
      process.stdout.write(`added ${acc.name}${acc.folders.length ? ` (limited to ${acc.folders.join(', ')})` : ''}\n`);
    } finally {
      index.close();
    }
    return 0;
  }
  if (sub === 'list' || sub === 'remove') {
    const { values, positionals } = parse(rest, dataOpt, true);
    const index = new LibraryIndex(path.join(libraryDataDir(values.data), 'library.sqlite'));
    try {
      if (sub === 'list') {
        for (const a of index.listAccounts()) process.stdout.write(`${a.name}\t${a.folders.length ? a.folders.join(',') : '(whole library)'}\n`);
      } else {
        if (positionals.length !== 1) throw new UsageError('users remove takes one user name');
        if (!index.removeAccount(positionals[0]!)) throw new Error(`no user ${positionals[0]}`);
      }
    } finally {
      index.close();
    }
    return 0;
  }
  throw new UsageError(`unknown users command ${JSON.stringify(sub ?? '')}`);
}

export async function indexCommand(args: string[]): Promise<number> {
  const { values } = parse(args, { ...dataOpt, library: { type: 'string' }, concurrency: { type: 'string' } });
  const lib = values.library ?? process.env.DAMHUB_LIBRARY;
  if (!lib) throw new UsageError('index needs --library DIR (or DAMHUB_LIBRARY)');
  const root = path.resolve(lib);
  if (!fs.existsSync(root) || !fs.statSync(root).isDirectory()) throw new Error(`${root} is not a folder`);
  const concurrency = values.concurrency ? Number(values.concurrency) : DEFAULT_SCAN_CONCURRENCY;
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64) throw new UsageError('--concurrency must be 1..64');
  const dir = libraryDataDir(values.data);
  const index = new LibraryIndex(path.join(dir, 'library.sqlite'));
  const renditions = new Renditions(path.join(dir, 'renditions'));
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
    const similarity = new ImageSimilarity(index.db, librarySources(renditions, scanner), systemClock, { concurrency, load: false });
    const described = await similarity.refresh();
    if (described) process.stdout.write(`described ${described} images for search by image\n`);
    process.stdout.write(`indexed ${report.files} files: ${report.added} added, ${report.updated} updated, ${report.unchanged} unchanged, ${report.removed} removed, ${report.failed.length} failed\n`);
    for (const f of report.failed) process.stdout.write(`  failed: ${f.path}: ${f.error}\n`);
  } finally {
    index.close();
  }
  return 0;
}
