/**
 * A loopback stand-in for Cloudinary's Admin API, Search API and delivery CDN that answers only
 * with bodies built from the examples of Cloudinary's published reference
 * (test/fixtures/cloudinary/*.json, each naming its page and section). A tree of files becomes a
 * product environment in either folder mode: every asset is the documented resource example copied
 * with other ids, names and folders; folders, search pages, cursors, errors keep the documented
 * shapes. The Admin API checks HTTP Basic key:secret; the signed download endpoints check the
 * SDK's request signature (sorted parameters + secret, SHA-1), as Cloudinary does.
 *
 * The Search API's expression language is interpreted only as far as the connector speaks it:
 * AND/OR, parentheses, `field="value"`, `field:prefix/*` and free (backslash-escaped) words.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import sharp from 'sharp';
import { cloudinaryConnector } from '../../src/providers/cloudinary/provider.js';
import type { DefinedConnector } from '../../src/providers/kit/define.js';
import type { UpstreamSettings } from '../../src/providers/kit/http.js';
import type { TestHub } from './hub.js';
import { formBrowserSignIn, TestBrowser } from './browser.js';
import { startConnectorHub } from './saas.js';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../test/fixtures/cloudinary');
export const cloudinaryFixture = (name: string): any => JSON.parse(fs.readFileSync(path.join(FIXTURES, `${name}.json`), 'utf8'));

export interface ReplayAsset {
  res: any;
  /** The folder it is in ('' for the root). */
  folder: string;
  bytes: Buffer;
  /** Older backed-up versions, oldest first: their version_id and bytes. */
  older: { id: string; version: number; bytes: Buffer; time: string }[];
}

export interface CloudinaryReplayOptions {
  mode?: 'dynamic' | 'fixed';
  /** Paths with extra backed-up versions. */
  versions?: Record<string, number>;
  /** Paths stored with another delivery type (private or authenticated). */
  delivery?: Record<string, 'private' | 'authenticated'>;
  /** Whether the plan has Search API Tier 2 (aggregations). */
  tier2?: boolean;
  /** Folders per page of GET /folders (Cloudinary: up to 500). */
  folderPage?: number;
  /** Extra assets in one folder, made without bytes (a very large folder). */
  bulk?: { folder: string; count: number };
}

export interface CloudinaryReplay {
  url: string;
  cloud: string;
  key: string;
  secret: string;
  /** asset_id by path. */
  ids: Record<string, string>;
  assets: Map<string, ReplayAsset>;
  calls: Map<string, number>;
  /** Bodies of the search requests seen. */
  searches: any[];
  /** Fault injection: the next `n` Admin API calls answer this way. */
  fault(kind: 'rate-limit' | 'too-many' | 'html' | 'hang' | 'cursor-expired', n?: number, reset?: string): void;
  /** A new secret: the old one is refused from now on (a revoked key). */
  rotateSecret(): void;
  /** Deletes an asset (between a listing and its detail). */
  remove(assetPath: string): void;
  close(): Promise<void>;
}

const EXT_FORMAT = /\.(jpe?g|png)$/i;

