/**
 * Dropbox API v2 calls (HTTP reference: https://www.dropbox.com/developers/documentation/http/documentation).
 * Only the request/response shapes this connector reads are typed; mapping to the hub's shape is
 * mapping.ts. Every RPC endpoint is a POST with a JSON body.
 */
import { integrationError } from '../../errors.js';
import { requestJson, type UpstreamFailure, type UpstreamOptions } from '../saas/upstream.js';
import type { UpstreamPage } from '../saas/listing.js';

/** files.FileMetadata (the fields read here). */
export interface DbxFile {
  '.tag': 'file';
  name: string;
  id: string;
  client_modified: string;
  server_modified: string;
  rev: string;
  size: number;
  path_lower?: string;
  path_display?: string;
  content_hash?: string;
  is_downloadable?: boolean;
}

export interface DbxFolder {
  '.tag': 'folder';
  name: string;
  id: string;
  path_lower?: string;
  path_display?: string;
}

export type DbxMetadata = DbxFile | DbxFolder | { '.tag': 'deleted'; name: string; path_lower?: string };

interface ListFolderResult { entries: DbxMetadata[]; cursor: string; has_more: boolean }
interface SearchV2Result { matches: { metadata: { '.tag': string; metadata?: DbxMetadata } }[]; has_more: boolean; cursor?: string }
interface ListRevisionsResult { is_deleted: boolean; entries: DbxFile[] }
interface TemporaryLinkResult { metadata: DbxFile; link: string }

/** Dropbox's documented error body (the "Errors" section): `{error_summary, error: {".tag": ...}}`. */
function mapDropboxError(providerId: string) {
  return (f: UpstreamFailure) => {
    const body = f.body as { error_summary?: string } | string;
    const summary = typeof body === 'string' ? body : body?.error_summary ?? JSON.stringify(body);
    const headers = f.retryAfter ? { 'retry-after': f.retryAfter } : undefined;
    switch (true) {
      case f.status === 400: return integrationError('integration-operation-failed', providerId, summary);
      case f.status === 401: return integrationError('integration-auth-failed', providerId, summary, { message: 'Dropbox no longer accepts this connection; sign in again.' });
      case f.status === 403: return integrationError('integration-forbidden', providerId, summary);
      case f.status === 409 && /(^|\/)not_found\b/.test(summary): return integrationError('integration-not-found', providerId, summary);
      case f.status === 409: return integrationError('integration-operation-failed', providerId, summary);
      case f.status === 429: return integrationError('integration-unavailable', providerId, summary, { status: 503, headers, message: 'Dropbox is rate-limiting requests; try again shortly.' });
      default: return integrationError('integration-unavailable', providerId, `HTTP ${f.status}: ${summary}`, { status: f.status === 503 || f.status === 504 ? f.status : 502, headers });
    }
  };
}

export interface DropboxApiOptions {
  providerId: string;
  /** https://api.dropboxapi.com, or a loopback replay server in tests. */
  apiBase: string;
  timeoutMs: number;
}

export class DropboxApi {
  private readonly up: UpstreamOptions;

  constructor(private readonly o: DropboxApiOptions) {
    this.up = { providerId: o.providerId, name: 'Dropbox', timeoutMs: o.timeoutMs, mapError: mapDropboxError(o.providerId) };
  }

  private rpc<T>(token: string, route: string, body: unknown): Promise<T> {
    return requestJson<T>(this.up, `${this.o.apiBase}/2/${route}`, { method: 'POST', token, body });
  }

  /** files/list_folder, then files/list_folder/continue. `path` is "" for the root, a path or an "id:". */
  async listFolder(token: string, path: string): Promise<UpstreamPage<DbxMetadata>> {
    return page(this.o.providerId, await this.rpc<ListFolderResult>(token, 'files/list_folder', { path, recursive: false, include_deleted: false, limit: 2000 }));
  }

  async listFolderContinue(token: string, cursor: string): Promise<UpstreamPage<DbxMetadata>> {
    return page(this.o.providerId, await this.rpc<ListFolderResult>(token, 'files/list_folder/continue', { cursor }));
  }

  /** files/search_v2, then files/search/continue_v2. */
  async search(token: string, query: string, path: string | null): Promise<UpstreamPage<DbxMetadata>> {
    const options: Record<string, unknown> = { max_results: 1000, file_status: 'active' };
    if (path) options.path = path;
    return searchPage(this.o.providerId, await this.rpc<SearchV2Result>(token, 'files/search_v2', { query, options }));
  }

  async searchContinue(token: string, cursor: string): Promise<UpstreamPage<DbxMetadata>> {
    return searchPage(this.o.providerId, await this.rpc<SearchV2Result>(token, 'files/search/continue_v2', { cursor }));
  }

  getMetadata(token: string, path: string): Promise<DbxMetadata> {
    return this.rpc<DbxMetadata>(token, 'files/get_metadata', { path, include_deleted: false });
  }

  /** files/list_revisions by file id (mode id follows the file across moves and renames). */
  listRevisions(token: string, id: string): Promise<ListRevisionsResult> {
    return this.rpc<ListRevisionsResult>(token, 'files/list_revisions', { path: id, mode: { '.tag': 'id' }, limit: 100 });
  }

  /** A direct download link valid for four hours (files/get_temporary_link). */
  temporaryLink(token: string, path: string): Promise<TemporaryLinkResult> {
    return this.rpc<TemporaryLinkResult>(token, 'files/get_temporary_link', { path });
  }
}

function page(providerId: string, r: ListFolderResult): UpstreamPage<DbxMetadata> {
  if (!Array.isArray(r.entries) || typeof r.has_more !== 'boolean') throw shapeError(providerId);
  return { items: r.entries, next: r.has_more ? r.cursor : null };
}

function searchPage(providerId: string, r: SearchV2Result): UpstreamPage<DbxMetadata> {
  if (!Array.isArray(r.matches) || typeof r.has_more !== 'boolean') throw shapeError(providerId);
  const items = r.matches.flatMap((m) => (m.metadata?.['.tag'] === 'metadata' && m.metadata.metadata ? [m.metadata.metadata] : []));
  return { items, next: r.has_more && r.cursor ? r.cursor : null };
}

function shapeError(providerId: string) {
  return integrationError('integration-unavailable', providerId, 'the answer lacks entries/has_more', { status: 502, message: 'Dropbox answered in an unexpected format' });
}
