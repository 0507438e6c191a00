/**
 * Canto API v1 calls (reference: https://api.canto.com/ "Canto API", also published as the support
 * article "Canto API" https://support.canto.com/support/solutions/articles/9000182989). Every call
 * goes to the tenant's own site (`https://acme.canto.com/api/v1/...`, binaries under
 * `/api_binary/v1/...`) with the user's OAuth token as `Authorization: Bearer`. Only the fields
 * this connector reads are typed; mapping to the hub's shape is mapping.ts.
 */
import { Readable } from 'node:stream';
import { integrationError } from '../../errors.js';
import { discard, type UpstreamClient, type UpstreamRequest, type UpstreamResponse } from '../kit/http.js';

/** Canto's content schemes ("scheme" in every content record; the reference's list). */
export const SCHEMES = ['image', 'video', 'audio', 'document', 'presentation', 'other'] as const;
export type Scheme = (typeof SCHEMES)[number];
export const isScheme = (s: unknown): s is Scheme => typeof s === 'string' && (SCHEMES as readonly string[]).includes(s);

/** A content record of a listing, a search or "Get content details" (the fields read here). */
export interface CantoContent {
  id: string;
  name: string;
  scheme: string;
  size?: string | number;
  width?: string | number;
  height?: string | number;
  /** yyyyMMddHHmmssSSS (the reference's "Date format"). */
  created?: string;
  lastUploaded?: string;
  time?: string;
  md5?: string;
  approvalStatus?: string;
  description?: string;
  copyright?: string;
  termsAndConditions?: string;
  keyword?: string[];
  tag?: string[];
  owner?: string;
  ownerName?: string;
  default?: Record<string, unknown>;
  additional?: Record<string, unknown>;
  url?: Record<string, string | undefined>;
  versionHistory?: CantoVersion[];
}

export interface CantoVersion {
  version?: string;
  time?: string;
  comment?: string;
  currentVersion?: boolean;
}

/** A node of "Get full library tree view" / "Get sub tree view". */
export interface CantoNode {
  id: string;
  name: string;
  scheme: 'folder' | 'album' | string;
  size?: number | string;
}

export interface CantoList {
  results: CantoContent[];
  found: number;
  /** How many records the page held, usable or not: the next page starts that far on. */
  served: number;
}

/** The upstream message of a Canto error body: a JSON `message` / `error_description` / `error`, or the text. */
export function cantoErrorMessage(body: string): string {
  try {
    const j = JSON.parse(body) as Record<string, unknown>;
    for (const k of ['message', 'errorMessage', 'error_description', 'error']) if (typeof j[k] === 'string' && j[k]) return j[k] as string;
  } catch {
    // not JSON: an HTML error page or plain text, reduced by the kit
  }
  return body;
}

function shapeError(providerId: string, what: string) {
  return integrationError('integration-unavailable', providerId, `${what}: the answer lacks ${what.includes('tree') ? 'results' : 'results/found'}`, { status: 502, message: 'Canto answered in an unexpected format' });
}

/** `found` arrives as a number; a numeric string is read too. */
function count(v: unknown): number | null {
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d{1,12}$/.test(v) ? Number(v) : NaN;
  return Number.isSafeInteger(n) && n >= 0 ? n : null;
}

const REDIRECTS = [301, 302, 303, 307, 308];

/** Canto API v1 on one tenant over the kit's upstream client (timeouts, retries, Retry-After, circuit breaker). */
export class CantoApi {
  constructor(private readonly http: UpstreamClient, readonly origin: string, private readonly token: string) {}

  private async get<T>(path: string, query: Record<string, string | number | undefined> = {}, what = `Canto ${path.split('/').slice(0, 2).join('/')}`): Promise<T> {
    const u = new URL(`${this.origin}/api/v1/${path}`);
    for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') u.searchParams.set(k, String(v));
    return (await this.http.json<T>({ method: 'GET', url: u, what, headers: { authorization: `Bearer ${this.token}` } })).data;
  }

  /** "Get current user info". */
  user(): Promise<Record<string, unknown>> {
    return this.get('user', {}, 'Canto user');
  }

  /** "Get full library tree view" (layer 1: the top level) or "Get sub tree view" of one folder. */
  async tree(folderId: string | null): Promise<CantoNode[]> {
    const what = folderId ? 'Canto tree/{id}' : 'Canto tree';
    const r = await this.get<{ results?: unknown }>(folderId ? `tree/${encodeURIComponent(folderId)}` : 'tree', { sortBy: 'name', sortDirection: 'ascending', ...(folderId ? {} : { layer: 1 }) }, what);
    if (!Array.isArray(r.results)) throw shapeError(this.http.providerId, what);
    return r.results.filter((n): n is CantoNode => typeof n?.id === 'string' && typeof n?.name === 'string');
  }

  /** "List content of a specified album", one page (`start` is the offset, `limit` the page size; `found` the total). */
  async album(albumId: string, start: number, limit: number, keyword?: string): Promise<CantoList> {
    return this.list(await this.get(`album/${encodeURIComponent(albumId)}`, { start, limit, sortBy: 'name', sortDirection: 'ascending', keyword }, 'Canto album/{id}'), 'Canto album/{id}');
  }

