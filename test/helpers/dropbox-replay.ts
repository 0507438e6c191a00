/**
 * A loopback stand-in for the Dropbox API that answers only with responses built from the
 * examples of Dropbox's published HTTP documentation (test/fixtures/dropbox/*.json, each naming
 * its page and section). A tree of files is made by copying the documented FileMetadata and
 * FolderMetadata examples with other names, ids and paths; pages, cursors, errors and tokens
 * keep the documented shapes. Listing and search pages are small so that cursors are followed.
 *
 * The OAuth side plays the user's consent: /oauth2/authorize redirects straight back with a code,
 * and /oauth2/token checks the PKCE verifier (S256) before answering the documented token body.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { issueTokens, PendingCodes } from './oauth-replay.js';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../test/fixtures/dropbox');
export const dropboxFixture = (name: string): any => JSON.parse(fs.readFileSync(path.join(FIXTURES, `${name}.json`), 'utf8'));

interface Node {
  meta: any;
  children?: Node[];
  revisions?: any[];
}

export interface DropboxReplay {
  url: string;
  /** Requests seen, by route. */
  calls: Map<string, number>;
  /** Fault injection: the next `n` API calls answer this way. */
  fault(kind: 'rate-limit' | 'html' | 'hang' | 'expired-token' | 'cursor-reset', n?: number): void;
  /** Invalidates every access token issued so far (a revoked app). */
  revokeTokens(): void;
  ids: Record<string, string>;
  /** files/get_thumbnail_v2 calls, by file id. */
  thumbnails: Map<string, number>;
  close(): Promise<void>;
}

