/**
 * Reading the write audit (docs/writes.md "Audit") the way `damhub audit` and
 * GET /api/v1/admin/audit do: times given as a duration back from now, a date or epoch ms; pages
 * newest first with an opaque cursor. One module, so the command and the API agree.
 */
import type { AuditEntry, AuditQuery, AuditStore } from './types.js';

/** A value the caller gave that cannot be read; the CLI makes it a usage error, the API a 400. */
export class AuditQueryError extends Error {}

export const AUDIT_MAX_LIMIT = 1000;

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3600_000, d: 86_400_000, w: 7 * 86_400_000 };

/**
 * `24h`, `30m`, `7d` (back from `now`), an ISO 8601 date (`2026-11-28`, UTC midnight) or date-time
 * (`2026-11-28T06:00:00Z`; without a zone: UTC), or epoch milliseconds.
 */
export function parseAuditTime(value: string, now: number, name: string): number {
  const v = value.trim();
  const d = /^(\d+)([smhdw])$/.exec(v);
  if (d) return now - Number(d[1]) * UNIT_MS[d[2]!]!;
  if (/^\d+$/.test(v)) return Number(v);
  if (/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$/.test(v)) {
    // Date-times without a zone would be read as local time by Date.parse: the audit speaks UTC.
    const iso = v.replace(' ', 'T');
    const t = Date.parse(/T/.test(iso) && !/(Z|[+-]\d{2}:?\d{2})$/.test(iso) ? `${iso}Z` : iso);
    if (Number.isFinite(t)) return t;
  }
  throw new AuditQueryError(`${name} must be a duration back from now (24h, 30m, 7d), an ISO 8601 date or date-time (2026-11-28, 2026-11-28T06:00:00Z) or epoch milliseconds, got ${JSON.stringify(value)}`);
}

/** The `before` cursor of the next page: the (at, requestId) of the last entry given. */
export function encodeAuditCursor(e: Pick<AuditEntry, 'at' | 'requestId'>): string {
  return Buffer.from(JSON.stringify([e.at, e.requestId])).toString('base64url');
}

export function decodeAuditCursor(cursor: string): { at: number; requestId: string } {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === 2 && Number.isSafeInteger(v[0]) && typeof v[1] === 'string') return { at: v[0], requestId: v[1] };
  } catch { /* reported below */ }
  throw new AuditQueryError('before must be the `more` value of a previous answer');
}

export interface AuditPage {
  entries: AuditEntry[];
  /** The cursor of the next (older) page, when there is one. */
  more?: string;
}

/**
 * One page, newest first. The cursor is an (at, requestId) pair and one request may write several
 * times in one millisecond (an MCP batch), so a page never ends inside such a group: it is
 * completed (a little over `limit`), or the next page, strictly older than the pair, would skip
 * the group's rest.
 */
export async function auditPage(store: AuditStore, q: Omit<AuditQuery, 'limit'>, limit: number): Promise<AuditPage> {
  const n = Math.max(1, Math.min(limit, AUDIT_MAX_LIMIT));
  const rows = await store.list({ ...q, limit: n + 1 });
  if (rows.length <= n) return { entries: rows };
  const entries = rows.slice(0, n);
  const last = entries[n - 1]!;
  const same = (e: AuditEntry) => e.at === last.at && e.requestId === last.requestId;
  if (same(rows[n]!)) {
    const group = (await store.list({ since: last.at, until: last.at + 1, partnerId: q.partnerId, limit: AUDIT_MAX_LIMIT })).filter(same);
    while (entries.length && same(entries[entries.length - 1]!)) entries.pop();
    entries.push(...group);
    // The extra row may have been the group's own: a next page only when something older is left.
    if (!(await store.list({ ...q, before: last, limit: 1 })).length) return { entries };
  }
  return { entries, more: encodeAuditCursor(last) };
}
