/**
 * Microsoft Graph v1.0 calls for OneDrive and SharePoint (reference:
 * https://learn.microsoft.com/en-us/graph/api/resources/onedrive). Only the fields this connector
 * reads are typed; mapping to the hub's shape is mapping.ts. Every call here is a GET (reads only),
 * so the kit's client retries it after a 429/503 and honours Retry-After.
 */
import { integrationError } from '../../errors.js';
import { discard, type UpstreamClient, type UpstreamResponse } from '../kit/http.js';
import type { UpstreamPage } from '../saas/listing.js';

/** itemReference (the fields read here). */
export interface GraphItemRef { driveId?: string; driveType?: string; id?: string; path?: string }

/** driveItem (the fields read here). */
export interface GraphItem {
  id: string;
  name: string;
  size?: number;
  eTag?: string;
  cTag?: string;
  createdDateTime?: string;
  lastModifiedDateTime?: string;
  webUrl?: string;
  description?: string;
  parentReference?: GraphItemRef;
  file?: { mimeType?: string; hashes?: { sha1Hash?: string; sha256Hash?: string; quickXorHash?: string; crc32Hash?: string } };
  folder?: { childCount?: number };
  package?: { type?: string };
  root?: object;
  image?: { width?: number; height?: number };
  photo?: {
    cameraMake?: string; cameraModel?: string; exposureDenominator?: number; exposureNumerator?: number; fNumber?: number;
    iso?: number; orientation?: number; takenDateTime?: string;
  };
  createdBy?: { user?: { displayName?: string } };
  lastModifiedBy?: { user?: { displayName?: string } };
  remoteItem?: object;
}

export interface GraphDrive { id: string; name?: string; driveType?: string; webUrl?: string }
export interface GraphSite { id: string; displayName?: string; name?: string; webUrl?: string }
export interface GraphVersion { id: string; lastModifiedDateTime?: string; size?: number; lastModifiedBy?: { user?: { displayName?: string } } }
export interface GraphThumbnailSet { id?: string; small?: { url?: string }; medium?: { url?: string }; large?: { url?: string } }

interface Collection<T> { value?: T[]; '@odata.nextLink'?: string }

/** The upstream message of a Graph error body ("Microsoft Graph error responses"): `code: message`. */
export function graphErrorMessage(body: string): string {
  try {
    const e = (JSON.parse(body) as { error?: { code?: unknown; message?: unknown } }).error;
    if (e && typeof e.code === 'string') return `${e.code}${typeof e.message === 'string' && e.message ? `: ${e.message}` : ''}`;
  } catch {
    // not JSON: an HTML error page of a proxy, reduced to its words by the kit
  }
  return body;
}

/** An OData string literal inside a function call (search(q='...')): a quote is doubled. */
export const odataString = (s: string) => `'${s.replace(/'/g, "''")}'`;

/** Microsoft Graph over the kit's upstream client (timeouts, retries, Retry-After, circuit breaker). */
export class GraphApi {
  private readonly base: URL;

  constructor(private readonly http: UpstreamClient, graphBase: string) {
    this.base = new URL(graphBase.replace(/\/+$/, '') + '/');
  }

