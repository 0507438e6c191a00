/**
 * The manifest of a damhub backup: the first entry of the archive, `damhub-backup.json`. It says
 * what made the backup (format, damhub version, time, host and data directory), the schema
 * version of each SQLite store in it, and every other entry with its size and SHA-256, so that a
 * restore can refuse a foreign, newer, incomplete or damaged archive before it puts anything in
 * place (docs/operating.md, "Backup and restore").
 */
import { createRequire } from 'node:module';

export const MANIFEST_NAME = 'damhub-backup.json';
export const FORMAT = 'damhub-backup';
/** Bumped when a restore by an older damhub could misread an archive. */
export const FORMAT_VERSION = 1;
/** A manifest lists each file in about 150 bytes; this bounds what a hostile archive can make a restore hold. */
export const MANIFEST_MAX_BYTES = 256 * 1024 * 1024;

export interface BackupFile {
  /** Relative to the data directory, forward slashes. */
  path: string;
  size: number;
  sha256: string;
}

export interface BackupManifest {
  format: typeof FORMAT;
  formatVersion: number;
  damhubVersion: string;
  /** ISO 8601, UTC. */
  createdAt: string;
  source: { hostname: string; dataDir: string };
  /** Schema version of each SQLite store in the archive, by path (hub.sqlite, library/library.sqlite). */
  schemas: Record<string, number>;
  /** The library folder the data directory serves (library/root.json), or null. */
  libraryRoot: string | null;
  files: BackupFile[];
}

/** A backup that cannot be made or restored, with the cause in one line (the CLI exits 1). */
export class BackupError extends Error {}

/** The version in damhub's package.json (dist/src/cli/backup/ → the package root). */
export function damhubVersion(): string {
  const pkg = createRequire(import.meta.url)('../../../../package.json') as { version?: unknown };
  return typeof pkg.version === 'string' ? pkg.version : 'unknown';
}

/**
 * A path an archive may name: relative, forward slashes, no empty, `.` or `..` segment, no
 * control character. Restore writes only the paths of the manifest, so none can leave the target.
 */
export function safeRelativePath(p: unknown): p is string {
  if (typeof p !== 'string' || p.length === 0 || p.length > 4096) return false;
  if (p.startsWith('/') || p.includes('\\') || /[\u0000-\u001f]/.test(p)) return false;
  return p.split('/').every((s) => s !== '' && s !== '.' && s !== '..');
}

const isCount = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;

/** Parses and checks a manifest; `what` names the archive in the errors. */
export function parseManifest(text: string, what: string): BackupManifest {
  let m: Partial<BackupManifest>;
  try {
    m = JSON.parse(text) as Partial<BackupManifest>;
  } catch {
    throw new BackupError(`${what} is not a damhub backup: its ${MANIFEST_NAME} is not JSON`);
  }
  if (!m || typeof m !== 'object' || m.format !== FORMAT) throw new BackupError(`${what} is not a damhub backup: its ${MANIFEST_NAME} is not a damhub backup manifest`);
  if (!isCount(m.formatVersion) || m.formatVersion < 1) throw new BackupError(`${what} has a damaged manifest: formatVersion is missing`);
  if (m.formatVersion > FORMAT_VERSION) {
    throw new BackupError(`${what} was made by damhub ${String(m.damhubVersion)} in backup format ${m.formatVersion}; this damhub (${damhubVersion()}) reads format ${FORMAT_VERSION}: restore it with damhub ${String(m.damhubVersion)} or newer`);
  }
  const bad = (field: string) => new BackupError(`${what} has a damaged manifest: ${field}`);
  if (typeof m.damhubVersion !== 'string' || typeof m.createdAt !== 'string') throw bad('damhubVersion or createdAt is missing');
  if (!m.source || typeof m.source.hostname !== 'string' || typeof m.source.dataDir !== 'string') throw bad('source is missing');
  if (!m.schemas || typeof m.schemas !== 'object' || !Object.values(m.schemas).every(isCount)) throw bad('schemas is not a map of versions');
  if (m.libraryRoot !== null && typeof m.libraryRoot !== 'string') throw bad('libraryRoot is not a path');
  if (!Array.isArray(m.files)) throw bad('files is not a list');
  const seen = new Set<string>();
  for (const f of m.files as unknown[]) {
    const file = f as Partial<BackupFile>;
    if (!file || !safeRelativePath(file.path) || file.path === MANIFEST_NAME) throw bad(`a file path is not a safe relative path: ${JSON.stringify(file?.path)}`);
    if (!isCount(file.size) || typeof file.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(file.sha256)) throw bad(`${file.path} has no size or SHA-256`);
    if (seen.has(file.path)) throw bad(`${file.path} is listed twice`);
    seen.add(file.path);
  }
  return m as BackupManifest;
}
