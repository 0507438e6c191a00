/**
 * Google Drive API v3 calls (reference: https://developers.google.com/workspace/drive/api/reference/rest/v3).
 * Only the fields this connector reads are requested (`fields`, a partial response) and typed;
 * mapping to the hub's shape is mapping.ts.
 */
import { integrationError } from '../../errors.js';
import type { UpstreamPage } from '../saas/listing.js';
import { requestJson, type UpstreamFailure, type UpstreamOptions } from '../saas/upstream.js';

export const FOLDER_MIME = 'application/vnd.google-apps.folder';

/** files#File (the fields read here). int64 values arrive as strings. */
export interface DriveFile {
  id: string;
  name: string;
  mimeType: string;
  size?: string;
  createdTime?: string;
  modifiedTime?: string;
  md5Checksum?: string;
  sha1Checksum?: string;
  sha256Checksum?: string;
  thumbnailLink?: string;
  webViewLink?: string;
  webContentLink?: string;
  parents?: string[];
  version?: string;
  imageMediaMetadata?: { width?: number; height?: number };
}

/** revisions#Revision (the fields read here). */
export interface DriveRevision {
  id: string;
  mimeType?: string;
  modifiedTime?: string;
  size?: string;
  md5Checksum?: string;
  originalFilename?: string;
  keepForever?: boolean;
}

const FILE_FIELDS = 'id,name,mimeType,size,createdTime,modifiedTime,md5Checksum,sha1Checksum,sha256Checksum,thumbnailLink,webViewLink,webContentLink,parents,version,imageMediaMetadata(width,height)';

/** A string literal of the Drive query language ("Search for files and folders" guide): quotes and backslashes escaped. */
export const lit = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** Drive's documented error body ("Resolve errors" guide): `{error: {code, message, errors: [{reason, ...}]}}`. */
function mapDriveError(providerId: string) {
  return (f: UpstreamFailure) => {
    const e = (f.body as { error?: { message?: string; errors?: { reason?: string }[] } })?.error;
    const reason = e?.errors?.[0]?.reason ?? '';
    const details = e ? `${reason ? `${reason}: ` : ''}${e.message ?? ''}` : String(f.body);
    const headers = f.retryAfter ? { 'retry-after': f.retryAfter } : undefined;
    if (f.status === 401) return integrationError('integration-auth-failed', providerId, details, { message: 'Google Drive no longer accepts this connection; sign in again.' });
    // Drive reports its rate limits as 403 (userRateLimitExceeded, rateLimitExceeded) as well as 429.
    if (f.status === 429 || (f.status === 403 && /RateLimitExceeded|rateLimitExceeded|quotaExceeded/.test(reason))) {
      return integrationError('integration-unavailable', providerId, details, { status: 503, headers, message: 'Google Drive is rate-limiting requests; try again shortly.' });
    }
    if (f.status === 403) return integrationError('integration-forbidden', providerId, details);
    if (f.status === 404) return integrationError('integration-not-found', providerId, details);
    if (f.status >= 400 && f.status < 500) return integrationError('integration-operation-failed', providerId, details);
    return integrationError('integration-unavailable', providerId, `HTTP ${f.status}: ${details}`, { status: f.status === 503 || f.status === 504 ? f.status : 502, headers });
  };
}

export interface DriveApiOptions {
  providerId: string;
  /** https://www.googleapis.com, or a loopback replay server in tests. */
  apiBase: string;
  timeoutMs: number;
}

export class DriveApi {
  private readonly up: UpstreamOptions;

  constructor(private readonly o: DriveApiOptions) {
    this.up = { providerId: o.providerId, name: 'Google Drive', timeoutMs: o.timeoutMs, mapError: mapDriveError(o.providerId) };
  }

  private get<T>(token: string, path: string, query: Record<string, string> = {}): Promise<T> {
    const u = new URL(`${this.o.apiBase}/drive/v3/${path}`);
    for (const [k, v] of Object.entries(query)) u.searchParams.set(k, v);
    return requestJson<T>(this.up, u.href, { method: 'GET', token });
  }

  /** about.get: the signed-in user (permissionId is the stable account id). */
  about(token: string): Promise<{ user?: { permissionId?: string; displayName?: string; emailAddress?: string } }> {
    return this.get(token, 'about', { fields: 'user(permissionId,displayName,emailAddress)' });
  }

  /** files.list with a Drive query; `pageToken` continues. */
  async list(token: string, q: string, pageToken?: string): Promise<UpstreamPage<DriveFile>> {
    const r = await this.get<{ files?: DriveFile[]; nextPageToken?: string }>(token, 'files', {
      q, pageSize: '1000', fields: `nextPageToken,files(${FILE_FIELDS})`, supportsAllDrives: 'true', includeItemsFromAllDrives: 'true',
      ...(pageToken ? { pageToken } : {}),
    });
    if (!Array.isArray(r.files)) throw integrationError('integration-unavailable', this.o.providerId, 'the answer lacks files', { status: 502, message: 'Google Drive answered in an unexpected format' });
    return { items: r.files, next: r.nextPageToken ?? null };
  }

  getFile(token: string, id: string): Promise<DriveFile> {
    return this.get<DriveFile>(token, `files/${encodeURIComponent(id)}`, { fields: FILE_FIELDS, supportsAllDrives: 'true' });
  }

  async revisions(token: string, id: string, pageToken?: string): Promise<UpstreamPage<DriveRevision>> {
    const r = await this.get<{ revisions?: DriveRevision[]; nextPageToken?: string }>(token, `files/${encodeURIComponent(id)}/revisions`, {
      pageSize: '200', fields: 'nextPageToken,revisions(id,mimeType,modifiedTime,size,md5Checksum,originalFilename,keepForever)',
      ...(pageToken ? { pageToken } : {}),
    });
    if (!Array.isArray(r.revisions)) throw integrationError('integration-unavailable', this.o.providerId, 'the answer lacks revisions', { status: 502, message: 'Google Drive answered in an unexpected format' });
    return { items: r.revisions, next: r.nextPageToken ?? null };
  }
}
