/**
 * Google Drive API v3 calls (reference: https://developers.google.com/workspace/drive/api/reference/rest/v3).
 * Only the fields this connector reads are requested (`fields`, a partial response) and typed;
 * mapping to the hub's shape is mapping.ts.
 */
import { integrationError } from '../../errors.js';
import type { UpstreamPage } from '../saas/listing.js';
import type { UpstreamClient, UpstreamResponse } from '../kit/http.js';

export const FOLDER_MIME = 'application/vnd.google-apps.folder';

/**
 * Google-native documents have no bytes of their own (alt=media refuses them with
 * fileNotDownloadable); these four export to PDF ("Export MIME types for Google Workspace
 * documents"). Other native types (forms, sites, maps, shortcuts, folders) export to nothing a
 * partner can use, so they get no downloadUrl.
 */
const PDF_EXPORTABLE = new Set(['document', 'spreadsheet', 'presentation', 'drawing'].map((k) => `application/vnd.google-apps.${k}`));

/** How a file's bytes are fetched: its content (`media`), a PDF export (`pdf`), or not at all (null). */
export function downloadKind(mimeType: string): 'media' | 'pdf' | null {
  if (!mimeType.startsWith('application/vnd.google-apps.')) return 'media';
  return PDF_EXPORTABLE.has(mimeType) ? 'pdf' : null;
}

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

const FILE_FIELDS = 'id,name,mimeType,size,createdTime,modifiedTime,md5Checksum,sha1Checksum,sha256Checksum,thumbnailLink,webViewLink,parents,version,imageMediaMetadata(width,height)';

/** A string literal of the Drive query language ("Search for files and folders" guide): quotes and backslashes escaped. */
export const lit = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** The upstream message of a Drive error body ("Resolve errors" guide): `reason: message`. */
export function driveErrorMessage(body: string): string {
  try {
    const e = (JSON.parse(body) as { error?: { message?: string; errors?: { reason?: string }[] } }).error;
    if (e) return `${e.errors?.[0]?.reason ? `${e.errors[0].reason}: ` : ''}${e.message ?? ''}`;
  } catch {
    // not JSON: an HTML error page, kept as it is
  }
  return body;
}

/** Google Drive API v3 over the kit's upstream client (timeouts, retries, Retry-After, circuit breaker). */
export class DriveApi {
  constructor(private readonly http: UpstreamClient, private readonly apiBase: string) {}

  private async get<T>(token: string, path: string, query: Record<string, string> = {}): Promise<T> {
    const u = new URL(`${this.apiBase}/drive/v3/${path}`);
    for (const [k, v] of Object.entries(query)) u.searchParams.set(k, v);
    const r = await this.http.json<T>({ method: 'GET', url: u, what: `Google Drive ${path.split('/')[0]}`, accept: [403], headers: { authorization: `Bearer ${token}` } });
    if (r.status === 403) {
      // Drive reports its rate limits as 403 (userRateLimitExceeded, rateLimitExceeded) as well as 429.
      const msg = driveErrorMessage(JSON.stringify(r.data));
      const limited = /^(userRateLimitExceeded|rateLimitExceeded|dailyLimitExceeded|quotaExceeded)\b/.test(msg);
      throw integrationError(limited ? 'integration-unavailable' : 'integration-forbidden', this.http.providerId, `Google Drive ${path} answered 403: ${msg}`, limited ? { status: 503 } : {});
    }
    return r.data;
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
    if (!Array.isArray(r.files)) throw integrationError('integration-unavailable', this.http.providerId, 'the answer lacks files', { status: 502, message: 'Google Drive answered in an unexpected format' });
    return { items: r.files, next: r.nextPageToken ?? null };
  }

  getFile(token: string, id: string): Promise<DriveFile> {
    return this.get<DriveFile>(token, `files/${encodeURIComponent(id)}`, { fields: FILE_FIELDS, supportsAllDrives: 'true' });
  }

  /**
   * The file's bytes, streamed: files.get?alt=media (Range and If-None-Match passed through), or
   * for a Google-native document files.export to PDF (Drive exports whole documents only, up to
   * 10 MB; a Range is still passed and Drive may ignore it, answering 200 with the whole export).
   */
  content(token: string, id: string, kind: 'media' | 'pdf', range: string | undefined, ifNoneMatch: string | undefined, revision?: string): Promise<UpstreamResponse> {
    const file = `files/${encodeURIComponent(id)}`;
    // An earlier revision's bytes: revisions.get with alt=media ("Download and export files", binary files only).
    const media = revision ? `${file}/revisions/${encodeURIComponent(revision)}` : file;
    const u = new URL(`${this.apiBase}/drive/v3/${kind === 'pdf' ? `${file}/export` : media}`);
    if (kind === 'pdf') u.searchParams.set('mimeType', 'application/pdf');
    else {
      u.searchParams.set('alt', 'media');
      u.searchParams.set('supportsAllDrives', 'true');
    }
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (range) headers.range = range;
    if (ifNoneMatch) headers['if-none-match'] = ifNoneMatch;
    return this.http.send({ method: 'GET', url: u, headers, accept: [304], what: kind === 'pdf' ? 'Google Drive files.export' : revision ? 'Google Drive revisions.get (alt=media)' : 'Google Drive files.get (alt=media)' });
  }

  async revisions(token: string, id: string, pageToken?: string): Promise<UpstreamPage<DriveRevision>> {
    const r = await this.get<{ revisions?: DriveRevision[]; nextPageToken?: string }>(token, `files/${encodeURIComponent(id)}/revisions`, {
      pageSize: '200', fields: 'nextPageToken,revisions(id,mimeType,modifiedTime,size,md5Checksum,originalFilename,keepForever)',
      ...(pageToken ? { pageToken } : {}),
    });
    if (!Array.isArray(r.revisions)) throw integrationError('integration-unavailable', this.http.providerId, 'the answer lacks revisions', { status: 502, message: 'Google Drive answered in an unexpected format' });
    return { items: r.revisions, next: r.nextPageToken ?? null };
  }
}
