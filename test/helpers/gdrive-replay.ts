/**
 * A loopback stand-in for the Google Drive API v3 answering in the shapes of Google's published
 * reference (test/fixtures/gdrive/*.json, each naming its page and section): File, file lists,
 * Revision lists, About, the documented error bodies and the OAuth token responses. A tree of
 * files is made by copying the documented File representation with other names and ids. Pages
 * are small so that nextPageToken is followed. The subset of the Drive query language the
 * connector sends (`'id' in parents`, `name contains`, `fullText contains`, `mimeType =/!=`,
 * `trashed = false`) is evaluated; anything else is the documented 400 "Invalid Value".
 * Content: `files.get?alt=media` answers each file's bytes (`content(id)`) with the Range support
 * of the "Download and export files" guide (206 and Content-Range); a Google-native document
 * (`.gdoc`, `.gsheet`, `.gform` in the tree: no extension kept, no size, no checksums) refuses
 * alt=media with the documented 403 fileNotDownloadable and exports to PDF through files.export.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { issueTokens, PendingCodes } from './oauth-replay.js';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../test/fixtures/gdrive');
export const driveFixture = (name: string): any => JSON.parse(fs.readFileSync(path.join(FIXTURES, `${name}.json`), 'utf8'));

export interface DriveReplay {
  url: string;
  ids: Record<string, string>;
  /** q parameters received, for asserting what the connector asked. */
  queries: string[];
  /** The bytes alt=media serves for a file id (or a PDF export serves, for a native document). */
  content(id: string): Buffer;
  /** The bytes revisions.get?alt=media serves for a revision id (the newest revision's are the file's own). */
  revisionContent(revisionId: string): Buffer;
  /** Headers of the content requests received (alt=media and export), for asserting what was passed. */
  contentRequests: { path: string; query: string; headers: Record<string, string | string[] | undefined> }[];
  /** The next `n` API calls (only those whose path contains `pathIncludes`, when given) fail this way. */
  fault(kind: 'rate-limit-403' | 'rate-limit-429' | 'html' | 'hang', n?: number, pathIncludes?: string): void;
  revokeTokens(): void;
  /** thumbnailLink fetches, by file id. */
  thumbnails: Map<string, number>;
  close(): Promise<void>;
}

