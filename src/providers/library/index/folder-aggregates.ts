/**
 * A folder listing's total and facet counts, memoised per index generation. Every page of a folder
 * (and every return to it) under the same filters has the same total and counts; counting them is
 * six aggregate queries over the whole folder, several times the cost of reading a 200-row page.
 * The key holds the index generation (LibraryIndexStore.generation: moves on any write by this
 * process or a commit by another), so a change anywhere in the index recounts; entries are
 * least recently used out past a fixed count. Results are frozen: they are shared between answers.
 */
import type { ActiveFilters, FacetKey } from '../search/types.js';

export interface FolderAggregate {
  readonly total: number;
  readonly facets: Readonly<Record<FacetKey, readonly { readonly value: string; readonly count: number }[]>>;
}

export class FolderAggregates {
  private readonly entries = new Map<string, FolderAggregate>();
  private generation = '';

  constructor(private readonly maxEntries = 512) {}

  get(generation: string, q: { folderPath: string; filters: ActiveFilters }, count: () => FolderAggregate): FolderAggregate {
    if (generation !== this.generation) {
      // Everything counted under an older generation is stale: drop it all at once.
      this.entries.clear();
      this.generation = generation;
    }
    const key = JSON.stringify([q.folderPath, filterKey(q.filters)]);
    let hit = this.entries.get(key);
    if (hit) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit;
    }
    hit = deepFreeze(count());
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, hit);
    return hit;
  }
}

/** Filters in a canonical order (the same selection in another order is the same aggregate). */
function filterKey(filters: ActiveFilters): [string, string[]][] {
  return Object.entries(filters)
    .filter(([, v]) => v?.length)
    .map(([k, v]) => [k, [...(v as string[])].sort()] as [string, string[]])
    .sort((a, b) => (a[0] < b[0] ? -1 : 1));
}

function deepFreeze<T extends FolderAggregate>(a: T): T {
  for (const list of Object.values(a.facets)) {
    for (const o of list) Object.freeze(o);
    Object.freeze(list);
  }
  Object.freeze(a.facets);
  return Object.freeze(a);
}
