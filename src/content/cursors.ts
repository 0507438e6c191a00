/**
 * Paging cursors. A provider's own cursor is sealed by the hub before it reaches the client:
 * authenticated (HMAC under the key ring), bound to the user, the provider and the query it
 * belongs to, and dated. So a forged, altered, replayed-elsewhere or stale `more` is a clear 400
 * for every provider alike, and a cursor can never reveal or reach another user's data.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { KeyRing } from '../auth/keys.js';
import { hubError } from '../errors.js';

export const CURSOR_TTL_MS = 24 * 3600_000;

interface Sealed {
  /** The provider's cursor. */
  c: string | number;
  /** Binding: hash of user, provider and query. */
  b: string;
  /** Issued at (ms). */
  t: number;
}

export class CursorSealer {
  constructor(
    private readonly keys: KeyRing,
    private readonly clock: Clock,
  ) {}

  static binding(parts: (string | number | null | string[])[]): string {
    return createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 22);
  }

  seal(cursor: string | number, binding: string): string {
    const key = this.keys.active('sig');
    const body = Buffer.from(JSON.stringify({ c: cursor, b: binding, t: this.clock.now() } satisfies Sealed)).toString('base64url');
    return `${body}.${key.kid}.${this.mac(key.key, body)}`;
  }

  /** The provider's cursor, or a hub-validation-error that says what is wrong with `more`. */
  unseal(more: string, binding: string): string {
    const bad = (why: string) => hubError('hub-validation-error', `more: ${why}; start again from the first page`);
    const parts = more.split('.');
    if (parts.length !== 3 || more.length > 4096) throw bad('not a cursor issued by this hub');
    const [body, kid, mac] = parts as [string, string, string];
    const key = this.keys.find(kid, 'sig');
    if (!key) throw bad('the cursor was issued under a retired key');
    const expected = Buffer.from(this.mac(key.key, body));
    if (expected.length !== Buffer.byteLength(mac) || !timingSafeEqual(expected, Buffer.from(mac))) throw bad('the cursor was altered or not issued by this hub');
    let s: Sealed;
    try {
      s = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Sealed;
    } catch {
      throw bad('not a cursor issued by this hub');
    }
    if (s.b !== binding) throw bad('the cursor belongs to another query, folder or user');
    if (this.clock.now() - s.t > CURSOR_TTL_MS) throw bad('the cursor is stale (older than 24 hours)');
    return String(s.c);
  }

  private mac(key: import('node:crypto').KeyObject, body: string): string {
    return createHmac('sha256', key).update(`cursor\n${body}`).digest('base64url');
  }
}
