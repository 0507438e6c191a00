/**
 * The options of the write calls (docs/writes.md): upload, update, rename, move, remove, folders
 * and locks. Every write sends an `Idempotency-Key`; the client makes one per call and sends the
 * same one on its own retries, so a retry never writes twice. Pass your own to carry it across
 * retries of yours (a page reload, a job queue).
 */

/** What upload() does when the folder already holds the name: refuse (409 asset-exists), pick a free name, or add a version. */
export type ConflictMode = 'fail' | 'rename' | 'version';

export interface WriteOptions {
  signal?: AbortSignal;
  /** Provider id; defaults to the client's current provider. */
  provider?: string;
  /** The Idempotency-Key to send (default: a new UUID for this call). */
  idempotencyKey?: string;
}

export interface ConditionalWriteOptions extends WriteOptions {
  /** Sent as If-Match: the write happens only if the asset is still at this ETag (412 asset-version-conflict otherwise). */
  ifMatch?: string;
}

interface TransferOptions extends WriteOptions {
  /** Bytes sent so far and the total, as the upload goes (a browser reports through XMLHttpRequest or tus). */
  onProgress?: (sent: number, total: number) => void;
  /** `true`: always tus; `false`: always the plain POST; default: tus above the client's `uploadThreshold`. */
  resumable?: boolean;
}

export interface UploadOptions extends TransferOptions {
  /** The new asset's name; default: the File's own name (plain bytes and Blobs need it). */
  name?: string;
  /** Default `fail`. */
  onConflict?: ConflictMode;
}

export interface UpdateOptions extends TransferOptions {
  /**
   * The ETag of the content the new version replaces. Default: the ETag this client last saw for
   * the asset (`etagOf`), so an update based on what the user opened fails with 412 if someone
   * saved in between, rather than overwrite their work.
   */
  ifMatch?: string;
}

export interface RemoveFolderOptions extends WriteOptions {
  /** Delete what the folder holds too (without it, a folder that is not empty answers 409 folder-not-empty). */
  recursive?: boolean;
}
