/**
 * Paging by the seed's rules: follow `more` unchanged until it is absent (not until a short page),
 * keep every other parameter (and so `size`) the same across pages, read subfolders as they come
 * and de-duplicate them by id (providers either send them on the first page only or repeat them).
 */
import { clientError } from './errors.js';
import type { Folder } from './generated/types.js';

export interface ListPage {
  assets: unknown[];
  folders: Folder[];
  more?: string | number;
}

/** A page as the iterators yield it: `folders` holds only folders not yielded on an earlier page. */
export type Paged<T extends ListPage> = T;

const hasMore = (more: unknown): more is string | number => more !== undefined && more !== null && more !== '';

/**
 * Pages of one traversal. `fetchPage(more)` must send the same query every time except `more`.
 * A provider that answers a cursor it already gave is stopped with `client-paging-loop` rather
 * than looping forever.
 */
export async function* paginate<T extends ListPage>(fetchPage: (more: string | number | undefined) => Promise<T>): AsyncGenerator<Paged<T>> {
  const seenFolders = new Set<string>();
  const seenCursors = new Set<string>();
  let more: string | number | undefined;
  for (;;) {
    const page = await fetchPage(more);
    const folders = (page.folders ?? []).filter((f) => !seenFolders.has(f.id) && (seenFolders.add(f.id), true));
    yield { ...page, folders };
    if (!hasMore(page.more)) return;
    const key = `${typeof page.more}:${page.more}`;
    if (seenCursors.has(key)) throw clientError('client-paging-loop', 'the provider repeated a paging cursor; stopping the traversal');
    seenCursors.add(key);
    more = page.more;
  }
}

/** The assets of every page, one by one. */
export async function* assetsOf<A, T extends { assets: A[] }>(pages: AsyncIterable<T>): AsyncGenerator<A> {
  for await (const page of pages) yield* page.assets;
}
