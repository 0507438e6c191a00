/**
 * Bynder API calls on a portal (the tenant's own domain: https://acme.bynder.com or a custom
 * domain). Reference: https://api.bynder.com/reference (Retrieve assets, Retrieve specific asset,
 * Retrieve asset download location, Collections, Metaproperties, Similar Assets Search, Current
 * user, OAuth 2.0). Only the fields this connector reads are typed; mapping.ts maps them.
 */
import { integrationError } from '../../errors.js';
import { discard, type UpstreamClient, type UpstreamResponse } from '../kit/http.js';

/** A media item (Retrieve specific asset with versions=1: `mediaItems`). */
export interface BynderMediaItem {
  id: string;
  version?: number;
  fileName?: string;
  dateCreated?: string;
  size?: number;
  width?: number;
  height?: number;
  active?: boolean | number;
  type?: string;
}

/** An asset of Retrieve assets / Retrieve specific asset (the fields read here). */
export interface BynderMedia {
  id: string;
  name: string;
  type?: string;
  description?: string;
  copyright?: string;
  tags?: string[];
  extension?: string[];
  fileSize?: number;
  width?: number;
  height?: number;
  dateCreated?: string;
  dateModified?: string;
  datePublished?: string;
  thumbnails?: Record<string, string>;
  original?: string;
  mediaItems?: BynderMediaItem[];
  /** Metaproperties by name: `property_<name>` → option names. */
  [key: `property_${string}`]: unknown;
}

export interface BynderCollection {
  id: string;
  name: string;
  collectionCount?: number;
}

/** Retrieve brands: each brand with its sub-brands. */
export interface BynderBrand {
  id: string;
  name: string;
  subBrands?: { id: string; name: string }[];
}

export interface BynderMetapropertyOption {
  id: string;
  name: string;
  label?: string;
  displayLabel?: string;
  labels?: Record<string, string>;
}

export interface BynderMetaproperty {
  id: string;
  name: string;
  label?: string;
  labels?: Record<string, string>;
  isFilterable?: boolean;
  options?: BynderMetapropertyOption[];
}

/** Retrieve assets with `total=1` (the official SDKs' MediaFullResult) / `count=1` (MediaWithCount). */
interface MediaWithTotal { total?: { count?: unknown }; media?: unknown }
interface MediaWithCount { count?: Record<string, unknown>; media?: unknown }

/** Query of Retrieve assets: keyword, collection, filters. */
export interface MediaQuery {
  keyword?: string;
  collectionId?: string;
  brandId?: string;
  subBrandId?: string;
  /** `property_<name>`, `tags`, `type` → comma-separated values (the documented filter parameters). */
  filters?: Record<string, string>;
  ids?: string[];
}

/** Bynder's error bodies are `{"message": ..., "statuscode": ...}`; an OAuth error `{"error", "error_description"}`. */
export function bynderErrorMessage(body: string): string {
  try {
    const j = JSON.parse(body) as { message?: unknown; error?: unknown; error_description?: unknown };
    if (typeof j.message === 'string') return j.message;
    if (typeof j.error === 'string') return `${j.error}${typeof j.error_description === 'string' ? `: ${j.error_description}` : ''}`;
  } catch {
    // not JSON: an HTML page or plain text, which the kit reduces to its words
  }
  return body;
}

function shapeError(providerId: string, what: string) {
  return integrationError('integration-unavailable', providerId, `${what}: the answer is not in the documented shape`, { status: 502, message: 'Bynder answered in an unexpected format' });
}

/** The Bynder API of one portal over the kit's upstream client (timeouts, retries, Retry-After, breaker, byte caps). */
export class BynderApi {
  constructor(private readonly http: UpstreamClient, private readonly portal: string, private readonly token: string) {}

