/**
 * The WebDAV calls (RFC 4918): PROPFIND at depth 0 or 1, GET for the bytes. Answers are read with
 * fast-xml-parser, namespace prefixes dropped, so `D:`/`d:`/default-namespace servers read alike.
 * Nothing here knows the hub's asset shape (mapping.ts does).
 */
import { XMLParser } from 'fast-xml-parser';
import { discard, type UpstreamClient, type UpstreamResponse } from '../kit/http.js';
import { malformed } from '../kit/upstream-errors.js';

export interface WebdavCred extends Record<string, unknown> {
  /** Collection URL the connection is rooted at (ends with '/'). */
  url: string;
  user: string;
  pass: string;
}

/** One member of a multistatus answer. */
export interface DavEntry {
  /** Path relative to the connection root, '/'-separated, decoded, no trailing slash ('/' = root). */
  path: string;
  name: string;
  collection: boolean;
  size?: number;
  contentType?: string;
  etag?: string;
  modified?: number;
  created?: number;
  /**
   * The locks on it (DAV:lockdiscovery), or undefined when the server does not report them (rclone
   * answers the property 404): then a lock taken through the hub could never be found again.
   */
  locks?: DavLock[];
  /**
   * What the signed-in user may do on it (RFC 3744 DAV:current-user-privilege-set, aggregates
   * expanded), or undefined when the server does not say (Apache mod_dav, rclone): then anything.
   */
  privileges?: Set<string>;
}

/** One active lock as the server reports it. */
export interface DavLock {
  token: string;
  /** The DAV:owner the locker gave, as text (an href or words); '' when none. */
  owner: string;
  exclusive: boolean;
}

/** The properties every listing asks for: the file's facts, its locks and the user's privileges on it. */
export const PROPS = '<d:displayname/><d:resourcetype/><d:getcontentlength/><d:getcontenttype/><d:getetag/><d:getlastmodified/><d:creationdate/><d:lockdiscovery/><d:current-user-privilege-set/>';
const PROPFIND_BODY = `<?xml version="1.0" encoding="utf-8"?>
<d:propfind xmlns:d="DAV:"><d:prop>${PROPS}</d:prop></d:propfind>`;

const parser = new XMLParser({
  ignoreAttributes: true,
  removeNSPrefix: true,
  parseTagValue: false,
  trimValues: true,
  isArray: (name) => name === 'response' || name === 'propstat' || name === 'activelock' || name === 'privilege',
});

export const PROVIDER_ID = 'webdav';

export function authHeader(c: WebdavCred): string {
  return `Basic ${Buffer.from(`${c.user}:${c.pass}`, 'utf8').toString('base64')}`;
}

/** URL of a path under the connection root; every segment percent-encoded. */
export function urlOf(c: WebdavCred, path: string, collection: boolean): URL {
  const segs = path.split('/').filter(Boolean).map(encodeURIComponent).join('/');
  return new URL(segs + (collection && segs ? '/' : ''), c.url);
}

export async function propfind(http: UpstreamClient, c: WebdavCred, path: string, depth: 0 | 1): Promise<DavEntry[]> {
  const ask = (url: URL) => http.text({
    method: 'PROPFIND', url, what: `PROPFIND ${url.pathname}`, accept: depth === 0 ? [301] : undefined,
    headers: { authorization: authHeader(c), depth: String(depth), 'content-type': 'application/xml; charset=utf-8', accept: 'application/xml, text/xml' },
    body: PROPFIND_BODY,
  });
  let url = urlOf(c, path, depth === 1);
  let r = await ask(url);
  // A folder asked for without its trailing slash: Apache redirects (301) to the slashed URL.
  if (r.status === 301 && path !== '/') r = await ask((url = urlOf(c, path, true)));
  const what = `PROPFIND ${url.pathname}`;
  if (r.status !== 207) throw malformed(PROVIDER_ID, what, `expected 207 Multi-Status, got ${r.status}`, r.text);
  return parseMultistatus(r.text, String(r.headers['content-type'] ?? ''), c, what);
}

