/** `damhub backup` and `damhub restore`: the command lines over create.ts and restore.ts. */
import path from 'node:path';
import { dataOpt, parse, UsageError } from '../args.js';
import { createBackup } from './create.js';
import { checkBackup, restoreBackup } from './restore.js';
import type { BackupManifest } from './manifest.js';

const clusterOpts = { 'database-url': { type: 'string' }, 'redis-url': { type: 'string' } } as const;

/**
 * Cluster mode keeps partners, users, sessions, keys and the library index in PostgreSQL and
 * short-lived state in Redis: a data directory holds none of it, so copying one would look like a
 * backup and restore nothing. Refused, with the tool that does it.
 */
function refuseCluster(values: { 'database-url'?: string; 'redis-url'?: string }, command: 'backup' | 'restore'): void {
  if (!(values['database-url'] || values['redis-url'] || process.env.DATABASE_URL || process.env.REDIS_URL)) return;
  throw new UsageError(
    `damhub ${command} works on a data directory (SQLite); in cluster mode the hub's state is in PostgreSQL: ${command === 'backup' ? 'back it up with pg_dump' : 'restore it with pg_restore'} (docs/operating.md, "Backup and restore"). Unset DATABASE_URL and REDIS_URL to ${command} a single node's data directory`,
  );
}

function dataDirOf(values: { data?: string }): string {
  return path.resolve(values.data || process.env.DAMHUB_DATA_DIR || '.damhub');
}

export async function backupCommand(args: string[]): Promise<number> {
  const { values } = parse(args, { ...dataOpt, out: { type: 'string' }, ...clusterOpts });
  refuseCluster(values, 'backup');
  if (!values.out) throw new UsageError('backup needs --out FILE: where to write the archive (outside the data directory)');
  const r = await createBackup({ dataDir: dataDirOf(values), out: values.out });
  const bytes = r.manifest.files.reduce((n, f) => n + f.size, 0);
  process.stdout.write([
    `wrote ${r.out}: ${r.manifest.files.length} files (${size(bytes)}) from ${r.manifest.source.dataDir}, ${size(r.bytes)} archive`,
    `  stores:  ${schemaLine(r.manifest)}`,
    r.manifest.libraryRoot ? `  library: ${r.manifest.libraryRoot} (its index, versions and renditions; the folder itself is not in the backup)` : null,
    `  the archive holds the hub's signing keys, secrets, sessions and password hashes: it is mode 0600; keep it as private as the data directory`,
    '',
  ].filter((l) => l !== null).join('\n'));
  return 0;
}

export async function restoreCommand(args: string[]): Promise<number> {
  const { values } = parse(args, { ...dataOpt, in: { type: 'string' }, check: { type: 'boolean' }, ...clusterOpts });
  refuseCluster(values, 'restore');
  if (!values.in) throw new UsageError('restore needs --in FILE: the archive damhub backup wrote');
  if (values.check) {
    const m = await checkBackup(values.in);
    process.stdout.write(`${path.resolve(values.in)} is intact: ${m.files.length} files, ${made(m)}\n  stores:  ${schemaLine(m)}\n`);
    return 0;
  }
  const r = await restoreBackup({ archive: values.in, dataDir: dataDirOf(values) });
  const lib = r.libraryRoot;
  process.stdout.write([
    `restored ${r.manifest.files.length} files into ${r.dataDir} from ${made(r.manifest)}`,
    `  stores:  ${schemaLine(r.manifest)}`,
    lib ? `  library: ${lib}${r.libraryMoved ? ' (inside the data directory; moved with it)' : ' (this folder must exist on this machine at that path)'}` : null,
    `  start:   damhub serve --data ${r.dataDir}${lib ? ` --library ${lib}` : ''}`,
    '',
  ].filter((l) => l !== null).join('\n'));
  return 0;
}

function made(m: BackupManifest): string {
  return `the backup of ${m.source.hostname}:${m.source.dataDir} made ${m.createdAt} by damhub ${m.damhubVersion}`;
}

function schemaLine(m: BackupManifest): string {
  const s = Object.entries(m.schemas).map(([store, v]) => `${store} (schema ${v})`);
  return s.length ? s.join(', ') : 'none';
}

function size(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}
