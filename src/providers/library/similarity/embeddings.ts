/**
 * Model embeddings of the optional semantic embedder (embedder.ts): their table in the library's
 * SQLite file and their in-memory index.
 *
 * - `similarity_embeddings(asset_id, model, blob, vec, computed_at)`, keyed by asset and model id
 *   (the SHA-256 prefix of the model file); `blob` is the content it was computed from and `vec`
 *   NULL for an image the model could not process (not retried until the content changes).
 *   Rows of other models are deleted when a model is loaded, so a changed model file means new
 *   embeddings.
 * - The same triggers as the descriptors: deleting an asset or changing its content deletes its
 *   embeddings, and every change appends the asset to `similarity_log`, so a running server
 *   reloads it with the asset's descriptor (index.ts sync()).
 * - EmbeddingIndex: the vectors of one model (D int8 each) in one block, looked up by asset id;
 *   the ranking scans the descriptor candidates and asks it for each one's embedding cosine.
 */
import type Database from 'better-sqlite3';
import { SCALE } from './descriptor.js';
import type { EmbeddingBackend, PendingImage } from './backend.js';
import { LargeMap } from '../large-map.js';

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS similarity_embeddings (
    asset_id TEXT NOT NULL,
    model TEXT NOT NULL,
    blob TEXT,
    vec BLOB,
    computed_at INTEGER NOT NULL,
    PRIMARY KEY (asset_id, model)
  ) WITHOUT ROWID;
  CREATE TRIGGER IF NOT EXISTS similarity_embeddings_ins AFTER INSERT ON similarity_embeddings
    BEGIN INSERT INTO similarity_log (asset_id) VALUES (NEW.asset_id); END;
  CREATE TRIGGER IF NOT EXISTS similarity_embeddings_upd AFTER UPDATE ON similarity_embeddings
    BEGIN INSERT INTO similarity_log (asset_id) VALUES (NEW.asset_id); END;
  CREATE TRIGGER IF NOT EXISTS similarity_embeddings_del AFTER DELETE ON similarity_embeddings
    BEGIN INSERT INTO similarity_log (asset_id) VALUES (OLD.asset_id); END;
  CREATE TRIGGER IF NOT EXISTS similarity_embeddings_assets_del AFTER DELETE ON assets
    BEGIN DELETE FROM similarity_embeddings WHERE asset_id = OLD.id; END;
  CREATE TRIGGER IF NOT EXISTS similarity_embeddings_assets_content AFTER UPDATE OF blob ON assets WHEN OLD.blob IS NOT NEW.blob
    BEGIN DELETE FROM similarity_embeddings WHERE asset_id = OLD.id; END;
`;

export class EmbeddingStore implements EmbeddingBackend {
  private readonly stmts;

  /** Call after DescriptorStore (its similarity_log table is shared). */
  constructor(private readonly db: Database.Database, readonly model: string, readonly dim: number) {
    db.exec(SCHEMA);
    this.stmts = {
      upsert: db.prepare(`INSERT INTO similarity_embeddings (asset_id, model, blob, vec, computed_at) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (asset_id, model) DO UPDATE SET blob = excluded.blob, vec = excluded.vec, computed_at = excluded.computed_at`),
      one: db.prepare('SELECT vec FROM similarity_embeddings WHERE asset_id = ? AND model = ?'),
      all: db.prepare('SELECT asset_id, vec FROM similarity_embeddings WHERE model = ? AND vec IS NOT NULL'),
      pending: db.prepare(`SELECT a.id, a.folder_path AS folderPath, a.version, a.blob FROM assets a
        LEFT JOIN similarity_embeddings e ON e.asset_id = a.id AND e.model = ?
        WHERE a.kind = 'image' AND (e.asset_id IS NULL OR e.blob IS NOT a.blob)`),
      blobOf: db.prepare('SELECT blob FROM assets WHERE id = ?'),
      others: db.prepare('DELETE FROM similarity_embeddings WHERE model != ?'),
    };
  }

  /** Deletes the embeddings of every other model (a model change recomputes them). */
  dropOtherModels(): number {
    return this.stmts.others.run(this.model).changes;
  }

  put(img: PendingImage, vec: Int8Array | null, now: number): void {
    this.db.transaction(() => {
      const cur = this.stmts.blobOf.get(img.id) as { blob: string | null } | undefined;
      if (!cur || cur.blob !== img.blob) return;
      this.stmts.upsert.run(img.id, this.model, img.blob, vec ? Buffer.from(vec.buffer, vec.byteOffset, vec.length) : null, now);
    })();
  }

  pending(): PendingImage[] {
    return this.stmts.pending.all(this.model) as PendingImage[];
  }

  get(assetId: string): Int8Array | null {
    const r = this.stmts.one.get(assetId, this.model) as { vec: Buffer | null } | undefined;
    return r?.vec && r.vec.length === this.dim ? new Int8Array(Uint8Array.from(r.vec).buffer) : null;
  }

  loadAll(each: (assetId: string, vec: Int8Array) => void): void {
    for (const r of this.stmts.all.iterate(this.model) as Iterable<{ asset_id: string; vec: Buffer }>) {
      if (r.vec.length === this.dim) each(r.asset_id, new Int8Array(Uint8Array.from(r.vec).buffer));
    }
  }
}

/** Embeddings of one model by asset id, in one contiguous int8 block. */
export class EmbeddingIndex {
  private block: Int8Array;
  private count = 0;
  private ids: string[] = [];
  private readonly slotOf = new LargeMap<string, number>();

  constructor(readonly dim: number, initialCapacity = 1024) {
    this.block = new Int8Array(dim * initialCapacity);
  }

  get size(): number {
    return this.count;
  }

  get(id: string): Int8Array | null {
    const slot = this.slotOf.get(id);
    return slot === undefined ? null : this.block.slice(slot * this.dim, (slot + 1) * this.dim);
  }

  put(id: string, vec: Int8Array): void {
    if (vec.length !== this.dim) throw new Error(`embedding of ${vec.length} components, ${this.dim} expected`);
    let slot = this.slotOf.get(id);
    if (slot === undefined) {
      if ((this.count + 1) * this.dim > this.block.length) {
        const bigger = new Int8Array(this.block.length * 2);
        bigger.set(this.block);
        this.block = bigger;
      }
      slot = this.count++;
      this.slotOf.set(id, slot);
      this.ids[slot] = id;
    }
    this.block.set(vec, slot * this.dim);
  }

  remove(id: string): boolean {
    const slot = this.slotOf.get(id);
    if (slot === undefined) return false;
    const last = --this.count;
    this.slotOf.delete(id);
    if (slot !== last) {
      this.block.copyWithin(slot * this.dim, last * this.dim, (last + 1) * this.dim);
      const moved = this.ids[last]!;
      this.ids[slot] = moved;
      this.slotOf.set(moved, slot);
    }
    this.ids.length = last;
    return true;
  }

  /** Cosine of the asset's embedding with `q` (int8 dot / 127²), or null when it has none. */
  cosine(id: string, q: Int8Array): number | null {
    const slot = this.slotOf.get(id);
    if (slot === undefined) return null;
    const b = this.block, d = this.dim, o = slot * d;
    let s = 0;
    for (let i = 0; i < d; i++) s += b[o + i]! * q[i]!;
    return s / (SCALE * SCALE);
  }
}