  private async get<T>(path: string, what: string, query: Record<string, string | number | undefined> = {}): Promise<T> {
    const url = new URL(`${this.portal}${path}`);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, String(v));
    const r = await this.http.json<T>({ method: 'GET', url, what: `Bynder ${what}`, headers: { authorization: `Bearer ${this.token}` } });
    return r.data;
  }

  /** Retrieve assets, one page, with the exact total (`total=1`). */
  async media(q: MediaQuery, page: number, limit: number): Promise<{ media: BynderMedia[]; total: number }> {
    const r = await this.get<MediaWithTotal>('/api/v4/media/', 'Retrieve assets', { ...mediaParams(q), limit, page, total: 1 });
    const count = r?.total?.count;
    if (!Array.isArray(r?.media) || typeof count !== 'number') throw shapeError(this.http.providerId, 'Retrieve assets');
    return { media: r.media as BynderMedia[], total: count };
  }

  /** Facet counts of a query (`count=1`): `property_<name>` / `tags` / `type` → value → count. */
  async counts(q: MediaQuery): Promise<Record<string, Record<string, number>>> {
    const r = await this.get<MediaWithCount>('/api/v4/media/', 'Retrieve assets (counts)', { ...mediaParams(q), limit: 1, page: 1, count: 1 });
    if (!r || typeof r.count !== 'object' || r.count === null) throw shapeError(this.http.providerId, 'Retrieve assets (counts)');
    const out: Record<string, Record<string, number>> = {};
    for (const [k, v] of Object.entries(r.count)) {
      if (typeof v !== 'object' || v === null || Array.isArray(v)) continue;
      out[k] = Object.fromEntries(Object.entries(v).filter(([, n]) => typeof n === 'number')) as Record<string, number>;
    }
    return out;
  }

  /** Retrieve specific asset with its media items (versions). */
  async asset(id: string): Promise<BynderMedia> {
    const m = await this.get<BynderMedia>(`/api/v4/media/${encodeURIComponent(id)}/`, 'Retrieve specific asset', { versions: 1 });
    if (!m || typeof m.id !== 'string' || typeof m.name !== 'string') throw shapeError(this.http.providerId, 'Retrieve specific asset');
    return m;
  }

  /** Retrieve collections, one page (limit at most 1000). */
  async collections(page: number, limit: number): Promise<BynderCollection[]> {
    const r = await this.get<unknown>('/api/v4/collections/', 'Retrieve collections', { limit, page, orderBy: 'name asc' });
    if (!Array.isArray(r)) throw shapeError(this.http.providerId, 'Retrieve collections');
    return r.filter((c): c is BynderCollection => typeof c?.id === 'string' && typeof c?.name === 'string');
  }

  /** Retrieve brands (with their sub-brands). */
  async brands(): Promise<BynderBrand[]> {
    const r = await this.get<unknown>('/api/v4/brands/', 'Retrieve brands');
    if (!Array.isArray(r)) throw shapeError(this.http.providerId, 'Retrieve brands');
    return r.filter((b): b is BynderBrand => typeof b?.id === 'string' && typeof b?.name === 'string')
      .map((b) => ({ ...b, subBrands: Array.isArray(b.subBrands) ? b.subBrands.filter((x) => typeof x?.id === 'string' && typeof x?.name === 'string') : [] }));
  }

  async collection(id: string): Promise<BynderCollection> {
    const c = await this.get<BynderCollection>(`/api/v4/collections/${encodeURIComponent(id)}/`, 'Retrieve specific collection');
    if (!c || typeof c.name !== 'string') throw shapeError(this.http.providerId, 'Retrieve specific collection');
    return { ...c, id };
  }

  /** Retrieve metaproperties with their options (an object keyed by metaproperty name). */
  async metaproperties(): Promise<BynderMetaproperty[]> {
    const r = await this.get<Record<string, BynderMetaproperty>>('/api/v4/metaproperties/', 'Retrieve metaproperties', { options: 1 });
    if (!r || typeof r !== 'object' || Array.isArray(r)) throw shapeError(this.http.providerId, 'Retrieve metaproperties');
    return Object.values(r).filter((m) => typeof m?.name === 'string' && typeof m?.id === 'string');
  }

  /** Retrieve asset (version) download location: `s3_file`, a temporary signed URL. */
  async downloadLocation(id: string, version?: number): Promise<string> {
    const path = version === undefined ? `/api/v4/media/${encodeURIComponent(id)}/download/` : `/api/v4/media/${encodeURIComponent(id)}/${version}/download/`;
    const r = await this.get<{ s3_file?: unknown }>(path, 'Retrieve asset download location');
    if (typeof r?.s3_file !== 'string' || !/^https?:\/\//.test(r.s3_file)) throw shapeError(this.http.providerId, 'Retrieve asset download location');
    return r.s3_file;
  }

  /** Retrieve current user: the account id behind the token. */
  async currentUser(): Promise<{ id: string }> {
    const u = await this.get<{ id?: unknown }>('/api/v4/currentUser/', 'Retrieve current user');
    if (typeof u?.id !== 'string' || !u.id) throw shapeError(this.http.providerId, 'Retrieve current user');
    return { id: u.id };
  }

  /**
   * Similar Assets Search with an image (`imageData`, a base64 data URI; one search parameter per
   * request): asset ids (8-4-4-4-12, lower case) with scores, best first.
   */
  async similar(imageData: string): Promise<{ assetId: string; similarityScore?: number }[]> {
    const r = await this.http.json<{ assets?: unknown }>({
      method: 'POST', url: `${this.portal}/api/1/assets/similarity-search/`, what: 'Bynder Similar Assets Search',
      headers: { authorization: `Bearer ${this.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ imageData }),
      // A search only reads: repeating it after a timeout or 503 is harmless.
      idempotent: true,
    });
    if (!Array.isArray(r.data?.assets)) throw shapeError(this.http.providerId, 'Similar Assets Search');
    return (r.data.assets as { assetId?: unknown; similarityScore?: number }[]).filter((a): a is { assetId: string; similarityScore?: number } => typeof a?.assetId === 'string');
  }

  /** Bytes of a signed download location: fetched WITHOUT the bearer token (it is a signed storage URL). */
  static async fetchSigned(http: UpstreamClient, url: string, range: string | undefined, ifNoneMatch: string | undefined): Promise<UpstreamResponse> {
    const headers: Record<string, string> = {};
    if (range) headers.range = range;
    if (ifNoneMatch) headers['if-none-match'] = ifNoneMatch;
    return http.send({ method: 'GET', url, what: 'Bynder download location', headers, accept: [304, 416] });
  }

  /** A public CDN rendition (thumbnails map): no token either. */
  static rendition(http: UpstreamClient, url: string): Promise<UpstreamResponse> {
    return http.send({ method: 'GET', url, what: 'Bynder thumbnail' });
  }

  /**
   * Retrieve scopes, which needs no token: a portal answers it with `{"groups": [...]}`. Whether
   * a serverUrl is a Bynder portal at all is told by it before a user is sent there.
   */
  static async probePortal(http: UpstreamClient, portal: string): Promise<{ ok: true } | { ok: false; why: string }> {
    const r = await http.send({ method: 'GET', url: `${portal}/v6/authentication/oauth2/scopes`, what: 'Bynder portal check (Retrieve scopes)', accept: [301, 302, 303, 307, 308, 400, 401, 403, 404, 405, 410] });
    const ct = String(r.headers['content-type'] ?? '');
    if (r.status !== 200 || !/\bjson\b/i.test(ct)) {
      discard(r.body);
      const location = r.headers.location;
      // A portal named with http:// or an old domain answers a redirect: say where, not just "no".
      if (r.status >= 300 && r.status < 400 && typeof location === 'string') return { ok: false, why: `it redirects to ${location.slice(0, 200)}; use that address` };
      return { ok: false, why: `it answered ${r.status}${ct ? ` ${ct.split(';')[0]}` : ''}` };
    }
    const chunks: Buffer[] = [];
    let n = 0;
    for await (const c of r.body) {
      n += (c as Buffer).length;
      // The scopes overview is a few KiB; anything much larger is not it.
      if (n > 256 * 1024) {
        discard(r.body);
        return { ok: false, why: 'its answer is far larger than the scopes overview' };
      }
      chunks.push(c as Buffer);
    }
    try {
      const j = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { groups?: unknown };
      return Array.isArray(j.groups) ? { ok: true } : { ok: false, why: 'its JSON is not the scopes overview' };
    } catch {
      return { ok: false, why: 'its answer is not JSON' };
    }
  }

}

function mediaParams(q: MediaQuery): Record<string, string | undefined> {
  return {
    ...(q.filters ?? {}),
    keyword: q.keyword || undefined,
    collectionId: q.collectionId,
    brandId: q.brandId,
    subBrandId: q.subBrandId,
    ids: q.ids?.length ? q.ids.join(',') : undefined,
  };
}