export async function startDriveReplay(tree: string[], revisions: Record<string, number> = {}): Promise<DriveReplay> {
  const fx = { ...driveFixture('files'), thumbnail: driveFixture('thumbnail') };
  const revFx = driveFixture('revisions');
  const about = driveFixture('about').response;
  const errors = driveFixture('errors');
  const tokenFx = driveFixture('oauth2_token');
  const thumbnailImage = await sharp({ create: { width: 220, height: 124, channels: 3, background: '#1a73e8' } }).jpeg().toBuffer();
  const thumbnails = new Map<string, number>();

  const NATIVE: Record<string, string> = { gdoc: 'application/vnd.google-apps.document', gsheet: 'application/vnd.google-apps.spreadsheet', gform: 'application/vnd.google-apps.form' };
  /** Deterministic bytes of a file, `size` long, different for every path. */
  const bytesOf = (p: string, size: number) => {
    const out = Buffer.alloc(size);
    for (let o = 0, k = 0; o < size; k++) o += createHash('sha256').update(`${p}:${k}`).digest().copy(out, o);
    return out;
  };
  const bytes = new Map<string, Buffer>();
  const revBytes = new Map<string, Buffer>();
  const contentRequests: DriveReplay['contentRequests'] = [];
  let seq = 0;
  const newId = () => `1Pc8jzfU1ErbN_eucMMqdq${String(++seq).padStart(6, '0')}`;
  const rootId = fx.root.id;
  const files = new Map<string, any>([[rootId, { ...fx.root }]]);
  const revs = new Map<string, any[]>();
  const ids: Record<string, string> = { '': rootId };

  function folder(p: string): string {
    if (ids[p]) return ids[p]!;
    const i = p.lastIndexOf('/');
    const parent = i < 0 ? rootId : folder(p.slice(0, i));
    const id = newId();
    files.set(id, { ...fx.folder, id, name: p.slice(i + 1), parents: [parent], webViewLink: `https://drive.google.com/drive/folders/${id}` });
    ids[p] = id;
    return id;
  }
  for (const f of tree) {
    const i = f.lastIndexOf('/');
    const parent = i < 0 ? rootId : folder(f.slice(0, i));
    const id = newId();
    const name = f.slice(i + 1);
    const n = 1 + (revisions[f] ?? 0);
    const md5 = (k: number) => createHash('md5').update(`${f}#${k}`).digest('hex');
    const ext = name.slice(name.lastIndexOf('.') + 1);
    const native = NATIVE[ext];
    const mimeType = native ?? ({ txt: 'text/plain', pdf: 'application/pdf', png: 'image/png' } as Record<string, string>)[ext] ?? fx.file.mimeType;
    const image = mimeType.startsWith('image/') ? {} : { imageMediaMetadata: undefined };
    const size = 1000 + seq;
    bytes.set(id, native ? Buffer.from(`%PDF-1.4\n% export of ${f}\n%%EOF\n`) : bytesOf(f, size));
    const record = {
      ...fx.file, ...image, id, name: native ? name.slice(0, -ext.length - 1) : name, mimeType, parents: [parent], version: String(n + 5), size: String(size), md5Checksum: md5(n - 1),
      sha1Checksum: createHash('sha1').update(f).digest('hex'), sha256Checksum: createHash('sha256').update(f).digest('hex'),
      webContentLink: `https://drive.google.com/uc?id=${id}&export=download`, webViewLink: `https://drive.google.com/file/d/${id}/view?usp=drivesdk`,
      thumbnailLink: `https://lh3.googleusercontent.com/drive-storage/${id}=s220`,
    };
    // Native documents have no binary content: Drive reports no size, checksums or webContentLink for them.
    if (native) for (const k of ['size', 'md5Checksum', 'sha1Checksum', 'sha256Checksum', 'webContentLink']) delete (record as any)[k];
    files.set(id, record);
    revs.set(id, Array.from({ length: n }, (_, k) => {
      // The newest revision is the file's current content; earlier ones have bytes of their own.
      const content = k === n - 1 ? bytes.get(id)! : bytesOf(`${f}#${k}`, 1000 + k);
      revBytes.set(`${id}-r${k + 1}`, content);
      return {
        ...revFx.revision, id: `${id}-r${k + 1}`, originalFilename: name, md5Checksum: md5(k), size: String(content.length),
        modifiedTime: new Date(Date.UTC(2024, 2, 1 + k)).toISOString(),
      };
    }));
    ids[f] = id;
  }

  const LIST_PAGE = 7;
  const REV_PAGE = 2;
  const token = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const untoken = (s: string | null): any => {
    try {
      return s ? JSON.parse(Buffer.from(s, 'base64url').toString()) : null;
    } catch {
      return null;
    }
  };
  const STR = `'((?:\\\\.|[^'\\\\])*)'`;
  const unlit = (s: string) => s.replace(/\\(.)/g, '$1');

  /** Evaluates the subset of the query language the connector sends; null when it is outside it. */
  function evaluate(q: string): any[] | null {
    let rest = q;
    const parents = [...q.matchAll(new RegExp(`${STR} in parents`, 'g'))].map((m) => unlit(m[1]!));
    rest = rest.replace(new RegExp(`${STR} in parents`, 'g'), '');
    const terms = [...q.matchAll(new RegExp(`(?:name|fullText) contains ${STR}`, 'g'))].map((m) => unlit(m[1]!).toLowerCase());
    rest = rest.replace(new RegExp(`(?:name|fullText) contains ${STR}`, 'g'), '');
    const mimeEq = new RegExp(`mimeType = ${STR}`).exec(q)?.[1];
    const mimeNe = new RegExp(`mimeType != ${STR}`).exec(q)?.[1];
    rest = rest.replace(new RegExp(`mimeType !?= ${STR}`, 'g'), '').replace(/trashed = false/g, '');
    if (!/^[\s()]*((and|or)[\s()]*)*$/.test(rest)) return null;
    return [...files.values()].filter((f) => f.id !== rootId
      && (!parents.length || parents.some((p) => (p === 'root' ? rootId : p) === f.parents?.[0]))
      && (!terms.length || terms.some((t) => f.name.toLowerCase().includes(t)))
      && (mimeEq === undefined || f.mimeType === mimeEq)
      && (mimeNe === undefined || f.mimeType !== mimeNe));
  }

  const tokens = new Set<string>();
  const refreshTokens = new Set<string>();
  // Google's token endpoint requires the redirect_uri of the authorization request (redirect_uri_mismatch otherwise).
  const codes = new PendingCodes();
  const queries: string[] = [];
  let faults: { kind: string; n: number; pathIncludes?: string } | null = null;

  const send = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', ...headers });
    res.end(JSON.stringify(body));
  };
  const notFound = (res: http.ServerResponse, id: string) => send(res, 404, JSON.parse(JSON.stringify(errors.not_found).replaceAll('{fileId}', id)));
  const invalid = (res: http.ServerResponse, location: string) =>
    send(res, 400, { error: { errors: [{ domain: 'global', reason: 'invalid', message: 'Invalid Value', locationType: 'parameter', location }], code: 400, message: 'Invalid Value' } });

  /**
   * alt=media and files.export ("Download and export files" guide). A native document refuses
   * alt=media (403 fileNotDownloadable, "Resolve errors"); a binary file refuses export (403
   * exportOnlySupportsGoogleDocs, ibid.); only PDF exports are replayed (400 otherwise).
   */
  function serveContent(res: http.ServerResponse, file: any, exportAs: string | null, range: string | undefined, revisionBytes?: Buffer) {
    const native = String(file.mimeType).startsWith('application/vnd.google-apps.');
    const refuse = (reason: string, message: string) => send(res, 403, { error: { code: 403, message, errors: [{ domain: 'global', reason, message, locationType: 'parameter', location: exportAs === null ? 'alt' : 'fileId' }] } });
    if (exportAs === null && native) return refuse('fileNotDownloadable', 'Only files with binary content can be downloaded. Use Export with Docs Editors files.');
    if (exportAs !== null && !native) return refuse('exportOnlySupportsGoogleDocs', 'Export only supports Docs Editors files.');
    if (exportAs !== null && exportAs !== 'application/pdf') return invalid(res, 'mimeType');
    const body = revisionBytes ?? bytes.get(file.id)!;
    const type = exportAs ?? file.mimeType;
    const r = /^bytes=(\d+)-(\d*)$/.exec(range ?? '');
    if (r && exportAs === null) {
      const start = Number(r[1]);
      const end = Math.min(r[2] ? Number(r[2]) : body.length - 1, body.length - 1);
      if (start > end) {
        res.writeHead(416, { 'content-range': `bytes */${body.length}` });
        return res.end();
      }
      res.writeHead(206, { 'content-type': type, 'content-length': String(end - start + 1), 'content-range': `bytes ${start}-${end}/${body.length}` });
      return res.end(body.subarray(start, end + 1));
    }
    res.writeHead(200, { 'content-type': type, 'content-length': String(body.length) });
    return res.end(body);
  }

  const server = http.createServer(async (req, res) => {
    const u = new URL(req.url!, 'http://x');
    let raw = '';
    for await (const c of req) raw += c;

    if (u.pathname === '/o/oauth2/v2/auth') {
      res.writeHead(302, { location: codes.issue(u, `4/P7q7W91a-oMsCeLvIaQm6bTrgtp7-${++seq}`) });
      return res.end();
    }
    if (u.pathname === '/token') {
      const f = new URLSearchParams(raw);
      if (f.get('client_id') !== 'drive-app' || f.get('client_secret') !== 'drive-secret') return send(res, 401, { error: 'invalid_client', error_description: 'Unauthorized' });
      if (f.get('grant_type') === 'authorization_code') {
        if (!codes.redeem(f)) return send(res, 400, tokenFx.invalid_grant);
        return send(res, 200, issueTokens(tokenFx.code, ++seq, tokens, refreshTokens));
      }
      if (f.get('grant_type') === 'refresh_token' && refreshTokens.has(f.get('refresh_token') ?? '')) return send(res, 200, issueTokens(tokenFx.refresh, ++seq, tokens));
      return send(res, 400, tokenFx.invalid_grant);
    }

    if (faults && faults.n > 0 && (!faults.pathIncludes || u.pathname.includes(faults.pathIncludes))) {
      faults.n--;
      if (faults.kind === 'hang') return;
      if (faults.kind === 'html') {
        res.writeHead(502, { 'content-type': 'text/html; charset=UTF-8' });
        return res.end('<!DOCTYPE html><html><title>Error 502 (Server Error)!!1</title></html>');
      }
      if (faults.kind === 'rate-limit-403') return send(res, 403, errors.user_rate_limit);
      if (faults.kind === 'rate-limit-429') return send(res, 429, errors.too_many_requests, { 'retry-after': '30' });
    }
    const auth = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!auth || !tokens.has(auth)) return send(res, 401, errors.invalid_credentials);

    // A file's thumbnailLink, fetched with the user's token as the File reference asks for a file not
    // shared publicly (fixture thumbnail.json); any small JPEG stands for Google's rendition.
    const thumb = /^\/drive-storage\/([^=/]+)=s220$/.exec(u.pathname);
    if (thumb) {
      if (!files.has(thumb[1]!)) return notFound(res, thumb[1]!);
      thumbnails.set(thumb[1]!, (thumbnails.get(thumb[1]!) ?? 0) + 1);
      res.writeHead(200, { 'content-type': 'image/jpeg' });
      return res.end(thumbnailImage);
    }
    const m = /^\/drive\/v3\/(about|files)(?:\/([^/]+))?(?:\/(revisions|export))?(?:\/([^/]+))?$/.exec(u.pathname);
    if (!m) return send(res, 404, { error: { code: 404, message: 'Not Found', errors: [{ domain: 'global', reason: 'notFound', message: 'Not Found' }] } });
    if (m[1] === 'about') return send(res, 200, about);
    if (!m[2]) {
      const q = u.searchParams.get('q') ?? '';
      queries.push(q);
      const pt = u.searchParams.get('pageToken');
      const cont = untoken(pt);
      if (pt && (!cont || cont.q !== q)) return invalid(res, 'pageToken');
      const hits = evaluate(q);
      if (!hits) return invalid(res, 'q');
      const offset = cont?.o ?? 0;
      const more = offset + LIST_PAGE < hits.length;
      return send(res, 200, { ...fx.list, files: hits.slice(offset, offset + LIST_PAGE), ...(more ? { nextPageToken: token({ q, o: offset + LIST_PAGE }) } : {}) });
    }
    const id = decodeURIComponent(m[2]);
    const file = files.get(id === 'root' ? rootId : id);
    if (!file) return notFound(res, id);
    if (m[4] !== undefined) {
      // revisions.get: the revision's metadata, or with alt=media its bytes ("Download and export files", binary files only).
      const rev = m[3] === 'revisions' ? revs.get(file.id)?.find((x) => x.id === decodeURIComponent(m[4]!)) : undefined;
      if (!rev) return send(res, 404, { error: { code: 404, message: `Revision not found: ${m[4]}.`, errors: [{ domain: 'global', reason: 'notFound', message: `Revision not found: ${m[4]}.`, locationType: 'parameter', location: 'revisionId' }] } });
      if (u.searchParams.get('alt') !== 'media') return send(res, 200, rev);
      contentRequests.push({ path: u.pathname, query: u.search, headers: req.headers });
      return serveContent(res, file, null, req.headers.range, revBytes.get(rev.id));
    }
    if (m[3] === 'export' || u.searchParams.get('alt') === 'media') {
      contentRequests.push({ path: u.pathname, query: u.search, headers: req.headers });
      return serveContent(res, file, m[3] === 'export' ? u.searchParams.get('mimeType') : null, req.headers.range);
    }
    if (!m[3]) return send(res, 200, file);
    const list = revs.get(file.id);
    if (!list) return send(res, 403, { error: { code: 403, message: 'The file does not support revisions.', errors: [{ domain: 'global', reason: 'revisionsNotSupported', message: 'The file does not support revisions.' }] } });
    const offset = untoken(u.searchParams.get('pageToken'))?.o ?? 0;
    const more = offset + REV_PAGE < list.length;
    return send(res, 200, { ...revFx.list, revisions: list.slice(offset, offset + REV_PAGE), ...(more ? { nextPageToken: token({ o: offset + REV_PAGE }) } : {}) });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // Google's thumbnail host is this server here: the links point back to it.
  for (const f of files.values()) if (f.thumbnailLink) f.thumbnailLink = f.thumbnailLink.replace(fx.thumbnail.host, base);
  return {
    url: base,
    ids,
    thumbnails,
    queries,
    contentRequests,
    content: (id) => {
      const b = bytes.get(id);
      if (!b) throw new Error(`no file ${id}`);
      return b;
    },
    revisionContent: (revisionId) => {
      const b = revBytes.get(revisionId);
      if (!b) throw new Error(`no revision ${revisionId}`);
      return b;
    },
    fault(kind, n = 1, pathIncludes) {
      faults = { kind, n, pathIncludes };
    },
    revokeTokens() {
      tokens.clear();
    },
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}
