/**
 * How an index store's in-memory engine follows the index: the rules both stores (../index/
 * sqlite.ts and postgres.ts) apply to the change sequence, written once. The stores read the
 * database; this decides what to read and applies it.
 *
 * Every write to the index takes the next number of one change sequence: a changed asset row
 * carries it, a removal is logged with it. An engine that reflects sequence N catches up to the
 * current M by removing the rows logged in (N, M] and upserting the rows changed in (N, M], all
 * read in one snapshot of the database. The removal log is pruned below a point the index
 * records; an engine further behind than what is kept (or none yet) is built anew from the whole
 * index: only that is exact.
 */
import { SearchEngine } from './engine.js';
import type { SearchDoc } from './types.js';

/** An engine that catches up is compacted once its dead documents are this many and outnumber the live ones. */
const COMPACT_MIN_DEAD = 10_000;

/** A store's engine and the change sequence it reflects. */
export class EngineFollower {
  private engine: SearchEngine | null = null;
  private at = 0;

  get current(): SearchEngine | null {
    return this.engine;
  }

  /** The change sequence the engine reflects. */
  get seq(): number {
    return this.at;
  }

  /** Takes a loaded engine (a search snapshot) that reflects `seq`. */
  adopt(engine: SearchEngine, seq: number): void {
    this.engine = engine;
    this.at = seq;
  }

  /** Whether the engine reflects the index at sequence `now`. */
  isCurrent(now: number): boolean {
    return this.engine !== null && now === this.at;
  }

  /**
   * A catch-up to sequence `now`, given where the removal log starts (`removed_pruned_below`).
   * The caller reads what it asks for in the same database snapshot as those two numbers.
   */
  begin(now: number, prunedBelow: number): CatchUp {
    // Further behind than the removal log reaches (or never built): only a rebuild is exact.
    const build = this.engine === null || prunedBelow > this.at + 1;
    return new CatchUp(build ? new SearchEngine() : this.engine!, build ? 0 : this.at, now, build, (engine, seq) => this.adopt(engine, seq));
  }
}

/** One catch-up: removals after `from` (unless `build`), then the rows changed after `from`, then finish(). */
export class CatchUp {
  constructor(
    private readonly engine: SearchEngine,
    /** Read the change log after this sequence (0: the whole index). */
    readonly from: number,
    private readonly to: number,
    /** A new engine from the whole index: no removals to read, and it is worth a snapshot. */
    readonly build: boolean,
    private readonly done: (engine: SearchEngine, seq: number) => void,
  ) {}

  /** Whether the removal log after `from` is to be read (a new engine has nothing to remove). */
  get readsRemovals(): boolean {
    return !this.build;
  }

  /** An asset row removed after `from`, in sequence order. */
  removed(rowid: number): void {
    this.engine.remove(rowid);
  }

  /** An asset row changed after `from`, in sequence order. */
  changed(doc: SearchDoc): void {
    this.engine.upsert(doc);
  }

  /** Tidies the engine (a build is trimmed; many dead documents are compacted) and makes it the follower's. */
  finish(): SearchEngine {
    const e = this.engine;
    if (this.build) e.trim();
    else if (e.deadDocuments > COMPACT_MIN_DEAD && e.deadDocuments > e.size) e.compact();
    this.done(e, this.to);
    return e;
  }
}
