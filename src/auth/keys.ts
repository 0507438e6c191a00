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

interface StoredKey {
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
  private current: Record<KeyUse, HubKey>;

  constructor(private readonly stored: StoredKey[]) {
    for (const s of stored) this.byKid.set(s.kid, { kid: s.kid, key: createSecretKey(Buffer.from(s.k, 'base64url')), createdAt: s.createdAt });
    const first = (use: KeyUse) => {
      const s = stored.find((k) => k.use === use);
      if (!s) throw new Error(`key ring has no ${use} key`);
      return this.byKid.get(s.kid)!;
    };
    this.current = { sig: first('sig'), enc: first('enc') };
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
  // The ring is ordered newest first: the nearest earlier entry of the same use replaced a key.
  const retiredAt = (i: number) => old.slice(0, i).reverse().find((s) => s.use === old[i]!.use)?.createdAt ?? now;
  const kept = old.filter((_, i) => now - retiredAt(i) < retireAfterMs);
  const ring = new KeyRing([newKey('sig', now), newKey('enc', now), ...kept]);
  writeSecretFile(file, JSON.stringify(ring.toJSON(), null, 2));
  return ring;
}

/**
 * A named secret (admin key, user-hash key): from configuration, else generated once into
 * `<data>/<name>` with owner-only permissions.
 */
export function loadOrCreateSecret(dataDir: string, name: string, configured: string | null): string {
  if (configured) return configured;
  const file = path.join(dataDir, name);
  if (fs.existsSync(file)) return fs.readFileSync(file, 'utf8').trim();
  const key = randomBytes(32).toString('base64url');
  writeSecretFile(file, `${key}\n`);
  return key;
}
