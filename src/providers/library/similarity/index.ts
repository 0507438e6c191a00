/**
 * Search by image for the embedded library: keeps descriptors for every image asset (computed
 * after each scan from the preview rendition the scan made, stored by store.ts) and answers
 * top-k queries from the in-memory VectorIndex. The provider calls refresh() after scans and
 * search() for queries; nothing else in the library knows about descriptors.
 */
import fs from 'node:fs';
import type { Clock } from '../../../clock.js';
import type { Renditions } from '../renditions.js';
import type { LibraryScanner } from '../scanner.js';
import { DESCRIPTOR_OUTPUT, describeDecoded, type Descriptor } from './descriptor.js';
import { defaultImageWork, type ImageWork } from '../../../images/pool.js';
import type { DescriptorBackend, EmbeddingBackend, PendingImage } from './backend.js';
import type { ImageEmbedder } from './embedder.js';
import type { OutputSpec } from '../../../images/jobs.js';
import { EmbeddingIndex } from './embeddings.js';
import { DEFAULT_CUTOFF, VectorIndex, type Hit } from './vector-index.js';

/** Weight of the model's cosine in the blended score when a model is configured (docs/image-search.md). */
export const DEFAULT_MODEL_WEIGHT = 0.5;

interface Semantic {
  embedder: ImageEmbedder;
  store: EmbeddingBackend;
  index: EmbeddingIndex;
  weight: number;
}


export interface SimilaritySources {
  /** Preview rendition of the current version, when one exists (a 1024 px JPEG: cheap to decode). */
  preview(assetId: string, version: number): string | null;
  /** The kept original of a content blob. */
  blob(blob: string): string | null;
}

/** The library's sources: its preview renditions and the scanner's version store. */
export function librarySources(renditions: Renditions, scanner: LibraryScanner): SimilaritySources {
  return {
    preview: (id, version) => (renditions.has(id, version, 'preview') ? renditions.file(id, version, 'preview') : null),
    blob: (blob) => scanner.blobPath(blob),
  };
}

export class ImageSimilarity {
  readonly index = new VectorIndex();
  private seq = 0;
  /** The initial load of a store that answers asynchronously (PostgreSQL); awaited before use. */
  private loading: Promise<unknown> | null = null;
  private running: Promise<number> | null = null;
  private queued: Promise<number> | null = null;
  private readonly concurrency: number;
  private readonly load: boolean;
  private semantic: Semantic | null = null;
  private readonly images: ImageWork;

  /** `opts.load: false` (the `damhub index` command) computes and stores descriptors without holding them in memory. */
  /** `store`: the library index's descriptor store (LibraryIndexStore.descriptors: SQLite, or PostgreSQL in cluster mode). */
  /** `images`: the pool and per-file budget the decodes run under (src/images/pool.ts). */
  constructor(readonly store: DescriptorBackend, private readonly sources: SimilaritySources, private readonly clock: Clock, opts: { concurrency?: number; load?: boolean; images?: ImageWork } = {}) {
    this.images = opts.images ?? defaultImageWork();
    this.concurrency = opts.concurrency ?? 2;
    this.load = opts.load ?? true;
    if (this.load) {
      const seq = this.store.loadAll((s) => {
        if (s.descriptor) this.index.put(s.assetId, s.folderPath, s.descriptor);
      });
      if (typeof seq === 'number') this.seq = seq;
      else this.loading = seq.then((n) => (this.seq = n));
    }
  }