  /** "Global search" / "Filter": keyword plus the documented scheme and approval filters, one page. */
  async search(keyword: string, start: number, limit: number, filters: { scheme?: string; approval?: string } = {}): Promise<CantoList> {
    return this.list(await this.get('search', { keyword, scheme: filters.scheme, approval: filters.approval, start, limit, sortBy: 'name', sortDirection: 'ascending' }, 'Canto search'), 'Canto search');
  }

  /** "Get content details": GET /api/v1/{scheme}/{contentId}. */
  content(scheme: Scheme, id: string): Promise<CantoContent> {
    return this.get(`${scheme}/${encodeURIComponent(id)}`, {}, `Canto ${scheme}/{id}`);
  }

  private list(r: { results?: unknown; found?: unknown }, what: string): CantoList {
    const found = count(r.found);
    // An empty page may come without `results` (nothing found).
    const results = r.results === undefined && found === 0 ? [] : r.results;
    if (!Array.isArray(results) || found === null) throw shapeError(this.http.providerId, what);
    return { results: results.filter((c): c is CantoContent => typeof c?.id === 'string' && typeof c?.name === 'string' && isScheme(c?.scheme)), found, served: results.length };
  }

  /**
   * A binary of /api_binary/v1 (the original, or `preview`), streamed. It needs the bearer token;
   * where Canto answers with a redirect to its content delivery host, that one is followed once
   * without the token (it is a signed URL of its own).
   */
  async binary(path: string, what: string, range?: string, ifNoneMatch?: string): Promise<UpstreamResponse> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.token}` };
    if (range) headers.range = range;
    if (ifNoneMatch) headers['if-none-match'] = ifNoneMatch;
    const r = await this.http.send({ method: 'GET', url: `${this.origin}/api_binary/v1/${path}`, headers, accept: [304, ...REDIRECTS], what });
    if (!REDIRECTS.includes(r.status)) return r;
    discard(r.body);
    const loc = [r.headers.location].flat()[0];
    let next: URL;
    try {
      next = new URL(String(loc ?? ''), `${this.origin}/`);
    } catch {
      throw integrationError('integration-unavailable', this.http.providerId, `${what}: redirect without a usable location`, { status: 502 });
    }
    if (next.protocol !== 'https:' && next.origin !== new URL(this.origin).origin) {
      throw integrationError('integration-unavailable', this.http.providerId, `${what}: redirect to ${next.protocol} refused`, { status: 502 });
    }
    const again: Record<string, string> = {};
    if (range) again.range = range;
    if (ifNoneMatch) again['if-none-match'] = ifNoneMatch;
    return this.http.send({ method: 'GET', url: next, headers: again, accept: [304], what: `${what} (redirected)` });
  }
}

/**
 * Canto's token endpoint speaks its own dialect of RFC 6749 ("Obtain an Access Token", "Obtain a
 * Refresh Token"): the client is named `app_id`/`app_secret`, and the answer is camelCase
 * (`accessToken`, `tokenType`, `expiresIn`, `refreshToken`). This view of the upstream client
 * translates both ways on the token endpoint only, so that oauth4webapi (PKCE, error handling)
 * does the protocol work unchanged. An answer already in RFC 6749 form passes as it is.
 */
export function cantoTokenDialect(http: UpstreamClient, isTokenEndpoint: (url: URL) => boolean): UpstreamClient {
  const view = Object.create(http) as UpstreamClient;
  view.send = async (req: UpstreamRequest): Promise<UpstreamResponse> => {
    const url = new URL(String(req.url));
    if (!isTokenEndpoint(url)) return http.send(req);
    let body = req.body;
    if (body !== undefined) {
      const form = new URLSearchParams(body.toString());
      if (form.has('client_id') && !form.has('app_id')) form.set('app_id', form.get('client_id')!);
      if (form.has('client_secret') && !form.has('app_secret')) form.set('app_secret', form.get('client_secret')!);
      body = form.toString();
    }
    const r = await http.send({ ...req, body });
    const text = await readSome(r.body, 64 * 1024);
    let out = text;
    try {
      const j = JSON.parse(text) as Record<string, unknown>;
      if (j && typeof j === 'object' && !Array.isArray(j) && j.access_token === undefined && typeof j.accessToken === 'string') {
        const { accessToken, tokenType, expiresIn, refreshToken, ...rest } = j;
        out = JSON.stringify({ ...rest, access_token: accessToken, token_type: typeof tokenType === 'string' ? tokenType : 'bearer', ...(expiresIn !== undefined ? { expires_in: expiresIn } : {}), ...(refreshToken !== undefined ? { refresh_token: refreshToken } : {}) });
      }
    } catch {
      // not JSON: oauth4webapi reports it
    }
    const buf = Buffer.from(out);
    const headers: UpstreamResponse['headers'] = { ...r.headers, 'content-length': String(buf.length) };
    delete headers['content-encoding'];
    if (out !== text) headers['content-type'] = 'application/json';
    return { status: r.status, headers, body: Readable.from([buf]) };
  };
  return view;
}

async function readSome(body: Readable, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of body) {
    chunks.push(c as Buffer);
    n += (c as Buffer).length;
    if (n > max) {
      discard(body);
      break;
    }
  }
  return Buffer.concat(chunks).subarray(0, max).toString('utf8');
}
