/**
 * Serialised browse pages, ready to send. A 200-asset page is ~600 KB of JSON built from 200 index
 * rows, 600 signed URLs and a response schema; a picker asks for the same page again and again
 * (reopening a folder, going back a page, several tabs). The cache keeps the exact bytes the
 * uncached path produced, under a key made of everything the bytes depend on:
 *
 *   - the hub user (sealed cursors in the page are bound to the user, so no entry is ever shared
 *     between users), the provider and the provider's view version (for the library: account,
 *     allowed folders and index generation; see Provider.viewVersion);
 *   - every request parameter that shapes the answer (folder, size, cursor, filters, locales,
 *     time zone);
 *   - the media-URL validity (expiry bucket and signing key), so embedded URLs are exactly what a
 *     fresh answer would carry and keep their documented minimum lifetime.
 *
 * Entries also expire after `maxAgeMs` (cursors inside carry their issue time) and the whole cache
 * holds at most `maxBytes`, least recently used out first. Only successful answers are cached; auth,
 * rate limits and the provider's account check still run on every request, before the lookup.
 *
 * AssetOps.browse (asset-ops.ts) owns the lookup, for the REST route (which sends a hit as it is)
 * and the MCP tools (which parse it back) alike; one cache per hub (src/routes/content.ts).
 */
import type { Clock } from '../clock.js';

interface Entry {
  body: Buffer;
  at: number;
}

export class PageCache {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;
  /** Answers served from the cache (tests read it). */
  hits = 0;

  constructor(
    private readonly clock: Clock,
    private readonly maxBytes: number,
    private readonly maxAgeMs = 60_000,
  ) {}

  get enabled(): boolean {
    return this.maxBytes > 0;
  }

  static key(parts: (string | number | null | string[])[]): string {
    return JSON.stringify(parts);
  }

  get(key: string): Buffer | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (this.clock.now() - e.at >= this.maxAgeMs) {
      this.delete(key, e);
      return undefined;
    }
    // Most recently used last: Map iteration order is the eviction order.
    this.entries.delete(key);
    this.entries.set(key, e);
    this.hits++;
    return e.body;
  }

  set(key: string, body: Buffer): void {
    if (!this.enabled || body.length > this.maxBytes / 4) return;
    const old = this.entries.get(key);
    if (old) this.delete(key, old);
    this.entries.set(key, { body, at: this.clock.now() });
    this.bytes += body.length;
    for (const [k, e] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.delete(k, e);
    }
  }

  private delete(key: string, e: Entry): void {
    this.entries.delete(key);
    this.bytes -= e.body.length;
  }
}