  /** Resolves when the stored descriptors are in memory. */
  async ready(): Promise<void> {
    await this.loading;
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

  /**
   * Adds a semantic embedder (a loaded ONNX model): its stored embeddings are loaded, those of
   * other models dropped, and the next refresh() computes the missing ones. Call before refresh().
   */
  async useEmbedder(embedder: ImageEmbedder, weight = DEFAULT_MODEL_WEIGHT): Promise<void> {
    // Only the SQLite store keeps model embeddings (embeddings.ts).
    const store = this.store.embeddings(embedder.modelId, embedder.dim);
    if (!store) throw new Error('an image model (--image-model) needs the embedded SQLite index; cluster mode keeps only the built-in descriptors');
    store.dropOtherModels();
    const index = new EmbeddingIndex(embedder.dim);
    if (this.load) {
      await this.sync();
      store.loadAll((id, vec) => index.put(id, vec));
    }
    this.semantic = { embedder, store, index, weight };
  }

  /** The configured model, if any. */
  get embedder(): ImageEmbedder | null {
    return this.semantic?.embedder ?? null;
  }

  get embeddings(): EmbeddingIndex | null {
    return this.semantic?.index ?? null;
  }

  private async doRefresh(): Promise<number> {
    await this.ready();
    const todo = await this.store.pending();
    await this.each(todo, async (img) => this.store.put(img, await this.describe(img), this.clock.now()));
    const sem = this.semantic;
    if (sem) {
      await this.each(sem.store.pending(), async (img) => sem.store.put(img, await this.embed(sem.embedder, img), this.clock.now()));
    }
    if (this.load) await this.sync();
    await this.store.pruneLog();
    return todo.length;
  }

  private async each(todo: PendingImage[], work: (img: PendingImage) => Promise<void>): Promise<void> {
    let next = 0;
    const worker = async () => {
      while (next < todo.length) await work(todo[next++]!);
    };
    await Promise.all(Array.from({ length: Math.max(1, this.concurrency) }, worker));
  }

  private async embed(embedder: ImageEmbedder, img: PendingImage): Promise<Int8Array | null> {
    const source = this.source(img);
    if (!source) return null;
    try {
      return await embedder.embedDecoded((await this.decode(source, embedder.decodeSpec))!);
    } catch {
      return null; // remembered as such until the content changes
    }
  }

  private source(img: PendingImage): string | null {
    const source = this.sources.preview(img.id, img.version) ?? (img.blob ? this.sources.blob(img.blob) : null);
    return source && fs.existsSync(source) ? source : null;
  }

  private async describe(img: PendingImage): Promise<Descriptor | null> {
    const source = this.source(img);
    if (!source) return null;
    try {
      return describeDecoded(await this.decode(source, DESCRIPTOR_OUTPUT));
    } catch {
      return null; // undecodable or over the budget: remembered as such until the content changes
    }
  }

  /** One decode of a library file in the image pool, under the per-file budget (indexing work). */
  private async decode(source: string, output: OutputSpec): Promise<Buffer> {
    const { pool, budget, timeoutMs } = this.images;
    const r = await pool.analyse({ input: source, outputs: [output], budget, maxPixels: Number.MAX_SAFE_INTEGER, failOn: 'none' }, { timeoutMs, background: true });
    return r.outputs[0]!;
  }

  /**
   * Describes the given images (just written through the hub: writes.ts) and applies the log,
   * without looking for other pending ones: a write costs its own images, not a pass over the
   * library (refresh() reads every image without a descriptor). A put is the same one refresh()
   * would make, so the two may run side by side.
   */
  async describeWritten(images: PendingImage[]): Promise<void> {
    await this.ready();
    await this.each(images, async (img) => this.store.put(img, await this.describe(img), this.clock.now()));
    const sem = this.semantic;
    if (sem) await this.each(images, async (img) => sem.store.put(img, await this.embed(sem.embedder, img), this.clock.now()));
    if (this.load) await this.sync();
  }

  /** Applies descriptor changes made since the last look (by this or another process). */
  async sync(): Promise<void> {
    await this.ready();
    const { seq, changes } = await this.store.changesSince(this.seq);
    const sem = this.semantic;
    for (const c of changes) {
      if (c.descriptor) this.index.put(c.assetId, c.folderPath, c.descriptor);
      else this.index.remove(c.assetId);
      if (sem) {
        const vec = sem.store.get(c.assetId);
        if (vec) sem.index.put(c.assetId, vec);
        else sem.index.remove(c.assetId);
      }
    }
    this.seq = seq;
  }

  /** Ranked hits at or above the cut-off, k at most, after `after`; total counts them all. */
  /** `embedding`: the query image's embedding by the configured model (blended into the score). */
  async search(q: Descriptor, opts: { k: number; after: Hit | null; folderAllowed: ((folderPath: string) => boolean) | null; cutoff?: number; embedding?: Int8Array | null }): Promise<{ hits: Hit[]; total: number }> {
    await this.sync();
    const sem = this.semantic;
    const qe = opts.embedding;
    const blend = sem && qe && qe.length === sem.index.dim ? { weight: sem.weight, embeddingScore: (id: string) => sem.index.cosine(id, qe) } : null;
    // A large index scans in worker threads (scan-pool.ts): the event loop only ranks the candidates.
    return this.index.queryAsync(q, { k: opts.k, after: opts.after, folderAllowed: opts.folderAllowed, cutoff: opts.cutoff ?? DEFAULT_CUTOFF, blend });
  }

  async close(): Promise<void> {
    await this.index.close();
    await this.semantic?.embedder.close();
  }
}
