/**
 * The hub's secrets in cluster mode: the key ring (signs hub tokens and media URLs, encrypts DAM
 * connection tokens), the user-hash key and the admin key, in PostgreSQL's `hub_secrets`, so a
 * token minted by any node verifies on every node without copying files between them.
 *
 * The first node to start creates what is missing (INSERT ... ON CONFLICT DO NOTHING, so nodes
 * starting together agree on one value) and every node reads back what won. A rotation
 * (`damhub keys rotate` with the cluster flags) rewrites the ring under a row lock; nodes reload it
 * when the rotation's invalidation message arrives, and once a minute in case they missed it.
 */
import type pg from 'pg';
import { KeyRing, newSecret, rotatedKeys, type StoredKey } from './keys.js';
import { StoreUnavailableError } from '../stores/types.js';

const KEYS = 'keys.json';
const ADMIN = 'admin.key';
const USER_HASH = 'user-hash.key';

export interface SharedSecrets {
  keys: StoredKey[];
  adminKey: string;
  userHashKey: string;
}

async function q<R extends pg.QueryResultRow>(c: pg.Pool | pg.PoolClient, text: string, params: unknown[]): Promise<pg.QueryResult<R>> {
  try {
    return await c.query<R>(text, params);
  } catch (e) {
    if (typeof (e as { code?: unknown }).code === 'string' && /^[0-9A-Z]{5}$/.test((e as { code: string }).code) && !/^(08|53|57|58)/.test((e as { code: string }).code)) throw e;
    throw new StoreUnavailableError('postgres', e);
  }
}

/** Reads the shared secrets, creating the missing ones first. */
export async function loadSharedSecrets(pool: pg.Pool, now: number): Promise<SharedSecrets> {
  const fresh: [string, string][] = [
    [KEYS, JSON.stringify(KeyRing.generate(now).toJSON())],
    [ADMIN, newSecret()],
    [USER_HASH, newSecret()],
  ];
  await q(pool, `INSERT INTO hub_secrets (name, value, updated_at) SELECT n, v, $3 FROM unnest($1::text[], $2::text[]) AS s(n, v)
    ON CONFLICT (name) DO NOTHING`, [fresh.map((f) => f[0]), fresh.map((f) => f[1]), now]);
  const rows = (await q<{ name: string; value: string }>(pool, 'SELECT name, value FROM hub_secrets WHERE name = ANY($1)', [fresh.map((f) => f[0])])).rows;
  const byName = new Map(rows.map((r) => [r.name, r.value]));
  return { keys: JSON.parse(byName.get(KEYS)!) as StoredKey[], adminKey: byName.get(ADMIN)!, userHashKey: byName.get(USER_HASH)! };
}

/** The current key ring, or null before any node has created it. */
export async function readSharedKeys(pool: pg.Pool): Promise<StoredKey[] | null> {
  const r = (await q<{ value: string }>(pool, 'SELECT value FROM hub_secrets WHERE name = $1', [KEYS])).rows[0];
  return r ? (JSON.parse(r.value) as StoredKey[]) : null;
}

/** Puts fresh keys in front of the shared ring and retires old ones, as `rotateKeyRing` does for the file. */
export async function rotateSharedKeys(pool: pg.Pool, now: number, retireAfterMs: number): Promise<KeyRing> {
  await loadSharedSecrets(pool, now);
  const c = await pool.connect().catch((e: unknown) => {
    throw new StoreUnavailableError('postgres', e);
  });
  try {
    await q(c, 'BEGIN', []);
    const old = JSON.parse((await q<{ value: string }>(c, 'SELECT value FROM hub_secrets WHERE name = $1 FOR UPDATE', [KEYS])).rows[0]!.value) as StoredKey[];
    const ring = new KeyRing(rotatedKeys(old, now, retireAfterMs));
    await q(c, 'UPDATE hub_secrets SET value = $1, updated_at = $2 WHERE name = $3', [JSON.stringify(ring.toJSON()), now, KEYS]);
    await q(c, 'COMMIT', []);
    return ring;
  } catch (e) {
    await c.query('ROLLBACK').catch(() => {});
    throw e;
  } finally {
    c.release();
  }
}

/**
 * Keeps a node's key ring in step with the shared one: reload() coalesces bursts (it runs on every
 * invalidation message) into at most one query in flight; a failed reload keeps the ring as it is.
 */
export class SharedKeyFollower {
  private running: Promise<void> | null = null;
  private again = false;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly pool: pg.Pool, private readonly ring: KeyRing, intervalMs = 60_000) {
    this.timer = setInterval(() => this.reload(), intervalMs);
    this.timer.unref();
  }

  reload(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        try {
          const keys = await readSharedKeys(this.pool);
          if (keys && JSON.stringify(keys) !== JSON.stringify(this.ring.toJSON())) this.ring.replace(keys);
        } catch {
          /* PostgreSQL down: keep verifying with the ring we have; the timer tries again */
        }
      } while (this.again);
    })().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  close(): void {
    clearInterval(this.timer);
  }
}
