/**
 * Whether the access a media URL came from still exists: the partner (enabled), the hub user and
 * the provider account it was made for. A signed media URL or download grant lives for hours (a
 * partner fetches a picked asset after the picker closed, so a logout does not end it), but
 * removing a library account or disabling a partner must end its URLs within a minute.
 *
 * Downloads are the hot path, so the answers are remembered: `live` is a synchronous map lookup
 * for URLs of known-live bindings. An answer is kept at most `ttlMs` (30 s): the library accounts
 * are changed by `damhub users remove` in another process, which signals nothing to this one.
 * Changes to partners and users also clear the cache at once through the stores' invalidation
 * signal (the one the principal cache uses), in this process and, in cluster mode, on every node.
 */
import type { Clock } from '../clock.js';
import { hubError } from '../errors.js';

export const LIVE_TTL_MS = 30_000;
/** Bindings remembered at most; beyond, the map starts over (a flood of distinct ids cannot grow it). */
const MAX_ENTRIES = 50_000;

export interface LivenessProbe {
  partnerLive(partnerId: string): Promise<boolean>;
  userLive(userId: string): Promise<boolean>;
  /** null: the provider cannot tell (it has no accounts of its own); the account is not checked. */
  accountLive(providerId: string, accountId: string): Promise<boolean | null>;
}

/** What a URL was made for; each part given is checked. */
export interface AccessBinding {
  partnerId: string;
  userId?: string;
  account?: { providerId: string; id: string };
}

interface Entry {
  until: number;
  live: boolean | Promise<boolean>;
}

const WHY: Record<string, string> = {
  p: 'the partner it was made for is disabled or removed',
  u: 'the hub user it was made for no longer exists',
  a: 'the account it was made for no longer exists',
};

export class MediaAccess {
  private entries = new Map<string, Entry>();

  constructor(private readonly probe: LivenessProbe, private readonly clock: Clock, private readonly ttlMs = LIVE_TTL_MS) {}

  /** Forget every answer (a partner or user changed: the stores' invalidation signal). */
  invalidate(): void {
    this.entries.clear();
  }

  /**
   * Passes (undefined, or a promise of it) when every part of the binding is live; else
   * hub-access-denied naming the part. Synchronous when every answer is remembered.
   */
  check(b: AccessBinding, what = 'media URL'): void | Promise<void> {
    const now = this.clock.now();
    const parts: [kind: string, key: string, ask: () => Promise<boolean>][] = [
      ['p', `p\0${b.partnerId}`, () => this.probe.partnerLive(b.partnerId)],
    ];
    if (b.userId !== undefined) parts.push(['u', `u\0${b.userId}`, () => this.probe.userLive(b.userId!)]);
    if (b.account) {
      const { providerId, id } = b.account;
      parts.push(['a', `a\0${providerId}\0${id}`, async () => (await this.probe.accountLive(providerId, id)) !== false]);
    }
    let pending: Promise<void>[] | null = null;
    for (const [kind, key, ask] of parts) {
      const live = this.answer(key, ask, now);
      if (live === false) throw denied(what, kind);
      if (live !== true) (pending ??= []).push(live.then((ok) => { if (!ok) throw denied(what, kind); }));
    }
    if (pending) return Promise.all(pending).then(() => undefined);
  }

  private answer(key: string, ask: () => Promise<boolean>, now: number): boolean | Promise<boolean> {
    const e = this.entries.get(key);
    if (e && e.until > now) return e.live;
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    // Concurrent downloads of one binding share one store read.
    const live = ask().then((ok) => {
      if (this.entries.get(key)?.live === live) this.entries.set(key, { until: now + this.ttlMs, live: ok });
      return ok;
    }, (err) => {
      // A store that is down is not an answer: nothing is remembered, the request fails with it.
      if (this.entries.get(key)?.live === live) this.entries.delete(key);
      throw err;
    });
    this.entries.set(key, { until: now + this.ttlMs, live });
    return live;
  }
}

function denied(what: string, kind: string) {
  return hubError('hub-access-denied', `${what} check failed: ${WHY[kind]}; the URL stopped working with the access it came from`);
}