export function parseMultistatus(text: string, contentType: string, c: WebdavCred, what: string): DavEntry[] {
  if (!/xml/i.test(contentType)) throw malformed(PROVIDER_ID, what, `expected an XML multistatus but the answer is ${contentType || 'untyped'}`, text);
  let doc: any;
  try {
    doc = parser.parse(text, true);
  } catch (e) {
    throw malformed(PROVIDER_ID, what, `the answer is not well-formed XML (${(e as Error).message})`, text);
  }
  const responses = doc?.multistatus?.response;
  if (!Array.isArray(responses)) throw malformed(PROVIDER_ID, what, 'the answer has no DAV:multistatus', text);
  const rootPath = new URL(c.url).pathname;
  const out: DavEntry[] = [];
  for (const r of responses) {
    if (typeof r?.href !== 'string') continue;
    const ok = (r.propstat ?? []).find((p: any) => typeof p?.status === 'string' && / 200 /.test(`${p.status} `));
    if (!ok?.prop) continue;
    const p = ok.prop;
    let hrefPath: string;
    try {
      hrefPath = decodeURIComponent(new URL(r.href, c.url).pathname);
    } catch {
      continue;
    }
    const root = decodeURIComponent(rootPath);
    if (!hrefPath.startsWith(root.replace(/\/$/, ''))) continue; // never anything outside the connection root
    const rel = `/${hrefPath.slice(root.length).replace(/^\/+|\/+$/g, '')}`;
    const collection = p.resourcetype !== undefined && typeof p.resourcetype === 'object' && p.resourcetype !== null && 'collection' in p.resourcetype;
    const num = (v: unknown) => (typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : undefined);
    const date = (v: unknown) => {
      const t = typeof v === 'string' ? Date.parse(v) : NaN;
      return Number.isNaN(t) ? undefined : t;
    };
    const segs = rel.split('/').filter(Boolean);
    out.push({
      path: rel === '/' ? '/' : rel,
      name: typeof p.displayname === 'string' && p.displayname ? p.displayname : segs.at(-1) ?? '',
      collection,
      size: num(p.getcontentlength),
      contentType: typeof p.getcontenttype === 'string' && p.getcontenttype ? p.getcontenttype : undefined,
      etag: typeof p.getetag === 'string' && p.getetag ? p.getetag : undefined,
      modified: date(p.getlastmodified),
      created: date(p.creationdate),
      ...('lockdiscovery' in p ? { locks: locksOf(p.lockdiscovery) } : {}),
      ...('current-user-privilege-set' in p ? { privileges: privilegesOf(p['current-user-privilege-set']) } : {}),
    });
  }
  return out;
}

/** Text content of a parsed element (a string, or an object of children such as `{ href: '...' }`). */
function textOf(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object') return Object.values(v).map(textOf).filter(Boolean).join(' ');
  return '';
}

/** The active locks of a DAV:lockdiscovery value (empty element: none). */
export function locksOf(v: unknown): DavLock[] {
  const list = (v && typeof v === 'object' ? (v as { activelock?: unknown }).activelock : undefined);
  if (!Array.isArray(list)) return [];
  const out: DavLock[] = [];
  for (const l of list) {
    const token = textOf(l?.locktoken).trim();
    if (!token) continue;
    out.push({ token, owner: textOf(l?.owner).trim(), exclusive: !!l?.lockscope && typeof l.lockscope === 'object' && 'exclusive' in l.lockscope });
  }
  return out;
}

/** RFC 3744 3.12 aggregates: a privilege granted grants those it contains. */
const AGGREGATES: Record<string, string[]> = {
  all: ['read', 'write', 'write-properties', 'write-content', 'bind', 'unbind', 'unlock', 'read-acl', 'write-acl', 'read-current-user-privilege-set'],
  write: ['write-properties', 'write-content', 'bind', 'unbind'],
};

