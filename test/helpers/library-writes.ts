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
import { tempDir } from './hub.js';

export const LIST: ListOptions = { size: 50, more: null, filters: [], timeZone: null, dataLocale: null, uiLocale: 'en' };

export function makeLibrary(root: string, dataDir: string, opts: Partial<LibraryOptions> = {}): LibraryProvider {
  return new LibraryProvider({
    root,
    dataDir,
    clock: new ManualClock(Date.UTC(2026, 10, 28, 6)),
    urls: { url: (pid, ref) => `http://hub.test/media/${pid}/${ref.assetId}/${ref.version}/${ref.rendition}` },
    watch: false,
    warn: () => undefined,
    ...opts,
  });
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
