/**
 * Box API 2.0 calls (reference: https://developer.box.com/reference/). Only the fields this
 * connector reads are requested (`fields=`) and typed; mapping to the hub's shape is mapping.ts.
 */
import { integrationError } from '../../errors.js';
import { discard, type UpstreamClient, type UpstreamResponse } from '../kit/http.js';
import type { UpstreamPage } from '../saas/listing.js';

/** A folder entry of a path_collection (FolderMini). */
export interface BoxFolderMini { type: 'folder'; id: string; name?: string }

/** File (the fields requested in FILE_FIELDS). */
export interface BoxFile {
  type: 'file';
  id: string;
  name: string;
  etag?: string | null;
  size?: number;
  sha1?: string;
  extension?: string;
  description?: string;
  tags?: string[];
  created_at?: string;
  modified_at?: string;
  content_created_at?: string | null;
  content_modified_at?: string | null;
  version_number?: string;
  file_version?: { type: 'file_version'; id: string; sha1?: string };
  path_collection?: { total_count: number; entries: BoxFolderMini[] };
}

export interface BoxFolder { type: 'folder'; id: string; name: string; etag?: string | null }

export type BoxItem = BoxFile | BoxFolder | { type: 'web_link'; id: string; name?: string };

/** FileVersionFull (the fields requested in VERSION_FIELDS). */
export interface BoxFileVersion {
  type: 'file_version';
  id: string;
  sha1?: string;
  name?: string;
  size?: number;
  created_at?: string;
  modified_at?: string;
  version_number?: string;
  trashed_at?: string | null;
}

export const FILE_FIELDS = 'type,id,name,etag,size,sha1,extension,description,tags,created_at,modified_at,content_created_at,content_modified_at,version_number,file_version,path_collection';
const ITEM_FIELDS = FILE_FIELDS;
const VERSION_FIELDS = 'type,id,sha1,name,size,created_at,modified_at,version_number,trashed_at';
/** Largest page of "List items in folder" (its `limit` maximum). */
const ITEMS_LIMIT = 1000;
/** Largest page of "List all file versions" (offset paging). */
const VERSIONS_LIMIT = 1000;

/**
 * The upstream message of a Box error body (ClientError: `{type: "error", status, code, message,
 * request_id}`): `code: message (request_id ...)`, the request id being what Box support asks for.
 * Anything else (an HTML page from a proxy, an empty 401 body) is passed on as it is.
 */
export function boxErrorMessage(body: string): string {
  try {
    const j = JSON.parse(body) as { type?: unknown; code?: unknown; message?: unknown; request_id?: unknown; error?: unknown; error_description?: unknown };
    if (j.type === 'error' && typeof j.code === 'string') {
      return `${j.code}${typeof j.message === 'string' ? `: ${j.message}` : ''}${typeof j.request_id === 'string' ? ` (request_id ${j.request_id})` : ''}`;
    }
    // The OAuth token endpoint answers RFC 6749 errors.
    if (typeof j.error === 'string') return `${j.error}${typeof j.error_description === 'string' ? `: ${j.error_description}` : ''}`;
  } catch {
    // not JSON
  }
  return body;
}

/** Box API 2.0 over the kit's upstream client (timeouts, retries, Retry-After, circuit breaker). */
export class BoxApi {
  constructor(private readonly http: UpstreamClient, private readonly apiBase: string) {}