/** The privileges of a DAV:current-user-privilege-set value, aggregates expanded. */
export function privilegesOf(v: unknown): Set<string> {
  const out = new Set<string>();
  const list = v && typeof v === 'object' ? (v as { privilege?: unknown }).privilege : undefined;
  for (const p of Array.isArray(list) ? list : []) {
    if (!p || typeof p !== 'object') continue;
    for (const name of Object.keys(p)) {
      out.add(name);
      for (const sub of AGGREGATES[name] ?? []) out.add(sub);
    }
  }
  return out;
}

/** Whether the server advertises RFC 5323 basicsearch on this collection (DASL header of OPTIONS). */
export async function supportsSearch(http: UpstreamClient, c: WebdavCred): Promise<boolean> {
  const r = await http.send({ method: 'OPTIONS', url: new URL(c.url), headers: { authorization: authHeader(c) }, what: `OPTIONS ${new URL(c.url).pathname}` });
  discard(r.body);
  const dasl = r.headers.dasl;
  return (Array.isArray(dasl) ? dasl.join(',') : String(dasl ?? '')).includes('DAV:basicsearch');
}

const xmlText = (s: string) => s.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[ch]!);
/** A LIKE pattern matching `term` literally: %, _ and the escape character escaped (RFC 5323 5.15.1). */
const likeLiteral = (term: string) => `%${term.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;

/**
 * RFC 5323 SEARCH (basicsearch): files under `path`, any depth, whose display name contains every
 * term, case-insensitively where the server honours caseless (5.18). The arbiter is the collection.
 */
export async function search(http: UpstreamClient, c: WebdavCred, path: string, terms: string[], limit: number): Promise<DavEntry[]> {
  const scope = urlOf(c, path, true).pathname;
  const likes = terms.map((t) => `<d:like caseless="yes"><d:prop><d:displayname/></d:prop><d:literal>${xmlText(likeLiteral(t))}</d:literal></d:like>`).join('');
  const body = `<?xml version="1.0" encoding="utf-8"?>
<d:searchrequest xmlns:d="DAV:"><d:basicsearch>
<d:select><d:prop>${PROPS}</d:prop></d:select>
<d:from><d:scope><d:href>${xmlText(scope)}</d:href><d:depth>infinity</d:depth></d:scope></d:from>
<d:where><d:and><d:not><d:is-collection/></d:not>${likes}</d:and></d:where>
<d:limit><d:nresults>${limit}</d:nresults></d:limit>
</d:basicsearch></d:searchrequest>`;
  const url = new URL(c.url);
  const what = `SEARCH ${url.pathname}`;
  const r = await http.text({ method: 'SEARCH', url, what, headers: { authorization: authHeader(c), 'content-type': 'text/xml; charset=utf-8' }, body });
  if (r.status !== 207) throw malformed(PROVIDER_ID, what, `expected 207 Multi-Status, got ${r.status}`, r.text);
  return parseMultistatus(r.text, String(r.headers['content-type'] ?? ''), c, what);
}

export async function get(http: UpstreamClient, c: WebdavCred, path: string, range: string | undefined, ifNoneMatch: string | undefined): Promise<UpstreamResponse> {
  const url = urlOf(c, path, false);
  const headers: Record<string, string> = { authorization: authHeader(c) };
  if (range) headers.range = range;
  if (ifNoneMatch) headers['if-none-match'] = ifNoneMatch;
  return http.send({ method: 'GET', url, headers, accept: [304], what: `GET ${url.pathname}` });
}

/** The `<message>` of a Sabre/Nextcloud-style error body, else the body. */
export function davErrorMessage(body: string, contentType: string): string {
  if (/xml/i.test(contentType)) {
    try {
      const doc: any = parser.parse(body);
      const m = doc?.error?.message ?? doc?.error?.exception;
      if (typeof m === 'string') return m;
    } catch { /* not XML after all */ }
  }
  return body;
}
