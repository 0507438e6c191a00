/**
 * A Map for more entries than one JavaScript Map holds. V8 caps a Map (and a Set) at 2^24 =
 * 16,777,216 entries ("RangeError: Map maximum size exceeded"); the library's per-asset maps
 * (asset id → descriptor slot, file states) and the search engine's facet values (folders,
 * keywords) pass that near 17 million assets or values. (The search engine's row ids and terms
 * are in typed-array hash tables of their own: search/row-index.ts, search/terms.ts.) LargeMap chains plain Maps of at most `shardMax` entries each: a new
 * key goes into the last one, a new Map is started when it is full. With one shard (any library
 * under 8 million entries) every operation is the plain Map's plus one length check; beyond, a
 * lookup asks each shard in turn (three at 20 million).
 *
 * Iteration follows insertion order, as a Map's does (a key set again keeps its place); deleting
 * during iteration is safe, as it is for a Map.
 */
/** Half of V8's limit: far from it, and few shards at ten million entries. */
export const LARGE_MAP_SHARD = 1 << 23;

let defaultShard = LARGE_MAP_SHARD;

/**
 * Tests: runs `make` with every LargeMap constructed meanwhile split at `shardMax` entries, so that
 * a structure built inside (a search engine, a vector index) crosses shard boundaries with a few
 * hundred entries rather than 2^23 (construction is synchronous, so nothing else sees the change).
 */
export function withShardSize<T>(shardMax: number, make: () => T): T {
  const previous = defaultShard;
  defaultShard = shardMax;
  try {
    return make();
  } finally {
    defaultShard = previous;
  }
}

export class LargeMap<K, V> implements Iterable<[K, V]> {
  private shards: Map<K, V>[] = [new Map()];

  constructor(private readonly shardMax = defaultShard) {
    if (!Number.isInteger(shardMax) || shardMax < 1 || shardMax >= 1 << 24) throw new RangeError('LargeMap: shardMax must be 1..2^24-1');
  }

  get size(): number {
    let n = 0;
    for (const s of this.shards) n += s.size;
    return n;
  }

  /** How many Maps hold the entries (tests, memory notes). */
  get shardCount(): number {
    return this.shards.length;
  }

  private shardOf(key: K): Map<K, V> | undefined {
    for (const s of this.shards) if (s.has(key)) return s;
    return undefined;
  }

  get(key: K): V | undefined {
    const shards = this.shards;
    if (shards.length === 1) return shards[0]!.get(key);
    for (const s of shards) {
      const v = s.get(key);
      if (v !== undefined || s.has(key)) return v;
    }
    return undefined;
  }

  has(key: K): boolean {
    return this.shards.length === 1 ? this.shards[0]!.has(key) : this.shardOf(key) !== undefined;
  }

  set(key: K, value: V): this {
    const shards = this.shards;
    const last = shards[shards.length - 1]!;
    // One shard with room: the plain Map's one lookup (bulk builds add millions of keys this way).
    if (shards.length === 1 && last.size < this.shardMax) {
      last.set(key, value);
      return this;
    }
    const owner = this.shardOf(key);
    if (owner) owner.set(key, value);
    else if (last.size >= this.shardMax) shards.push(new Map<K, V>([[key, value]]));
    else last.set(key, value);
    return this;
  }

  delete(key: K): boolean {
    const owner = this.shardOf(key);
    if (!owner) return false;
    owner.delete(key);
    // An emptied shard other than the last goes: lookups never pay for empty Maps.
    if (owner.size === 0 && this.shards.length > 1 && owner !== this.shards[this.shards.length - 1]) this.shards = this.shards.filter((s) => s !== owner);
    return true;
  }

  clear(): void {
    this.shards = [new Map()];
  }

  *entries(): IterableIterator<[K, V]> {
    for (const s of [...this.shards]) yield* s.entries();
  }

  *keys(): IterableIterator<K> {
    for (const s of [...this.shards]) yield* s.keys();
  }

  *values(): IterableIterator<V> {
    for (const s of [...this.shards]) yield* s.values();
  }

  [Symbol.iterator](): IterableIterator<[K, V]> {
    return this.entries();
  }
}
