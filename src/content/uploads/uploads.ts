/**
 * Resumable uploads (tus 1.0, docs/writes.md "Resumable uploads"): what the hub decides around
 * @tus/server. At creation the Upload-Metadata names what the bytes become (a new asset, or a new
 * version of one) and the write engine checks it before any byte is stored; every later request
 * of the upload must come from the same partner, hub user and DAM connection's provider; an
 * unfinished upload expires on the hub's clock; when the last byte is in, the part file streams
 * into the write engine once, and the answer is kept so a repeated final request gets it again.
 */
import type { Clock } from '../../clock.js';
import type { AssetWrites, UploadTarget } from '../asset-writes.js';
import { contentMismatch } from '../upload-body.js';
import { hubError } from '../../errors.js';
import type { ProviderSession } from '../../providers/contract.js';
import type { ConflictMode } from '../../providers/contract.js';
import type { Asset } from '../../providers/model.js';
import type { IdempotentResponse, UploadRecord, UploadStore } from '../../stores/types.js';
import type { Lock, Locker } from '@tus/server';
import type { PartFiles } from './part-files.js';

/**
 * The write engine's part resumable uploads use (src/content/asset-writes.ts): its checks at
 * creation, and the write the finished bytes stream into.
 */
export type UploadWrites = Pick<AssetWrites, 'checkUpload' | 'checkUpdate' | 'upload' | 'update'>;

/** What an upload becomes, from its Upload-Metadata. */
export type UploadIntent =
  | { kind: 'asset'; target: Required<UploadTarget> }
  | { kind: 'version'; assetId: string; ifMatch: string | null };

const CONFLICT_MODES: readonly string[] = ['fail', 'rename', 'version'];

/**
 * `assetId` (+ optional `ifMatch`) for a new version; else `parentId` + `name` (+ `onConflict`,
 * default fail) for a new asset. `filename`, which tus clients commonly send, stands in for `name`.
 */
export function intentOf(meta: Record<string, string | null | undefined>): UploadIntent {
  const value = (k: string) => {
    const v = meta[k];
    return v === undefined || v === null || v === '' ? null : v;
  };
  const assetId = value('assetId');
  if (assetId !== null) {
    if (value('parentId') !== null || value('name') !== null) throw hubError('hub-validation-error', 'Upload-Metadata: give assetId (a new version) or parentId and name (a new asset), not both');
    return { kind: 'version', assetId, ifMatch: value('ifMatch') };
  }
  const parentId = value('parentId');
  const name = value('name') ?? value('filename');
  if (parentId === null || name === null) throw hubError('hub-validation-error', 'Upload-Metadata must carry parentId and name (a new asset) or assetId (a new version)');
  const onConflict = value('onConflict') ?? 'fail';
  if (!CONFLICT_MODES.includes(onConflict)) throw hubError('hub-validation-error', `Upload-Metadata onConflict must be one of ${CONFLICT_MODES.join(', ')}`);
  return { kind: 'asset', target: { parentId, name, onConflict: onConflict as ConflictMode } };
}

/** Of the same partner, hub user and provider as the upload's creation; anything else is "no such upload". */
export function ownedBy(r: UploadRecord, dam: ProviderSession): boolean {
  return r.partnerId === dam.partnerId && r.userId === dam.userId && r.providerId === dam.providerId;
}

export interface UploadsDeps {
  records: UploadStore;
  parts: PartFiles;
  clock: Clock;
  writes: () => UploadWrites;
  locker: Locker;
  /** The Asset as the REST routes send it (their response schema's serialiser). */
  serializeAsset: (a: Asset) => string;
}

export class Uploads {
  constructor(readonly deps: UploadsDeps) {}

  /** Checks an upload's intent with the write engine before anything is stored. */
  async checkCreation(dam: ProviderSession, meta: Record<string, string | null | undefined>, length: number | null): Promise<void> {
    const intent = intentOf(meta);
    const writes = this.deps.writes();
    if (intent.kind === 'asset') await writes.checkUpload(dam, intent.target, length);
    else await writes.checkUpdate(dam, intent.assetId, intent.ifMatch, length);
  }

  /** The bytes of a new asset must be of the type its name gives (the engine checks again when writing). */
  async checkHead(r: UploadRecord, head: Buffer): Promise<void> {
    const intent = intentOf(r.metadata);
    if (intent.kind !== 'asset') return; // a new version's name is the asset's: the engine checks it when writing
    const wrong = await contentMismatch(intent.target.name, head);
    if (wrong) throw hubError('hub-unsupported-media-type', `${wrong}; the chunk was discarded, terminate the upload`);
  }

  /** The upload a later request names: its owner's, unexpired (a finished one keeps answering its result). */
  async open(dam: ProviderSession, id: string): Promise<UploadRecord> {
    const r = /^[0-9a-f]{16,64}$/.test(id) ? await this.deps.records.get(id) : null;
    if (!r || !ownedBy(r, dam)) throw hubError('hub-not-found', 'no such upload', { message: 'This upload does not exist.' });
    if (r.result === null && r.expiresAt <= this.deps.clock.now()) {
      throw hubError('upload-expired', `the upload expired at ${new Date(r.expiresAt).toISOString()}; its parts are removed`);
    }
    return r;
  }

  /**
   * The last byte is in: the part file streams into the write engine, once. Under the upload's
   * lock (a second final request waits, then replays the kept answer); a failure leaves the part
   * and the record as they were, so repeating the final request tries again.
   */
  async finish(dam: ProviderSession, id: string, requestId: string): Promise<IdempotentResponse> {
    const lock: Lock = this.deps.locker.newLock(`${id}:finish`);
    await lock.lock(new AbortController().signal, () => undefined);
    try {
      const r = await this.deps.records.get(id);
      if (!r || !ownedBy(r, dam)) throw hubError('hub-not-found', 'no such upload', { message: 'This upload does not exist.' });
      if (r.result) return r.result;
      const length = r.length ?? r.offset;
      const bytes = { stream: this.deps.parts.read(r.location, length), length };
      const intent = intentOf(r.metadata);
      const writes = this.deps.writes();
      const done = intent.kind === 'asset'
        ? await writes.upload(dam, intent.target, bytes, { requestId })
        : await writes.update(dam, intent.assetId, bytes, intent.ifMatch, { requestId });
      const result: IdempotentResponse = {
        status: done.status,
        headers: { 'content-type': 'application/json; charset=utf-8', etag: done.etag, 'damhub-asset-id': encodeURIComponent(done.asset.id) },
        body: this.deps.serializeAsset(done.asset),
      };
      await this.deps.records.finish(id, result);
      await this.deps.parts.remove(r.location);
      return result;
    } finally {
      await lock.unlock();
    }
  }

  /** Removes unfinished uploads past their expiry with their part files (the periodic sweep). */
  async sweep(): Promise<number> {
    let removed = 0;
    for (;;) {
      const batch = await this.deps.records.expired(this.deps.clock.now(), 100);
      for (const r of batch) {
        await this.deps.parts.remove(r.location);
        if (await this.deps.records.remove(r.id)) removed++;
      }
      if (batch.length < 100) return removed;
    }
  }
}
