/**
 * What both descriptor stores share (SQLite: store.ts; PostgreSQL: ../index/postgres.ts): the rows
 * they keep and the interface search by image (index.ts) uses, whichever store the index has.
 */
import { DIM, type Descriptor } from './descriptor.js';

export interface StoredDescriptor {
  assetId: string;
  folderPath: string;
  descriptor: Descriptor | null;
}

export interface PendingImage {
  id: string;
  folderPath: string;
  version: number;
  blob: string | null;
}

/**
 * Where descriptors live: the SQLite store (store.ts), or PostgreSQL in cluster mode
 * (../index/postgres.ts); the index store hands it over (LibraryIndexStore.descriptors). A
 * synchronous implementation returns plain values.
 */
export interface DescriptorBackend {
  put(img: PendingImage, d: Descriptor | null, now: number): void | Promise<void>;
  pending(): PendingImage[] | Promise<PendingImage[]>;
  loadAll(each: (s: StoredDescriptor) => void): number | Promise<number>;
  changesSince(seq: number): { seq: number; changes: StoredDescriptor[] } | Promise<{ seq: number; changes: StoredDescriptor[] }>;
  pruneLog(): void | Promise<void>;
  /**
   * The store of one model's embeddings (embeddings.ts), beside the descriptors; null where the
   * backend keeps none (PostgreSQL: cluster mode has the built-in descriptors only).
   */
  embeddings(model: string, dim: number): EmbeddingBackend | null;
}

/** Model embeddings of one model by asset id (embeddings.ts's EmbeddingStore). */
export interface EmbeddingBackend {
  /** Deletes the embeddings of every other model (a model change recomputes them). */
  dropOtherModels(): number;
  put(img: PendingImage, vec: Int8Array | null, now: number): void;
  pending(): PendingImage[];
  get(assetId: string): Int8Array | null;
  loadAll(each: (assetId: string, vec: Int8Array) => void): void;
}

/** A descriptor row as both stores select it (asset_id, folder_path, vec, phash). */
export interface Row {
  asset_id: string;
  folder_path: string;
  vec: Buffer | null;
  phash: Buffer | null;
}

export function fromRow(r: Row): StoredDescriptor {
  const ok = r.vec && r.vec.length === DIM && r.phash && r.phash.length === 8;
  return {
    assetId: r.asset_id,
    folderPath: r.folder_path,
    descriptor: ok ? { vector: new Int8Array(Uint8Array.from(r.vec!).buffer), phash: Uint8Array.from(r.phash!) } : null,
  };
}
