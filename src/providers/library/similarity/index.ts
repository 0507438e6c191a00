/**
 * Search by image for the embedded library: keeps descriptors for every image asset (computed
 * after each scan from the preview rendition the scan made, stored by store.ts) and answers
 * top-k queries from the in-memory VectorIndex. The provider calls refresh() after scans and
 * search() for queries; nothing else in the library knows about descriptors.
 */
import fs from 'node:fs';
import type Database from 'better-sqlite3';
import type { Clock } from '../../../clock.js';
import { describeImage, type Descriptor } from './descriptor.js';
import { DescriptorStore, type PendingImage } from './store.js';
import { DEFAULT_CUTOFF, VectorIndex, type Hit } from './vector-index.js';

/** Pixel limit for library files (the renditions' own limit); query images have a stricter one. */
const INDEX_PIXEL_LIMIT = 268_402_689;

export interface SimilaritySources {
  /** Preview rendition of the current version, when one exists (a 1024 px JPEG: cheap to decode). */
  preview(assetId: string, version: number): string | null;
  /** The kept original of a content blob. */
  blob(blob: string): string | null;
}

export class ImageSimilarity {
  readonly index = new VectorIndex();
  readonly store: DescriptorStore;
  private seq: number;
  private running: Promise<number> | null = null;
  private queued: Promise<number> | null = null;
  private readonly concurrency: number;
  private readonly load: boolean;

  /** `opts.load: false` (the `damhub index` command) computes and stores descriptors without holding them in memory. */
  constructor(db: Database.Database, private readonly sources: SimilaritySources, private readonly clock: Clock, opts: { concurrency?: number; load?: boolean } = {}) {
    this.store = new DescriptorStore(db);
    this.concurrency = opts.concurrency ?? 2;
    this.load = opts.load ?? true;
    this.seq = this.load
      ? this.store.loadAll((s) => {
        if (s.descriptor) this.index.put(s.assetId, s.folderPath, s.descriptor);
      })
      : 0;
  }

  /**
   * Computes the descriptors that are missing or stale (new or changed images, or a library
   * indexed before this feature existed). One refresh at a time; a call during one runs once more
   * afterwards. Returns the number of images described.
   */
  refresh(): Promise<number> {
    if (!this.running) {
      this.running = this.doRefresh().finally(() => {
        this.running = null;
      });
      return this.running;
    }
    this.queued ??= this.running.catch(() => 0).then(() => {
      this.queued = null;
      return this.refresh();
    });
    return this.queued;
  }

  private async doRefresh(): Promise<number> {
    const todo = this.store.pending();
    let next = 0;
    const worker = async () => {
      while (next < todo.length) {
        const img = todo[next++]!;
        this.store.put(img, await this.describe(img), this.clock.now());
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, this.concurrency) }, worker));
    if (this.load) this.sync();
    return todo.length;
  }

  private async describe(img: PendingImage): Promise<Descriptor | null> {
    const source = this.sources.preview(img.id, img.version) ?? (img.blob ? this.sources.blob(img.blob) : null);
    if (!source || !fs.existsSync(source)) return null;
    try {
      return await describeImage(source, { limitInputPixels: INDEX_PIXEL_LIMIT, failOn: 'none' });
    } catch {
      return null; // undecodable: remembered as such until the content changes
    }
  }

  /** Applies descriptor changes made since the last look (by this or another process). */
  sync(): void {
    const { seq, changes } = this.store.changesSince(this.seq);
    for (const c of changes) {
      if (c.descriptor) this.index.put(c.assetId, c.folderPath, c.descriptor);
      else this.index.remove(c.assetId);
    }
    this.seq = seq;
  }

  /** Ranked hits at or above the cut-off, k at most, after `after`; total counts them all. */
  search(q: Descriptor, opts: { k: number; after: Hit | null; folderAllowed: ((folderPath: string) => boolean) | null; cutoff?: number }): { hits: Hit[]; total: number } {
    this.sync();
    return this.index.query(q, { k: opts.k, after: opts.after, folderAllowed: opts.folderAllowed, cutoff: opts.cutoff ?? DEFAULT_CUTOFF });
  }
}
