/**
 * Partner JWKS: inline keys from the registration, or fetched from the partner's JWKS URL with a
 * timeout and a byte cap, cached (~10 minutes) and refetched at most once per lookup when a token
 * names an unknown kid. A cooldown stops a flood of random kids from turning into a flood of fetches.
 */
import { createLocalJWKSet, type JSONWebKeySet, type JWK } from 'jose';
import type { Clock } from '../clock.js';
import type { JwksEntry, Partner, SharedJwksCache } from '../stores/types.js';

export type { JwksEntry, SharedJwksCache };

export class JwksError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JwksError';
  }
}

export interface JwksCacheOptions {
  ttlMs: number;
  timeoutMs: number;
  maxBytes: number;
  /** Minimum time between two refetches triggered by unknown kids. */
  cooldownMs?: number;
}

export class JwksCache {
  private readonly entries = new Map<string, JwksEntry>();
  private readonly inflight = new Map<string, Promise<JwksEntry>>();

  constructor(
    private readonly clock: Clock,
    private readonly opts: JwksCacheOptions,
    private readonly shared: SharedJwksCache | null = null,
  ) {}

  /** Key material for `kid`, or null when the partner has no such key (after one refetch). */
  async keyFor(partner: Partner, kid: string): Promise<JWK | null> {
    if (partner.jwks) return findKey(partner.jwks, kid);
    if (!partner.jwksUrl) return null;
    let entry = await this.current(partner);
    let key = findKey(entry.jwks, kid);
    if (!key) {
      // Another node may have refetched after the partner's key rotation already.
      const newer = await this.fromShared(partner);
      if (newer && newer.fetchedAt > entry.fetchedAt) {
        entry = newer;
        key = findKey(entry.jwks, kid);
      }
    }
    if (!key && this.clock.now() - entry.fetchedAt >= (this.opts.cooldownMs ?? 10_000)) {
      entry = await this.refetch(partner);
      key = findKey(entry.jwks, kid);
    }
    return key;
  }

  invalidate(partnerId: string): void {
    this.entries.delete(partnerId);
  }

  private async current(partner: Partner): Promise<JwksEntry> {
    const e = this.entries.get(partner.id);
    if (e && this.usable(e, partner)) return e;
    return (await this.fromShared(partner)) ?? this.refetch(partner);
  }

  private usable(e: JwksEntry, partner: Partner): boolean {
    return e.version === partner.updatedAt && this.clock.now() - e.fetchedAt < this.opts.ttlMs;
  }

  /** The shared entry when it is current for this registration (kept locally too), else null. */
  private async fromShared(partner: Partner): Promise<JwksEntry | null> {
    if (!this.shared) return null;
    const e = await this.shared.get(partner.id).catch(() => null);
    if (!e || !this.usable(e, partner)) return null;
    this.entries.set(partner.id, e);
    return e;
  }

  private refetch(partner: Partner): Promise<JwksEntry> {
    let p = this.inflight.get(partner.id);
    if (!p) {
      p = this.fetchJwks(partner.jwksUrl!).then(
        (jwks) => {
          const entry = { jwks, fetchedAt: this.clock.now(), version: partner.updatedAt };
          this.entries.set(partner.id, entry);
          void this.shared?.set(partner.id, entry, this.opts.ttlMs).catch(() => undefined);
          return entry;
        },
      ).finally(() => this.inflight.delete(partner.id));
      this.inflight.set(partner.id, p);
    }
    return p;
  }

  private async fetchJwks(url: string): Promise<JSONWebKeySet> {
    let res: Response;
    try {
      res = await fetch(url, { signal: AbortSignal.timeout(this.opts.timeoutMs), redirect: 'error', headers: { accept: 'application/json' } });
    } catch (e) {
      throw new JwksError(`fetching the partner JWKS failed: ${(e as Error).name === 'TimeoutError' ? 'timed out' : (e as Error).message}`);
    }
    if (!res.ok) {
      await res.body?.cancel();
      throw new JwksError(`fetching the partner JWKS failed: HTTP ${res.status}`);
    }
    const text = await readCapped(res, this.opts.maxBytes);
    let jwks: unknown;
    try {
      jwks = JSON.parse(text);
    } catch {
      throw new JwksError('the partner JWKS is not JSON');
    }
    assertJwks(jwks);
    return jwks;
  }
}

async function readCapped(res: Response, maxBytes: number): Promise<string> {
  const declared = Number(res.headers.get('content-length'));
  if (declared > maxBytes) {
    await res.body?.cancel();
    throw new JwksError(`the partner JWKS is larger than ${maxBytes} bytes`);
  }
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    total += chunk.byteLength;
    if (total > maxBytes) throw new JwksError(`the partner JWKS is larger than ${maxBytes} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export function assertJwks(v: unknown): asserts v is JSONWebKeySet {
  if (!v || typeof v !== 'object' || !Array.isArray((v as { keys?: unknown }).keys)) throw new JwksError('a JWKS must be an object with a "keys" array');
  // createLocalJWKSet validates the shape of every key.
  createLocalJWKSet(v as JSONWebKeySet);
}

function findKey(jwks: JSONWebKeySet, kid: string): JWK | null {
  return jwks.keys.find((k) => k.kid === kid && (k.use === undefined || k.use === 'sig')) ?? null;
}
