/**
 * A loopback stand-in for the Box API that answers only with bodies built from Box's published
 * API reference (test/fixtures/box/*.json, each naming its page): a tree of files is made by
 * copying the documented File (Full) and Folder examples with other names, ids and sizes; pages,
 * markers, errors and tokens keep the documented shapes. Folder pages are small (7 entries) so
 * that markers are followed. File bytes are real (a small PNG for an image, text otherwise), and
 * each version's `sha1` is the SHA-1 of its bytes.
 *
 * The OAuth side plays the user's consent: /api/oauth2/authorize redirects straight back with a
 * code; /oauth2/token checks the client secret and the PKCE verifier (S256), and rotates refresh
 * tokens as Box documents it: each refresh token works once, and the answer carries a new one.
 * GET /2.0/files/{id}/content answers 302 to a pre-signed /d/1/{key}/download URL on this server
 * that needs no token, as dl.boxcloud.com does.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { PendingCodes } from './oauth-replay.js';
import { serveBytes } from './replay-bytes.js';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../test/fixtures/box');
export const boxFixture = (name: string): any => JSON.parse(fs.readFileSync(path.join(FIXTURES, `${name}.json`), 'utf8'));

interface Version { id: string; bytes: Buffer; created: string; n: number }
interface Node {
  id: string;
  name: string;
  parent: Node | null;
  children?: Node[];
  /** Oldest first; the last is the current version. */
  versions?: Version[];
  /** A synthetic folder of this many files, made page by page (nothing held per entry). */
  synthetic?: number;
}

export type BoxFault = 'rate-limit' | 'html' | 'hang' | 'expired-token' | 'bad-marker';

export interface BoxReplay {
  url: string;
  /** Requests seen, by path. */
  calls: Map<string, number>;
  ids: Record<string, string>;
  /** Fault injection: the next `n` API calls (under /2.0) answer this way. */
  fault(kind: BoxFault, n?: number, retryAfter?: string): void;
  /** Invalidates every access token issued so far (a revoked app). */
  revokeTokens(): void;
  /** Removes a file (as if deleted after it was listed). */
  remove(p: string): void;
  /** How thumbnail.jpg answers for a file: its image, 202 (being made) or 302 (no thumbnail). */
  thumbnailMode(p: string, mode: 'image' | 'pending' | 'none'): void;
  /**
   * How /content answers for a file: the documented 302 to a download URL, 202 + Retry-After (not
   * ready yet, as the download guide describes), or a 302 to a host that is not Box's.
   */
  contentMode(p: string, mode: 'redirect' | 'pending' | 'foreign'): void;
  /** The bytes of a file's version (1-based; default the current). */
  bytes(p: string, n?: number): Buffer;
  /** thumbnail.jpg calls, by file id. */
  thumbnails: Map<string, number>;
  /** Refresh tokens that are still valid. */
  liveRefreshTokens(): number;
  close(): Promise<void>;
}

const CLIENT = { id: 'box-client', secret: 'box-secret' };
export const BOX_CLIENT = CLIENT;

/**
 * `tree`: paths of files ("Photos/a.jpg"); folders are implied. `versions`: extra versions per
 * file path. `synthetic`: folder paths holding that many generated files (a 100,000-entry folder).
 */
