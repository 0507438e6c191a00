/**
 * The embedded library provider on its own (no hub), for its write operations: a temp library
 * folder, a provider over it (SQLite index, or a shared one), sessions of its accounts, upload
 * bodies, and a look at every name on disk (hidden ones too).
 */
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { ManualClock } from '../../src/clock.js';
import type { ListOptions, ProviderSession, UploadBody } from '../../src/providers/contract.js';
import { addAccount } from '../../src/providers/library/accounts.js';
import { LibraryProvider, type LibraryOptions } from '../../src/providers/library/provider.js';
import { randomUUID } from 'node:crypto';
import { PgLibraryIndex } from '../../src/providers/library/index/postgres.js';
import { IndexerLease } from '../../src/providers/library/indexer-lease.js';
import { libraryTestStores } from './cindex-env.js';
import { tempDir } from './hub.js';

export const LIST: ListOptions = { size: 50, more: null, filters: [], timeZone: null, dataLocale: null, uiLocale: 'en' };

/**
 * A provider over `root`. Its index is the SQLite file in `dataDir`, or, when a wrapper asked for
 * the PostgreSQL index (cindex-env.ts), the shared database (closed with the provider). Not
 * started: a test scans with rescan(), as the indexer would.
 */
export async function makeLibrary(root: string, dataDir: string, opts: Partial<LibraryOptions> = {}): Promise<LibraryProvider> {
  const clock = new ManualClock(Date.UTC(2026, 10, 28, 6));
  const stores = opts.sharedIndex ? undefined : await libraryTestStores();
  const lib = new LibraryProvider({
    root,
    dataDir,
    clock,
    urls: { url: (pid, ref) => `http://hub.test/media/${pid}/${ref.assetId}/${ref.version}/${ref.rendition}` },
    watch: false,
    warn: () => undefined,
    ...(stores ? { sharedIndex: { index: new PgLibraryIndex(stores.pg.pool), lease: new IndexerLease(stores.pg.pool, `test-${randomUUID()}`, clock) } } : {}),
    ...opts,
  });
  if (stores) {
    const close = lib.close.bind(lib);
    lib.close = async () => {
      await close();
      await stores.close();
    };
  }
  return lib;
}

/** A session of a new account of the library (password irrelevant here). */
export async function sessionOf(lib: LibraryProvider, name: string, folders: string[], writeFolders: string[]): Promise<ProviderSession> {
  const acc = await addAccount(lib.index, name, `${name}-password`, folders, Date.now(), { writeFolders });
  return { providerId: 'library', userId: `user-${name}`, partnerId: 'partner-1', credentials: { acc: acc.id } };
}

export function body(bytes: Buffer | string): UploadBody {
  const b = Buffer.from(bytes);
  return { stream: Readable.from([b]), length: b.length, mimeType: 'application/octet-stream' };
}

/** A body that sends `first` and then fails, as a client that goes away half-way does. */
export function failingBody(first: Buffer, error = Object.assign(new Error('the client went away'), { code: 'ECONNRESET' })): UploadBody {
  let sent = false;
  // The first read gets the bytes; the next one, asked for once they are written, gets the error.
  const stream = new Readable({
    read() {
      if (sent) this.destroy(error);
      else {
        sent = true;
        this.push(first);
      }
    },
  });
  return { stream, length: first.length * 2, mimeType: 'application/octet-stream' };
}

/** Every path under `root` (relative, sorted), hidden names included: what a partial write would leave. */
export function everyName(root: string): string[] {
  const out: string[] = [];
  const visit = (rel: string) => {
    for (const e of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      out.push(e.isDirectory() ? `${r}/` : r);
      if (e.isDirectory()) visit(r);
    }
  };
  visit('');
  return out.sort();
}

export function libraryDirs(): { root: string; data: string } {
  return { root: tempDir('damhub-libw-'), data: tempDir('damhub-libw-data-') };
}
