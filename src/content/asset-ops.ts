/**
 * The content operations behind /assets, shared by the REST routes and the MCP tools: validation
 * and clamping of list options, the capability check, the provider call with its error rule, and
 * the sealing of paging cursors. Both front ends call these, so a cursor issued by one works in the
 * other and a refusal reads the same whichever way it was asked.
 */
import type { Hub } from '../hub.js';
import { integrationError, validationError } from '../errors.js';
import { callOnSession, callProvider } from '../providers/deadline.js';
import type { ListOptions, Provider, ProviderSession } from '../providers/contract.js';
import type { Asset, AssetPage, FolderPage, VersionList } from '../providers/model.js';
import { operation } from '../providers/capabilities.js';
import { CursorSealer } from './cursors.js';
import { decodeReference, referenceBytes } from './image-reference.js';

/** The list parameters of a request, as the client sent them (already schema-checked). */
export interface ListQuery {
  size?: number;
  more?: string;
  filters?: string[];
  timeZone?: string;
  dataLocale?: string;
  uiLocale?: string;
}

const MAX_ID = 2048;

export class AssetOps {
  private readonly cursors: CursorSealer;

  constructor(private readonly hub: Hub) {
    this.cursors = new CursorSealer(hub.keys, hub.clock);
  }

  /**
   * A provider operation under the hub's provider deadline (src/providers/deadline.ts); `fn` gets
   * the signal that aborts at the deadline; `answers: 'any'` for non-object results.
   */
  call<T>(provider: Provider, fn: (signal: AbortSignal) => Promise<T>, answers?: 'object' | 'any'): Promise<T> {
    return callProvider(provider, this.hub.config.providerTimeoutMs, fn, answers);
  }

  /** `call` for an operation on a DAM session: `fn` gets the session carrying the call's signal. */
  onSession<T>(provider: Provider, dam: ProviderSession, fn: (session: ProviderSession) => Promise<T>, answers?: 'object' | 'any'): Promise<T> {
    return callOnSession(provider, this.hub.config.providerTimeoutMs, dam, fn, answers);
  }

  providerOf(dam: ProviderSession): Provider {
    return this.hub.providers.get(dam.providerId)!;
  }

  /** Validated, clamped options and the provider cursor unsealed against this exact query. */
  listOptions(userId: string, provider: Provider, q: ListQuery, bindingParts: (string | null)[]): { opts: ListOptions; binding: string } {
    const { defaultSize, maxSize } = provider.descriptor.paging;
    const size = !q.size ? defaultSize : Math.min(q.size, maxSize);
    if (q.timeZone && !validTimeZone(q.timeZone)) throw validationError(`timeZone ${JSON.stringify(q.timeZone)} is not an IANA time zone name`);
    const filters = [...new Set(q.filters ?? [])].sort();
    const binding = CursorSealer.binding([userId, provider.descriptor.id, ...bindingParts, filters, q.dataLocale ?? null]);
    const more = q.more ? this.cursors.unseal(q.more, binding) : null;
    return { opts: { size, more, filters, timeZone: q.timeZone ?? null, dataLocale: q.dataLocale ?? null, uiLocale: q.uiLocale ?? 'en' }, binding };
  }

  sealPage<T extends AssetPage>(page: T, binding: string): T {
    const out = { ...page };
    if (page.more === undefined || page.more === null || page.more === '') delete out.more;
    else out.more = this.cursors.seal(page.more, binding);
    return out;
  }

  async browse(dam: ProviderSession, folderId: string, q: ListQuery): Promise<FolderPage> {
    const provider = this.providerOf(dam);
    const browse = operation(provider, 'browse', 'folder browsing');
    const id = idParam(folderId, 'folderId');
    const { opts, binding } = this.listOptions(dam.userId, provider, q, ['folder', id]);
    return this.sealPage(await this.onSession(provider, dam, (s) => browse(s, id, opts)), binding);
  }

  async search(dam: ProviderSession, s: { query?: string; parentId?: string }, q: ListQuery): Promise<AssetPage> {
    const provider = this.providerOf(dam);
    const search = operation(provider, 'search', 'keyword search');
    const query = (s.query ?? '').trim();
    const parentId = s.parentId ? idParam(s.parentId, 'parentId') : null;
    const { opts, binding } = this.listOptions(dam.userId, provider, q, ['search', query, parentId]);
    return this.sealPage(await this.onSession(provider, dam, (s) => search(s, { query, parentId }, opts)), binding);
  }

  /**
   * `reference`: a data URI, an http(s) URL or a media URL this hub issued (image-reference.ts).
   * The image is decoded once, in the image pool, inside the provider call: when the provider
   * deadline passes or `signal` fires (the client went away), the decode is killed with the call.
   */
  async searchByImage(dam: ProviderSession, reference: string, q: ListQuery, signal?: AbortSignal): Promise<AssetPage> {
    const provider = this.providerOf(dam);
    const searchByImage = operation(provider, 'similarSearch', 'search by image');
    const bytes = await referenceBytes(reference, this.hub);
    const { opts, binding } = this.listOptions(dam.userId, provider, q, ['image', CursorSealer.binding([bytes.toString('base64')])]);
    const outputs = provider.referenceOutputs?.() ?? [];
    return this.sealPage(await this.onSession(provider, dam, async (s) => {
      const stop = signal && s.signal ? AbortSignal.any([s.signal, signal]) : (s.signal ?? signal);
      const image = await decodeReference(bytes, this.hub, { outputs, signal: stop });
      return searchByImage(s, image, opts);
    }), binding);
  }

  async asset(dam: ProviderSession, assetId: string, q: { uiLocale?: string; timeZone?: string }): Promise<Asset> {
    const provider = this.providerOf(dam);
    const asset = provider.asset?.bind(provider);
    if (!asset) throw integrationError('integration-not-implemented', provider.descriptor.id, 'reading one asset');
    const id = idParam(assetId, 'assetId');
    if (q.timeZone && !validTimeZone(q.timeZone)) throw validationError(`timeZone ${JSON.stringify(q.timeZone)} is not an IANA time zone name`);
    return this.onSession(provider, dam, (s) => asset(s, id, { uiLocale: q.uiLocale ?? 'en', timeZone: q.timeZone ?? null }));
  }

  async versions(dam: ProviderSession, assetId: string, q: { withMaster?: boolean; uiLocale?: string }): Promise<VersionList> {
    const provider = this.providerOf(dam);
    const versions = operation(provider, 'versions', 'asset versions');
    const id = idParam(assetId, 'assetId');
    return this.onSession(provider, dam, (s) => versions(s, id, { withMaster: q.withMaster ?? false, uiLocale: q.uiLocale ?? 'en' }));
  }
}

export function idParam(raw: string, name: string): string {
  if (!raw) throw validationError(`${name} is required`);
  if (raw.length > MAX_ID) throw validationError(`${name} is longer than ${MAX_ID} characters`);
  if (raw.includes('\0')) throw validationError(`${name} contains a NUL byte`);
  return raw;
}

const tzCache = new Map<string, boolean>();
export function validTimeZone(tz: string): boolean {
  let ok = tzCache.get(tz);
  if (ok === undefined) {
    try {
      new Intl.DateTimeFormat('en', { timeZone: tz });
      ok = true;
    } catch {
      ok = false;
    }
    if (tzCache.size < 1000) tzCache.set(tz, ok);
  }
  return ok;
}