export async function startCloudinaryReplay(tree: string[], opts: CloudinaryReplayOptions = {}): Promise<CloudinaryReplay> {
  const mode = opts.mode ?? 'dynamic';
  const cloud = 'cld-docs';
  const key = '614335564976464';
  let secret = 'a676b67565c6767a6767d6767f676fe1';
  const tpl = cloudinaryFixture('search').response.resources[0];
  const detailTpl = cloudinaryFixture('resource').response;
  const errors = cloudinaryFixture('errors');
  const foldersFx = cloudinaryFixture('folders');
  const searchFx = cloudinaryFixture('search').response;
  const visualFx = cloudinaryFixture('visual_search').response;
  const versionTpl = detailTpl.versions[0];

  let seq = 0;
  const hex = (s: string) => createHash('md5').update(s).digest('hex');
  const assets = new Map<string, ReplayAsset>();
  const ids: Record<string, string> = {};
  const folders = new Set<string>();
  let base = 'http://127.0.0.1:0';

  const addFolder = (f: string) => {
    const parts = f.split('/');
    for (let i = 1; i <= parts.length; i++) if (parts.slice(0, i).join('/')) folders.add(parts.slice(0, i).join('/'));
  };

  async function bytesFor(p: string, k: number): Promise<Buffer> {
    if (!EXT_FORMAT.test(p)) return Buffer.from(`${p} v${k}\n`);
    const n = [...p].reduce((a, c) => a + c.charCodeAt(0), 0) + k * 40;
    return sharp({ create: { width: 40 + (n % 20), height: 30, channels: 3, background: { r: n % 256, g: (n * 3) % 256, b: (n * 7) % 256 } } }).jpeg().toBuffer();
  }

  function makeResource(p: string, bytes: Buffer | null, olderCount: number, delivery: string) {
    const i = p.lastIndexOf('/');
    const folder = i < 0 ? '' : p.slice(0, i);
    const file = p.slice(i + 1);
    const m = EXT_FORMAT.exec(file);
    const stem = m ? file.slice(0, -m[0].length) : file;
    const image = !!m;
    // Fixed folders: the public id is the path; dynamic: a name of its own, the folder apart.
    const publicId = mode === 'fixed' ? (folder ? `${folder}/${stem}` : stem) : `${stem.replace(/\s+/g, '_')}_${(++seq).toString(36)}`;
    const assetId = hex(`asset:${p}`);
    const version = 1719316754 + olderCount;
    const format = image ? m![1]!.toLowerCase().replace('jpeg', 'jpg') : undefined;
    const rt = image ? 'image' : 'raw';
    const delivered = `${publicId.split('/').map(encodeURIComponent).join('/')}${format ? `.${format}` : ''}`;
    const res: any = {
      ...tpl,
      asset_id: assetId, public_id: publicId, filename: stem, display_name: mode === 'dynamic' ? stem : undefined,
      format, version, resource_type: rt, type: delivery,
      bytes: bytes?.length ?? 1000, width: image ? 40 : undefined, height: image ? 30 : undefined,
      url: `${base}/${cloud}/${rt}/${delivery}/v${version}/${delivered}`.replace(/^https?:/, 'http:'),
      secure_url: `${base}/${cloud}/${rt}/${delivery}/v${version}/${delivered}`,
      etag: bytes ? createHash('md5').update(bytes).digest('hex') : hex(p),
      tags: [stem.split(/\s+/)[0]!.toLowerCase()],
    };
    if (mode === 'dynamic') res.asset_folder = folder;
    else {
      delete res.asset_folder;
      delete res.display_name;
      res.folder = folder;
    }
    for (const k of Object.keys(res)) if (res[k] === undefined) delete res[k];
    return { res, folder };
  }

  for (const p of tree) {
    const n = opts.versions?.[p] ?? 0;
    const older = [];
    for (let k = 0; k < n; k++) older.push({ id: hex(`v:${p}:${k}`), version: 1719316754 + k - 100, bytes: await bytesFor(p, k + 1), time: new Date(Date.UTC(2024, 5, 1 + k)).toISOString() });
    const bytes = await bytesFor(p, 0);
    const { res, folder } = makeResource(p, bytes, n, opts.delivery?.[p] ?? 'upload');
    assets.set(res.asset_id, { res, folder, bytes, older });
    ids[p] = res.asset_id;
    if (folder) addFolder(folder);
  }
  if (opts.bulk) {
    addFolder(opts.bulk.folder);
    // Kept small: the documented resource's identifying fields only.
    const folder = opts.bulk.folder;
    for (let k = 0; k < opts.bulk.count; k++) {
      const publicId = `${mode === 'fixed' ? `${folder}/` : ''}bulk_${String(k).padStart(6, '0')}.txt`;
      const res: any = { asset_id: hex(`bulk:${k}`), public_id: publicId, version: 1719316754, resource_type: 'raw', type: 'upload', created_at: tpl.created_at, bytes: 10, secure_url: `http://127.0.0.1:0/${cloud}/raw/upload/v1719316754/${publicId}` };
      if (mode === 'dynamic') res.asset_folder = folder;
      else res.folder = folder;
      assets.set(res.asset_id, { res, folder, bytes: Buffer.alloc(10), older: [] });
    }
  }
  const rebase = () => {
    for (const a of assets.values()) for (const k of ['url', 'secure_url'] as const) if (a.res[k]) a.res[k] = a.res[k].replace(/^http:\/\/127\.0\.0\.1:0/, base);
  };

  // ---- the Search API's expression language, as far as the connector speaks it ----
  type Node = { op: 'and' | 'or'; args: Node[] } | { atom: string };
  function tokens(s: string): string[] {
    const out: string[] = [];
    let cur = '';
    let quote = false;
    for (let i = 0; i < s.length; i++) {
      const c = s[i]!;
      if (c === '\\') { cur += c + (s[++i] ?? ''); continue; }
      if (c === '"') { quote = !quote; cur += c; continue; }
      if (!quote && (c === '(' || c === ')' || c === ' ')) {
        if (cur) out.push(cur);
        cur = '';
        if (c !== ' ') out.push(c);
        continue;
      }
      cur += c;
    }
    if (quote) throw new Error('unterminated quote');
    if (cur) out.push(cur);
    return out;
  }
  function parse(s: string): Node {
    const t = tokens(s);
    let i = 0;
    const or = (): Node => {
      const args = [and()];
      while (t[i] === 'OR') { i++; args.push(and()); }
      return args.length === 1 ? args[0]! : { op: 'or', args };
    };
    const and = (): Node => {
      const args = [unary()];
      while (t[i] === 'AND') { i++; args.push(unary()); }
      return args.length === 1 ? args[0]! : { op: 'and', args };
    };
    const unary = (): Node => {
      const x = t[i++];
      if (x === undefined || x === ')' || x === 'AND' || x === 'OR') throw new Error(`unexpected ${x ?? 'end'}`);
      if (x === '(') {
        const n = or();
        if (t[i++] !== ')') throw new Error('missing )');
        return n;
      }
      return { atom: x };
    };
    const n = or();
    if (i !== t.length) throw new Error(`unexpected ${t[i]}`);
    return n;
  }
  const unescape = (v: string) => v.replace(/\\(.)/g, '$1');
  function matches(n: Node, a: ReplayAsset): boolean {
    if ('op' in n) return n.op === 'and' ? n.args.every((x) => matches(x, a)) : n.args.some((x) => matches(x, a));
    const m = /^([a-z_]+)(=|:)(.*)$/.exec(n.atom);
    if (m && !m[1]!.includes('\\')) {
      const [, field, op, raw] = m;
      const actual = field === 'asset_folder' ? (mode === 'dynamic' ? a.folder : undefined) : field === 'folder' ? (mode === 'fixed' ? a.folder : undefined) : a.res[field!];
      if (actual === undefined) return false;
      if (op === '=' && /^".*"$/.test(raw!)) return String(actual) === unescape(raw!.slice(1, -1));
      if (op === ':' && raw!.endsWith('/*')) return String(actual).startsWith(`${unescape(raw!.slice(0, -2))}/`);
      return String(actual) === unescape(raw!);
    }
    const word = unescape(n.atom).toLowerCase();
    const hay = [a.res.display_name ?? '', a.res.public_id, a.res.filename ?? '', ...(a.res.tags ?? [])].join(' ').toLowerCase();
    return hay.includes(word);
  }

  const cursor = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const uncursor = (c: unknown): any => {
    try {
      return typeof c === 'string' ? JSON.parse(Buffer.from(c, 'base64url').toString()) : null;
    } catch {
      return null;
    }
  };

  let faults: { kind: string; n: number; reset?: string } | null = null;
  const calls = new Map<string, number>();
  const searches: any[] = [];

  const send = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
    res.end(JSON.stringify(body));
  };
  const sendBytes = (res: http.ServerResponse, b: Buffer, type: string, etag?: string) => {
    res.writeHead(200, { 'content-type': type, 'content-length': String(b.length), ...(etag ? { etag: `"${etag}"` } : {}) });
    res.end(b);
  };
  const typeOf = (a: ReplayAsset) => (a.res.format === 'png' ? 'image/png' : a.res.format ? 'image/jpeg' : 'application/octet-stream');

  /** The version list of the details call: older backed-up versions and the current one. */
  const versionsOf = (a: ReplayAsset) => [
    ...a.older.map((v) => ({ ...versionTpl, version_id: v.id, version: v.version, format: a.res.format, size: v.bytes.length, time: v.time, restorable: true })),
    { ...versionTpl, version_id: hex(`cur:${a.res.asset_id}`), version: a.res.version, format: a.res.format, size: a.bytes.length, time: a.res.created_at, restorable: false },
  ];

  const checkSignature = (q: URLSearchParams) => {
    const params = [...q].filter(([k]) => k !== 'signature' && k !== 'api_key').sort(([a], [b]) => (a < b ? -1 : 1));
    const toSign = params.map(([k, v]) => `${k}=${v}`.replace(/&/g, '%26')).join('&');
    return q.get('api_key') === key && q.get('signature') === createHash('sha1').update(toSign + secret).digest('hex');
  };

  const server = http.createServer(async (req, res) => {
    const u = new URL(req.url!, 'http://x');
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    const route = u.pathname.replace(/\/[0-9a-f]{32}$/, '/:asset_id').replace(/^\/v1_1\/[^/]+\/folders\/.+$/, '/v1_1/:cloud/folders/:path');
    calls.set(route, (calls.get(route) ?? 0) + 1);

    // ---- delivery (res.cloudinary.com): /<cloud>/<resource_type>/upload/[<transformation>/]v<version>/<public_id>.<ext> ----
    const d = /^\/([^/]+)\/(image|video|raw)\/(upload|private|authenticated)\/(?:([a-z]_[^/]*)\/)?v(\d+)\/(.+)$/.exec(u.pathname);
    if (d) {
      const [, c, rt, type, transformation, , rest] = d;
      const publicPath = decodeURIComponent(rest!);
      const a = [...assets.values()].find((x) => x.res.resource_type === rt && x.res.type === type && (publicPath === x.res.public_id || publicPath.replace(/\.[a-z0-9]+$/i, '') === x.res.public_id));
      // Non-public delivery types need a signed URL (not offered here): refused, with the CDN's x-cld-error header.
      if (c !== cloud || !a || type !== 'upload') {
        res.writeHead(404, { 'x-cld-error': 'Resource not found' });
        return res.end();
      }
      if (transformation) {
        calls.set('thumbnail', (calls.get('thumbnail') ?? 0) + 1);
        const t = await sharp(a.bytes).resize(256, 256, { fit: 'inside' }).jpeg().toBuffer();
        return sendBytes(res, t, 'image/jpeg');
      }
      return sendBytes(res, a.bytes, typeOf(a), a.res.etag);
    }
    if (u.pathname.startsWith('/backup-blob/')) {
      const id = u.pathname.slice('/backup-blob/'.length);
      const v = [...assets.values()].flatMap((a) => a.older).find((x) => x.id === id);
      return v ? sendBytes(res, v.bytes, 'application/octet-stream') : send(res, 404, errors.not_found);
    }

    const api = /^\/v1_1\/([^/]+)\/(.+)$/.exec(u.pathname);
    if (!api || api[1] !== cloud) return send(res, 404, errors.not_found);
    const action = api[2]!;

    // Signed download endpoints: authenticated by the signature, not Basic.
    const dl = /^(image|video|raw)\/download$/.exec(action);
    if (dl || action === 'download_backup') {
      if (!checkSignature(u.searchParams)) return send(res, 401, errors.signature);
      if (dl) {
        const a = [...assets.values()].find((x) => x.res.public_id === u.searchParams.get('public_id') && x.res.type === u.searchParams.get('type') && x.res.resource_type === dl[1]);
        if (!a) return send(res, 404, errors.not_found);
        return sendBytes(res, a.bytes, typeOf(a), a.res.etag);
      }
      const a = assets.get(u.searchParams.get('asset_id') ?? '');
      const v = a?.older.find((x) => x.id === u.searchParams.get('version_id'));
      if (!v) return send(res, 404, errors.not_found);
      // The backup is handed over by a redirect to its file.
      res.writeHead(302, { location: `${base}/backup-blob/${v.id}` });
      return res.end();
    }

    if (faults && faults.n > 0) {
      faults.n--;
      if (faults.kind === 'hang') return; // never answers; the client's deadline ends it
      if (faults.kind === 'html') {
        res.writeHead(502, { 'content-type': 'text/html' });
        return res.end(`<html><head><title>502 Bad Gateway</title><style>body{}</style></head><body><h1>502 Bad Gateway</h1><p>${'upstream unavailable '.repeat(400)}</p></body></html>`);
      }
      if (faults.kind === 'rate-limit') {
        return send(res, 420, errors.rate_limited, { 'x-featureratelimit-limit': '500', 'x-featureratelimit-remaining': '0', 'x-featureratelimit-reset': faults.reset ?? new Date(Date.now() + 3600_000).toUTCString() });
      }
      if (faults.kind === 'too-many') return send(res, 429, errors.rate_limited, { 'retry-after': '2' });
      // A cursor that is no longer valid upstream (Cloudinary's cursors are opaque and may expire).
      if (faults.kind === 'cursor-expired') return send(res, 400, errors.bad_request);
    }
    if (req.headers.authorization !== `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}`) return send(res, 401, errors.unauthorized);

    if (action === 'config' && req.method === 'GET') {
      const fx = cloudinaryFixture('config')[mode];
      return send(res, 200, u.searchParams.get('settings') === 'true' ? fx : { cloud_name: fx.cloud_name, created_at: fx.created_at });
    }
    if (action === 'ping') return send(res, 200, cloudinaryFixture('ping').response);
    if ((action === 'folders' || action.startsWith('folders/')) && req.method === 'GET') {
      const parent = action === 'folders' ? '' : decodeURIComponent(action.slice('folders/'.length));
      if (parent && !folders.has(parent)) return send(res, 404, { error: { message: `Can't find folder with path ${parent}` } });
      const all = [...folders].filter((f) => (parent ? f.startsWith(`${parent}/`) && !f.slice(parent.length + 1).includes('/') : !f.includes('/'))).sort();
      const max = Math.min(Number(u.searchParams.get('max_results') ?? 10), opts.folderPage ?? 500);
      const c = u.searchParams.get('next_cursor');
      const offset = c ? uncursor(c)?.o : 0;
      if (!Number.isInteger(offset)) return send(res, 400, errors.bad_request);
      const page = all.slice(offset, offset + max);
      const more = offset + max < all.length;
      const fx = parent ? foldersFx.sub : foldersFx.root;
      return send(res, 200, { ...fx, folders: page.map((f) => ({ ...fx.folders[0], name: f.split('/').at(-1), path: f, external_id: hex(`folder:${f}`) })), next_cursor: more ? cursor({ o: offset + max }) : null, total_count: all.length });
    }
    if (action === 'resources/search' && req.method === 'POST') {
      let body: any;
      try {
        body = JSON.parse(raw.toString());
      } catch {
        return send(res, 400, errors.bad_request);
      }
      searches.push(body);
      let tree: Node | null = null;
      try {
        if (body.expression) tree = parse(String(body.expression));
      } catch (e) {
        return send(res, 400, { error: { message: `Invalid expression: ${(e as Error).message}` } });
      }
      if (body.aggregate && !opts.tier2) return send(res, 400, errors.no_aggregation);
      let offset = 0;
      if (body.next_cursor !== undefined) {
        const c = uncursor(body.next_cursor);
        if (!c || c.x !== (body.expression ?? '') || !Number.isInteger(c.o)) return send(res, 400, errors.bad_request);
        offset = c.o;
      }
      const hits = [...assets.values()].filter((a) => !tree || matches(tree, a)).sort((a, b) => (a.res.public_id < b.res.public_id ? -1 : 1));
      const max = Math.min(Number(body.max_results ?? 50), 500);
      const fields = new Set<string>(body.with_field ?? []);
      const page = hits.slice(offset, offset + max).map((a) => {
        const { tags, context, ...rest } = a.res;
        return { ...rest, ...(fields.has('tags') ? { tags } : {}), ...(fields.has('context') ? { context } : {}) };
      });
      const out: any = { ...searchFx, total_count: hits.length, resources: page };
      delete out.next_cursor;
      delete out.aggregations;
      if (offset + max < hits.length) out.next_cursor = cursor({ x: body.expression ?? '', o: offset + max });
      if (body.aggregate) {
        out.aggregations = {};
        for (const f of body.aggregate as string[]) {
          const counts: Record<string, number> = {};
          for (const a of hits) if (a.res[f] !== undefined) counts[a.res[f]] = (counts[a.res[f]] ?? 0) + 1;
          out.aggregations[f] = counts;
        }
      }
      return send(res, 200, out);
    }
    if (action === 'resources/visual_search' && req.method === 'POST') {
      let form: FormData;
      try {
        form = await new Request('http://x/', { method: 'POST', headers: { 'content-type': String(req.headers['content-type'] ?? '') }, body: raw }).formData();
      } catch {
        return send(res, 400, errors.bad_request);
      }
      const file = form.get('image_file');
      if (!(file instanceof Blob) || file.size === 0) return send(res, 400, { error: { message: 'Must supply image_file, image_url, image_asset_id or text' } });
      calls.set('visual_search_bytes', file.size);
      const hits = [...assets.values()].filter((a) => a.res.resource_type === 'image').slice(0, 3);
      return send(res, 200, { ...visualFx, resources: hits.map((a) => ({ ...visualFx.resources[0], ...a.res })) });
    }
    const byId = /^resources\/([0-9a-f]{32})$/.exec(action);
    if (byId && req.method === 'GET') {
      const a = assets.get(byId[1]!);
      if (!a) return send(res, 404, { error: { message: `Resource not found - ${byId[1]}` } });
      const detail: any = { ...detailTpl, ...a.res };
      // A raw file has no format, dimensions or embedded image metadata (none of the image example's).
      if (a.res.resource_type === 'raw') for (const k of ['format', 'width', 'height', 'image_metadata']) delete detail[k];
      if (mode === 'fixed') delete detail.asset_folder;
      if (mode === 'fixed') delete detail.display_name;
      detail.derived = a.res.type === 'upload' && a.res.resource_type === 'image'
        ? detailTpl.derived.map((x: any) => ({ ...x, url: a.res.url.replace(`/upload/`, `/upload/${x.transformation}/`), secure_url: a.res.secure_url.replace(`/upload/`, `/upload/${x.transformation}/`) }))
        : [];
      if (u.searchParams.get('versions') === 'true') detail.versions = versionsOf(a);
      else delete detail.versions;
      if (u.searchParams.get('image_metadata') !== 'true') {
        delete detail.image_metadata;
        delete detail.etag;
      }
      return send(res, 200, detail);
    }
    return send(res, 404, errors.not_found);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  rebase();
  return {
    url: base, cloud, key, get secret() { return secret; }, ids, assets, calls, searches,
    fault(kind, n = 1, reset) {
      faults = { kind, n, reset };
    },
    rotateSecret() {
      secret = `${secret}0`;
    },
    remove(p) {
      assets.delete(ids[p]!);
    },
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

/** Signs a hub user in through the connector's form (cloud name, key, secret); the DAM token or null. */
export async function signInCloudinary(t: TestHub, access: string, fields: { cloud: string; key: string; secret: string }): Promise<{ token: string | null; refresh: string | null; status: number; page: string }> {
  const start = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login?provider=cloudinary&polling=true', headers: { authorization: `Bearer ${access}` } });
  assert.equal(start.statusCode, 200, start.body);
  const { redirect_uri, state } = start.json();
  // As a browser does it (test/helpers/browser.ts): the form page sets the login's cookie, the POST carries it.
  const browser = new TestBrowser(t);
  const { form: page, submit } = await formBrowserSignIn(browser, redirect_uri, { ...fields });
  assert.equal(page.status, 200, page.body);
  const poll = await t.app.inject({ method: 'GET', url: `/api/v1/auth/login?state=${encodeURIComponent(state)}&polling=true` });
  return { token: poll.json().access_token ?? null, refresh: poll.json().refresh_token ?? null, status: submit.status, page: submit.body };
}

export interface CloudinaryHub {
  t: TestHub;
  connector: DefinedConnector;
  access: string;
  dam: string;
  damRefresh: string | null;
  headers: Record<string, string>;
  get(url: string): Promise<{ status: number; body: any; headers: Record<string, unknown> }>;
  post(url: string, body: unknown): Promise<{ status: number; body: any }>;
}

/** A hub serving the connector over the replay (both origins replaced), a user signed in through the form. */
export async function startCloudinaryHub(r: CloudinaryReplay, upstream: Partial<UpstreamSettings> = {}): Promise<CloudinaryHub> {
  const { t, connector } = await startConnectorHub(cloudinaryConnector({ endpoints: { api: r.url, res: r.url } }), upstream);
  const access = (await t.login()).access_token;
  const s = await signInCloudinary(t, access, { cloud: r.cloud, key: r.key, secret: r.secret });
  assert.ok(s.token, s.page);
  const headers = { authorization: `Bearer ${access}`, 'provider-authorization': `Bearer ${s.token}` };
  return {
    t, connector, access, dam: s.token!, damRefresh: s.refresh, headers,
    async get(url) {
      const res = await t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers });
      let body: any = null;
      try {
        body = res.json();
      } catch { /* not JSON */ }
      return { status: res.statusCode, body, headers: res.headers };
    },
    async post(url, body) {
      const res = await t.app.inject({ method: 'POST', url: `/api/v1${url}`, headers, payload: body as object });
      return { status: res.statusCode, body: res.json() };
    },
  };
}
