/**
 * The write engine (docs/writes.md): every write of the contract — REST, tus, MCP — goes through
 * here, so the rules hold the same whichever way a write comes in and whichever DAM it goes to:
 * the partner's opt-in, names, type and size limits, If-Match under the target's write lock (of
 * concurrent writers with the same ETag exactly one wins), locks held by others (423), and one
 * audit entry per write. Providers get a checked request and a guarded byte stream.
 *
 * Idempotency-Key is a matter of the HTTP surface (src/routes/idempotency.ts): it replays answers.
 */
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { PassThrough } from 'node:stream';
import type { Clock } from '../clock.js';
import { hubError, integrationError, isHubError, validationError } from '../errors.js';
import { callOnSession } from '../providers/deadline.js';
import type { ConflictMode, Provider, ProviderSession, UploadBody, WriteCondition } from '../providers/contract.js';
import type { Asset, Folder } from '../providers/model.js';
import { contentTagOf, etagOf, ifMatchHolds, lockedByOther } from '../providers/asset-state.js';
import { capabilitiesOf, extensionOf, operation, uploadExtensionsFor, withAssetCapabilities, type OperationCapability } from '../providers/capabilities.js';
import { mimeTypeOfName } from '../providers/kit/mime.js';
import type { AuditEntry, AuditStore } from '../stores/types.js';
import { idParam } from './asset-ops.js';
import { checkName } from './names.js';
import { tooLarge, UploadGuard } from './upload-body.js';
import { WriteLocks } from './write-locks.js';

/** Bytes a body stream may buffer between the client's socket and the provider. */
const BODY_BUFFER = 1024 * 1024;

export interface AssetWritesDeps {
  providers: { get(id: string): Provider | undefined };
  locks: WriteLocks;
  audit: AuditStore;
  clock: Clock;
  providerTimeoutMs: number;
  /** DAMHUB_MAX_UPLOAD_BYTES. */
  maxUploadBytes: number;
  /** DAMHUB_UPLOAD_EXTENSIONS (lower case, no dot), or null for any. */
  uploadExtensions: readonly string[] | null;
  /** Audit failures are logged, never turned into the write's answer (the write happened). */
  log: { warn(fields: Record<string, unknown>, msg: string): void };
}

/** The bytes of a request as they arrive. */
export interface IncomingBytes {
  stream: Readable;
  /** The declared length (Content-Length, Upload-Length), or null. */
  length: number | null;
}

export interface WriteMeta {
  requestId: string;
  /** Fires when the client went away: the write stops and discards what it wrote. */
  signal?: AbortSignal;
}

export interface UploadTarget {
  parentId: string;
  name: string;
  onConflict?: ConflictMode;
}

export interface AssetResult {
  asset: Asset;
  etag: string;
}

export class AssetWrites {
  constructor(private readonly deps: AssetWritesDeps) {}

  private providerOf(dam: ProviderSession): Provider {
    const p = this.deps.providers.get(dam.providerId);
    if (!p) throw hubError('provider-access-token-invalid', `the provider ${dam.providerId} of this token is no longer served`);
    return p;
  }

  /** 403 writes-disabled unless the operator allowed the session's partner to write. */
  private allowed(dam: ProviderSession): void {
    if (!dam.writes) {
      throw hubError('writes-disabled', `partner ${dam.partnerId} may not write; the operator allows it with "damhub partners writes ${dam.partnerId} on"`);
    }
  }

  /** The provider and its operation for `cap`, after the opt-in check (501 when not implemented). */
  private op<K extends OperationCapability>(dam: ProviderSession, cap: K, what: string) {
    this.allowed(dam);
    const provider = this.providerOf(dam);
    return { provider, fn: operation(provider, cap, what) };
  }

  /** An asset as answered to this session: capability fields masked, its ETag beside it. */
  present(dam: ProviderSession, provider: Provider, asset: Asset): AssetResult {
    return { asset: withAssetCapabilities(capabilitiesOf(provider), dam.writes === true, asset, this.deps.uploadExtensions), etag: etagOf(asset) };
  }

  private checkLength(length: number | null): void {
    if (length !== null && length > this.deps.maxUploadBytes) throw tooLarge(this.deps.maxUploadBytes, length);
  }

  private async checkExtension(dam: ProviderSession, provider: Provider, folderId: string | null, name: string): Promise<void> {
    const allowed = await uploadExtensionsFor(provider, dam, folderId, this.deps.uploadExtensions);
    const ext = extensionOf(name);
    if (allowed !== null && !allowed.includes(ext)) {
      throw hubError('hub-unsupported-media-type', `${ext ? `.${ext} files` : 'files without an extension'} cannot be uploaded here; allowed: ${allowed.map((e) => `.${e}`).join(', ') || 'none'} (DAMHUB_UPLOAD_EXTENSIONS and the library's own list)`);
    }
  }