  private url(path: string, query: Record<string, string> = {}): URL {
    const u = new URL(path.replace(/^\//, ''), this.base);
    for (const [k, v] of Object.entries(query)) u.searchParams.set(k, v);
    return u;
  }

  private async get<T>(token: string, url: URL, what: string): Promise<T> {
    const r = await this.http.json<T>({ method: 'GET', url, what: `Microsoft Graph ${what}`, headers: { authorization: `Bearer ${token}`, accept: 'application/json' } });
    if (r.data === null || typeof r.data !== 'object') throw shapeError(this.http.providerId, what);
    return r.data;
  }

  /**
   * An `@odata.nextLink` is a whole URL; the user's token is sent only to one under the configured
   * Graph base (a link elsewhere would carry the token to another host).
   */
  private nextUrl(link: string, what: string): URL {
    let u: URL;
    try {
      u = new URL(link);
    } catch {
      throw shapeError(this.http.providerId, what);
    }
    if (u.origin !== this.base.origin || !u.pathname.startsWith(this.base.pathname)) {
      throw integrationError('integration-unavailable', this.http.providerId, `${what}: the next page link points outside ${this.base.origin}${this.base.pathname}`, { status: 502 });
    }
    return u;
  }

  private async page<T>(token: string, url: URL, what: string): Promise<UpstreamPage<T>> {
    const r = await this.get<Collection<T>>(token, url, what);
    if (!Array.isArray(r.value)) throw shapeError(this.http.providerId, what);
    return { items: r.value, next: typeof r['@odata.nextLink'] === 'string' ? r['@odata.nextLink'] : null };
  }

  /** A collection's next page (the cursor is the nextLink Graph gave). */
  more<T>(token: string, link: string, what: string): Promise<UpstreamPage<T>> {
    return this.page<T>(token, this.nextUrl(link, what), what);
  }

  /** GET /me: the signed-in user (its id is the account id). */
  me(token: string): Promise<{ id?: string; displayName?: string; userPrincipalName?: string; mail?: string }> {
    return this.get(token, this.url('me', { $select: 'id,displayName,userPrincipalName,mail' }), 'me');
  }

  /** GET /me/drive: the user's OneDrive ("My files"). */
  myDrive(token: string): Promise<GraphDrive> {
    return this.get(token, this.url('me/drive'), 'me/drive');
  }

  /** GET /me/followedSites: the SharePoint sites the user follows (work or school accounts only). */
  followedSites(token: string): Promise<UpstreamPage<GraphSite>> {
    return this.page(token, this.url('me/followedSites'), 'me/followedSites');
  }

  site(token: string, siteId: string): Promise<GraphSite> {
    return this.get(token, this.url(`sites/${encodeURIComponent(siteId)}`), 'sites');
  }

  /** GET /sites/{id}/drives: the site's document libraries. */
  siteDrives(token: string, siteId: string): Promise<UpstreamPage<GraphDrive>> {
    return this.page(token, this.url(`sites/${encodeURIComponent(siteId)}/drives`), 'sites/drives');
  }

  private itemPath(driveId: string, itemId: string): string {
    return `drives/${encodeURIComponent(driveId)}/items/${encodeURIComponent(itemId)}`;
  }

  item(token: string, driveId: string, itemId: string): Promise<GraphItem> {
    return this.get(token, this.url(this.itemPath(driveId, itemId)), 'driveItem');
  }

  /** GET .../children, in pages of 200 (the documented default page size). */
  children(token: string, driveId: string, itemId: string): Promise<UpstreamPage<GraphItem>> {
    return this.page(token, this.url(`${this.itemPath(driveId, itemId)}/children`, { $top: '200' }), 'driveItem children');
  }

  /** GET .../search(q='...'): matches in the folder's hierarchy (name, metadata, content). */
  search(token: string, driveId: string, itemId: string, q: string): Promise<UpstreamPage<GraphItem>> {
    // The function call is one path segment: the literal is percent-encoded as a whole, quotes doubled first.
    return this.page(token, this.url(`${this.itemPath(driveId, itemId)}/search(q=${encodeURIComponent(odataString(q))})`, { $top: '200' }), 'driveItem search');
  }

  /** GET .../versions: newest first (Graph: "Versions are returned in descending order"). */
  versions(token: string, driveId: string, itemId: string): Promise<UpstreamPage<GraphVersion>> {
    return this.page(token, this.url(`${this.itemPath(driveId, itemId)}/versions`), 'driveItem versions');
  }

  thumbnails(token: string, driveId: string, itemId: string): Promise<UpstreamPage<GraphThumbnailSet>> {
    return this.page(token, this.url(`${this.itemPath(driveId, itemId)}/thumbnails`), 'driveItem thumbnails');
  }

  /**
   * The bytes of a file (or of one of its versions): `/content` answers 302 to a pre-authenticated
   * URL, which is fetched without the Authorization header (Graph: Range goes to that URL, not to
   * `/content`). If-None-Match is checked by `/content` itself (304).
   */
  async content(token: string, driveId: string, itemId: string, versionId: string | null, range: string | undefined, ifNoneMatch: string | undefined): Promise<UpstreamResponse> {
    const path = versionId === null ? `${this.itemPath(driveId, itemId)}/content` : `${this.itemPath(driveId, itemId)}/versions/${encodeURIComponent(versionId)}/content`;
    const what = versionId === null ? 'Microsoft Graph driveItem content' : 'Microsoft Graph driveItemVersion content';
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (ifNoneMatch) headers['if-none-match'] = ifNoneMatch;
    const r = await this.http.send({ method: 'GET', url: this.url(path), what, headers, accept: [302, 304] });
    if (r.status !== 302) return r;
    discard(r.body);
    const location = r.headers.location;
    const to = typeof location === 'string' ? safeHttpUrl(location, this.url(path)) : null;
    if (!to) throw integrationError('integration-unavailable', this.http.providerId, `${what} answered 302 without a usable Location`, { status: 502 });
    return this.http.send({ method: 'GET', url: to, what: `${what} (pre-authenticated URL)`, headers: range ? { range } : {} });
  }

  /** A thumbnail's pre-authenticated URL (ThumbnailSet url), fetched without the user's token. */
  fetchPreauthenticated(url: string, what: string): Promise<UpstreamResponse> | null {
    const to = safeHttpUrl(url, this.base);
    return to ? this.http.send({ method: 'GET', url: to, what }) : null;
  }
}

function safeHttpUrl(link: string, base: URL): URL | null {
  try {
    const u = new URL(link, base);
    return u.protocol === 'https:' || u.protocol === 'http:' ? u : null;
  } catch {
    return null;
  }
}

function shapeError(providerId: string, what: string) {
  return integrationError('integration-unavailable', providerId, `Microsoft Graph ${what}: the answer is not the documented shape`, { status: 502, message: 'Microsoft Graph answered in an unexpected format' });
}
