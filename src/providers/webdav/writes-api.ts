/**
 * The WebDAV write requests (RFC 4918): PUT, MOVE, DELETE, MKCOL, LOCK, UNLOCK. Each answers the
 * server's status for the caller to judge (the statuses a write may meet are accepted, not turned
 * into generic errors here), except a failure no write can recover from (401, 5xx, no answer),
 * which the kit's client maps as for every call. Nothing here knows the hub's asset shape.
 */
import type { Readable } from 'node:stream';
import { XMLParser } from 'fast-xml-parser';
import { discard, type UpstreamClient } from '../kit/http.js';
import { malformed } from '../kit/upstream-errors.js';
import { authHeader, locksOf, urlOf, type DavLock, type WebdavCred } from './api.js';

/** Statuses a write answers that mean something to the caller (the rest are errors as for reads). */
const WRITE_STATUSES = [403, 404, 405, 409, 412, 415, 423, 424, 507];

export interface DavAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The body of a multistatus (207) or failed-dependency (424) answer: which members failed, and why. */
  text?: string;
}

/** Conditions of a write: the lock tokens this account holds (by resource) and the entity tag the target must have. */
export interface DavCondition {
  /** `If` header lists: the resource (a URL, tagged) and the token and/or entity tag it must match. */
  tagged?: { url: URL; token?: string; etag?: string }[];
  /** Plain If-Match on the request URI, for servers that evaluate it (Apache does, rclone ignores it). */
  ifMatch?: string;
}

/** The RFC 4918 10.4 `If` header of `cond`, or undefined. Tagged lists: each names its resource. */
export function ifHeader(cond: DavCondition | undefined): string | undefined {
  const lists = (cond?.tagged ?? []).filter((t) => t.token || t.etag);
  if (!lists.length) return undefined;
  return lists.map((t) => `<${t.url.href}> (${[t.token ? `<${t.token}>` : '', t.etag ? `[${t.etag}]` : ''].filter(Boolean).join(' ')})`).join(' ');
}

function headersOf(c: WebdavCred, cond: DavCondition | undefined, extra: Record<string, string> = {}): Record<string, string> {
  const h: Record<string, string> = { authorization: authHeader(c), ...extra };
  const iff = ifHeader(cond);
  if (iff) h.if = iff;
  if (cond?.ifMatch) h['if-match'] = cond.ifMatch;
  return h;
}

async function call(http: UpstreamClient, method: string, url: URL, headers: Record<string, string>, body?: string | Readable): Promise<DavAnswer> {
  const r = await http.send({ method, url, headers, body, accept: WRITE_STATUSES, what: `${method} ${url.pathname}` });
  if (r.status === 207 || r.status === 424) return { status: r.status, headers: r.headers, text: await readAll(r.body) };
  discard(r.body);
  return { status: r.status, headers: r.headers };
}

/** PUT of a stream: sent as read, never retried (the kit's client does not repeat a stream). */
export function put(http: UpstreamClient, c: WebdavCred, path: string, body: { stream: Readable; length: number | null; mimeType: string }, cond?: DavCondition): Promise<DavAnswer> {
  const extra: Record<string, string> = { 'content-type': body.mimeType };
  if (body.length !== null) extra['content-length'] = String(body.length);
  return call(http, 'PUT', urlOf(c, path, false), headersOf(c, cond, extra), body.stream);
}

export function move(http: UpstreamClient, c: WebdavCred, from: string, to: string, opts: { collection: boolean; overwrite: boolean; cond?: DavCondition }): Promise<DavAnswer> {
  const dest = urlOf(c, to, opts.collection);
  return call(http, 'MOVE', urlOf(c, from, opts.collection), headersOf(c, opts.cond, { destination: dest.href, overwrite: opts.overwrite ? 'T' : 'F' }));
}

export function remove(http: UpstreamClient, c: WebdavCred, path: string, collection: boolean, cond?: DavCondition): Promise<DavAnswer> {
  // RFC 4918 9.6.1: a collection is deleted with Depth: infinity (the only depth allowed).
  return call(http, 'DELETE', urlOf(c, path, collection), headersOf(c, cond, collection ? { depth: 'infinity' } : {}));
}

export function mkcol(http: UpstreamClient, c: WebdavCred, path: string): Promise<DavAnswer> {
  return call(http, 'MKCOL', urlOf(c, path, true), headersOf(c, undefined));
}

const parser = new XMLParser({ ignoreAttributes: true, removeNSPrefix: true, parseTagValue: false, trimValues: true, isArray: (n) => n === 'activelock' });
const xmlText = (s: string) => s.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[ch]!);

/**
 * An exclusive write lock (RFC 4918 9.10) owned by `owner` (a URI naming the account), for
 * `timeoutSec` or what the server grants. Depth 0: a file has no members. Answers the token, or
 * the status when the server refused (423: someone else's lock).
 */
export async function lock(http: UpstreamClient, c: WebdavCred, path: string, owner: string, timeoutSec: number): Promise<{ status: number; lock?: DavLock }> {
  const url = urlOf(c, path, false);
  const what = `LOCK ${url.pathname}`;
  const body = `<?xml version="1.0" encoding="utf-8"?>
<d:lockinfo xmlns:d="DAV:"><d:lockscope><d:exclusive/></d:lockscope><d:locktype><d:write/></d:locktype><d:owner><d:href>${xmlText(owner)}</d:href></d:owner></d:lockinfo>`;
  const r = await http.send({
    method: 'LOCK', url, what, body, accept: WRITE_STATUSES,
    headers: { authorization: authHeader(c), depth: '0', timeout: `Second-${timeoutSec}`, 'content-type': 'application/xml; charset=utf-8' },
  });
  if (r.status >= 300) {
    discard(r.body);
    return { status: r.status };
  }
  const text = await readAll(r.body);
  const header = String(r.headers['lock-token'] ?? '').trim().replace(/^<|>$/g, '');
  let found: DavLock | undefined;
  try {
    found = locksOf(parser.parse(text)?.prop?.lockdiscovery).find((l) => l.token === header) ?? locksOf(parser.parse(text)?.prop?.lockdiscovery)[0];
  } catch { /* the header is enough */ }
  const token = header || found?.token;
  if (!token) throw malformed(http.providerId, what, 'the server granted a lock without a Lock-Token', text);
  return { status: r.status, lock: { token, owner: found?.owner ?? owner, exclusive: true } };
}

export function unlock(http: UpstreamClient, c: WebdavCred, path: string, token: string): Promise<DavAnswer> {
  return call(http, 'UNLOCK', urlOf(c, path, false), { authorization: authHeader(c), 'lock-token': `<${token}>` });
}

/** A lock answer is small (one lockdiscovery); anything past 64 KiB is not read. */
async function readAll(body: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const chunk of body) {
    n += (chunk as Buffer).length;
    if (n > 65536) {
      discard(body);
      break;
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
