/**
 * A loopback stand-in for one Frontify tenant that answers only with bodies built from Frontify's
 * published GraphQL reference and its official OAuth client (test/fixtures/frontify/*.json, each
 * naming its page). One brand holds one media library; the tree's paths are folders and files of
 * that library, made by copying the documented Image/Document/File bodies with other ids, names
 * and sizes. Operations are answered by name (the connector sends named queries with variables),
 * with Frontify's page/limit paging (limit 1..100) and exact totals.
 *
 * The OAuth side plays the user's consent: /api/oauth/authorize redirects straight back with a
 * code, /api/oauth/accesstoken checks the PKCE verifier (S256), /api/oauth/refresh rotates the
 * refresh token. Signed download URLs and preview images are served from the same origin.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { issueTokens, PendingCodes } from './oauth-replay.js';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../test/fixtures/frontify');
export const frontifyFixture = (name: string): any => JSON.parse(fs.readFileSync(path.join(FIXTURES, `${name}.json`), 'utf8'));

/** Frontify-like global ids: base64 of a small JSON naming the kind (as the reference's examples look). */
const gid = (type: string, n: number) => Buffer.from(JSON.stringify({ identifier: n, type })).toString('base64');

interface FolderNode { id: string; name: string; path: string; folders: FolderNode[]; assets: AssetNode[]; bigCount?: number; lib: { id: string; name: string; __typename: string }; isRoot?: boolean }
interface AssetNode { id: string; path: string; folder: FolderNode; body: any; revisions: any[]; bytes: Buffer }

export interface FrontifyReplay {
  url: string;
  /** Hub ids by tree path: folders `f:<library>:<folder>`, files the Frontify asset id; '' is the documented library and `@Name` another (`l:`), '#brand' the brand (`b:`). */
  ids: Record<string, string>;
  calls: Map<string, number>;
  /** The bytes the signed download URL of a path serves. */
  bytes(path: string): Buffer;
  fault(kind: 'rate-limit' | 'rate-limit-short' | 'html' | 'html-502' | 'hang' | 'expired-token', n?: number): void;
  revokeTokens(): void;
  /** Removes a file (deleted at Frontify between a listing and a detail). */
  remove(path: string): void;
  /** Preview image requests by asset id. */
  previews: Map<string, number>;
  /** The largest `limit` the connector asked for. */
  maxLimit: number;
  close(): Promise<void>;
}

