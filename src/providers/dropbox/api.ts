/**
 * Dropbox API v2 calls (HTTP reference: https://www.dropbox.com/developers/documentation/http/documentation).
 * Only the request/response shapes this connector reads are typed; mapping to the hub's shape is
 * mapping.ts. Every RPC endpoint is a POST with a JSON body.
 */
import { integrationError } from '../../errors.js';
import { discard, type UpstreamClient, type UpstreamResponse } from '../kit/http.js';
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

/** The upstream message of a Dropbox error body ("Errors" section): `error_summary`, or the plain text of a 400. */
export function dropboxErrorMessage(body: string): string {
  try {
    const j = JSON.parse(body) as { error_summary?: unknown };
    if (typeof j.error_summary === 'string') return j.error_summary;
  } catch {
    // 400 answers are plain text
  }
  return body;
}

/** 409 is Dropbox's "endpoint-specific error": its error_summary says which (path/not_found/.. and the like). */
function conflict(providerId: string, route: string, body: unknown) {
  const summary = typeof (body as { error_summary?: unknown })?.error_summary === 'string' ? (body as { error_summary: string }).error_summary : JSON.stringify(body);
  const code = /(^|\/)not_found\b/.test(summary) ? 'integration-not-found' : 'integration-operation-failed';
  return integrationError(code, providerId, `Dropbox ${route} answered 409: ${summary}`);
}

/** At most 8 KiB of an error body, as text. */
async function readText(body: UpstreamResponse['body']): Promise<string> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of body) {
    chunks.push(c as Buffer);
    n += (c as Buffer).length;
    if (n > 8192) break;
  }
  discard(body);
  return Buffer.concat(chunks).subarray(0, 8192).toString('utf8');
}

/** Dropbox API v2 over the kit's upstream client (timeouts, retries, Retry-After, circuit breaker). */
export class DropboxApi {
  constructor(private readonly http: UpstreamClient, private readonly apiBase: string, private readonly contentBase = apiBase) {}

  /**
   * files/get_thumbnail_v2 (a content-download endpoint: arguments in the Dropbox-API-Arg header,
   * the image as the body): a 256 px JPEG of an image file, streamed for the kit to check and
   * re-encode. The header must be ASCII: other characters are sent as \uXXXX (Dropbox's
   * "Request and response formats").
   */
  async thumbnail(token: string, path: string): Promise<UpstreamResponse> {
    const arg = JSON.stringify({ resource: { '.tag': 'path', path }, format: 'jpeg', size: 'w256h256', mode: 'fitone_bestfit' })
      .replace(/[\u007f-\uffff]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
    const route = 'files/get_thumbnail_v2';
    const r = await this.http.send({
      method: 'POST', url: `${this.contentBase}/2/${route}`, what: `Dropbox ${route}`, accept: [409],
      headers: { authorization: `Bearer ${token}`, 'dropbox-api-arg': arg },
      idempotent: true,
    });
    if (r.status === 409) {
      const text = await readText(r.body);
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch { /* plain text */ }
      throw conflict(this.http.providerId, route, body);
    }
    return r;
  }

  private async rpc<T>(token: string, route: string, body: unknown): Promise<T> {
    const r = await this.http.json<T>({
      method: 'POST', url: `${this.apiBase}/2/${route}`, what: `Dropbox ${route}`, accept: [409],
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      // Every route used here only reads, so a repeat after a timeout or 503 is harmless.
      idempotent: true,
    });
    if (r.status === 409) throw conflict(this.http.providerId, route, r.data);
    return r.data;
  }

  /** files/list_folder, then files/list_folder/continue. `path` is "" for the root, a path or an "id:". */
  async listFolder(token: string, path: string): Promise<UpstreamPage<DbxMetadata>> {
    return page(this.http.providerId, await this.rpc<ListFolderResult>(token, 'files/list_folder', { path, recursive: false, include_deleted: false, limit: 2000 }));
  }

  async listFolderContinue(token: string, cursor: string): Promise<UpstreamPage<DbxMetadata>> {
    return page(this.http.providerId, await this.rpc<ListFolderResult>(token, 'files/list_folder/continue', { cursor }));
  }

  /** files/search_v2, then files/search/continue_v2. */
  async search(token: string, query: string, path: string | null): Promise<UpstreamPage<DbxMetadata>> {
    const options: Record<string, unknown> = { max_results: 1000, file_status: 'active' };
    if (path) options.path = path;
    return searchPage(this.http.providerId, await this.rpc<SearchV2Result>(token, 'files/search_v2', { query, options }));
  }

  async searchContinue(token: string, cursor: string): Promise<UpstreamPage<DbxMetadata>> {
    return searchPage(this.http.providerId, await this.rpc<SearchV2Result>(token, 'files/search/continue_v2', { cursor }));
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
