/**
 * The hub's own secrets: HMAC keys that sign hub tokens and asset URLs, and AES keys that encrypt
 * DAM connection tokens. Generated on first start into `<data>/keys.json` (mode 0600). Rotation
 * puts a new key first; older keys keep verifying/decrypting until every token they made has
 * expired, after which `prune` drops them.
 */
import { createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

export type KeyUse = 'sig' | 'enc';

export interface StoredKey {
  kid: string;
  use: KeyUse;
  /** base64url of 32 random bytes. */
  k: string;
  createdAt: number;
}

export interface HubKey {
  kid: string;
  key: KeyObject;
  createdAt: number;
}

export class KeyRing {
  private readonly byKid = new Map<string, HubKey>();
  private current!: Record<KeyUse, HubKey>;

  constructor(private stored: StoredKey[]) {
    this.replace(stored);
  }

  /**
   * Swaps in another version of the ring in place (cluster mode: a rotation made on another node),
   * so the services holding this object see it at once. Throws, leaving the ring as it was, when
   * the new version lacks a key of either use.
   */
  replace(stored: StoredKey[]): void {
    const byKid = new Map<string, HubKey>();
    for (const s of stored) byKid.set(s.kid, { kid: s.kid, key: createSecretKey(Buffer.from(s.k, 'base64url')), createdAt: s.createdAt });
    const first = (use: KeyUse) => {
      const s = stored.find((k) => k.use === use);
      if (!s) throw new Error(`key ring has no ${use} key`);
      return byKid.get(s.kid)!;
    };
    const current = { sig: first('sig'), enc: first('enc') };
    this.byKid.clear();
    for (const [kid, k] of byKid) this.byKid.set(kid, k);
    this.current = current;
    this.stored = stored;
  }

  /** The key new tokens are made with. */
  active(use: KeyUse): HubKey {
    return this.current[use];
  }

  /** Any key still accepted for verification/decryption, or undefined. */
  find(kid: string, use: KeyUse): HubKey | undefined {
    const k = this.byKid.get(kid);
    return k && this.stored.find((s) => s.kid === kid)?.use === use ? k : undefined;
  }

  toJSON(): StoredKey[] {
    return this.stored;
  }

  static generate(now: number): KeyRing {
    return new KeyRing([newKey('sig', now), newKey('enc', now)]);
  }
}

function newKey(use: KeyUse, now: number): StoredKey {
  return { kid: `${use}-${randomBytes(6).toString('base64url')}`, use, k: randomBytes(32).toString('base64url'), createdAt: now };
}

export function keyFile(dataDir: string): string {
  return path.join(dataDir, 'keys.json');
}

/** Writes a secret file readable by the owner only, atomically (no half-written keys after a crash). */
export function writeSecretFile(file: string, content: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, content, { mode: 0o600 });
  fs.renameSync(tmp, file);
}

export function loadOrCreateKeyRing(dataDir: string, now: number): KeyRing {
  const file = keyFile(dataDir);
  if (fs.existsSync(file)) return new KeyRing(JSON.parse(fs.readFileSync(file, 'utf8')) as StoredKey[]);
  const ring = KeyRing.generate(now);
  writeSecretFile(file, JSON.stringify(ring.toJSON(), null, 2));
  return ring;
}

/**
 * Adds a fresh key of each use in front and drops keys that stopped being active more than
 * `retireAfterMs` ago (every token they made has expired by then). A key stopped being active when
 * the next newer key of its use was created; the keys active until now are always kept.
 */
export function rotateKeyRing(dataDir: string, now: number, retireAfterMs: number): KeyRing {
  const file = keyFile(dataDir);
  const old = fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as StoredKey[]) : [];
  const ring = new KeyRing(rotatedKeys(old, now, retireAfterMs));
  writeSecretFile(file, JSON.stringify(ring.toJSON(), null, 2));
  return ring;
}

/** The rotation itself, wherever the ring is stored (a file here, PostgreSQL in cluster mode). */
export function rotatedKeys(old: StoredKey[], now: number, retireAfterMs: number): StoredKey[] {
  // The ring is ordered newest first: the nearest earlier entry of the same use replaced a key.
  const retiredAt = (i: number) => old.slice(0, i).reverse().find((s) => s.use === old[i]!.use)?.createdAt ?? now;
  const kept = old.filter((_, i) => now - retiredAt(i) < retireAfterMs);
  return [newKey('sig', now), newKey('enc', now), ...kept];
}

/** A fresh random secret (admin key, user-hash key). */
export function newSecret(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * A named secret (admin key, user-hash key): from configuration, else generated once into
 * `<data>/<name>` with owner-only permissions.
 */
export function loadOrCreateSecret(dataDir: string, name: string, configured: string | null): string {
  if (configured) return configured;
  const file = path.join(dataDir, name);
  if (fs.existsSync(file)) return fs.readFileSync(file, 'utf8').trim();
  const key = newSecret();
  writeSecretFile(file, `${key}\n`);
  return key;
}
