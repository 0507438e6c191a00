/**
 * A loopback stand-in for Microsoft Graph (OneDrive and SharePoint) and the Microsoft identity
 * platform that answers only with bodies built from the examples of Microsoft's published
 * reference (test/fixtures/microsoft365/*.json, each naming its page and section). A tree of files
 * is made by copying the documented driveItem examples with other names, ids and paths; pages,
 * nextLinks, errors and tokens keep the documented shapes. Listing and search pages are small so
 * that nextLinks are followed.
 *
 * Paths of the tree go to the user's OneDrive ("My files"); paths starting with `@site/` go to the
 * document library of the first followed SharePoint site (whose files, as on SharePoint, report
 * only quickXorHash). `ids` holds the hub's ids of every path (folders too).
 *
 * The identity side plays the user's consent: /common/oauth2/v2.0/authorize redirects straight
 * back with a code; /common/oauth2/v2.0/token checks the PKCE verifier (S256) and answers the
 * documented token body; every refresh issues a new refresh token and, as documented, leaves the
 * old one valid. `/content` answers 302 to a pre-authenticated URL (`/dl/...`, no Authorization
 * needed), thumbnails are pre-authenticated URLs too (`/thumb/...`).
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { itemId as hubItemId } from '../../src/providers/microsoft365/mapping.js';
import { issueTokens, PendingCodes } from './oauth-replay.js';
import { serveBytes } from './replay-bytes.js';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../test/fixtures/microsoft365');
export const m365Fixture = (name: string): any => JSON.parse(fs.readFileSync(path.join(FIXTURES, `${name}.json`), 'utf8'));

interface Node {
  meta: any;
  drive: string;
  children?: Node[];
  /** Newest first: { id, size, date, content }. */
  versions?: { id: string; lastModifiedDateTime: string; content: Buffer }[];
  /** A folder whose entries are made when listed (the 100,000-entry folder). */
  generated?: number;
}

export type M365Fault = 'rate-limit' | 'html' | 'hang' | 'expired-token' | 'cursor-expired' | 'service-unavailable';

export interface M365Replay {
  url: string;
  /** The hub's ids of the tree's paths (files and folders). */
  ids: Record<string, string>;
  /** Requests seen, by path. */
  calls: Map<string, number>;
  /** Requests to the pre-authenticated download URLs: their headers. */
  downloads: { path: string; headers: http.IncomingHttpHeaders }[];
  /** Thumbnail URL fetches, by Graph item id. */
  thumbnails: Map<string, number>;
  /** The query of the last authorization request. */
  lastAuthorize: URLSearchParams | null;
  /** The refresh tokens issued, in order. */
  refreshTokens: string[];
  /** The next `n` Graph calls answer this way (`cursor-expired`: the next `n` calls carrying a skiptoken). */
  fault(kind: M365Fault, n?: number, retryAfter?: string): void;
  /** Invalidates every access token issued so far (an expired or revoked token). */
  revokeTokens(): void;
  /** Invalidates the refresh tokens too (the user revoked the app's sessions). */
  revokeAll(): void;
  /** A personal Microsoft account: followedSites is not supported (Graph's notSupported error). */
  personal(on: boolean): void;
  /** Item-scoped search answers matches from the whole drive (Graph documents search per drive). */
  wideSearch(on: boolean): void;
  /** Deletes a path (between a listing and a detail). */
  remove(p: string): void;
  /** The current bytes of a file path, and of its version k (1 = oldest). */
  content(p: string, version?: number): Buffer;
  /** Graph's own id of a path. */
  graphId(p: string): string;
  close(): Promise<void>;
}

