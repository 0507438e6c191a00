/**
 * Upstream failures → the hub's integration-* codes (SPEC.md section 5). One table for every
 * connector, so a 401 from any DAM reads the same to a partner. `details` carries what the
 * upstream said as text (an HTML error page reduced to its words; bounded), so support can read
 * the DAM's own words; `provider` names it.
 */
import { integrationError, type HubError, type IntegrationCode } from '../../errors.js';

/** Longest upstream message kept in `details`. */
export const MAX_DETAIL_CHARS = 2000;

export function codeForStatus(status: number): { code: IntegrationCode; status?: number } {
  if (status === 401) return { code: 'integration-auth-failed' };
  if (status === 403) return { code: 'integration-forbidden' };
  if (status === 404 || status === 410) return { code: 'integration-not-found' };
  if (status === 429) return { code: 'integration-unavailable', status: 503 };
  if (status === 501) return { code: 'integration-not-supported' };
  if (status === 503) return { code: 'integration-unavailable', status: 503 };
  if (status === 504) return { code: 'integration-unavailable', status: 504 };
  if (status >= 500) return { code: 'integration-unavailable', status: 502 };
  return { code: 'integration-operation-failed' };
}

export function clip(text: string): string {
  const t = text.trim();
  return t.length > MAX_DETAIL_CHARS ? `${t.slice(0, MAX_DETAIL_CHARS)}…` : t;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

/**
 * An upstream's error message as text. Web servers in front of a DAM (Apache, nginx, proxies)
 * answer errors with a whole HTML page; a partner's `details` and the hub's logs get its words,
 * not its markup: the head (title, styles) and scripts dropped, tags removed, the common
 * entities decoded, white space collapsed. Anything else passes unchanged.
 */
export function upstreamText(message: string, contentType = ''): string {
  if (!/html/i.test(contentType) && !/^\s*(<!doctype\s+html|<html[\s>])/i.test(message)) return message;
  return message
    .replace(/<(head|script|style)\b[\s\S]*?(<\/\1\s*>|$)/gi, ' ')
    .replace(/<!--[\s\S]*?(-->|$)/g, ' ')
    .replace(/<[^>]*>?/g, ' ')
    .replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (m, e: string) => {
      if (e[0] !== '#') return ENTITIES[e.toLowerCase()] ?? m;
      const n = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : Number(e.slice(1));
      return n > 0 && n < 0x110000 ? String.fromCodePoint(n) : m;
    })
    .replace(/\s+/g, ' ')
    .trim();
}

/** The error for an upstream answer with a failing status. */
export function statusError(provider: string, what: string, status: number, upstreamMessage: string, retryAfterSec?: number): HubError {
  const { code, status: s } = codeForStatus(status);
  const headers = retryAfterSec !== undefined ? { 'retry-after': String(retryAfterSec) } : undefined;
  const msg = clip(upstreamMessage);
  return integrationError(code, provider, `${what} answered ${status}${msg ? `: ${msg}` : ''}`, { status: s, headers });
}

/** The upstream could not be reached, timed out, or its circuit is open. */
export function unavailable(provider: string, details: string, opts: { timeout?: boolean; unreachable?: boolean; retryAfterSec?: number } = {}): HubError {
  return integrationError('integration-unavailable', provider, details, {
    status: opts.timeout ? 504 : opts.unreachable ? 502 : 503,
    headers: opts.retryAfterSec !== undefined ? { 'retry-after': String(opts.retryAfterSec) } : undefined,
  });
}

/** The upstream answered 2xx with something the connector cannot read (HTML where JSON/XML was due, a changed shape). */
export function malformed(provider: string, what: string, why: string, sample?: string): HubError {
  return integrationError('integration-unavailable', provider, `${what}: ${why}${sample ? `; the answer began: ${clip(sample.slice(0, 200))}` : ''}`, { status: 502 });
}

/**
 * Seconds from a Retry-After header (delta-seconds or HTTP-date), or undefined. Fractional
 * seconds (Microsoft Graph documents `Retry-After: 2.128`) are rounded up to whole seconds.
 */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return undefined;
  if (/^\d+$/.test(v.trim())) return Number(v.trim());
  if (/^\d{1,9}\.\d+$/.test(v.trim())) return Math.ceil(Number(v.trim()));
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}
