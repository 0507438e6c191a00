/**
 * Cloudinary Admin API and Search API calls (https://cloudinary.com/documentation/admin_api,
 * https://cloudinary.com/documentation/search_method). Every call is HTTP Basic with the API key
 * and secret (Admin API overview, "Authentication"); only the shapes this connector reads are typed.
 * Signed download URLs (private originals, backed-up versions) follow the SDK's documented
 * request-signing algorithm and are fetched here, server side: the key never leaves the hub.
 */
import { createHash } from 'node:crypto';
import { integrationError } from '../../errors.js';
import { discard, type UpstreamClient, type UpstreamResponse } from '../kit/http.js';
import { parseRetryAfter } from '../kit/upstream-errors.js';
import type { UpstreamPage } from '../saas/listing.js';

export const PROVIDER_ID = 'cloudinary';

export type FolderMode = 'dynamic' | 'fixed';

/** What the DAM connection token carries: the product environment, its key pair, its folder mode. */
export interface CldCred extends Record<string, unknown> {
  cloud: string;
  key: string;
  secret: string;
  mode: FolderMode;
}

export interface CldFolder { name: string; path: string; external_id?: string }

/** One asset as the Search API and the resource details return it (the fields read here). */
export interface CldResource {
  asset_id: string;
  public_id: string;
  format?: string;
  version?: number;
  resource_type: string;
  type: string;
  created_at?: string;
  uploaded_at?: string;
  bytes?: number;
  width?: number;
  height?: number;
  folder?: string;
  asset_folder?: string;
  display_name?: string;
  filename?: string;
  secure_url?: string;
  etag?: string;
  tags?: string[];
  context?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
  image_metadata?: Record<string, unknown>;
  last_updated?: { updated_at?: string };
  derived?: { transformation: string; format?: string; bytes?: number; id: string; url?: string; secure_url?: string }[];
  versions?: { version_id: string; version: number; format?: string; size?: number; time?: string; restorable?: boolean }[];
}

export interface SearchResult {
  total_count: number;
  next_cursor?: string;
  resources: CldResource[];
  aggregations?: Record<string, unknown>;
}

export interface SearchRequest {
  expression?: string;
  max_results: number;
  next_cursor?: string;
  sort_by?: Record<string, 'asc' | 'desc'>[];
  with_field?: string[];
  aggregate?: string[];
}

/** The Admin API's error envelope: `{"error": {"message": "..."}}` (Admin API overview, "Error handling"). */
export function cloudinaryErrorMessage(body: string): string {
  try {
    const j = JSON.parse(body) as { error?: { message?: unknown } };
    if (typeof j.error?.message === 'string') return j.error.message;
  } catch {
    // an HTML page from a proxy: the kit reduces it to text
  }
  return body;
}

/**
 * The Admin API's own throttling answer: HTTP 420 with X-FeatureRateLimit-Limit/-Remaining/-Reset
 * (the SDK's execute_request reads exactly these; the reset is an HTTP date). Hourly limits reset
 * at the top of the hour, too long to wait for inside one request, so it goes straight back to the
 * client as integration-unavailable 503 with Retry-After.
 */
function rateLimited(headers: UpstreamResponse['headers'], what: string, message: string, now: number) {
  const reset = headers['x-featureratelimit-reset'];
  const limit = headers['x-featureratelimit-limit'];
  const secs = parseRetryAfter(reset, now) ?? 60;
  return integrationError('integration-unavailable', PROVIDER_ID, `${what} answered 420: Cloudinary's Admin API rate limit${limit ? ` of ${String(limit)} calls per hour` : ''} is used up${message ? ` (${message})` : ''}`, {
    status: 503, headers: { 'retry-after': String(Math.max(1, secs)) },
    message: 'The Cloudinary API rate limit is used up; try again later.',
  });
}

const basic = (c: CldCred) => `Basic ${Buffer.from(`${c.key}:${c.secret}`).toString('base64')}`;

/**
 * Request signing as the SDK does it (utils.api_sign_request, signature_version 2): the parameters
 * sorted by name, `k=v` joined with `&` (a `&` inside a pair escaped as %26), the API secret
 * appended, SHA-1 in hex. Product environments set to SHA-256 signatures are not covered.
 */