export async function startBoxReplay(tree: string[], versions: Record<string, number> = {}, synthetic: Record<string, number> = {}): Promise<BoxReplay> {
  const tokenFx = boxFixture('oauth2_token');
  const errors = boxFixture('errors');
  const fileTpl = boxFixture('file').response;
  const folderTpl = boxFixture('folder').response;
  const rootTpl = boxFixture('folder').root;
  const itemsTpl = boxFixture('items').response;
  const searchTpl = boxFixture('search').response;
  const versionsTpl = boxFixture('versions').response;
  const versionTpl = versionsTpl.entries[0];
  const me = boxFixture('users_me').response;
  // The reference shows no image bytes; any small JPEG stands for Box's rendition.
  const thumbnailImage = await sharp({ create: { width: 320, height: 213, channels: 3, background: '#0061d5' } }).jpeg().toBuffer();

  let seq = 12345;
  const newId = () => String(++seq);
  const root: Node = { id: '0', name: rootTpl.name, parent: null, children: [] };
  const byId = new Map<string, Node>([['0', root]]);
  const byPath = new Map<string, Node>([['', root]]);
  const ids: Record<string, string> = {};
  const thumbModes = new Map<string, 'image' | 'pending' | 'none'>();
  const contentModes = new Map<string, 'redirect' | 'pending' | 'foreign'>();
  const thumbnails = new Map<string, number>();

  function folder(p: string): Node {
    const hit = byPath.get(p);
    if (hit) return hit;
    const i = p.lastIndexOf('/');
    const parent = folder(i <= 0 ? '' : p.slice(0, i));
    const node: Node = { id: newId(), name: p.slice(i + 1), parent, children: [] };
    parent.children!.push(node);
    byPath.set(p, node);
    byId.set(node.id, node);
    ids[p.slice(1)] = node.id;
    return node;
  }
  const isImage = (name: string) => /\.(png|jpe?g|gif|tiff?|bmp|webp)$/i.test(name);
  async function content(name: string, k: number, salt: number): Promise<Buffer> {
    if (!isImage(name)) return Buffer.from(`Box replay file ${name}, version ${k + 1} (${salt})\n`);
    const c = (salt * 37 + k * 91) % 256;
    return sharp({ create: { width: 64 + k, height: 48, channels: 3, background: { r: c, g: 97, b: 213 } } }).png().toBuffer();
  }
  for (const f of tree) {
    const p = `/${f}`;
    const i = p.lastIndexOf('/');
    const parent = folder(i <= 0 ? '' : p.slice(0, i));
    const n = 1 + (versions[f] ?? 0);
    const id = newId();
    const vs: Version[] = [];
    for (let k = 0; k < n; k++) {
      vs.push({ id: newId(), bytes: await content(p.slice(i + 1), k, seq), created: new Date(Date.UTC(2024, 0, 1 + k, 12)).toISOString().replace('.000Z', '-00:00'), n: k + 1 });
    }
    const node: Node = { id, name: p.slice(i + 1), parent, versions: vs };
    parent.children!.push(node);
    byPath.set(p, node);
    byId.set(id, node);
    ids[f] = id;
  }
  for (const [p, count] of Object.entries(synthetic)) folder(`/${p}`).synthetic = count;

  const pathCollection = (n: Node) => {
    const chain: Node[] = [];
    for (let x = n.parent; x; x = x.parent) chain.unshift(x);
    const entries = chain.map((x) => ({ ...fileTpl.path_collection.entries[0], id: x.id, name: x.name }));
    return { total_count: entries.length, entries };
  };
  const sha1 = (b: Buffer) => createHash('sha1').update(b).digest('hex');
  const ext = (name: string) => (name.lastIndexOf('.') > 0 ? name.slice(name.lastIndexOf('.') + 1) : '');
  const fileBody = (n: Node) => {
    const cur = n.versions!.at(-1)!;
    return {
      ...fileTpl, id: n.id, name: n.name, etag: String(cur.n - 1), size: cur.bytes.length, sha1: sha1(cur.bytes), extension: ext(n.name),
      created_at: n.versions![0]!.created, modified_at: cur.created, content_created_at: n.versions![0]!.created, content_modified_at: cur.created,
      version_number: String(cur.n), file_version: { ...fileTpl.file_version, id: cur.id, sha1: sha1(cur.bytes) }, path_collection: pathCollection(n),
    };
  };
  const folderEntry = (n: Node) => ({ ...itemsTpl.entries[1], id: n.id, name: n.name });
  const syntheticFile = (folderNode: Node, i: number) => ({
    ...fileTpl, id: `9${folderNode.id}${String(i).padStart(6, '0')}`, name: `file ${String(i).padStart(6, '0')}.txt`, extension: 'txt', size: 100 + i,
    sha1: sha1(Buffer.from(String(i))), file_version: { ...fileTpl.file_version, id: `8${i}`, sha1: sha1(Buffer.from(String(i))) }, path_collection: pathCollection(folderNode),
  });

  const ITEMS_PAGE = 7;
  const marker = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const unmarker = (m: string): any => {
    try {
      return JSON.parse(Buffer.from(m, 'base64url').toString());
    } catch {
      return null;
    }
  };

  const tokens = new Set<string>();
  const refreshTokens = new Set<string>();
  const codes = new PendingCodes();
  const downloads = new Map<string, Buffer>();
  let faults: { kind: BoxFault; n: number; retryAfter: string } | null = null;
  const calls = new Map<string, number>();

  const send = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
  const issue = (tpl: any) => {
    const at = `${tpl.access_token}.${randomBytes(6).toString('hex')}`;
    const rt = `${tpl.refresh_token}.${randomBytes(6).toString('hex')}`;
    tokens.add(at);
    refreshTokens.add(rt);
    return { ...tpl, access_token: at, refresh_token: rt };
  };

  const server = http.createServer(async (req, res) => {
    const u = new URL(req.url!, 'http://x');
    let raw = '';
    for await (const c of req) raw += c;
    calls.set(u.pathname, (calls.get(u.pathname) ?? 0) + 1);

    if (u.pathname === '/api/oauth2/authorize') {
      res.writeHead(302, { location: codes.issue(u, `code-${randomBytes(6).toString('hex')}`) });
      return res.end();
    }
    if (u.pathname === '/oauth2/token') {
      const f = new URLSearchParams(raw);
      if (f.get('client_id') !== CLIENT.id || f.get('client_secret') !== CLIENT.secret) return send(res, 400, { error: 'invalid_client', error_description: 'The client credentials are invalid' });
      if (f.get('grant_type') === 'authorization_code') {
        if (!codes.redeem(f)) return send(res, 400, { error: 'invalid_grant', error_description: 'Auth code or PKCE verifier is invalid' });
        return send(res, 200, issue(tokenFx.code));
      }
      if (f.get('grant_type') === 'refresh_token') {
        const rt = f.get('refresh_token') ?? '';
        // Single use: the refresh token is spent, a new one comes with the new access token.
        if (!refreshTokens.delete(rt)) return send(res, 400, errors.invalid_grant);
        return send(res, 200, issue(tokenFx.refresh));
      }
      return send(res, 400, { error: 'unsupported_grant_type' });
    }

    // A pre-signed download URL: no token, Range honoured (dl.boxcloud.com).
    const dl = /^\/d\/1\/([A-Za-z0-9_-]+)\/download$/.exec(u.pathname);
    if (dl) {
      const bytes = downloads.get(dl[1]!);
      if (!bytes) {
        res.writeHead(404, { 'content-type': 'text/html' });
        return res.end('<html><head><title>Not Found</title></head><body><h1>Not Found</h1></body></html>');
      }
      return serveBytes(req, res, bytes, { etag: `"${sha1(bytes)}"`, acceptRanges: 'both' });
    }

    if (!u.pathname.startsWith('/2.0/')) return send(res, 404, errors.not_found);
    if (faults && faults.n > 0) {
      faults.n--;
      const kind = faults.kind;
      if (kind === 'hang') return; // never answers; the client's deadline must end it
      if (kind === 'html') {
        // A proxy's error page: big, with markup, scripts and styles.
        res.writeHead(502, { 'content-type': 'text/html' });
        return res.end(`<!DOCTYPE html><html><head><title>502 Bad Gateway</title><style>body{color:red}</style><script>var x = "secret";</script></head><body><h1>Bad Gateway</h1><p>The upstream server is temporarily unavailable.</p>${'<p>padding</p>'.repeat(5000)}</body></html>`);
      }
      if (kind === 'rate-limit') return send(res, 429, errors.too_many_requests, { 'retry-after': faults.retryAfter });
      if (kind === 'expired-token') return send(res, 401, errors.unauthorized, { 'www-authenticate': 'Bearer realm="Service", error="invalid_token", error_description="The access token provided is invalid."' });
      if (kind === 'bad-marker') return send(res, 400, errors.bad_marker);
    }
    const auth = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!auth || !tokens.has(auth)) return send(res, 401, errors.unauthorized, { 'www-authenticate': 'Bearer realm="Service", error="invalid_token", error_description="The access token provided is invalid."' });
    const notFound = () => send(res, 404, errors.not_found);

    if (u.pathname === '/2.0/users/me') return send(res, 200, me);
    let m = /^\/2\.0\/folders\/(\d+)$/.exec(u.pathname);
    if (m) {
      const n = byId.get(m[1]!);
      if (!n?.children) return notFound();
      return send(res, 200, n === root ? rootTpl : { ...folderTpl, id: n.id, name: n.name });
    }
    m = /^\/2\.0\/folders\/(\d+)\/items$/.exec(u.pathname);
    if (m) {
      const n = byId.get(m[1]!);
      if (!n?.children) return notFound();
      if (u.searchParams.get('usemarker') !== 'true') return send(res, 400, errors.bad_marker);
      const mk = u.searchParams.get('marker');
      const at = mk ? unmarker(mk) : { f: n.id, o: 0 };
      if (!at || at.f !== n.id || typeof at.o !== 'number') return send(res, 400, errors.bad_marker);
      const limit = Math.min(Number(u.searchParams.get('limit') ?? 100), 1000);
      const total = n.synthetic ?? n.children.length;
      const take = n.synthetic ? Math.min(limit, 1000) : ITEMS_PAGE;
      const entries = n.synthetic
        ? Array.from({ length: Math.max(0, Math.min(take, total - at.o)) }, (_, i) => syntheticFile(n, at.o + i))
        : n.children.slice(at.o, at.o + take).map((c) => (c.children ? folderEntry(c) : fileBody(c)));
      const next = at.o + take < total ? marker({ f: n.id, o: at.o + take }) : null;
      return send(res, 200, { ...itemsTpl, limit, entries, next_marker: next, prev_marker: at.o > 0 ? marker({ f: n.id, o: Math.max(0, at.o - take) }) : null });
    }
    if (u.pathname === '/2.0/search') {
      const q = (u.searchParams.get('query') ?? '').toLowerCase();
      if (!q) return send(res, 400, { ...errors.bad_marker, context_info: { errors: [{ reason: 'missing_parameter', name: 'query', message: "'query' is required" }] } });
      const anc = u.searchParams.get('ancestor_folder_ids');
      const scope = anc ? byId.get(anc) : root;
      if (!scope?.children) return notFound();
      const within = (n: Node) => {
        for (let x = n.parent; x; x = x.parent) if (x === scope) return true;
        return false;
      };
      const hits = [...byId.values()].filter((n) => n.versions && n.name.toLowerCase().includes(q) && within(n)).sort((a, b) => Number(a.id) - Number(b.id));
      const offset = Number(u.searchParams.get('offset') ?? 0);
      const limit = Math.min(Number(u.searchParams.get('limit') ?? 30), 200);
      return send(res, 200, { ...searchTpl, total_count: hits.length, offset, limit, entries: hits.slice(offset, offset + limit).map(fileBody) });
    }
    m = /^\/2\.0\/files\/(\d+)(\/versions|\/content|\/thumbnail\.jpg)?$/.exec(u.pathname);
    if (m) {
      const n = byId.get(m[1]!);
      if (!n?.versions) return notFound();
      if (!m[2]) return send(res, 200, fileBody(n));
      if (m[2] === '/versions') {
        // Older versions only, newest first: the current one is the file's file_version.
        const older = n.versions.slice(0, -1).reverse().map((v) => ({ ...versionTpl, id: v.id, name: n.name, size: v.bytes.length, sha1: sha1(v.bytes), created_at: v.created, modified_at: v.created, version_number: String(v.n) }));
        const offset = Number(u.searchParams.get('offset') ?? 0);
        const limit = Math.min(Number(u.searchParams.get('limit') ?? 1000), 1000);
        return send(res, 200, { ...versionsTpl, total_count: older.length, offset, limit, entries: older.slice(offset, offset + limit) });
      }
      if (m[2] === '/thumbnail.jpg') {
        thumbnails.set(n.id, (thumbnails.get(n.id) ?? 0) + 1);
        const mode = thumbModes.get(n.id) ?? 'image';
        const placeholder = `${base()}/placeholders/file.png`;
        if (mode === 'pending') {
          res.writeHead(202, { location: placeholder, 'retry-after': '15' });
          return res.end();
        }
        if (mode === 'none') {
          res.writeHead(302, { location: placeholder });
          return res.end();
        }
        res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': String(thumbnailImage.length) });
        return res.end(thumbnailImage);
      }
      const cmode = contentModes.get(n.id) ?? 'redirect';
      if (cmode === 'pending') {
        res.writeHead(202, { 'retry-after': '30' });
        return res.end();
      }
      if (cmode === 'foreign') {
        res.writeHead(302, { location: 'https://downloads.example.net/d/1/abc/download' });
        return res.end();
      }
      const want = u.searchParams.get('version');
      const v = want ? n.versions.find((x) => x.id === want) : n.versions.at(-1);
      if (!v) return notFound();
      const key = randomBytes(12).toString('base64url');
      downloads.set(key, v.bytes);
      res.writeHead(302, { location: `${base()}/d/1/${key}/download` });
      return res.end();
    }
    return notFound();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = () => `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const nodeAt = (p: string) => {
    const n = byPath.get(`/${p}`);
    if (!n) throw new Error(`no ${p} in the replay tree`);
    return n;
  };
  return {
    url: base(),
    calls,
    ids,
    thumbnails,
    fault(kind, n = 1, retryAfter = '300') {
      faults = { kind, n, retryAfter };
    },
    revokeTokens() {
      tokens.clear();
    },
    remove(p) {
      const n = nodeAt(p);
      n.parent!.children = n.parent!.children!.filter((c) => c !== n);
      byId.delete(n.id);
      byPath.delete(`/${p}`);
    },
    thumbnailMode(p, mode) {
      thumbModes.set(nodeAt(p).id, mode);
    },
    contentMode(p, mode) {
      contentModes.set(nodeAt(p).id, mode);
    },
    bytes(p, k) {
      const vs = nodeAt(p).versions!;
      return (k ? vs[k - 1] : vs.at(-1))!.bytes;
    },
    liveRefreshTokens: () => refreshTokens.size,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}