export async function startFrontifyReplay(tree: string[], revisions: Record<string, number> = {}, opts: { big?: Record<string, number> } = {}): Promise<FrontifyReplay> {
  const gql = frontifyFixture('graphql');
  const oauthFx = frontifyFixture('oauth');
  const errors = frontifyFixture('errors');
  const brand = gql.brand.value;
  const library = gql.library.value;
  const previewImage = await sharp({ create: { width: 256, height: 144, channels: 3, background: '#2d3232' } }).jpeg().toBuffer();

  let seq = 0;
  let url = '';
  // The documented library holds the tree; a path starting `@Name/` is in another media library of the brand, `Name`.
  const root: FolderNode = { id: library.id, name: library.name, path: '', folders: [], assets: [], lib: library, isRoot: true };
  const folders = new Map<string, FolderNode>([['', root]]);
  const foldersById = new Map<string, FolderNode>();
  const libraries = new Map<string, FolderNode>([[library.id, root]]);
  const assets = new Map<string, AssetNode>();
  const assetsByPath = new Map<string, AssetNode>();
  const ids: Record<string, string> = { '': `l:${library.id}`, '#brand': `b:${brand.id}` };

  function folder(p: string): FolderNode {
    const hit = folders.get(p);
    if (hit) return hit;
    if (/^@[^/]+$/.test(p)) {
      const lib = { ...library, id: gid('project', 10 + libraries.size), name: p.slice(1) };
      const node: FolderNode = { id: lib.id, name: lib.name, path: p, folders: [], assets: [], lib, isRoot: true };
      folders.set(p, node);
      libraries.set(lib.id, node);
      ids[p] = `l:${lib.id}`;
      return node;
    }
    const i = p.lastIndexOf('/');
    const parent = folder(i < 0 ? '' : p.slice(0, i));
    const node: FolderNode = { id: gid('folder', 100 + ++seq), name: p.slice(i + 1), path: p, folders: [], assets: [], lib: parent.lib };
    parent.folders.push(node);
    folders.set(p, node);
    foldersById.set(node.id, node);
    ids[p] = `f:${node.lib.id}:${node.id}`;
    return node;
  }
  const templateFor = (name: string) => (/\.(jpe?g|png|gif|webp)$/i.test(name) ? gql.image.value : /\.pdf$/i.test(name) ? gql.document.value : gql.file.value);
  for (const f of tree) {
    const i = f.lastIndexOf('/');
    const parent = folder(i < 0 ? '' : f.slice(0, i));
    const name = f.slice(i + 1);
    const id = gid('asset', 1000 + ++seq);
    const bytes = Buffer.from(`Frontify file ${f} (${id})\n`);
    const ext = name.includes('.') ? name.slice(name.lastIndexOf('.') + 1) : '';
    const body = { ...templateFor(name), id, title: name.replace(/\.[^.]*$/, ''), filename: name, extension: ext, size: bytes.length };
    const n = 1 + (revisions[f] ?? 0);
    const revs = Array.from({ length: n }, (_, k) => ({ ...gql.revision.value, id: gid('revision', seq * 100 + k), createdAt: new Date(Date.UTC(2024, 2, 1 + k, 10)).toISOString() })).reverse();
    const node: AssetNode = { id, path: f, folder: parent, body, revisions: revs, bytes };
    parent.assets.push(node);
    assets.set(id, node);
    assetsByPath.set(f, node);
    ids[f] = id;
  }
  for (const [p, count] of Object.entries(opts.big ?? {})) folder(p).bigCount = count;

  /** A lazily made listed asset of a big folder (index k): never stored, so 100,000 of them cost nothing until asked for. */
  const bigAsset = (f: FolderNode, k: number) => ({ ...gql.image.value, id: gid('asset', 10_000_000 + k), title: `big ${k}`, filename: `big ${String(k).padStart(6, '0')}.jpg`, extension: 'jpg' });

  const withUrls = (a: AssetNode) => {
    const loc = { ...a.body.location, library: { id: a.folder.lib.id, name: a.folder.lib.name }, folder: a.folder.isRoot ? null : { id: a.folder.id, name: a.folder.name, breadcrumbs: breadcrumbs(a.folder) } };
    const out: any = { ...a.body, location: loc, downloadUrl: `${url}/download/${encodeURIComponent(a.id)}?signature=${sig(a.id)}` };
    if ('previewUrl' in a.body) out.previewUrl = `${url}/preview/${encodeURIComponent(a.id)}`;
    return out;
  };
  const breadcrumbs = (f: FolderNode) => {
    const out: { id: string; name: string }[] = [];
    const parts = f.path.split('/');
    for (let i = 1; i < parts.length; i++) {
      const p = folders.get(parts.slice(0, i).join('/'))!;
      if (!p.isRoot) out.push({ id: p.id, name: p.name });
    }
    return out;
  };
  const sig = (id: string) => createHash('sha256').update(`sig:${id}`).digest('hex').slice(0, 16);
  const listed = (a: AssetNode) => {
    const { downloadUrl: _d, previewUrl: _p, copyright: _c, author: _a, customMetadata: _m, location: _l, ...rest } = a.body;
    return rest;
  };

  let maxLimit = 0;
  const page = <T>(all: T[] | ((from: number, to: number) => T[]), total: number, limit: number, p: number) => {
    maxLimit = Math.max(maxLimit, limit);
    const from = (p - 1) * limit;
    const items = typeof all === 'function' ? all(from, Math.min(total, from + limit)) : all.slice(from, from + limit);
    return { ...gql.page.value, total, page: p, limit, hasNextPage: from + limit < total, items };
  };
  const assetPage = (f: FolderNode, limit: number, p: number) => {
    if (f.bigCount) return page((a, b) => Array.from({ length: Math.max(0, b - a) }, (_, k) => bigAsset(f, a + k)), f.bigCount, limit, p);
    return page(f.assets.map(listed), f.assets.length, limit, p);
  };
  const within = (f: FolderNode): AssetNode[] => [...f.assets, ...f.folders.flatMap(within)];

  const tokens = new Set<string>();
  const refreshTokens = new Set<string>();
  const codes = new PendingCodes();
  let faults: { kind: string; n: number } | null = null;
  const calls = new Map<string, number>();
  const previews = new Map<string, number>();

  const send = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
  const invalidQuery = (res: http.ServerResponse) => send(res, 422, errors.invalid_query);

  const server = http.createServer(async (req, res) => {
    const u = new URL(req.url!, 'http://x');
    let raw = '';
    for await (const c of req) raw += c;

    if (u.pathname === '/api/oauth/authorize') {
      calls.set('authorize', (calls.get('authorize') ?? 0) + 1);
      res.writeHead(302, { location: codes.issue(u, `code-${++seq}`) });
      return res.end();
    }
    // The authenticator posts JSON; a standard OAuth client posts a form: both are read.
    const form = () => (String(req.headers['content-type']).includes('json') ? new URLSearchParams(JSON.parse(raw || '{}')) : new URLSearchParams(raw));
    if (u.pathname === '/api/oauth/accesstoken') {
      calls.set('accesstoken', (calls.get('accesstoken') ?? 0) + 1);
      const f = form();
      // The code is spent whatever the grant_type.
      const redeemed = codes.redeem(f);
      if (f.get('grant_type') !== 'authorization_code' || !redeemed) return send(res, 400, { error: 'invalid_grant', error_description: 'invalid code or code_verifier' });
      return send(res, 200, issueTokens(oauthFx.code, ++seq, tokens, refreshTokens));
    }
    if (u.pathname === '/api/oauth/refresh') {
      calls.set('refresh', (calls.get('refresh') ?? 0) + 1);
      const f = form();
      const old = f.get('refresh_token') ?? '';
      if (f.get('grant_type') !== 'refresh_token' || !refreshTokens.has(old)) return send(res, 400, oauthFx.invalid_grant);
      // Rotation: the old refresh token is spent, the answer carries a new one.
      refreshTokens.delete(old);
      return send(res, 200, issueTokens(oauthFx.refresh, ++seq, tokens, refreshTokens));
    }
    if (u.pathname.startsWith('/download/')) {
      const a = assets.get(decodeURIComponent(u.pathname.slice('/download/'.length)));
      if (!a || u.searchParams.get('signature') !== sig(a.id)) return send(res, 404, { success: false, error: 'Not found' });
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(a.bytes.length) });
      return res.end(a.bytes);
    }
    if (u.pathname.startsWith('/preview/')) {
      const id = decodeURIComponent(u.pathname.slice('/preview/'.length));
      if (!assets.has(id)) return send(res, 404, { success: false, error: 'Not found' });
      previews.set(id, (previews.get(id) ?? 0) + 1);
      res.writeHead(200, { 'content-type': 'image/jpeg' });
      return res.end(previewImage);
    }
    if (u.pathname !== '/graphql' || req.method !== 'POST') return send(res, 404, { success: false, error: 'Not found' });

    let body: any;
    try {
      body = JSON.parse(raw);
    } catch {
      return send(res, 400, { errors: [{ message: 'Bad request' }] });
    }
    const op = String(body.operationName ?? '');
    const v = body.variables ?? {};
    calls.set(op, (calls.get(op) ?? 0) + 1);
    if (op === 'DamhubProbe') return send(res, 200, gql.probe);

    if (faults && faults.n > 0) {
      faults.n--;
      if (faults.kind === 'hang') return; // never answers; the client's deadline must end it
      if (faults.kind === 'html') {
        res.writeHead(200, { 'content-type': 'text/html' });
        return res.end('<html><body>Service maintenance</body></html>');
      }
      if (faults.kind === 'html-502') {
        res.writeHead(502, { 'content-type': 'text/html' });
        return res.end(`<!DOCTYPE html><html><head><title>502</title><style>body{color:red}</style></head><body><h1>502 Bad Gateway</h1><p>${'upstream unavailable '.repeat(400)}</p></body></html>`);
      }
      // Frontify documents no rate-limit body: the status and Retry-After only.
      if (faults.kind === 'rate-limit' || faults.kind === 'rate-limit-short') {
        res.writeHead(429, { 'retry-after': faults.kind === 'rate-limit' ? '300' : '2' });
        return res.end();
      }
      if (faults.kind === 'expired-token') return send(res, 200, errors.policy);
    }
    const auth = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!auth || !tokens.has(auth)) return send(res, 200, errors.unauthenticated);
    const limitOk = (n: unknown) => Number.isInteger(n) && (n as number) >= 1 && (n as number) <= 100;
    const pageOk = (n: unknown) => Number.isInteger(n) && (n as number) >= 1;

    switch (op) {
      case 'DamhubCurrentUser':
        return send(res, 200, { data: { currentUser: gql.currentUser.value } });
      case 'DamhubBrands':
        return send(res, 200, { data: { brands: [brand] } });
      case 'DamhubBrandLibraries': {
        if (!limitOk(v.limit) || !pageOk(v.page)) return invalidQuery(res);
        if (v.id !== brand.id) return send(res, 200, { data: { brand: null } });
        const libs = [...libraries.values()].map((l) => l.lib);
        return send(res, 200, { data: { brand: { ...brand, libraries: page(libs, libs.length, v.limit, v.page) } } });
      }
      case 'DamhubLibraryBrowse':
      case 'DamhubFolderBrowse': {
        if (!limitOk(v.limit) || !pageOk(v.page) || !limitOk(v.folderLimit) || !pageOk(v.folderPage)) return invalidQuery(res);
        const f = op === 'DamhubLibraryBrowse' ? libraries.get(v.id) : foldersById.get(v.id);
        const key = op === 'DamhubLibraryBrowse' ? 'library' : 'node';
        if (!f) return send(res, 200, { data: { [key]: null } });
        const content: any = {};
        if (v.withFolders) content.folders = page(f.folders.map((x) => ({ id: x.id, name: x.name })), f.folders.length, v.folderLimit, v.folderPage);
        if (v.withAssets) content.assets = assetPage(f, v.limit, v.page);
        if (key === 'library') return send(res, 200, { data: { library: { ...f.lib, browse: content } } });
        return send(res, 200, { data: { node: { __typename: gql.folder.value.__typename, id: f.id, name: f.name, ...content } } });
      }
      case 'DamhubLibrarySearch': {
        if (!limitOk(v.limit) || !pageOk(v.page)) return invalidQuery(res);
        const lib = libraries.get(v.id);
        if (!lib) return send(res, 200, { data: { library: null } });
        // A folder of another library matches nothing here.
        const scope = v.query?.inFolder?.id ? [foldersById.get(v.query.inFolder.id)].find((f) => f?.lib.id === lib.lib.id) : lib;
        const term = String(v.query?.search ?? '').toLowerCase();
        const hits = scope ? within(scope).filter((a) => `${a.body.title} ${a.body.filename}`.toLowerCase().includes(term)) : [];
        return send(res, 200, { data: { library: { ...lib.lib, assets: page(hits.map(listed), hits.length, v.limit, v.page) } } });
      }
      case 'DamhubAsset': {
        const a = assets.get(v.id);
        return send(res, 200, { data: { asset: a ? withUrls(a) : null } });
      }
      case 'DamhubAssetPreview': {
        const a = assets.get(v.id);
        if (!a) return send(res, 200, { data: { asset: null } });
        const preview = 'previewUrl' in a.body ? { previewUrl: `${url}/preview/${encodeURIComponent(a.id)}?width=${v.size}&height=${v.size}` } : { thumbnailUrl: a.body.thumbnailUrl };
        return send(res, 200, { data: { asset: { __typename: a.body.__typename, id: a.id, ...preview } } });
      }
      case 'DamhubRevisions': {
        if (!limitOk(v.limit) || !pageOk(v.page)) return invalidQuery(res);
        const a = assets.get(v.id);
        if (!a) return send(res, 200, { data: { asset: null } });
        return send(res, 200, { data: { asset: { ...withUrls(a), revisions: page(a.revisions, a.revisions.length, v.limit, v.page) } } });
      }
      default:
        return invalidQuery(res);
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    ids,
    calls,
    previews,
    get maxLimit() {
      return maxLimit;
    },
    bytes: (p) => assetsByPath.get(p)!.bytes,
    fault(kind, n = 1) {
      faults = { kind, n };
    },
    revokeTokens() {
      tokens.clear();
    },
    remove(p) {
      const a = assetsByPath.get(p);
      if (!a) return;
      assets.delete(a.id);
      assetsByPath.delete(p);
      a.folder.assets = a.folder.assets.filter((x) => x !== a);
    },
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}
