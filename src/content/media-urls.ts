/**
 * Signed, expiring media URLs. An <img> tag cannot send headers, so the URL carries its own
 * authorisation: an HMAC (key ring `sig` key, named by `k`) over the path, the expiry and the
 * binding — the partner (`p`) and the account (`a`) the URL was made for. Expiry is rounded up to
 * the hour so the same asset gets the same URL within an hour and browsers cache it.
 *
 * A URL lives 2–3 hours, but no longer than the access it came from: on every use the binding
 * must still be live (MediaAccess: partner enabled, account not removed; answers kept ≤ 30 s), so
 * removing the account or disabling the partner ends its URLs within a minute. A logout does not:
 * partners fetch a picked asset after the picker closed. Altering `p` or `a` breaks the signature,
 * so one account's URL cannot be turned into another's.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { KeyRing } from '../auth/keys.js';
import { hubError } from '../errors.js';
import type { MediaBinding, MediaRef, MediaUrls } from '../providers/contract.js';
import type { MediaAccess } from './media-access.js';

const HOUR = 3600_000;
const MEMO_MAX = 100_000;

export class SignedMediaUrls implements MediaUrls {
  constructor(
    private readonly keys: KeyRing,
    private readonly clock: Clock,
    private readonly publicUrl: string,
    /** Whether the partner and account a URL is bound to are still live. */
    private readonly access: MediaAccess,
    /** At least this long; at most an hour more. */
    private readonly ttlMs = 2 * HOUR,
  ) {}

  /** Signed URLs of the current (expiry, key) pair: a page of 200 assets asks for 600 of them. */
  private memo = { exp: 0, kid: '', urls: new Map<string, string>() };

  url(providerId: string, ref: MediaRef, bind: MediaBinding): string {
    const route = ref.rendition === 'original' ? 'download' : 'thumbnail';
    const tail = ref.rendition === 'original' ? '' : `/${encodeURIComponent(ref.rendition)}`;
    const p = `/api/v1/assets/${route}/${encodeURIComponent(providerId)}/${encodeURIComponent(ref.assetId)}/${ref.version}${tail}`;
    const exp = this.expiry();
    const key = this.keys.active('sig');
    // Encoded once: as they appear in the URL and, unambiguously (no newline), in the MAC input.
    const b = `p=${encodeURIComponent(bind.partnerId)}&a=${encodeURIComponent(bind.accountId)}`;
    // The URL is a pure function of (path, binding, exp, key): reuse it for the rest of the hour
    // rather than computing the same HMAC again for every listing that shows the asset.
    if (this.memo.exp !== exp || this.memo.kid !== key.kid || this.memo.urls.size >= MEMO_MAX) this.memo = { exp, kid: key.kid, urls: new Map() };
    const memoKey = `${p}?${b}`;
    let url = this.memo.urls.get(memoKey);
    if (url === undefined) {
      url = `${this.publicUrl}${p}?exp=${exp}&${b}&k=${key.kid}&sig=${this.mac(key.key, p, exp, b)}`;
      this.memo.urls.set(memoKey, url);
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

  /**
   * Checks a request path (as sent, percent-encoded), its exp/p/a/k/sig parameters (decoded, as
   * the query parser gives them) and then that the partner and the account it is bound to are
   * still live. Synchronous (undefined) when the liveness answers are remembered; else a promise.
   */
  verify(rawPath: string, q: { exp?: string; p?: string; a?: string; k?: string; sig?: string }, providerId: string): void | Promise<void> {
    if (!q.exp || !q.k || !q.sig || !/^\d{1,12}$/.test(q.exp)) throw hubError('hub-access-denied', 'media URL signature check failed: missing exp, k or sig');
    // URLs made before they were bound carry no p/a: they must not outlive the access either.
    if (typeof q.p !== 'string' || !q.p || typeof q.a !== 'string' || !q.a) throw hubError('hub-access-denied', 'media URL signature check failed: the URL is not bound to a partner and account; fetch the asset again for a fresh URL');
    const key = this.keys.find(q.k, 'sig');
    if (!key) throw hubError('hub-access-denied', 'media URL signature check failed: unknown key');
    const expected = Buffer.from(this.mac(key.key, rawPath, Number(q.exp), `p=${encodeURIComponent(q.p)}&a=${encodeURIComponent(q.a)}`));
    const given = Buffer.from(q.sig);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw hubError('hub-access-denied', 'media URL signature check failed');
    if (Number(q.exp) * 1000 <= this.clock.now()) throw hubError('hub-access-denied', 'media URL signature check failed: the URL has expired; fetch the asset again for a fresh URL');
    return this.access.check({ partnerId: q.p, account: { providerId, id: q.a } });
  }

  private mac(key: import('node:crypto').KeyObject, p: string, exp: number, binding: string): string {
    return createHmac('sha256', key).update(`media\n${p}\n${exp}\n${binding}`).digest('base64url');
  }
}
