/**
 * Descriptors on disk: the similarity tables in the library's own SQLite file, created here (not in
 * the index's migrations) so that search by image stays one separable module.
 *
 * - `similarity_descriptors`: one row per image asset, keyed by asset id, remembering the content
 *   (blob = SHA-256) it was computed from; `vec` is NULL when the image could not be decoded, so
 *   it is not retried until the content changes.
 * - Triggers keep it honest without touching the index code: deleting an asset deletes its
 *   descriptor, and a content change (new blob) deletes the now stale descriptor at once.
 * - `similarity_log`: every change to a descriptor appends the asset id (triggers again), so the
 *   in-memory index of a running server catches up with changes made by any process (the server's
 *   own scans or `damhub index`) by reading only the log's tail.
 */
import type Database from 'better-sqlite3';
import { fromRow, type DescriptorBackend, type EmbeddingBackend, type PendingImage, type Row, type StoredDescriptor } from './backend.js';
import { DIM, type Descriptor } from './descriptor.js';
import { EmbeddingStore } from './embeddings.js';

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS similarity_descriptors (
    asset_id TEXT PRIMARY KEY,
    blob TEXT,
    folder_path TEXT NOT NULL,
    vec BLOB,
    phash BLOB,
    computed_at INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS similarity_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, asset_id TEXT NOT NULL);
  CREATE TRIGGER IF NOT EXISTS similarity_descriptors_ins AFTER INSERT ON similarity_descriptors
    BEGIN INSERT INTO similarity_log (asset_id) VALUES (NEW.asset_id); END;
  CREATE TRIGGER IF NOT EXISTS similarity_descriptors_upd AFTER UPDATE ON similarity_descriptors
    BEGIN INSERT INTO similarity_log (asset_id) VALUES (NEW.asset_id); END;
  CREATE TRIGGER IF NOT EXISTS similarity_descriptors_del AFTER DELETE ON similarity_descriptors
    BEGIN INSERT INTO similarity_log (asset_id) VALUES (OLD.asset_id); END;
  CREATE TRIGGER IF NOT EXISTS similarity_assets_del AFTER DELETE ON assets
    BEGIN DELETE FROM similarity_descriptors WHERE asset_id = OLD.id; END;
  CREATE TRIGGER IF NOT EXISTS similarity_assets_content AFTER UPDATE OF blob ON assets WHEN OLD.blob IS NOT NEW.blob
    BEGIN DELETE FROM similarity_descriptors WHERE asset_id = OLD.id; END;
`;

/** Log entries kept after they were applied (older ones are pruned). */
const LOG_KEEP = 10_000;

export class DescriptorStore implements DescriptorBackend {
  private readonly stmts;

  constructor(private readonly db: Database.Database) {
    db.exec(SCHEMA);
    this.stmts = {
      upsert: db.prepare(`INSERT INTO similarity_descriptors (asset_id, blob, folder_path, vec, phash, computed_at) VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT (asset_id) DO UPDATE SET blob = excluded.blob, folder_path = excluded.folder_path, vec = excluded.vec, phash = excluded.phash, computed_at = excluded.computed_at`),
      one: db.prepare('SELECT asset_id, folder_path, vec, phash FROM similarity_descriptors WHERE asset_id = ?'),
      all: db.prepare('SELECT asset_id, folder_path, vec, phash FROM similarity_descriptors WHERE vec IS NOT NULL'),
      lastSeq: db.prepare('SELECT COALESCE(MAX(seq), 0) AS s FROM similarity_log'),
      tail: db.prepare('SELECT seq, asset_id FROM similarity_log WHERE seq > ? ORDER BY seq'),
      prune: db.prepare('DELETE FROM similarity_log WHERE seq <= ?'),
      // Current image assets without a descriptor of their current content.
      pending: db.prepare(`SELECT a.id, a.folder_path AS folderPath, a.version, a.blob FROM assets a
        LEFT JOIN similarity_descriptors d ON d.asset_id = a.id
        WHERE a.kind = 'image' AND (d.asset_id IS NULL OR d.blob IS NOT a.blob)`),
      blobOf: db.prepare('SELECT blob FROM assets WHERE id = ?'),
    };
  }

  /** Stores a descriptor (null: undecodable) if the asset still holds that content. */
  put(img: PendingImage, d: Descriptor | null, now: number): void {
    this.db.transaction(() => {
      const cur = this.stmts.blobOf.get(img.id) as { blob: string | null } | undefined;
      if (!cur || cur.blob !== img.blob) return; // changed or removed meanwhile: the next refresh sees it
      this.stmts.upsert.run(img.id, img.blob, img.folderPath, d ? Buffer.from(d.vector.buffer, d.vector.byteOffset, DIM) : null, d ? Buffer.from(d.phash) : null, now);
    })();
  }

  pending(): PendingImage[] {
    return this.stmts.pending.all() as PendingImage[];
  }

  /** Every stored descriptor and the log position they reflect (read in one transaction). */
  loadAll(each: (s: StoredDescriptor) => void): number {
    return this.db.transaction(() => {
      const seq = (this.stmts.lastSeq.get() as { s: number }).s;
      for (const r of this.stmts.all.iterate() as Iterable<Row>) each(fromRow(r));
      return seq;
    })();
  }

  /** Changes after `seq`: the current state of each asset touched (descriptor null = remove). */
  changesSince(seq: number): { seq: number; changes: StoredDescriptor[] } {
    const rows = this.stmts.tail.all(seq) as { seq: number; asset_id: string }[];
    if (!rows.length) return { seq, changes: [] };
    const ids = [...new Set(rows.map((r) => r.asset_id))];
    const changes = ids.map((id) => {
      const r = this.stmts.one.get(id) as Row | undefined;
      return r ? fromRow(r) : { assetId: id, folderPath: '', descriptor: null };
    });
    return { seq: rows[rows.length - 1]!.seq, changes };
  }

  /** Keeps the change log bounded; called by the writer after its refresh, not by searches (a read must not take the write lock). */
  pruneLog(): void {
    const last = (this.stmts.lastSeq.get() as { s: number }).s;
    if (last > LOG_KEEP) this.stmts.prune.run(last - LOG_KEEP);
  }

  /** A model's embeddings, in the same file (their table shares this store's change log). */
  embeddings(model: string, dim: number): EmbeddingBackend {
    return new EmbeddingStore(this.db, model, dim);
  }
}
