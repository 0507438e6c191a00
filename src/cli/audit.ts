/**
 * `damhub audit`: the write audit (docs/writes.md "Audit") from the data dir's SQLite store or the
 * cluster's PostgreSQL, newest first, as a table or as JSON lines. The same reading of times and
 * the same paging as GET /api/v1/admin/audit (src/stores/audit-listing.ts).
 */
import { AUDIT_MAX_LIMIT, AuditQueryError, auditPage, decodeAuditCursor, parseAuditTime } from '../stores/audit-listing.js';
import type { AuditEntry, Stores } from '../stores/types.js';
import { dataOpt, parse, UsageError } from './args.js';

type StoreFlags = { data?: string; 'database-url'?: string; 'redis-url'?: string };

const COLUMNS = ['TIME', 'PARTNER', 'USER', 'PROVIDER', 'ACCOUNT', 'OPERATION', 'TARGET', 'NAME', 'BYTES', 'RESULT', 'REQUEST'];

/** One table cell: `-` for nothing; a value with a tab, line break or other control character quoted, so a row stays one line of tab-separated cells. */
function cell(v: string | number | null): string {
  if (v === null || v === '') return '-';
  const s = String(v);
  return /[\u0000-\u001f\u007f]/.test(s) ? JSON.stringify(s) : s;
}

/** `before -> after` when a write changed it, else the one value. */
function change(before: string | null, after: string | null): string | null {
  if (before !== null && after !== null && before !== after) return `${cell(before)} -> ${cell(after)}`;
  return before ?? after;
}

export function auditRow(e: AuditEntry): string {
  return [
    new Date(e.at).toISOString(), cell(e.partnerId), cell(e.userId), cell(e.providerId), cell(e.accountId), cell(e.operation),
    cell(change(e.targetId, e.targetIdAfter)), cell(change(e.nameBefore, e.nameAfter)), cell(e.bytes), cell(e.result), cell(e.requestId),
  ].join('\t');
}

export async function auditCommand(args: string[], openStore: (values: StoreFlags) => Promise<Stores>): Promise<number> {
  const { values, positionals } = parse(args, {
    ...dataOpt,
    since: { type: 'string' },
    until: { type: 'string' },
    partner: { type: 'string' },
    limit: { type: 'string' },
    json: { type: 'boolean' },
    'database-url': { type: 'string' },
    'redis-url': { type: 'string' },
  }, true);
  if (positionals.length) throw new UsageError(`audit takes no arguments, got ${JSON.stringify(positionals[0])}`);
  const limit = values.limit === undefined ? 100 : Number(values.limit);
  if (!/^\d+$/.test(values.limit ?? '100') || limit < 1) throw new UsageError(`--limit must be a positive integer, got ${JSON.stringify(values.limit)}`);
  const now = Date.now();
  let since: number;
  let until: number | undefined;
  try {
    since = parseAuditTime(values.since ?? '24h', now, '--since');
    until = values.until === undefined ? undefined : parseAuditTime(values.until, now, '--until');
  } catch (e) {
    if (e instanceof AuditQueryError) throw new UsageError(e.message);
    throw e;
  }
  const store = await openStore(values);
  try {
    const entries: AuditEntry[] = [];
    let before: { at: number; requestId: string } | undefined;
    let more = false;
    // Pages of at most 1000 (the store's bound) until --limit is reached or nothing older is left.
    for (;;) {
      const page = await auditPage(store.audit, { since, until, partnerId: values.partner, before }, Math.min(AUDIT_MAX_LIMIT, limit - entries.length));
      entries.push(...page.entries);
      more = entries.length > limit || !!page.more;
      if (!page.more || entries.length >= limit) break;
      before = decodeAuditCursor(page.more);
    }
    const shown = entries.slice(0, limit);
    if (values.json) {
      for (const e of shown) process.stdout.write(`${JSON.stringify(e)}\n`);
    } else if (shown.length) {
      // A header names the columns; no entries print nothing, as `partners list` does.
      process.stdout.write(`${COLUMNS.join('\t')}\n${shown.map(auditRow).join('\n')}\n`);
    }
    if (more) process.stderr.write(`damhub: showing the newest ${limit} entries; there are more: raise --limit or narrow --since/--until\n`);
  } finally {
    await store.close();
  }
  return 0;
}