  /** Everything an upload is checked against before any byte is read (tus creation calls it too); answers the normalised target. */
  async checkUpload(dam: ProviderSession, target: UploadTarget, length: number | null): Promise<Required<UploadTarget>> {
    const { provider } = this.op(dam, 'upload', 'uploads');
    const t = { parentId: idParam(target.parentId, 'parentId'), name: checkName(target.name), onConflict: target.onConflict ?? 'fail' };
    this.checkLength(length);
    await this.checkExtension(dam, provider, t.parentId, t.name);
    return t;
  }

  /** Everything a new version is checked against before any byte is read, If-Match's presence included. */
  async checkUpdate(dam: ProviderSession, assetId: string, ifMatch: string | null, length: number | null): Promise<void> {
    this.op(dam, 'update', 'new versions');
    idParam(assetId, 'assetId');
    requireIfMatch(ifMatch);
    this.checkLength(length);
  }

  async upload(dam: ProviderSession, target: UploadTarget, bytes: IncomingBytes, meta: WriteMeta): Promise<AssetResult & { status: 200 | 201 }> {
    const { provider, fn } = this.op(dam, 'upload', 'uploads');
    const t = await this.checkUpload(dam, target, bytes.length);
    const audit = this.auditFor(dam, provider, meta, 'upload', { targetId: t.parentId, nameAfter: t.name });
    return audit.run(async () => {
      // Uploads of one name into one folder are serialised: `fail` and `rename` decide on what is there.
      const key = WriteLocks.key(provider.descriptor.id, 'name', `${t.parentId}\0${t.name.toLowerCase()}`);
      const { result, bytes: n } = await this.deps.locks.with([key], () =>
        this.withBody(provider, dam, t.name, bytes, meta, (s, body) => fn(s, t, body)));
      audit.note({ targetIdAfter: result.asset.id, bytes: n, nameAfter: result.asset.name });
      return { status: result.created ? 201 : 200, ...this.present(dam, provider, result.asset) } as const;
    });
  }

  async update(dam: ProviderSession, assetId: string, bytes: IncomingBytes, ifMatch: string | null, meta: WriteMeta): Promise<AssetResult & { status: 200 }> {
    const { provider, fn } = this.op(dam, 'update', 'new versions');
    await this.checkUpdate(dam, assetId, ifMatch, bytes.length);
    const audit = this.auditFor(dam, provider, meta, 'update', { targetId: assetId });
    return audit.run(async () => {
      const { result, bytes: n } = await this.underAssetLock(dam, provider, assetId, ifMatch, audit, async (current, cond) => {
        // A new version keeps the asset's name, so its bytes must be of the asset's type.
        await this.checkExtension(dam, provider, null, current.name);
        return this.withBody(provider, dam, current.name, bytes, meta, (s, body) => fn(s, assetId, body, cond));
      });
      audit.note({ targetIdAfter: result.id, bytes: n, nameAfter: result.name });
      return { status: 200, ...this.present(dam, provider, result) } as const;
    });
  }

  /** PATCH /assets/asset/{id}: a rename, a move, or both at once. */
  async relocate(dam: ProviderSession, assetId: string, to: { name?: string; parentId?: string }, ifMatch: string | null, meta: WriteMeta): Promise<AssetResult> {
    if (to.name === undefined && to.parentId === undefined) throw validationError('give name, parentId or both');
    const move = to.parentId !== undefined;
    const { provider } = this.op(dam, move ? 'move' : 'rename', move ? 'moving assets' : 'renaming assets');
    const name = to.name === undefined ? null : checkName(to.name);
    const parentId = to.parentId === undefined ? null : idParam(to.parentId, 'parentId');
    const audit = this.auditFor(dam, provider, meta, move ? 'move' : 'rename', { targetId: assetId, nameAfter: name });
    return audit.run(async () => {
      const out = await this.underAssetLock(dam, provider, assetId, ifMatch, audit, (current, cond) => this.call(provider, dam, (s) => {
        if (parentId !== null) return operation(provider, 'move', 'moving assets')(s, assetId, { parentId, name }, cond);
        if (name !== null && name !== current.name) return operation(provider, 'rename', 'renaming assets')(s, assetId, name, cond);
        return Promise.resolve(current);
      }));
      audit.note({ targetIdAfter: out.id, nameAfter: out.name });
      return this.present(dam, provider, out);
    });
  }

  async remove(dam: ProviderSession, assetId: string, ifMatch: string | null, meta: WriteMeta): Promise<void> {
    const { provider, fn } = this.op(dam, 'delete', 'deleting assets');
    const audit = this.auditFor(dam, provider, meta, 'delete', { targetId: assetId });
    await audit.run(() => this.underAssetLock(dam, provider, assetId, ifMatch, audit, (_current, cond) =>
      this.call(provider, dam, (s) => fn(s, assetId, cond), 'any')));
  }

