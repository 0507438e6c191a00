/**
 * Paging cursors. A provider's own cursor is sealed by the hub before it reaches the client:
 * encrypted and authenticated (AES-256-GCM under the key ring's `enc` keys), bound to the user, the
 * provider and the query it belongs to, and dated. So a forged, altered, replayed-elsewhere or
 * stale `more` is a clear 400 for every provider alike, a cursor can never reveal or reach another
 * user's data, and what a provider puts in its cursor (row ids, the library's ranking statistics)
 * stays unreadable to the client: `more` is `<kid>.<base64url(nonce ‖ ciphertext ‖ tag)>`.
 */
import { createCipheriv, createDecipheriv, createHash, hkdfSync, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { KeyRing } from '../auth/keys.js';
import { isCanonicalBase64url } from '../auth/canonical.js';
import { hubError } from '../errors.js';

export const CURSOR_TTL_MS = 24 * 3600_000;

const NONCE = 12;
const TAG = 16;
const MAX_MORE = 4096;

interface Sealed {
  /** The provider's cursor. */
  c: string | number;
  /** Binding: hash of user, provider and query. */
  b: string;
  /** Issued at (ms). */
  t: number;
}

export class CursorSealer {
  /**
   * Cursor keys per ring key, derived with HKDF so that cursors and DAM connection tokens (the
   * other users of `enc` keys) never share a key: neither can be fed to the other's decryption.
   */
  private readonly derived = new WeakMap<KeyObject, KeyObject>();

  constructor(
    private readonly keys: KeyRing,
    private readonly clock: Clock,
  ) {}

  static binding(parts: (string | number | null | string[])[]): string {
    return createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 22);
  }

  seal(cursor: string | number, binding: string): string {
    const { kid, key } = this.keys.active('enc');
    const nonce = randomBytes(NONCE);
    const cipher = createCipheriv('aes-256-gcm', this.cursorKey(key), nonce).setAAD(aad(kid));
    const body = cipher.update(JSON.stringify({ c: cursor, b: binding, t: this.clock.now() } satisfies Sealed), 'utf8');
    return `${kid}.${Buffer.concat([nonce, body, cipher.final(), cipher.getAuthTag()]).toString('base64url')}`;
  }

  /** The provider's cursor, or a hub-validation-error that says what is wrong with `more`. */
  unseal(more: string, binding: string): string {
    const bad = (why: string) => hubError('hub-validation-error', `more: ${why}; start again from the first page`);
    const parts = more.split('.');
    if (parts.length !== 2 || more.length > MAX_MORE || !isCanonicalBase64url(parts[1]!)) throw bad('not a cursor issued by this hub');
    const [kid, sealed] = parts as [string, string];
    const key = this.keys.find(kid, 'enc');
    if (!key) throw bad('the cursor was issued under a retired key');
    const bytes = Buffer.from(sealed, 'base64url');
    if (bytes.length < NONCE + TAG + 1) throw bad('not a cursor issued by this hub');
    let s: Sealed;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.cursorKey(key.key), bytes.subarray(0, NONCE)).setAAD(aad(kid));
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG));
      const plain = Buffer.concat([decipher.update(bytes.subarray(NONCE, bytes.length - TAG)), decipher.final()]);
      s = JSON.parse(plain.toString('utf8')) as Sealed;
    } catch {
      throw bad('the cursor was altered or not issued by this hub');
    }
    // Inside the ciphertext rather than in the additional data, so that a cursor of another query
    // gets its own clear message instead of "altered".
    if (s.b !== binding) throw bad('the cursor belongs to another query, folder or user');
    if (typeof s.t !== 'number' || this.clock.now() - s.t > CURSOR_TTL_MS) throw bad('the cursor is stale (older than 24 hours)');
    return String(s.c);
  }

  private cursorKey(ringKey: KeyObject): KeyObject {
    let k = this.derived.get(ringKey);
    if (!k) {
      k = createSecretKey(Buffer.from(hkdfSync('sha256', ringKey, Buffer.alloc(0), 'damhub paging cursor v1', 32)));
      this.derived.set(ringKey, k);
    }
    return k;
  }
}

/** The kid travels in clear text; as additional data it cannot be swapped for another. */
function aad(kid: string): Buffer {
  return Buffer.from(`damhub-cursor\n${kid}`);
}
