/**
 * Library accounts (`damhub users add`): passwords hashed with scrypt (memory-hard, in node:crypto),
 * optionally limited to sub-folders of the library.
 */
import { randomBytes, randomUUID, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import type { AccountRow, LibraryIndexStore } from './index/contract.js';

// N=2^15, r=8: 32 MiB and ~50-100 ms per hash on this class of machine.
const PARAMS: ScryptOptions = { N: 1 << 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };
const KEYLEN = 32;

function scryptAsync(password: string, salt: Buffer, params: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => scrypt(password.normalize('NFC'), salt, KEYLEN, params, (e, k) => (e ? reject(e) : resolve(k))));
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(password, salt, PARAMS);
  return `scrypt$${PARAMS.N}$${PARAMS.r}$${PARAMS.p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [alg, n, r, p, salt, key] = stored.split('$');
  if (alg !== 'scrypt' || !salt || !key) return false;
  const expected = Buffer.from(key, 'base64url');
  const got = await scryptAsync(password, Buffer.from(salt, 'base64url'), { N: Number(n), r: Number(r), p: Number(p), maxmem: PARAMS.maxmem });
  return got.length === expected.length && timingSafeEqual(got, expected);
}

/** A fixed hash to verify against when the account does not exist, so timing does not reveal names. */
let dummy: Promise<string> | null = null;
export function dummyHash(): Promise<string> {
  dummy ??= hashPassword(randomUUID());
  return dummy;
}

export function normaliseFolders(folders: string[]): string[] {
  return folders.map((f) => {
    const clean = f.replace(/\\/g, '/').replace(/^\/+|\/+$/g, '');
    if (!clean || clean.split('/').some((s) => s === '..' || s === '.' || s === '') || clean.includes('\0')) {
      throw new Error(`folder ${JSON.stringify(f)} must be a path relative to the library root, without . or .. segments`);
    }
    return clean;
  });
}

/** A new password for an existing account (`damhub users passwd`); the same length rule as at creation. */
export async function changePassword(index: LibraryIndexStore, name: string, password: string): Promise<void> {
  if (password.length < 8) throw new Error('a password has at least 8 characters');
  if (!(await index.setAccountPassword(name, await hashPassword(password)))) throw new Error(`no user ${name}: damhub users list shows the names`);
}

/**
 * Write folders as `--write-folders` gives them: paths like `folders`, and `/` for the whole
 * library (stored as '').
 */
export function normaliseWriteFolders(folders: string[]): string[] {
  return [...new Set(folders.map((f) => (f.trim() === '/' ? '' : normaliseFolders([f])[0]!)))];
}

/** `opts.writeFolders`: where the account may write (write-rights.ts); default none. */
export async function addAccount(index: LibraryIndexStore, name: string, password: string, folders: string[], now: number, opts: { writeFolders?: string[] } = {}): Promise<AccountRow> {
  if (!/^[\p{L}\p{N}._@-]{1,64}$/u.test(name)) throw new Error('a user name has 1-64 letters, digits, ".", "_", "@" or "-"');
  if (password.length < 8) throw new Error('a password has at least 8 characters');
  const writeFolders = normaliseWriteFolders(opts.writeFolders ?? []);
  if (await index.accountByName(name)) throw new Error(`user ${name} already exists`);
  const row: AccountRow = { id: randomUUID(), name, passwordHash: await hashPassword(password), folders: normaliseFolders(folders), writeFolders, createdAt: now };
  await index.addAccount(row);
  return row;
}