  async lock(dam: ProviderSession, assetId: string, meta: WriteMeta): Promise<AssetResult> {
    const { provider, fn } = this.op(dam, 'lock', 'locking assets');
    const audit = this.auditFor(dam, provider, meta, 'lock', { targetId: assetId });
    return audit.run(async () => this.present(dam, provider, await this.underAssetLock(dam, provider, assetId, null, audit, () =>
      this.call(provider, dam, (s) => fn(s, assetId)))));
  }

  async unlock(dam: ProviderSession, assetId: string, meta: WriteMeta): Promise<AssetResult> {
    const { provider } = this.op(dam, 'lock', 'unlocking assets');
    const unlock = provider.unlockAsset!.bind(provider);
    const audit = this.auditFor(dam, provider, meta, 'unlock', { targetId: assetId });
    return audit.run(async () => this.present(dam, provider, await this.underAssetLock(dam, provider, assetId, null, audit, () =>
      this.call(provider, dam, (s) => unlock(s, assetId)))));
  }

  async createFolder(dam: ProviderSession, parentId: string, rawName: string, meta: WriteMeta): Promise<Folder> {
    const { provider, fn } = this.op(dam, 'folders', 'creating folders');
    const name = checkName(rawName, 'folder name');
    const parent = idParam(parentId, 'parentId');
    const audit = this.auditFor(dam, provider, meta, 'create-folder', { targetId: parent, nameAfter: name });
    return audit.run(async () => {
      const key = WriteLocks.key(provider.descriptor.id, 'name', `${parent}\0${name.toLowerCase()}`);
      const folder = await this.deps.locks.with([key], () => this.call(provider, dam, (s) => fn(s, parent, name)));
      audit.note({ targetIdAfter: folder.id });
      return folder;
    });
  }

  async updateFolder(dam: ProviderSession, folderId: string, to: { name?: string; parentId?: string }, meta: WriteMeta): Promise<Folder> {
    const { provider } = this.op(dam, 'folders', 'renaming and moving folders');
    const update = provider.updateFolder?.bind(provider);
    if (!update) throw integrationError('integration-not-supported', provider.descriptor.id, `${provider.descriptor.name} does not support renaming or moving folders`);
    if (to.name === undefined && to.parentId === undefined) throw validationError('give name, parentId or both');
    const id = folderParam(folderId);
    const name = to.name === undefined ? null : checkName(to.name, 'folder name');
    const parentId = to.parentId === undefined ? null : idParam(to.parentId, 'parentId');
    const audit = this.auditFor(dam, provider, meta, 'update-folder', { targetId: id, nameAfter: name });
    return audit.run(async () => {
      const folder = await this.deps.locks.with([WriteLocks.key(provider.descriptor.id, 'folder', id)], () =>
        this.call(provider, dam, (s) => update(s, id, { parentId, name })));
      audit.note({ targetIdAfter: folder.id, nameAfter: folder.name });
      return folder;
    });
  }

  async removeFolder(dam: ProviderSession, folderId: string, recursive: boolean, meta: WriteMeta): Promise<void> {
    const { provider } = this.op(dam, 'folders', 'deleting folders');
    const del = provider.deleteFolder?.bind(provider);
    if (!del) throw integrationError('integration-not-supported', provider.descriptor.id, `${provider.descriptor.name} does not support deleting folders`);
    const id = folderParam(folderId);
    const audit = this.auditFor(dam, provider, meta, 'delete-folder', { targetId: id });
    await audit.run(() => this.deps.locks.with([WriteLocks.key(provider.descriptor.id, 'folder', id)], () =>
      this.call(provider, dam, (s) => del(s, id, { recursive }), 'any')));
  }

  /**
   * Holds the asset's write lock, reads the asset, refuses a lock held by someone else (423) and a
   * stale If-Match (412, the current ETag in the answer's ETag header and details), then runs `fn`.
   */
  private async underAssetLock<T>(dam: ProviderSession, provider: Provider, assetId: string, ifMatch: string | null, audit: Audit,
    fn: (current: Asset, cond: WriteCondition) => Promise<T>): Promise<T> {
    const id = idParam(assetId, 'assetId');
    const read = provider.asset?.bind(provider);
    if (!read) throw integrationError('integration-not-implemented', provider.descriptor.id, 'reading one asset');
    return this.deps.locks.with([WriteLocks.key(provider.descriptor.id, 'asset', id)], async () => {
      const current = await this.call(provider, dam, (s) => read(s, id, { uiLocale: 'en', timeZone: null }));
      audit.note({ nameBefore: current.name });
      if (lockedByOther(current)) {
        throw hubError('asset-locked', `${JSON.stringify(current.name)} is locked by ${current.lockedBy ?? 'another user'}`, { message: `This asset is locked by ${current.lockedBy ?? 'someone else'}.` });
      }
      const etag = etagOf(current);
      if (ifMatch !== null && !ifMatchHolds(ifMatch, etag)) {
        throw hubError('asset-version-conflict', `If-Match ${ifMatch} does not match the current ETag ${etag}: someone saved this asset since it was read`, { headers: { etag } });
      }
      return fn(current, { ifMatch, upstreamTag: contentTagOf(current) });
    });
  }

