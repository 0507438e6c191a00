/**
 * A loopback stand-in for one Canto tenant and its OAuth host, answering only in the shapes of
 * Canto's published API reference (test/fixtures/canto/*.json, each naming its page and section):
 * the documented tree node, content and list records are copied with other names and ids to make
 * a library big enough to page. A directory that holds files is an album; its ancestors are
 * folders ("Library/Photos/a.jpg": folder Library, album Photos).
 *
 * The OAuth side plays the user's consent: /oauth/api/oauth2/authorize redirects straight back
 * with a code; /oauth/api/oauth2/token wants Canto's app_id/app_secret, checks the PKCE verifier
 * (S256) and answers the documented camelCase body.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { PendingCodes } from './oauth-replay.js';
import { serveBytes } from './replay-bytes.js';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../test/fixtures/canto');
export const cantoFixture = (name: string): any => JSON.parse(fs.readFileSync(path.join(FIXTURES, `${name}.json`), 'utf8'));

const SCHEME_BY_EXT: Record<string, string> = { jpg: 'image', jpeg: 'image', png: 'image', gif: 'image', mp4: 'video', mov: 'video', mp3: 'audio', wav: 'audio', pdf: 'document', txt: 'document', docx: 'document', pptx: 'presentation' };

export type CantoFault = 'rate-limit' | 'rate-limit-long' | 'html' | 'hang' | 'expired-token' | 'rate-limit-counts';

export interface CantoReplay {
  url: string;
  /** Hub folder ids (`folder:..`, `album:..`) and asset ids (`image:..`) by path. */
  ids: Record<string, string>;
  /** Requests seen, by path (the part before an id). */
  calls: Map<string, number>;
  /** The largest `limit` asked of a listing. */
  maxLimit: number;
  /** The token request parameters last seen (app_id, app_secret, grant_type...). */
  lastTokenRequest: Record<string, string>;
  /** Bytes the replay serves for a content path. */
  bytesOf(p: string): Buffer;
  /** The next `n` API calls answer this way. */
  fault(kind: CantoFault, n?: number): void;
  /** Invalidates every access token issued so far; `refresh` too also every refresh token. */
  revokeTokens(refresh?: boolean): void;
  /** Removes a content (deleted at Canto after it was listed). */
  remove(p: string): void;
  /**
   * Not from the reference: binaries answer 302 to a delivery path of the replay (as a content
   * delivery host would), which serves without a token; `deliveryAuth` records what it was sent.
   */
  redirectBinaries(on: boolean): void;
  deliveryAuth: (string | undefined)[];
  /** Token answers in RFC 6749 form (access_token, ...) instead of the documented camelCase. */
  rfcTokens(on: boolean): void;
  /** Replaces fields of a content's record (a shape the reference does not show). */
  patch(p: string, fields: Record<string, unknown>): void;
  /** A record the connector cannot use (say, of an unknown scheme) listed in an album. */
  addRaw(albumPath: string, record: unknown): void;
  /** An album of `n` generated contents (made page by page, never held). */
  addBigAlbum(name: string, n: number): string;
  close(): Promise<void>;
}

interface Content { meta: any; bytes: Buffer }