const MIME: Record<string, string> = { jpg: 'image/jpeg', jpeg: 'image/jpeg', png: 'image/png', txt: 'text/plain', pdf: 'application/pdf', mp4: 'video/mp4', docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document' };

export async function startMicrosoft365Replay(tree: string[], revisions: Record<string, number> = {}, opts: { huge?: { path: string; count: number } } = {}): Promise<M365Replay> {
  const tokenFx = m365Fixture('oauth2_token');
  const me = m365Fixture('me').response;
  const drives = m365Fixture('drive');
  const sites = m365Fixture('sites');
  const items = m365Fixture('items');
  const coll = m365Fixture('collections');
  const errors = m365Fixture('errors');
  const thumbImage = await sharp({ create: { width: 176, height: 117, channels: 3, background: '#0364b8' } }).jpeg().toBuffer();

  const MY = drives.me.id as string;
  const LIB = drives.site_drives.value[0].id as string;
  const SITE1 = sites.followed.value[0].id as string;
  const SITE2 = sites.followed.value[1].id as string;
  let seq = 0;
  const newId = () => `01NKDM7HMOJTVYMDOSXF${String(++seq).padStart(14, '0')}`;
  const nodes = new Map<string, Node>(); // `${drive} ${id}` → node
  const key = (d: string, id: string) => `${d} ${id}`;
  const byPath = new Map<string, Node>();
  const ids: Record<string, string> = {};
  const graphIds: Record<string, string> = {};

  const rootOf = (drive: string, webUrl: string): Node => {
    const id = newId();
    const node: Node = { meta: { ...items.root, id, webUrl, folder: { childCount: 0 } }, drive, children: [] };
    nodes.set(key(drive, id), node);
    nodes.set(key(drive, 'root'), node);
    return node;
  };
  const roots: Record<string, Node> = { [MY]: rootOf(MY, drives.me.webUrl), [LIB]: rootOf(LIB, drives.site_drives.value[0].webUrl) };
  const pathOf = (parentPath: string, name: string) => (parentPath === '/drive/root:' ? `/drive/root:/${name}` : `${parentPath}/${name}`);
  const placeOf = (p: string) => (p.startsWith('@site/') ? { drive: LIB, rel: p.slice(6) } : { drive: MY, rel: p });

  function folder(full: string): Node {
    const hit = byPath.get(full);
    if (hit) return hit;
    const { drive, rel } = placeOf(full);
    const i = rel.lastIndexOf('/');
    const parentFull = i < 0 ? null : full.slice(0, full.length - rel.length + i);
    const parent = parentFull ? folder(parentFull) : roots[drive]!;
    const name = rel.slice(i + 1);
    const parentPath = parent.meta.root ? '/drive/root:' : pathOf(parent.meta.parentReference.path, parent.meta.name);
    const id = newId();
    const node: Node = {
      meta: { ...items.folder, id, name, folder: { childCount: 0 }, webUrl: `${parent.meta.webUrl}/${encodeURIComponent(name)}`, parentReference: { ...items.folder.parentReference, driveId: drive, driveType: drive === MY ? 'business' : 'documentLibrary', id: parent.meta.id, path: parentPath } },
      drive, children: [],
    };
    parent.children!.push(node);
    parent.meta.folder.childCount++;
    nodes.set(key(drive, id), node);
    byPath.set(full, node);
    ids[full] = hubItemId(drive, id);
    graphIds[full] = id;
    return node;
  }

  const bytesOf = (p: string, k: number) => Buffer.from(`${p}#${k} `.repeat(40 + k * 7));
  const fileMeta = (full: string, parent: Node, drive: string, id: string, content: Buffer, k: number) => {
    const name = full.slice(full.lastIndexOf('/') + 1);
    const ext = name.slice(name.lastIndexOf('.') + 1).toLowerCase();
    const mimeType = MIME[ext] ?? 'application/octet-stream';
    const image = mimeType.startsWith('image/');
    const { image: _i, photo: _p, file: fileFacet, ...base } = items.file;
    const hashes: Record<string, string> = { quickXorHash: fileFacet.hashes.quickXorHash };
    // OneDrive for Business and SharePoint report quickXorHash only; the personal-style hashes are kept on "My files" to exercise their mapping.
    if (drive === MY) {
      hashes.sha1Hash = createHash('sha1').update(content).digest('hex').toUpperCase();
      hashes.sha256Hash = createHash('sha256').update(content).digest('hex').toUpperCase();
    }
    const tag = `{${id.slice(-8)}-${k}}`;
    return {
      ...base, id, name, size: content.length, cTag: `"c:${tag},${k}"`, eTag: `"${tag},${k}"`,
      lastModifiedDateTime: new Date(Date.UTC(2024, 0, 1 + k, 12)).toISOString().replace('.000', ''),
      file: { mimeType, hashes },
      ...(image ? { image: items.file.image, photo: items.file.photo } : {}),
      webUrl: `${parent.meta.webUrl}/${encodeURIComponent(name)}`,
      parentReference: { ...items.file.parentReference, driveId: drive, driveType: drive === MY ? 'business' : 'documentLibrary', id: parent.meta.id, path: parent.meta.root ? '/drive/root:' : pathOf(parent.meta.parentReference.path, parent.meta.name) },
    };
  };

  for (const full of tree) {
    const { drive, rel } = placeOf(full);
    const i = rel.lastIndexOf('/');
    const parent = i < 0 ? roots[drive]! : folder(full.slice(0, full.length - rel.length + i));
    const id = newId();
    const n = 1 + (revisions[full] ?? 0);
    const versions = Array.from({ length: n }, (_, k) => ({ id: `${k + 1}.0`, lastModifiedDateTime: new Date(Date.UTC(2024, 0, 1 + k, 12)).toISOString(), content: bytesOf(full, k) })).reverse();
    const node: Node = { meta: fileMeta(full, parent, drive, id, versions[0]!.content, n - 1), drive, versions };
    parent.children!.push(node);
    parent.meta.folder.childCount++;
    nodes.set(key(drive, id), node);
    byPath.set(full, node);
    ids[full] = hubItemId(drive, id);
    graphIds[full] = id;
  }
  if (opts.huge) {
    const f = folder(opts.huge.path);
    f.generated = opts.huge.count;
    f.meta.folder.childCount = opts.huge.count;
  }

  const childrenOf = (n: Node): any[] => {
    if (n.generated !== undefined) {
      return { length: n.generated, slice: (a: number, b: number) => Array.from({ length: Math.max(0, Math.min(b, n.generated!) - a) }, (_, k) => ({ ...items.file, id: `gen${a + k}`, name: `entry ${a + k}.txt`, image: undefined, photo: undefined, file: { mimeType: 'text/plain' }, parentReference: { ...n.meta.parentReference, id: n.meta.id, path: pathOf(n.meta.parentReference.path, n.meta.name) } })) } as any;
    }
    return n.children!.map((c) => c.meta);
  };
  const descendants = (n: Node): Node[] => (n.children ?? []).flatMap((c) => [c, ...descendants(c)]);

  const LIST_PAGE = 7;
  const SEARCH_PAGE = 5;
  const skip = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const unskip = (s: string | null): any => {
    try {
      return s ? JSON.parse(Buffer.from(s, 'base64url').toString()) : null;
    } catch {
      return null;
    }
  };

  const tokens = new Set<string>();
  const refresh = new Set<string>();
  const refreshTokens: string[] = [];
  const codes = new PendingCodes();
  const pre = new Map<string, Buffer>(); // pre-authenticated download URLs
  let faults: { kind: M365Fault; n: number; retryAfter: string } | null = null;
  const calls = new Map<string, number>();
  const downloads: M365Replay['downloads'] = [];
  const thumbnails = new Map<string, number>();
  let lastAuthorize: URLSearchParams | null = null;
  let wide = false;
  let personal = false;

  const send = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json; odata.metadata=minimal; charset=utf-8', ...headers });
    res.end(JSON.stringify(body));
  };
  const issue = (base: any) => {
    const body = issueTokens(base, ++seq, tokens, refresh);
    refreshTokens.push(body.refresh_token);
    // No `openid` scope was asked: no id_token ("Issued if the original scope parameter included the openid scope").
    const { id_token: _id, ...rest } = body;
    return rest;
  };

  let origin = '';
  const server = http.createServer(async (req, res) => {
    const u = new URL(req.url!, 'http://x');
    let raw = '';
    for await (const c of req) raw += c;
    const p = decodeURIComponent(u.pathname);
    calls.set(p, (calls.get(p) ?? 0) + 1);

    if (p === '/common/oauth2/v2.0/authorize') {
      lastAuthorize = u.searchParams;
      res.writeHead(302, { location: codes.issue(u, `OAAABAAAAiL9Kn2Z27UubvWFPbm0gLWQJVzCTE9UkP3pSx1aXxUjq3n8b2JRLk4OxVXr.${++seq}`) });
      return res.end();
    }
    if (p === '/common/oauth2/v2.0/token') {
      const f = new URLSearchParams(raw);
      if (f.get('grant_type') === 'authorization_code') {
        if (!codes.redeem(f)) return send(res, 400, { ...tokenFx.invalid_grant, error_description: 'AADSTS50148: The code_verifier does not match the code_challenge supplied in the authorization request for PKCE.' });
        return send(res, 200, issue(tokenFx.code));
      }
      if (f.get('grant_type') === 'refresh_token') {
        if (!refresh.has(f.get('refresh_token') ?? '')) return send(res, 400, tokenFx.invalid_grant);
        // A new refresh token every time; the old one stays valid until it expires (refresh-tokens page).
        return send(res, 200, issue(tokenFx.refresh));
      }
      return send(res, 400, { ...tokenFx.invalid_grant, error: 'unsupported_grant_type' });
    }
    // Pre-authenticated URLs: no Authorization needed (Graph: "don't require an Authorization header").
    if (p.startsWith('/dl/')) {
      downloads.push({ path: p, headers: req.headers });
      const body = pre.get(p.slice(4));
      if (!body) return send(res, 404, errors.itemNotFound);
      return serveBytes(req, res, body);
    }
    if (p.startsWith('/thumb/')) {
      const id = p.slice(7);
      thumbnails.set(id, (thumbnails.get(id) ?? 0) + 1);
      res.writeHead(200, { 'content-type': 'image/jpeg' });
      return res.end(thumbImage);
    }
    if (!p.startsWith('/v1.0/')) return send(res, 404, errors.itemNotFound);

    const skiptoken = u.searchParams.get('$skiptoken');
    if (faults && faults.n > 0 && (faults.kind !== 'cursor-expired' || skiptoken)) {
      faults.n--;
      const k = faults.kind;
      if (k === 'hang') return; // never answers; the client's deadline must end it
      if (k === 'html') {
        res.writeHead(503, { 'content-type': 'text/html' });
        return res.end(`<!DOCTYPE html><html><head><title>Service Unavailable</title><style>body{font:12px}</style></head><body><h1>Service Unavailable</h1><p>The service is temporarily unavailable &amp; will be back.</p>${'<p>padding</p>'.repeat(2000)}</body></html>`);
      }
      if (k === 'rate-limit') return send(res, 429, errors.throttled, { 'retry-after': faults.retryAfter });
      if (k === 'service-unavailable') return send(res, 503, { error: { ...errors.throttled.error, code: 'serviceNotAvailable', message: 'The service is not available. Try the request again after a delay.' } }, { 'retry-after': faults.retryAfter });
      if (k === 'expired-token') return send(res, 401, errors.unauthenticated);
      if (k === 'cursor-expired') return send(res, 400, errors.invalidRequest);
    }
    const auth = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!auth || !tokens.has(auth)) return send(res, 401, errors.unauthenticated);
    const notFound = () => send(res, 404, errors.itemNotFound);
    const rest = p.slice('/v1.0/'.length);

    if (rest === 'me') return send(res, 200, me);
    if (rest === 'me/drive') return send(res, 200, drives.me);
    if (rest === 'me/followedSites') {
      return personal ? send(res, 400, { error: { ...errors.invalidRequest.error, code: 'notSupported', message: 'The request is not supported by the system.' } }) : send(res, 200, sites.followed);
    }
    let m = /^sites\/([^/]+)(\/drives)?$/.exec(rest);
    if (m) {
      if (m[1] !== SITE1 && m[1] !== SITE2) return notFound();
      if (m[2]) return send(res, 200, m[1] === SITE1 ? drives.site_drives : { ...drives.site_drives, value: [] });
      return send(res, 200, m[1] === SITE1 ? sites.site : { ...sites.site, id: SITE2, displayName: sites.followed.value[1].displayName, webUrl: sites.followed.value[1].webUrl });
    }
    m = /^drives\/([^/]+)\/items\/([^/]+)(?:\/(children|versions|thumbnails|content|search\(q='(.*)'\))(?:\/([^/]+)\/content)?)?$/s.exec(rest);
    if (!m) return send(res, 400, errors.invalidRequest);
    const [, d, i, sub, q, vid] = m;
    const node = nodes.get(key(d!, i!));
    if (!node) return notFound();
    const base = `${origin}/v1.0/drives/${encodeURIComponent(d!)}/items/${encodeURIComponent(i!)}`;
    if (!sub) return send(res, 200, node.meta);
    if (sub === 'children') {
      if (!node.children && node.generated === undefined) return send(res, 200, { value: [] });
      const all = childrenOf(node);
      const o = skiptoken ? unskip(skiptoken)?.o : 0;
      if (typeof o !== 'number') return send(res, 400, errors.invalidRequest);
      const more = o + LIST_PAGE < all.length;
      return send(res, 200, { value: all.slice(o, o + LIST_PAGE), ...(more ? { '@odata.nextLink': `${base}/children?$top=${LIST_PAGE}&$skiptoken=${skip({ o: o + LIST_PAGE })}` } : {}) });
    }
    if (q !== undefined) {
      const term = q.replace(/''/g, "'").toLowerCase();
      const under = descendants(wide ? roots[node.drive]! : node);
      const named = under.filter((n) => n.meta.name.toLowerCase().includes(term)).map((n) => n.meta);
      // The generated entries ("entry N.txt") of a huge folder are made only for the page asked.
      const huge = under.filter((n) => n.generated !== undefined && 'entry '.includes(term));
      const total = named.length + huge.reduce((k, n) => k + n.generated!, 0);
      const slice = (a: number, b: number) => {
        const out = named.slice(a, b);
        let skipN = Math.max(0, a - named.length);
        for (const h of huge) {
          if (out.length >= b - a) break;
          const part = childrenOf(h).slice(skipN, skipN + (b - a - out.length));
          out.push(...part);
          skipN = Math.max(0, skipN - h.generated!);
        }
        return out.map((m: any) => ({ ...m, searchResult: coll.search.value[0].searchResult }));
      };
      const hits = { length: total, slice };
      const o = skiptoken ? unskip(skiptoken)?.o : 0;
      if (typeof o !== 'number') return send(res, 400, errors.invalidRequest);
      const more = o + SEARCH_PAGE < hits.length;
      const self = `${base}/search(q='${encodeURIComponent(q)}')`;
      return send(res, 200, { value: hits.slice(o, o + SEARCH_PAGE), ...(more ? { '@odata.nextLink': `${self}?$skiptoken=${skip({ o: o + SEARCH_PAGE })}` } : {}) });
    }
    if (!node.versions) return notFound();
    if (sub === 'versions' && !vid) {
      const tpl = coll.versions.value[0];
      return send(res, 200, { value: node.versions.map((v) => ({ ...tpl, id: v.id, lastModifiedDateTime: v.lastModifiedDateTime, size: v.content.length })) });
    }
    if (sub === 'thumbnails') {
      if (!node.meta.image) return send(res, 200, { value: [] });
      const tpl = coll.thumbnails.value[0];
      const at = (s: string) => `${origin}/thumb/${node.meta.id}?s=${s}`;
      return send(res, 200, { value: [{ ...tpl, small: { ...tpl.small, url: at('small') }, medium: { ...tpl.medium, url: at('medium') }, large: { ...tpl.large, url: at('large') } }] });
    }
    if (sub === 'content' || vid) {
      const v = vid ? node.versions.find((x) => x.id === vid) : node.versions[0];
      if (!v) return notFound();
      if (!vid && req.headers['if-none-match'] && req.headers['if-none-match'] === node.meta.cTag) {
        res.writeHead(304);
        return res.end();
      }
      const t = `${node.meta.id}-${v.id}-${++seq}`;
      pre.set(t, v.content);
      res.writeHead(302, { location: `${origin}/dl/${t}` });
      return res.end();
    }
    return send(res, 400, errors.invalidRequest);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: origin,
    ids,
    calls,
    downloads,
    thumbnails,
    get lastAuthorize() {
      return lastAuthorize;
    },
    refreshTokens,
    fault(kind, n = 1, retryAfter = '300') {
      faults = { kind, n, retryAfter };
    },
    revokeTokens() {
      tokens.clear();
    },
    personal(on) {
      personal = on;
    },
    wideSearch(on) {
      wide = on;
    },
    revokeAll() {
      tokens.clear();
      refresh.clear();
    },
    remove(pth) {
      const n = byPath.get(pth);
      if (!n) return;
      nodes.delete(key(n.drive, n.meta.id));
      for (const parent of nodes.values()) if (parent.children?.includes(n)) parent.children = parent.children.filter((c) => c !== n);
    },
    content(pth, version) {
      const n = byPath.get(pth)!;
      return version === undefined ? n.versions![0]!.content : n.versions![n.versions!.length - version]!.content;
    },
    graphId: (pth) => graphIds[pth]!,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}
