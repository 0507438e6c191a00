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
const MEMO_MAX = 100_000;

export class SignedMediaUrls implements MediaUrls {
  constructor(
    private readonly keys: KeyRing,
    private readonly clock: Clock,
    private readonly publicUrl: string,
    /** At least this long; at most an hour more. */
    private readonly ttlMs = 2 * HOUR,
  ) {}

  /** Signed URLs of the current (expiry, key) pair: a page of 200 assets asks for 600 of them. */
  private memo = { exp: 0, kid: '', urls: new Map<string, string>() };

  url(providerId: string, ref: MediaRef): string {
    const route = ref.rendition === 'original' ? 'download' : 'thumbnail';
    const tail = ref.rendition === 'original' ? '' : `/${encodeURIComponent(ref.rendition)}`;
    const p = `/api/v1/assets/${route}/${encodeURIComponent(providerId)}/${encodeURIComponent(ref.assetId)}/${ref.version}${tail}`;
    const exp = this.expiry();
    const key = this.keys.active('sig');
    // The URL is a pure function of (path, exp, key): reuse it for the rest of the hour rather
    // than computing the same HMAC again for every listing that shows the asset.
    if (this.memo.exp !== exp || this.memo.kid !== key.kid || this.memo.urls.size >= MEMO_MAX) this.memo = { exp, kid: key.kid, urls: new Map() };
    let url = this.memo.urls.get(p);
    if (url === undefined) {
      url = `${this.publicUrl}${p}?exp=${exp}&k=${key.kid}&sig=${this.mac(key.key, p, exp)}`;
      this.memo.urls.set(p, url);
    }
    return url;
  }

  /**
   * Changes exactly when url() would start answering differently for the same asset: the expiry
   * bucket moved on or the signing key was rotated. Cached pages that embed URLs key on it.
   */
  validity(): string {
    return `${this.expiry()}.${this.keys.active('sig').kid}`;
  }

  /** now + ttl rounded up to the hour (seconds): the URL stays valid ≥ ttl, and is stable within the hour. */
  private expiry(): number {
    return Math.ceil((this.clock.now() + this.ttlMs) / HOUR) * HOUR / 1000;
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
