/**
 * Paging for upstream APIs that page with their own cursors and never say how many items there
 * are (Dropbox list_folder, Drive files.list). The hub's contract wants an exact
 * totalAssetsCount and every subfolder on the first page, so a listing is read to its end (up to
 * a bound, which keeps memory and upstream calls bounded) and served in slices; the hub-sealed
 * `more` is the offset of the next slice.
 */
import { integrationError } from '../../errors.js';

export interface UpstreamPage<T> {
  items: T[];
  /** The upstream cursor of the next page, or null at the end. */
  next: string | null;
}

/** Follows upstream cursors to the end; more than `cap` items is a clear error, not an unbounded read. */
export async function readAll<T>(providerId: string, cap: number, first: () => Promise<UpstreamPage<T>>, cont: (cursor: string) => Promise<UpstreamPage<T>>): Promise<T[]> {
  const out: T[] = [];
  const seen = new Set<string>();
  let page = await first();
  for (;;) {
    for (const it of page.items) out.push(it);
    if (out.length > cap) {
      throw integrationError('integration-operation-failed', providerId, `more than ${cap} entries`, { message: `This folder or search holds more than ${cap} items; narrow it down (search within a subfolder).` });
    }
    if (!page.next) return out;
    // An upstream that hands back a cursor it already gave would loop forever.
    if (seen.has(page.next)) throw integrationError('integration-unavailable', providerId, 'the upstream cursor repeated itself', { status: 502 });
    seen.add(page.next);
    page = await cont(page.next);
  }
}

/** The offset a hub `more` stands for (the hub already checked its seal and binding). */
export function offsetOf(providerId: string, more: string | null): number {
  if (more === null) return 0;
  if (!/^\d{1,9}$/.test(more)) throw integrationError('integration-operation-failed', providerId, `unreadable cursor ${JSON.stringify(more.slice(0, 40))}`);
  return Number(more);
}

export function slice<T>(items: T[], offset: number, size: number): { page: T[]; more?: string } {
  const page = items.slice(offset, offset + size);
  return offset + size < items.length ? { page, more: String(offset + size) } : { page };
}

/** Stable order for slicing: by name, case-insensitively, then id. */
export function byName<T extends { name: string; id: string }>(a: T, b: T): number {
  const x = a.name.toLowerCase();
  const y = b.name.toLowerCase();
  return x < y ? -1 : x > y ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}