/** `tree`: paths of files ("Photos/a.jpg"); folders are implied. `revisions`: extra revisions per file path. */
export async function startDropboxReplay(tree: string[], revisions: Record<string, number> = {}): Promise<DropboxReplay> {
  const fileTpl = dropboxFixture('list_folder').response.entries[0];
  const folderTpl = dropboxFixture('list_folder').response.entries[1];
  const tokenFx = dropboxFixture('oauth2_token');
  const errors = dropboxFixture('errors');
  const listTpl = dropboxFixture('list_folder').response;
  const searchTpl = dropboxFixture('search_v2').response;
  const revTpl = dropboxFixture('list_revisions').response;
  const linkTpl = dropboxFixture('get_temporary_link').response;
  const thumbFx = dropboxFixture('get_thumbnail_v2');
  // The reference shows no image bytes; any small JPEG stands for Dropbox's rendition.
  const thumbnailImage = await sharp({ create: { width: 256, height: 171, channels: 3, background: '#0061fe' } }).jpeg().toBuffer();
  const thumbnails = new Map<string, number>();

  let seq = 0;
  const newId = () => `id:a4ayc_80_OEAAAAAAAA${String(++seq).padStart(4, '0')}`;
  const rev = (n: number) => (0xa1c10ce0dd78 + n).toString(16);
  const root: Node = { meta: null, children: [] };
  const byId = new Map<string, Node>();
  const byPath = new Map<string, Node>([['', root]]);
  const ids: Record<string, string> = {};

  function folder(p: string): Node {
    const lower = p.toLowerCase();
    const hit = byPath.get(lower);
    if (hit) return hit;
    const i = p.lastIndexOf('/');
    const parent = folder(i <= 0 ? '' : p.slice(0, i));
    const meta = { ...folderTpl, name: p.slice(i + 1), id: newId(), path_lower: lower, path_display: p };
    const node: Node = { meta, children: [] };
    parent.children!.push(node);
    byPath.set(lower, node);
    byId.set(meta.id, node);
    ids[p.slice(1)] = meta.id;
    return node;
  }
  for (const f of tree) {
    const p = `/${f}`;
    const i = p.lastIndexOf('/');
    const parent = folder(i <= 0 ? '' : p.slice(0, i));
    const id = newId();
    const n = 1 + (revisions[f] ?? 0);
    const revs = Array.from({ length: n }, (_, k) => ({
      ...fileTpl, name: p.slice(i + 1), id, path_lower: p.toLowerCase(), path_display: p, rev: rev(seq * 100 + k), size: 1000 + seq * 10 + k,
      content_hash: createHash('sha256').update(`${p}#${k}`).digest('hex'),
      server_modified: new Date(Date.UTC(2024, 0, 1 + k, 12)).toISOString().replace('.000', ''),
    })).reverse();
    const node: Node = { meta: revs[0], revisions: revs };
    parent.children!.push(node);
    byPath.set(p.toLowerCase(), node);
    byId.set(id, node);
    ids[f] = id;
  }

  /**
   * list_revisions and get_temporary_link answer a plain FileMetadata: their documented examples,
   * like the SDK's types, carry no ".tag" (listings and get_metadata answer the tagged Metadata union).
   */
  const untagged = ({ '.tag': _tag, ...rest }: any) => rest;
  const lookup = (p: string): Node | undefined => (p.startsWith('id:') ? byId.get(p) : byPath.get(p.toLowerCase()));
  const cursor = (o: object) => `AAE${Buffer.from(JSON.stringify(o)).toString('base64url')}`;
  const uncursor = (c: unknown): any => {
    try {
      return typeof c === 'string' && c.startsWith('AAE') ? JSON.parse(Buffer.from(c.slice(3), 'base64url').toString()) : null;
    } catch {
      return null;
    }
  };
  const LIST_PAGE = 7;
  const SEARCH_PAGE = 5;
  const listPage = (folderPath: string, offset: number) => {
    const node = lookup(folderPath)!;
    const all = node.children!.map((c) => c.meta);
    const entries = all.slice(offset, offset + LIST_PAGE);
    const more = offset + LIST_PAGE < all.length;
    return { ...listTpl, entries, cursor: cursor({ f: folderPath, o: offset + LIST_PAGE }), has_more: more };
  };
  const searchPage = (q: string, scope: string, offset: number) => {
    const hits = [...byId.values()].filter((n) => n.revisions && n.meta.name.toLowerCase().includes(q.toLowerCase()) && n.meta.path_lower.startsWith(scope));
    const slice = hits.slice(offset, offset + SEARCH_PAGE);
    const more = offset + SEARCH_PAGE < hits.length;
    return { ...searchTpl, matches: slice.map((n) => ({ metadata: { '.tag': 'metadata', metadata: n.meta } })), has_more: more, ...(more ? { cursor: cursor({ q, s: scope, o: offset + SEARCH_PAGE }) } : {}) };
  };

  const tokens = new Set<string>();
  const refreshTokens = new Set<string>();
  const codes = new PendingCodes();
  let faults: { kind: string; n: number } | null = null;
  const calls = new Map<string, number>();

  const send = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };

  const server = http.createServer(async (req, res) => {
    const u = new URL(req.url!, 'http://x');
    let raw = '';
    for await (const c of req) raw += c;
    calls.set(u.pathname, (calls.get(u.pathname) ?? 0) + 1);

    if (u.pathname === '/oauth2/authorize') {
      res.writeHead(302, { location: codes.issue(u, `code-${++seq}`) });
      return res.end();
    }
    if (u.pathname === '/oauth2/token') {
      const f = new URLSearchParams(raw);
      if (f.get('grant_type') === 'authorization_code') {
        if (!codes.redeem(f)) return send(res, 400, { error: 'invalid_grant', error_description: 'invalid code or code_verifier' });
        return send(res, 200, issueTokens(tokenFx.code, ++seq, tokens, refreshTokens));
      }
      if (f.get('grant_type') === 'refresh_token') {
        // Dropbox refresh tokens are long-lived: this one stays valid, the answer carries none.
        if (!refreshTokens.has(f.get('refresh_token') ?? '')) return send(res, 400, errors.invalid_grant);
        return send(res, 200, issueTokens(tokenFx.refresh, ++seq, tokens));
      }
      return send(res, 400, { error: 'unsupported_grant_type' });
    }

    if (faults && faults.n > 0) {
      faults.n--;
      if (faults.kind === 'hang') return; // never answers; the client's deadline must end it
      if (faults.kind === 'html') {
        res.writeHead(200, { 'content-type': 'text/html' });
        return res.end('<html><body>Service maintenance</body></html>');
      }
      if (faults.kind === 'rate-limit') return send(res, 429, errors.too_many_requests, { 'retry-after': '300' });
      if (faults.kind === 'expired-token') return send(res, 401, errors.expired_access_token);
      // The documented ListFolderContinueError.reset: the cursor is no longer valid (format or state changed upstream).
      if (faults.kind === 'cursor-reset') return send(res, 409, errors.reset);
    }
    const auth = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!auth || !tokens.has(auth)) return send(res, 401, errors.invalid_access_token);
    // A content-download endpoint: arguments in Dropbox-API-Arg, the image as the body, the
    // documented PreviewResult in Dropbox-API-Result (fixture get_thumbnail_v2).
    if (u.pathname === '/2/files/get_thumbnail_v2') {
      let arg: any;
      try {
        arg = JSON.parse(String(req.headers['dropbox-api-arg'] ?? ''));
      } catch {
        res.writeHead(400, { 'content-type': 'text/plain' });
        return res.end('Error in call to API function "files/get_thumbnail_v2": could not decode input as JSON');
      }
      const n = lookup(arg?.resource?.path);
      if (!n?.meta || n.children) return send(res, 409, errors.not_found);
      thumbnails.set(n.meta.id, (thumbnails.get(n.meta.id) ?? 0) + 1);
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'dropbox-api-result': JSON.stringify({ ...thumbFx.result, file_metadata: n.meta }) });
      return res.end(thumbnailImage);
    }
    let body: any;
    try {
      body = JSON.parse(raw);
    } catch {
      res.writeHead(400, { 'content-type': 'text/plain' });
      return res.end('Error in call to API function: request body could not be decoded as JSON');
    }
    const notFound = () => send(res, 409, errors.not_found);
    switch (u.pathname) {
      case '/2/files/list_folder': {
        const n = lookup(body.path);
        if (!n || !n.children) return notFound();
        return send(res, 200, listPage(body.path, 0));
      }
      case '/2/files/list_folder/continue': {
        const c = uncursor(body.cursor);
        if (!c || typeof c.f !== 'string' || !lookup(c.f)) return send(res, 409, errors.reset);
        return send(res, 200, listPage(c.f, c.o));
      }
      case '/2/files/search_v2': {
        const scope = body.options?.path ? lookup(body.options.path)?.meta?.path_lower : '';
        if (scope === undefined) return notFound();
        return send(res, 200, searchPage(String(body.query), scope, 0));
      }
      case '/2/files/search/continue_v2': {
        const c = uncursor(body.cursor);
        if (!c || typeof c.q !== 'string') return send(res, 409, errors.reset);
        return send(res, 200, searchPage(c.q, c.s, c.o));
      }
      case '/2/files/get_metadata': {
        const n = lookup(body.path);
        return n?.meta ? send(res, 200, n.meta) : notFound();
      }
      case '/2/files/list_revisions': {
        const n = lookup(body.path);
        return n?.revisions ? send(res, 200, { ...revTpl, entries: n.revisions.map(untagged) }) : notFound();
      }
      case '/2/files/get_temporary_link': {
        const n = lookup(body.path);
        return n?.revisions ? send(res, 200, { ...linkTpl, metadata: untagged(n.meta) }) : notFound();
      }
      default:
        res.writeHead(400, { 'content-type': 'text/plain' });
        return res.end(`Unknown API function: ${u.pathname}`);
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    ids,
    thumbnails,
    fault(kind, n = 1) {
      faults = { kind, n };
    },
    revokeTokens() {
      tokens.clear();
    },
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}