export async function startCantoReplay(tree: string[], revisions: Record<string, number> = {}): Promise<CantoReplay> {
  const tokenFx = cantoFixture('oauth_token');
  const userFx = cantoFixture('user').response;
  const treeFx = cantoFixture('tree');
  const contentTpl = cantoFixture('content').image;
  const albumTpl = cantoFixture('album').response;
  const searchTpl = cantoFixture('search').response;
  const errors = cantoFixture('errors');
  // The reference shows no image bytes; any small JPEG stands for Canto's preview.
  const preview = await sharp({ create: { width: 240, height: 160, channels: 3, background: '#f33b2d' } }).jpeg().toBuffer();

  let seq = 0;
  const folderId = () => `F${String(++seq).padStart(4, '0')}`;
  const contentId = (p: string) => createHash('sha1').update(p).digest('hex').slice(0, 26);
  const ids: Record<string, string> = {};
  /** tree nodes by id; children ids by parent id ('' = top level). */
  const nodes = new Map<string, any>();
  const children = new Map<string, string[]>([['', []]]);
  const albums = new Map<string, string[]>();
  const contents = new Map<string, Content>();
  const bigAlbums = new Map<string, number>();
  const raws = new Map<string, unknown[]>();
  const byPath = new Map<string, string>();

  function node(dir: string, scheme: 'folder' | 'album'): string {
    const hit = byPath.get(dir);
    if (hit) return hit;
    const i = dir.lastIndexOf('/');
    const parent = i < 0 ? '' : node(dir.slice(0, i), 'folder');
    const id = folderId();
    const name = dir.slice(i + 1);
    nodes.set(id, { ...(scheme === 'album' ? treeFx.album : treeFx.folder), id, name, idPath: id, namePath: dir, ...(scheme === 'folder' ? { children: [] } : {}) });
    children.get(parent)!.push(id);
    if (scheme === 'folder') children.set(id, []);
    else albums.set(id, []);
    byPath.set(dir, id);
    ids[dir] = `${scheme}:${id}`;
    return id;
  }
  for (const f of tree) {
    const i = f.lastIndexOf('/');
    const album = node(f.slice(0, i), 'album');
    const name = f.slice(i + 1);
    const ext = name.slice(name.lastIndexOf('.') + 1).toLowerCase();
    const scheme = SCHEME_BY_EXT[ext] ?? 'other';
    const id = contentId(f);
    const bytes = createHash('sha512').update(f).digest();
    const n = 1 + (revisions[f] ?? 0);
    const versionHistory = Array.from({ length: n }, (_, k) => ({ ...contentTpl.versionHistory[0], version: `${k + 1}.0`, time: `2015041${k}063836418`, comment: `upload ${k + 1}`, currentVersion: k === n - 1 }));
    const meta = {
      ...contentTpl, id, name, scheme, size: String(bytes.length), md5: createHash('md5').update(bytes).digest('hex'),
      default: { ...contentTpl.default, Name: name, Size: String(bytes.length), 'Content Type': scheme === 'image' ? contentTpl.default['Content Type'] : undefined },
      url: Object.fromEntries(Object.entries(contentTpl.url).map(([k, v]) => [k, String(v).replace(contentTpl.id, id).replace('/image/', `/${scheme}/`)])),
      versionHistory,
    };
    if (scheme !== 'image') delete meta.default['Content Type'];
    contents.set(id, { meta, bytes });
    albums.get(album)!.push(id);
    ids[f] = `${scheme}:${id}`;
    byPath.set(f, id);
  }

  const tokens = new Set<string>();
  const refreshTokens = new Set<string>();
  const codes = new PendingCodes();
  let faults: { kind: CantoFault; n: number } | null = null;
  const calls = new Map<string, number>();
  let maxLimit = 0;
  let lastTokenRequest: Record<string, string> = {};
  let redirecting = false;
  let rfc = false;
  const deliveryAuth: (string | undefined)[] = [];
  /** A token answer in the documented dialect, or RFC 6749's. */
  const tokenBody = (b: any) => (rfc ? { access_token: b.accessToken, token_type: b.tokenType, expires_in: Number(b.expiresIn), refresh_token: b.refreshToken } : b);
  const origin = () => `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  /** A listing record of a content: the documented record, its URLs on this tenant. */
  const record = (c: Content) => ({ ...c.meta, url: Object.fromEntries(Object.entries(c.meta.url).map(([k, v]) => [k, String(v).replace('https://obj.canto.com', origin())])) });
  const bigRecord = (album: string, i: number) => {
    const id = `${album.toLowerCase()}${String(i).padStart(8, '0')}`;
    return { ...contentTpl, id, name: `big ${String(i).padStart(6, '0')}.jpg`, versionHistory: undefined };
  };

  const send = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json;charset=UTF-8', ...headers });
    res.end(JSON.stringify(body));
  };
  const page = (tpl: any, all: any[] | { n: number; at: (i: number) => any }, u: URL) => {
    const start = Math.max(0, Number(u.searchParams.get('start') ?? 0) || 0);
    const limit = Math.min(1000, Math.max(1, Number(u.searchParams.get('limit') ?? 100) || 100));
    maxLimit = Math.max(maxLimit, limit);
    const found = Array.isArray(all) ? all.length : all.n;
    const results = Array.isArray(all) ? all.slice(start, start + limit) : Array.from({ length: Math.max(0, Math.min(limit, found - start)) }, (_, k) => all.at(start + k));
    return { ...tpl, results, found, limit, start };
  };
  const matches = (c: Content, u: URL) => {
    const kw = (u.searchParams.get('keyword') ?? '').toLowerCase();
    const schemes = u.searchParams.get('scheme')?.split('|');
    const approval = u.searchParams.get('approval')?.split('|');
    return (!kw || c.meta.name.toLowerCase().includes(kw)) && (!schemes || schemes.includes(c.meta.scheme)) && (!approval || approval.includes(c.meta.approvalStatus));
  };

  const server = http.createServer(async (req, res) => {
    const u = new URL(req.url!, 'http://x');
    let raw = '';
    for await (const c of req) raw += c;
    const route = u.pathname.split('/').slice(0, 4).join('/');
    calls.set(route, (calls.get(route) ?? 0) + 1);

    if (u.pathname === '/oauth/api/oauth2/authorize') {
      if (!u.searchParams.get('app_id')) return send(res, 400, { error: 'invalid_request', error_description: 'app_id is required' });
      res.writeHead(302, { location: codes.issue(u, `code-${++seq}`) });
      return res.end();
    }
    if (u.pathname === '/oauth/api/oauth2/token') {
      // The reference passes the parameters in the query string; a form body is read too.
      const f = new URLSearchParams([...u.searchParams, ...new URLSearchParams(raw)]);
      lastTokenRequest = Object.fromEntries(f);
      if (f.get('app_id') !== 'canto-app' || f.get('app_secret') !== 'canto-secret') return send(res, 401, { error: 'invalid_client', error_description: 'unknown app_id or app_secret' });
      if (f.get('grant_type') === 'authorization_code') {
        if (!codes.redeem(f)) return send(res, 400, { error: 'invalid_grant', error_description: 'invalid code or code_verifier' });
        const at = `${tokenFx.code.accessToken}.${++seq}`;
        const rt = `${tokenFx.code.refreshToken}${seq}`;
        tokens.add(at);
        refreshTokens.add(rt);
        return send(res, 200, tokenBody({ ...tokenFx.code, accessToken: at, refreshToken: rt }));
      }
      if (f.get('grant_type') === 'refresh_token') {
        const rt = f.get('refresh_token') ?? '';
        if (!refreshTokens.has(rt)) return send(res, 400, errors.invalid_grant);
        const at = `${tokenFx.refresh.accessToken}.${++seq}`;
        tokens.add(at);
        return send(res, 200, tokenBody({ ...tokenFx.refresh, accessToken: at, refreshToken: rt }));
      }
      return send(res, 400, { error: 'unsupported_grant_type' });
    }

    const parts = u.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    if (parts[0] === 'delivery') {
      // The delivery host: signed path, no token wanted.
      deliveryAuth.push(req.headers.authorization);
      const c = contents.get(parts[2] ?? '');
      if (!c) return send(res, 404, errors.not_found);
      const body = parts[3] === 'preview' ? preview : c.bytes;
      res.writeHead(200, { 'content-type': parts[3] === 'preview' ? 'image/jpeg' : 'application/octet-stream', 'content-length': String(body.length) });
      return res.end(body);
    }
    const counting = u.pathname === '/api/v1/search' && u.searchParams.get('limit') === '1';
    if (faults && faults.n > 0 && (faults.kind !== 'rate-limit-counts' || counting)) {
      faults.n--;
      if (faults.kind === 'rate-limit-counts') return send(res, 429, errors.too_many_requests, { 'retry-after': '300' });
      if (faults.kind === 'hang') return; // never answers; the client's deadline must end it
      if (faults.kind === 'html') {
        res.writeHead(502, { 'content-type': 'text/html' });
        return res.end(errors.html + '<!--' + 'x'.repeat(20_000) + '-->' + '<p>' + 'padding '.repeat(1000) + '</p>');
      }
      if (faults.kind === 'rate-limit') return send(res, 429, errors.too_many_requests, { 'retry-after': '1' });
      if (faults.kind === 'rate-limit-long') return send(res, 429, errors.too_many_requests, { 'retry-after': '300' });
      if (faults.kind === 'expired-token') return send(res, 401, errors.unauthorized);
    }
    const auth = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
    if (!auth || !tokens.has(auth)) return send(res, 401, errors.unauthorized);

    if (parts[0] === 'api_binary' && parts[1] === 'v1') {
      const c = contents.get(parts[3] ?? '');
      if (!c || c.meta.scheme !== parts[2]) return send(res, 404, errors.not_found);
      if (redirecting) {
        res.writeHead(302, { location: `/delivery/${parts[2]}/${parts[3]}${parts[4] === 'preview' ? '/preview' : ''}?sig=replay` });
        return res.end();
      }
      if (parts[4] === 'preview') {
        res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': String(preview.length) });
        return res.end(preview);
      }
      return serveBytes(req, res, c.bytes, { etag: `"${c.meta.md5}"`, acceptRanges: 'full' });
    }
    if (parts[0] !== 'api' || parts[1] !== 'v1') return send(res, 404, errors.not_found);
    const [what, id] = [parts[2], parts[3]];
    if (what === 'user' && !id) return send(res, 200, userFx);
    if (what === 'tree') {
      const kids = children.get(id ?? '');
      if (!kids) return send(res, 404, errors.not_found);
      return send(res, 200, { ...treeFx.response, results: kids.map((k) => nodes.get(k)) });
    }
    if (what === 'album' && id) {
      const big = bigAlbums.get(id);
      if (big !== undefined) return send(res, 200, page(albumTpl, { n: big, at: (i) => bigRecord(id, i) }, u));
      const list = albums.get(id);
      if (!list) return send(res, 404, errors.not_found);
      const kw = (u.searchParams.get('keyword') ?? '').toLowerCase();
      const listed: unknown[] = list.map((k) => contents.get(k)).filter((c): c is Content => !!c && (!kw || c.meta.name.toLowerCase().includes(kw))).map(record);
      return send(res, 200, page(albumTpl, [...(raws.get(id) ?? []), ...listed], u));
    }
    if (what === 'search' && !id) {
      return send(res, 200, page(searchTpl, [...contents.values()].filter((c) => matches(c, u)).sort((a, b) => (a.meta.name < b.meta.name ? -1 : 1)).map(record), u));
    }
    if (what && id && Object.values(SCHEME_BY_EXT).concat('other').includes(what)) {
      const c = contents.get(id);
      return c && c.meta.scheme === what ? send(res, 200, record(c)) : send(res, 404, errors.not_found);
    }
    return send(res, 404, errors.not_found);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: origin(),
    ids,
    calls,
    get maxLimit() { return maxLimit; },
    get lastTokenRequest() { return lastTokenRequest; },
    bytesOf: (p) => contents.get(byPath.get(p)!)!.bytes,
    fault(kind, n = 1) {
      faults = { kind, n };
    },
    redirectBinaries(on) {
      redirecting = on;
    },
    deliveryAuth,
    rfcTokens(on) {
      rfc = on;
    },
    revokeTokens(refresh = false) {
      tokens.clear();
      if (refresh) refreshTokens.clear();
    },
    remove(p) {
      const id = byPath.get(p)!;
      contents.delete(id);
      for (const l of albums.values()) if (l.includes(id)) l.splice(l.indexOf(id), 1);
    },
    patch(p, fields) {
      const c = contents.get(byPath.get(p)!)!;
      c.meta = { ...c.meta, ...fields };
    },
    addRaw(albumPath, rec) {
      const id = byPath.get(albumPath)!;
      raws.set(id, [...(raws.get(id) ?? []), rec]);
    },
    addBigAlbum(name, n) {
      const id = folderId();
      nodes.set(id, { ...treeFx.album, id, name, idPath: id, namePath: name });
      children.get('')!.push(id);
      bigAlbums.set(id, n);
      ids[name] = `album:${id}`;
      return id;
    },
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}