export function signParams(params: Record<string, string | number>, secret: string): string {
  const toSign = Object.entries(params)
    .filter(([, v]) => v !== '' && v !== undefined && v !== null)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`.replace(/&/g, '%26'))
    .join('&');
  return createHash('sha1').update(toSign + secret).digest('hex');
}

export class CloudinaryApi {
  constructor(private readonly http: UpstreamClient, private readonly apiBase: string, private readonly cred: CldCred, private readonly now: () => number) {}

  private url(path: string, query?: Record<string, string | number | boolean | undefined>): URL {
    const u = new URL(`${this.apiBase}/v1_1/${encodeURIComponent(this.cred.cloud)}/${path}`);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) u.searchParams.set(k, String(v));
    return u;
  }

  private async call<T>(method: 'GET' | 'POST', path: string, opts: { query?: Record<string, string | number | boolean | undefined>; json?: unknown; body?: Buffer; contentType?: string; what: string }): Promise<T> {
    const headers: Record<string, string> = { authorization: basic(this.cred) };
    let body: string | Buffer | undefined;
    if (opts.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(opts.json);
    } else if (opts.body) {
      headers['content-type'] = opts.contentType!;
      body = opts.body;
    }
    const r = await this.http.json<T>({
      method, url: this.url(path, opts.query), headers, body, what: opts.what, accept: [420],
      // Every call here only reads (search and visual search are POSTs that change nothing).
      idempotent: true,
    });
    if (r.status === 420) throw rateLimited(r.headers, opts.what, cloudinaryErrorMessage(JSON.stringify(r.data)), this.now());
    return r.data;
  }

  /** GET /config?settings=true: the product environment and its folder mode (dynamic or fixed). */
  config(): Promise<{ cloud_name?: string; settings?: { folder_mode?: string } }> {
    return this.call('GET', 'config', { query: { settings: true }, what: 'Cloudinary GET config' });
  }

  ping(): Promise<{ status?: string }> {
    return this.call('GET', 'ping', { what: 'Cloudinary GET ping' });
  }

  /** GET /folders (root) or /folders/:path (its subfolders), 500 a page (the documented maximum). */
  async folders(path: string, cursor: string | null): Promise<UpstreamPage<CldFolder>> {
    // The SDK encodes the whole path as one component (sub_folders: ["folders", path]).
    const r = await this.call<{ folders?: CldFolder[]; next_cursor?: string | null }>('GET', path ? `folders/${encodeURIComponent(path)}` : 'folders', {
      query: { max_results: 500, next_cursor: cursor ?? undefined }, what: 'Cloudinary GET folders',
    });
    if (!Array.isArray(r.folders)) throw shapeError('folders');
    return { items: r.folders, next: r.next_cursor || null };
  }

  /** POST /resources/search (Search API). */
  async search(req: SearchRequest): Promise<SearchResult> {
    const r = await this.call<SearchResult>('POST', 'resources/search', { json: req, what: 'Cloudinary POST resources/search' });
    if (!Array.isArray(r.resources) || typeof r.total_count !== 'number') throw shapeError('resources/search');
    return r;
  }

  /** POST /resources/visual_search with the reference image as `image_file` (multipart, as the SDK sends it). */
  async visualSearch(image: Buffer, format: string): Promise<{ resources: CldResource[]; next_cursor?: string }> {
    const form = new FormData();
    form.set('image_file', new Blob([new Uint8Array(image)], { type: `image/${format}` }), `reference.${format}`);
    // The platform's Request encodes the form (boundary included); nothing multipart is written by hand.
    const encoded = new Request('http://form.invalid/', { method: 'POST', body: form });
    const body = Buffer.from(await encoded.arrayBuffer());
    const r = await this.call<{ resources?: CldResource[]; next_cursor?: string }>('POST', 'resources/visual_search', {
      body, contentType: encoded.headers.get('content-type')!, what: 'Cloudinary POST resources/visual_search',
    });
    if (!Array.isArray(r.resources)) throw shapeError('resources/visual_search');
    return { resources: r.resources, next_cursor: r.next_cursor };
  }

  /** GET /resources/:asset_id with embedded metadata (and its ETag) and backed-up versions. */
  resource(assetId: string): Promise<CldResource> {
    return this.call('GET', `resources/${encodeURIComponent(assetId)}`, { query: { image_metadata: true, versions: true }, what: 'Cloudinary GET resources/:asset_id' });
  }

  /**
   * The original of a private or authenticated asset: the signed download endpoint the SDK's
   * private_download_url names (GET /:resource_type/download), fetched here so the key stays home.
   */
  privateDownload(r: { p: string; f: string; t: string; rt: string }, range: string | undefined): Promise<UpstreamResponse> {
    const params: Record<string, string | number> = { public_id: r.p, format: r.f, type: r.t, timestamp: Math.floor(this.now() / 1000) };
    return this.signedGet(`${encodeURIComponent(r.rt)}/download`, params, range, 'Cloudinary GET download');
  }

  /** A backed-up version (the SDK's download_backedup_asset: GET /download_backup). */
  backupDownload(assetId: string, versionId: string, range: string | undefined): Promise<UpstreamResponse> {
    return this.signedGet('download_backup', { asset_id: assetId, version_id: versionId, timestamp: Math.floor(this.now() / 1000) }, range, 'Cloudinary GET download_backup');
  }

  private async signedGet(path: string, params: Record<string, string | number>, range: string | undefined, what: string): Promise<UpstreamResponse> {
    const signature = signParams(params, this.cred.secret);
    const u = this.url(path, { ...params, signature, api_key: this.cred.key });
    const headers: Record<string, string> = range ? { range } : {};
    let r = await this.http.send({ method: 'GET', url: u, headers, what, accept: [301, 302, 303, 307, 308, 420] });
    // A download endpoint may answer with a redirect to the file: followed once, never forwarded
    // (its URL is signed with the key).
    if (r.status >= 300 && r.status < 400) {
      const loc = r.headers.location;
      discard(r.body);
      if (typeof loc !== 'string') throw shapeError(path);
      r = await this.http.send({ method: 'GET', url: new URL(loc, u), headers, what, accept: [420] });
    }
    if (r.status === 420) {
      discard(r.body);
      throw rateLimited(r.headers, what, '', this.now());
    }
    return r;
  }
}

/** A public delivery URL's rendition (upload type): fetched for the hub's thumbnail. */
export function deliveryGet(http: UpstreamClient, url: string): Promise<UpstreamResponse> {
  return http.send({ method: 'GET', url, what: 'Cloudinary delivery rendition' });
}

function shapeError(what: string) {
  return integrationError('integration-unavailable', PROVIDER_ID, `Cloudinary ${what}: the answer lacks the documented fields`, { status: 502, message: 'Cloudinary answered in an unexpected format' });
}
