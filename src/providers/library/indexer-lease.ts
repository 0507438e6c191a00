/**
 * Which node is the library's indexer (cluster mode): a row in PostgreSQL with the holder and an
 * expiry, renewed by a heartbeat. Whoever holds an unexpired lease scans and watches the shared
 * library folder; every other node only reads the index. A holder that dies (SIGKILL, lost
 * network) stops renewing; once the expiry passes, the next heartbeat of another node takes the
 * lease over and that node scans, so files added meanwhile are indexed.
 *
 * Expiry is decided with the injected clock of the node asking (tests move a ManualClock), so the
 * nodes' clocks must agree to well within the lease time (NTP gives milliseconds; the default
 * lease is 15 s). A holder whose renewal fails stops indexing at once, before its lease can have
 * passed to another node.
 */
import type pg from 'pg';
import type { Clock } from '../../clock.js';
import { LibraryDb } from './index/postgres-schema.js';

export interface LeaseEvents {
  /** This node became the indexer. */
  acquired(): Promise<void> | void;
  /** This node is no longer the indexer (renewal refused or failed). */
  lost(): void;
}

const NAME = 'indexer';

export class IndexerLease {
  private readonly db: LibraryDb;
  private held = false;
  private timer: NodeJS.Timeout | null = null;
  private beating: Promise<void> | null = null;
  private events: LeaseEvents | null = null;

  constructor(pool: pg.Pool, readonly holder: string, private readonly clock: Clock, readonly ttlMs = 15_000) {
    this.db = new LibraryDb(pool);
  }

  get isHeld(): boolean {
    return this.held;
  }

  /**
   * Takes the lease if it is free, expired or already ours (then it is renewed). One statement,
   * so of two nodes asking at once exactly one wins.
   */
  async tryAcquire(): Promise<boolean> {
    const now = this.clock.now();
    const r = await this.db.query(
      `INSERT INTO library_lease (name, holder, expires_at) VALUES ($1, $2, $3)
       ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
       WHERE library_lease.holder = EXCLUDED.holder OR library_lease.expires_at <= $4
       RETURNING holder`,
      [NAME, this.holder, now + this.ttlMs, now],
    );
    return r.rowCount === 1;
  }

  /** The current holder and its expiry, or null when nobody ever held it. */
  async current(): Promise<{ holder: string; expiresAt: number } | null> {
    const r = (await this.db.query('SELECT holder, expires_at FROM library_lease WHERE name = $1', [NAME], true)).rows[0];
    return r ? { holder: r.holder as string, expiresAt: Number(r.expires_at) } : null;
  }

  /** Gives the lease up (a clean shutdown), so another node need not wait for the expiry. */
  async release(): Promise<void> {
    await this.db.query('DELETE FROM library_lease WHERE name = $1 AND holder = $2', [NAME, this.holder]);
  }

  /** One heartbeat: renew if held, else try to take over; calls the events on a change. */
  async beat(): Promise<void> {
    let ok: boolean;
    try {
      ok = await this.tryAcquire();
    } catch {
      ok = false; // the database is unreachable: a holder cannot prove its lease, so it stops
    }
    if (ok && !this.held) {
      this.held = true;
      await this.events?.acquired();
    } else if (!ok && this.held) {
      this.held = false;
      this.events?.lost();
    }
  }

  /** First heartbeat now (awaited), then every third of the lease time. */
  async start(events: LeaseEvents): Promise<void> {
    this.events = events;
    await this.beat();
    const tick = () => {
      this.beating ??= this.beat().catch(() => undefined).finally(() => {
        this.beating = null;
      });
    };
    this.timer = setInterval(tick, Math.max(50, Math.floor(this.ttlMs / 3)));
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.beating;
    this.events = null;
    if (this.held) {
      this.held = false;
      await this.release().catch(() => undefined);
    }
  }
}
