/**
 * Signed, expiring media URLs. An <img> tag cannot send headers, so the URL carries its own
 * authorisation: an HMAC (key ring `sig` key, named by `k`) over the path and expiry. Expiry is
 * rounded up to the hour so the same asset gets the same URL within an hour and browsers cache it.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { KeyRing } from '../auth/keys.js';
import { hubError } from '../errors.js';
import type { MediaRef, MediaUrls } from '../providers/contract.js';

const HOUR = 3600_000;

export class SignedMediaUrls implements MediaUrls {
  constructor(
    private readonly keys: KeyRing,
    private readonly clock: Clock,
    private readonly publicUrl: string,
    /** At least this long; at most an hour more. */
    private readonly ttlMs = 2 * HOUR,
  ) {}

  url(providerId: string, ref: MediaRef): string {
    const route = ref.rendition === 'original' ? 'download' : 'thumbnail';
    const tail = ref.rendition === 'original' ? '' : `/${encodeURIComponent(ref.rendition)}`;
    const p = `/api/v1/assets/${route}/${encodeURIComponent(providerId)}/${encodeURIComponent(ref.assetId)}/${ref.version}${tail}`;
    const exp = Math.ceil((this.clock.now() + this.ttlMs) / HOUR) * HOUR / 1000;
    const key = this.keys.active('sig');
    return `${this.publicUrl}${p}?exp=${exp}&k=${key.kid}&sig=${this.mac(key.key, p, exp)}`;
  }

  /** Checks a request path (as sent, percent-encoded) and its exp/k/sig parameters. */
  verify(rawPath: string, q: { exp?: string; k?: string; sig?: string }): void {
    if (!q.exp || !q.k || !q.sig || !/^\d{1,12}$/.test(q.exp)) throw hubError('hub-access-denied', 'media URL signature check failed: missing exp, k or sig');
    const key = this.keys.find(q.k, 'sig');
    if (!key) throw hubError('hub-access-denied', 'media URL signature check failed: unknown key');
    const expected = Buffer.from(this.mac(key.key, rawPath, Number(q.exp)));
    const given = Buffer.from(q.sig);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw hubError('hub-access-denied', 'media URL signature check failed');
    if (Number(q.exp) * 1000 <= this.clock.now()) throw hubError('hub-access-denied', 'media URL signature check failed: the URL has expired; fetch the asset again for a fresh URL');
  }

  private mac(key: import('node:crypto').KeyObject, p: string, exp: number): string {
    return createHmac('sha256', key).update(`media\n${p}\n${exp}`).digest('base64url');
  }
}