  private url(path: string, query: Record<string, string | undefined> = {}): URL {
    const u = new URL(`${this.apiBase}${path}`);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) u.searchParams.set(k, v);
    return u;
  }

  private async get<T>(token: string, path: string, what: string, query: Record<string, string | undefined> = {}): Promise<T> {
    const r = await this.http.json<T>({ method: 'GET', url: this.url(path, query), what: `Box ${what}`, headers: { authorization: `Bearer ${token}` } });
    return r.data;
  }

  /** GET /users/me: the signed-in user (its id is the account id). */
  me(token: string): Promise<{ type?: string; id?: string; name?: string; login?: string }> {
    return this.get(token, '/users/me', 'GET /users/me', { fields: 'id,name,login' });
  }

  /** GET /folders/{id}: the folder itself (its name; a 404 when it does not exist). */
  folder(token: string, id: string): Promise<BoxFolder> {
    return this.get(token, `/folders/${encodeURIComponent(id)}`, 'GET /folders/{id}', { fields: 'type,id,name,etag' });
  }

  /**
   * GET /folders/{id}/items with marker-based paging (`usemarker=true`, the page's `next_marker`
   * continues; null at the end). Marker paging has no offset ceiling, unlike offset paging.
   */
  async items(token: string, id: string, marker?: string): Promise<UpstreamPage<BoxItem>> {
    const r = await this.get<{ entries?: BoxItem[]; next_marker?: string | null }>(token, `/folders/${encodeURIComponent(id)}/items`, 'GET /folders/{id}/items', {
      fields: ITEM_FIELDS, limit: String(ITEMS_LIMIT), usemarker: 'true', marker,
    });
    if (!Array.isArray(r.entries)) throw shapeError(this.http.providerId, 'entries');
    return { items: r.entries, next: r.next_marker ? r.next_marker : null };
  }

  /** GET /search for files, scoped to a folder's subtree (ancestor_folder_ids), offset-paged with Box's total_count. */
  async search(token: string, query: string, ancestor: string | null, offset: number, limit: number): Promise<{ entries: BoxItem[]; total: number }> {
    const r = await this.get<{ entries?: BoxItem[]; total_count?: number }>(token, '/search', 'GET /search', {
      query, type: 'file', ancestor_folder_ids: ancestor ?? undefined, fields: ITEM_FIELDS, offset: String(offset), limit: String(limit),
    });
    if (!Array.isArray(r.entries)) throw shapeError(this.http.providerId, 'entries');
    return { entries: r.entries, total: typeof r.total_count === 'number' ? r.total_count : offset + r.entries.length };
  }

  /** GET /files/{id}. */
  file(token: string, id: string): Promise<BoxFile> {
    return this.get(token, `/files/${encodeURIComponent(id)}`, 'GET /files/{id}', { fields: FILE_FIELDS });
  }

  /** GET /files/{id}/versions (the older versions; the current one is the file's file_version), offset-paged. */
  async versions(token: string, id: string, offset = 0): Promise<UpstreamPage<BoxFileVersion>> {
    const r = await this.get<{ entries?: BoxFileVersion[]; total_count?: number }>(token, `/files/${encodeURIComponent(id)}/versions`, 'GET /files/{id}/versions', {
      fields: VERSION_FIELDS, offset: String(offset), limit: String(VERSIONS_LIMIT),
    });
    if (!Array.isArray(r.entries)) throw shapeError(this.http.providerId, 'entries');
    const next = offset + VERSIONS_LIMIT;
    return { items: r.entries, next: typeof r.total_count === 'number' && next < r.total_count && r.entries.length > 0 ? String(next) : null };
  }

  /**
   * GET /files/{id}/thumbnail.jpg: Box's rendition (its JPEG sizes are 32, 160 and 320 px; 160 to
   * 320 asked, the kit re-encodes to its own size). 202 (being made: Location is a placeholder,
   * Retry-After an estimate) and 302 (no thumbnail for this type: Location is a placeholder)
   * answer null: the placeholder is an icon, not the file, so the hub makes one from the original.
   */
  async thumbnail(token: string, id: string): Promise<UpstreamResponse | null> {
    const r = await this.http.send({
      method: 'GET', url: this.url(`/files/${encodeURIComponent(id)}/thumbnail.jpg`, { min_width: '160', min_height: '160', max_width: '320', max_height: '320' }),
      headers: { authorization: `Bearer ${token}` }, accept: [202, 302], what: 'Box GET /files/{id}/thumbnail.jpg',
    });
    if (r.status === 202 || r.status === 302) {
      discard(r.body);
      return null;
    }
    return r;
  }

  /**
   * The bytes of a file (or one of its versions), streamed: GET /files/{id}/content answers 302 to
   * a pre-signed download URL (dl.boxcloud.com, valid about 15 minutes), fetched here without the
   * token, with the client's Range and If-None-Match. Only Box's download hosts (or, for a
   * stand-in, the API's own host) are followed. 202 (the file was just uploaded and is not ready)
   * is integration-unavailable 503 passing Box's Retry-After on.
   */
  async content(token: string, id: string, version: string | undefined, range: string | undefined, ifNoneMatch: string | undefined): Promise<UpstreamResponse> {
    const what = 'Box GET /files/{id}/content';
    const r = await this.http.send({
      method: 'GET', url: this.url(`/files/${encodeURIComponent(id)}/content`, { version }),
      headers: { authorization: `Bearer ${token}`, ...(range ? { range } : {}), ...(ifNoneMatch ? { 'if-none-match': ifNoneMatch } : {}) },
      accept: [202, 302, 304], what,
    });
    if (r.status !== 202 && r.status !== 302) return r;
    discard(r.body);
    if (r.status === 202) {
      const after = String(r.headers['retry-after'] ?? '');
      throw integrationError('integration-unavailable', this.http.providerId, `${what} answered 202: the file is not ready for download yet`, {
        status: 503, ...(/^\d+$/.test(after) ? { headers: { 'retry-after': after } } : {}),
      });
    }
    let target: URL;
    try {
      target = new URL(String(r.headers.location ?? ''), this.apiBase);
    } catch {
      throw integrationError('integration-unavailable', this.http.providerId, `${what} answered 302 without a usable Location`, { status: 502 });
    }
    const apiHost = new URL(this.apiBase).host;
    if (target.protocol !== 'https:' && target.host !== apiHost) throw integrationError('integration-unavailable', this.http.providerId, `${what} redirected to a non-https URL`, { status: 502 });
    if (!(target.hostname === 'boxcloud.com' || target.hostname.endsWith('.boxcloud.com') || target.host === apiHost)) {
      throw integrationError('integration-unavailable', this.http.providerId, `${what} redirected to ${target.host}, which is not a Box download host`, { status: 502 });
    }
    return this.http.send({
      method: 'GET', url: target, accept: [304],
      headers: { ...(range ? { range } : {}), ...(ifNoneMatch ? { 'if-none-match': ifNoneMatch } : {}) },
      what: 'Box download URL',
    });
  }
}

function shapeError(providerId: string, field: string) {
  return integrationError('integration-unavailable', providerId, `the answer lacks ${field}`, { status: 502, message: 'Box answered in an unexpected format' });
}