  /** A provider call under the provider deadline (writes without a body). */
  private call<T>(provider: Provider, dam: ProviderSession, fn: (s: ProviderSession) => Promise<T>, answers?: 'object' | 'any'): Promise<T> {
    return callOnSession(provider, this.deps.providerTimeoutMs, dam, fn, answers);
  }

  /**
   * A write with a body: the bytes pass the guard (limits, sniffing) on their way to the provider,
   * without the provider deadline (a large body takes as long as the client needs) but stopped
   * when the client leaves. A guard failure is the answer, whatever the provider made of it.
   */
  private async withBody<T>(provider: Provider, dam: ProviderSession, name: string, bytes: IncomingBytes, meta: WriteMeta,
    fn: (s: ProviderSession, body: UploadBody) => Promise<T>): Promise<{ result: T; bytes: number }> {
    const guard = new UploadGuard({ name, limit: this.deps.maxUploadBytes, declared: bytes.length });
    // A writer that takes its bytes in 1 MiB batches (the library's) finds one ready without the
    // pipeline pausing the socket at every 16 KiB (the default mark); memory stays bounded by it.
    const out = new PassThrough({ highWaterMark: BODY_BUFFER });
    const flowing = pipeline(bytes.stream, guard, out).catch((e: unknown) => {
      // The provider sees the failure as its stream erroring; make sure it does.
      out.destroy(guard.failure ?? (e as Error));
    });
    const session: ProviderSession = meta.signal ? { ...dam, signal: dam.signal ? AbortSignal.any([dam.signal, meta.signal]) : meta.signal } : dam;
    try {
      const result = await fn(session, { stream: out, length: bytes.length, mimeType: mimeTypeOfName(name) });
      await flowing;
      if (guard.failure) throw guard.failure;
      return { result, bytes: guard.bytes };
    } catch (e) {
      out.destroy();
      if (guard.failure) throw guard.failure;
      // The provider's own answer first: a failed upstream write tears the request's stream down
      // too, so "the client went away" is only the answer when nothing else explains the failure.
      if (isHubError(e)) throw e;
      if (meta.signal?.aborted) throw hubError('hub-validation-error', 'the client went away before the body was complete');
      throw Object.assign(hubError('hub-internal-error', `provider ${provider.descriptor.id} failed`), { cause: e });
    }
  }

  private auditFor(dam: ProviderSession, provider: Provider, meta: WriteMeta, operation: string, init: Partial<AuditEntry>): Audit {
    const entry: AuditEntry = {
      at: this.deps.clock.now(), requestId: meta.requestId, partnerId: dam.partnerId, userId: dam.userId, providerId: provider.descriptor.id,
      accountId: provider.accountOf?.(dam) ?? null, operation,
      targetId: null, targetIdAfter: null, nameBefore: null, nameAfter: null, bytes: null, result: 'ok', ...init,
    };
    return new Audit(entry, this.deps.audit, this.deps.log);
  }
}

/** One write's audit entry: filled as the write learns things, appended once with its result. */
class Audit {
  constructor(private readonly entry: AuditEntry, private readonly store: AuditStore, private readonly log: AssetWritesDeps['log']) {}

  note(fields: Partial<AuditEntry>): void {
    Object.assign(this.entry, fields);
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    try {
      const out = await fn();
      await this.append('ok');
      return out;
    } catch (e) {
      await this.append(isHubError(e) ? e.code : 'hub-internal-error');
      throw e;
    }
  }

  private async append(result: string): Promise<void> {
    try {
      await this.store.append({ ...this.entry, result });
    } catch (e) {
      this.log.warn({ err: String(e), requestId: this.entry.requestId, operation: this.entry.operation }, 'the write audit could not be appended');
    }
  }
}

function requireIfMatch(ifMatch: string | null): asserts ifMatch is string {
  if (ifMatch === null || ifMatch.trim() === '') {
    throw hubError('hub-precondition-required', 'send If-Match with the ETag of GET /assets/asset/{assetId}: a new version must name the version it replaces');
  }
}

function folderParam(raw: string): string {
  const id = idParam(raw, 'folderId');
  if (id === 'root' || id === '/') throw validationError('the root folder cannot be renamed, moved or deleted');
  return id;
}

