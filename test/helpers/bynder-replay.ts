/**
 * A loopback stand-in for a Bynder portal that answers only with bodies built from Bynder's API
 * reference (test/fixtures/bynder/*.json, each naming its page and section): the documented
 * asset, collection, metaproperty, download-location, similarity and error bodies, copied with
 * other names and ids. A tree of files becomes the portal's asset bank: a top-level directory is
 * a brand, a directory within it a sub-brand (Bynder's hierarchy is two levels deep); collections
 * are named lists of files. Extra versions become original media items.
 *
 * The OAuth side plays the user's consent: /v6/authentication/oauth2/auth redirects straight back
 * with a code; /v6/authentication/oauth2/token checks the client (in the body), the redirect URI
 * and the PKCE verifier (S256) before answering the documented token body. Download locations are
 * signed URLs of this server that refuse a request carrying an Authorization header (as a
 * presigned storage URL does) and serve deterministic bytes.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import assert from 'node:assert/strict';
import { bearer, type TestHub } from './hub.js';
import { oauthBrowserSignIn } from './browser.js';
import { issueTokens, PendingCodes } from './oauth-replay.js';
import { serveBytes } from './replay-bytes.js';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../test/fixtures/bynder');
export const bynderFixture = (name: string): any => JSON.parse(fs.readFileSync(path.join(FIXTURES, `${name}.json`), 'utf8'));

export const BYNDER_CLIENT = { id: 'byn-client-id', secret: 'byn-client-secret' };

interface ReplayAsset {
  media: any;
  /** Original media items, oldest first. */
  versions: { id: string; version: number; bytes: Buffer; date: string }[];
  collections: string[];
}

export interface BynderReplayOptions {
  /** Collections by name → the file paths they hold. */
  collections?: Record<string, string[]>;
  /** A collection of this many generated assets (never materialised: pages are made on demand). */
  bigCollection?: number;
}

export interface BynderReplay {
  url: string;
  /** Path → hub id: assets by file path, brands and sub-brands by directory path (`brand:…`, `subbrand:…`), collections as `collection:<name>`. */
  ids: Record<string, string>;
  /** Requests by path. */
  calls: Map<string, number>;
  /** Largest `limit` asked of Retrieve assets. */
  maxLimit: number;
  /** The `imageData` of the last Similar Assets Search. */
  lastImageData: string | null;
  /** Authorization headers seen on signed download URLs (must stay 0). */
  signedWithAuth: number;
  bigCollectionId: string;
  /** Bytes Bynder stores for an asset's version (the current one without `version`). */
  bytesOf(id: string, version?: number): Buffer;
  /** The next `n` API calls (not OAuth, not signed URLs) answer this way. */
  fault(kind: 'rate-limit' | 'html' | 'expired-token', n?: number, retryAfter?: string): void;
  /** Invalidates every access token issued so far; with `refreshToo`, the refresh tokens as well (an app's tokens revoked in the portal). */
  revokeTokens(refreshToo?: boolean): void;
  deleteAsset(id: string): void;
  close(): Promise<void>;
}

const hex = (n: number, width: number) => n.toString(16).toUpperCase().padStart(width, '0');
/** A v4 id (8-4-4-16) from a sequence number and a kind. */
const v4 = (kind: number, n: number) => `${hex(kind, 8)}-${hex(n >> 16, 4)}-4${hex(n & 0xfff, 3)}-8${hex(n, 15)}`;
/** The same id in Bynder's newer 8-4-4-4-12 lower-case form (Similar Assets Search). */
export const uuidForm = (id: string) => `${id.slice(0, 23)}-${id.slice(23)}`.toLowerCase();

export async function startBynderReplay(tree: string[], revisions: Record<string, number> = {}, opts: BynderReplayOptions = {}): Promise<BynderReplay> {
  const tokenFx = bynderFixture('oauth2_token');
  const mediaFx = bynderFixture('media');
  const colFx = bynderFixture('collections');
  const dlFx = bynderFixture('download');
  const errors = bynderFixture('errors');
  const thumbnail = await sharp({ create: { width: 250, height: 166, channels: 3, background: '#0a2aff' } }).jpeg().toBuffer();

  let base = '';
  const ids: Record<string, string> = {};
  const assets = new Map<string, ReplayAsset>();
  const collections = new Map<string, { id: string; name: string; order: number }>();
  const brands = new Map<string, { id: string; name: string; subBrands: { id: string; name: string }[] }>();
  let seq = 0;
  /** The brand and sub-brand of a file: its first and second directory. */
  const brandOf = (file: string): { brandId?: string; subBrandId?: string } => {
    const parts = file.split('/').slice(0, -1);
    if (!parts.length) return {};
    let b = brands.get(parts[0]!);
    if (!b) {
      b = { id: v4(0x2d389252, ++seq), name: parts[0]!, subBrands: [] };
      brands.set(parts[0]!, b);
      ids[parts[0]!] = `brand:${b.id}`;
    }
    if (parts.length < 2) return { brandId: b.id };
    let sb = b.subBrands.find((x) => x.name === parts[1]);
    if (!sb) {
      sb = { id: v4(0x5b000000, ++seq), name: parts[1]! };
      b.subBrands.push(sb);
      ids[`${parts[0]}/${parts[1]}`] = `subbrand:${sb.id}`;
    }
    return { brandId: b.id, subBrandId: sb.id };
  };
  const COLOURS = ['yellow', 'red'];
  const mediaOf = (id: string, file: string, n: number, date: string) => {
    const baseName = file.slice(file.lastIndexOf('/') + 1);
    const dot = baseName.lastIndexOf('.');
    const ext = dot > 0 ? baseName.slice(dot + 1).toLowerCase() : '';
    const image = ['jpg', 'jpeg', 'png', 'gif', 'webp', 'tif', 'tiff'].includes(ext);
    const thumbs = Object.fromEntries(Object.keys(mediaFx.item.thumbnails).map((k) => [k, `${base}/cdn/media/${id}/${k}-${hex(n, 8)}.jpg`]));
    return {
      ...mediaFx.item, id, name: dot > 0 ? baseName.slice(0, dot) : baseName, extension: ext ? [ext] : [],
      type: image ? 'image' : 'document', tags: ['photo', `tag${n % 3}`], property_colours: [COLOURS[n % 2]],
      fileSize: 1000 + n, width: image ? 1967 : 0, height: image ? 1311 : 0, dateCreated: date, dateModified: date,
      idHash: createHash('sha1').update(id).digest('hex').slice(0, 16), thumbnails: thumbs,
      transformBaseUrl: `${base}/transform/${id}`,
    };
  };

  const server = http.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  for (const file of tree) {
    const n = ++seq;
    const id = v4(0x86b09440, n);
    const count = 1 + (revisions[file] ?? 0);
    const versions = Array.from({ length: count }, (_, k) => ({
      id: v4(0xa1f2c3d4, n * 100 + k), version: k + 1,
      bytes: Buffer.from(`bynder bytes of ${file} version ${k + 1}\n`.repeat(20)),
      date: new Date(Date.UTC(2024, 0, 1 + k, 12)).toISOString().replace('.000', ''),
    }));
    const media = { ...mediaOf(id, file, n, versions.at(-1)!.date), ...brandOf(file) };
    media.fileSize = versions.at(-1)!.bytes.length;
    assets.set(id, { media, versions, collections: [] });
    ids[file] = id;
  }
  for (const [name, files] of Object.entries(opts.collections ?? {})) {
    const c = { id: v4(0x00b627bb, ++seq), name, order: seq };
    collections.set(c.id, c);
    ids[`collection:${name}`] = `collection:${c.id}`;
    for (const f of files) assets.get(ids[f]!)!.collections.push(c.id);
  }
  const bigCollectionId = v4(0x0b160000, 1);
  if (opts.bigCollection) collections.set(bigCollectionId, { id: bigCollectionId, name: 'Big', order: 1e9 });
  const bigItem = (i: number) => mediaOf(v4(0x0b16a55e, i), `big/item ${i}.jpg`, i, '2024-01-01T12:00:00Z');

  const tokens = new Set<string>();
  const refreshTokens = new Set<string>();
  const codes = new PendingCodes();
  let faults: { kind: string; n: number; retryAfter: string } | null = null;
  const calls = new Map<string, number>();
  const state = { maxLimit: 0, lastImageData: null as string | null, signedWithAuth: 0 };

  const send = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
  const sign = (p: string) => `${base}${p}?X-Amz-Expires=3600&X-Amz-Signature=${createHash('sha256').update(p).digest('hex')}`;

  const list = (q: URLSearchParams) => {
    let all: any[];
    const collectionId = q.get('collectionId');
    if (collectionId && collectionId === bigCollectionId && opts.bigCollection) {
      return { total: opts.bigCollection, page: (offset: number, limit: number) => Array.from({ length: Math.max(0, Math.min(limit, opts.bigCollection! - offset)) }, (_, k) => bigItem(offset + k)) };
    }
    const brandId = q.get('brandId');
    const subBrandId = q.get('subBrandId');
    all = [...assets.values()].filter((a) => (!collectionId || a.collections.includes(collectionId))
      && (!brandId || a.media.brandId === brandId) && (!subBrandId || a.media.subBrandId === subBrandId));
    const ids = q.get('ids');
    if (ids) {
      const want = ids.split(',');
      all = all.filter((a) => want.includes(a.media.id));
    }
    const keyword = (q.get('keyword') ?? '').toLowerCase();
    if (keyword) all = all.filter((a) => [a.media.name, ...a.media.tags, ...a.media.extension].some((s: string) => s.toLowerCase().includes(keyword)));
    for (const [k, v] of q) {
      const values = v.split(',');
      if (k === 'type') all = all.filter((a) => values.includes(a.media.type));
      if (k === 'tags') all = all.filter((a) => values.every((t) => a.media.tags.includes(t)));
      // property_NAME: "an AND operation when passing multiple values".
      if (k.startsWith('property_')) all = all.filter((a) => values.every((o) => (a.media[k] ?? []).includes(o)));
    }
    all.sort((a, b) => (a.media.name.toLowerCase() < b.media.name.toLowerCase() ? -1 : 1));
    return { total: all.length, page: (offset: number, limit: number) => all.slice(offset, offset + limit).map((a) => a.media), all };
  };

  server.on('request', async (req, res) => {
    const u = new URL(req.url!, base);
    let raw = '';
    for await (const c of req) raw += c;
    calls.set(u.pathname, (calls.get(u.pathname) ?? 0) + 1);

    if (u.pathname === '/v6/authentication/oauth2/auth') {
      res.writeHead(302, { location: codes.issue(u, `6440327e7ddb660435e377a17a5463ba.${++seq}`) });
      return res.end();
    }
    if (u.pathname === '/v6/authentication/oauth2/token') {
      const f = new URLSearchParams(raw);
      if (f.get('client_id') !== BYNDER_CLIENT.id || f.get('client_secret') !== BYNDER_CLIENT.secret) return send(res, 401, { error: 'invalid_client', error_description: 'Client authentication failed' });
      if (f.get('grant_type') === 'authorization_code') {
        if (!codes.redeem(f)) return send(res, 400, tokenFx.invalid_grant);
        return send(res, 200, issueTokens(tokenFx.code, ++seq, tokens, refreshTokens));
      }
      if (f.get('grant_type') === 'refresh_token') {
        // The refresh token stays valid; the answer carries none.
        if (!refreshTokens.has(f.get('refresh_token') ?? '')) return send(res, 400, tokenFx.invalid_grant);
        return send(res, 200, issueTokens(tokenFx.refresh, ++seq, tokens));
      }
      return send(res, 400, { error: 'unsupported_grant_type' });
    }
    if (u.pathname === '/v6/authentication/oauth2/scopes') return send(res, 200, bynderFixture('scopes').response);
    // The CDN's renditions and the signed storage URLs: public, no token.
    if (u.pathname.startsWith('/cdn/')) {
      res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': String(thumbnail.length) });
      return res.end(thumbnail);
    }
    const signed = /^\/s3\/([0-9A-F-]+)\/(\d+)$/.exec(u.pathname);
    if (signed) {
      if (req.headers.authorization) {
        state.signedWithAuth++;
        res.writeHead(400, { 'content-type': 'application/xml' });
        return res.end('<Error><Code>InvalidArgument</Code><Message>Only one auth mechanism allowed</Message></Error>');
      }
      const a = assets.get(signed[1]!);
      const v = a?.versions.find((x) => x.version === Number(signed[2]));
      if (!v) {
        res.writeHead(404, { 'content-type': 'application/xml' });
        return res.end('<Error><Code>NoSuchKey</Code></Error>');
      }
      // Storage answers a single byte range as S3 does, with the MD5 ETag.
      return serveBytes(req, res, v.bytes, { etag: `"${createHash('md5').update(v.bytes).digest('hex')}"` });
    }

    if (faults && faults.n > 0) {
      faults.n--;
      if (faults.kind === 'html') {
        res.writeHead(502, { 'content-type': 'text/html' });
        return res.end(`<!DOCTYPE html><html><head><title>502</title><style>body{color:red}</style></head><body><h1>Bad Gateway</h1><p>The portal is being upgraded &amp; will be back shortly.</p>${'<!-- pad -->'.repeat(2000)}</body></html>`);
      }
      if (faults.kind === 'rate-limit') return send(res, 429, errors.rate_limited, { 'retry-after': faults.retryAfter });
      if (faults.kind === 'expired-token') return send(res, 401, errors.unauthorized);
    }
    const auth = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!auth || !tokens.has(auth)) return send(res, 401, errors.unauthorized);

    if (u.pathname === '/api/v4/currentUser/') return send(res, 200, bynderFixture('current_user').response);
    if (u.pathname === '/api/v4/brands/') {
      const tpl = bynderFixture('brands').response[0];
      return send(res, 200, [...brands.values()].map((b) => ({ ...tpl, name: b.name, id: b.id, subBrands: b.subBrands.map((x) => ({ ...tpl.subBrands[0], id: x.id, name: x.name })) })));
    }
    if (u.pathname === '/api/v4/metaproperties/') return send(res, 200, bynderFixture('metaproperties').response);
    if (u.pathname === '/api/v4/collections/') {
      const limit = Number(u.searchParams.get('limit') ?? 50);
      const page = Number(u.searchParams.get('page') ?? 1);
      const all = [...collections.values()].sort((a, b) => (a.name.toLowerCase() < b.name.toLowerCase() ? -1 : 1));
      const tpl = colFx.list[0];
      return send(res, 200, all.slice((page - 1) * limit, page * limit).map((c) => ({ ...tpl, id: c.id, name: c.name, filename: c.name.toLowerCase(), collectionCount: [...assets.values()].filter((a) => a.collections.includes(c.id)).length })));
    }
    const col = /^\/api\/v4\/collections\/([^/]+)\/$/.exec(u.pathname);
    if (col) {
      const c = collections.get(col[1]!);
      return c ? send(res, 200, { ...colFx.one, name: c.name }) : send(res, 404, colFx.not_found);
    }
    if (u.pathname === '/api/v4/media/') {
      const limit = Number(u.searchParams.get('limit') ?? 50);
      const page = Number(u.searchParams.get('page') ?? 1);
      if (!(limit >= 1 && limit <= 1000) || !(page >= 1)) return send(res, 400, { message: 'Invalid request parameters.', statuscode: 400 });
      state.maxLimit = Math.max(state.maxLimit, limit);
      const l = list(u.searchParams);
      const media = l.page((page - 1) * limit, limit);
      if (u.searchParams.get('count') === '1') {
        const count: Record<string, Record<string, number>> = { type: {}, tags: {}, property_colours: {} };
        for (const a of l.all ?? []) {
          count.type![a.media.type] = (count.type![a.media.type] ?? 0) + 1;
          for (const t of a.media.tags) count.tags![t] = (count.tags![t] ?? 0) + 1;
          for (const o of a.media.property_colours) count.property_colours![o] = (count.property_colours![o] ?? 0) + 1;
        }
        return send(res, 200, { count, media });
      }
      if (u.searchParams.get('total') === '1') return send(res, 200, { total: { count: l.total }, media });
      return send(res, 200, media);
    }
    const one = /^\/api\/v4\/media\/([^/]+)\/$/.exec(u.pathname);
    if (one) {
      const a = assets.get(one[1]!);
      if (!a) return send(res, 404, errors.not_found);
      const withItems = u.searchParams.get('versions') === '1';
      const itemTpl = mediaFx.detail.mediaItems[0];
      const current = a.versions.at(-1)!;
      return send(res, 200, {
        ...a.media,
        ...(withItems ? {
          mediaItems: a.versions.map((v) => ({ ...itemTpl, id: v.id, version: v.version, fileName: `${a.media.name}.${a.media.extension[0] ?? 'bin'}`, dateCreated: v.date, size: v.bytes.length, active: v === current })),
        } : {}),
      });
    }
    const dl = /^\/api\/v4\/media\/([^/]+)\/(?:(\d+)\/)?download\/$/.exec(u.pathname);
    if (dl) {
      const a = assets.get(dl[1]!);
      const v = a && (dl[2] ? a.versions.find((x) => x.version === Number(dl[2])) : a.versions.at(-1));
      if (!a || !v) return send(res, 404, dlFx.not_available);
      return send(res, 200, { ...dlFx.response, s3_file: sign(`/s3/${a.media.id}/${v.version}`) });
    }
    if (u.pathname === '/api/1/assets/similarity-search/' && req.method === 'POST') {
      let body: any;
      try {
        body = JSON.parse(raw);
      } catch {
        return send(res, 400, { message: 'Invalid JSON body', reason: 'INVALID_BODY' });
      }
      const given = ['assetIds', 'imageUrl', 'imageData', 'textQuery'].filter((k) => body?.[k] !== undefined);
      if (given.length !== 1) return send(res, 400, bynderFixture('similarity').multiple);
      state.lastImageData = typeof body.imageData === 'string' ? body.imageData : null;
      if (!/^data:image\/[a-z]+;base64,[A-Za-z0-9+/=]+$/.test(state.lastImageData ?? '')) return send(res, 400, { message: 'imageData must be a base64 data URI of an image', reason: 'INVALID_IMAGE' });
      const images = [...assets.values()].filter((a) => a.media.type === 'image');
      const score = bynderFixture('similarity').response.assets[0].similarityScore;
      return send(res, 200, { assets: images.map((a, i) => ({ assetId: uuidForm(a.media.id), similarityScore: Math.round((score - i * 0.01) * 100) / 100 })) });
    }
    return send(res, 404, { message: 'Not Found', statuscode: 404 });
  });

  return {
    url: base,
    ids,
    calls,
    get maxLimit() { return state.maxLimit; },
    get lastImageData() { return state.lastImageData; },
    get signedWithAuth() { return state.signedWithAuth; },
    bigCollectionId,
    bytesOf(id, version) {
      const a = assets.get(id)!;
      return (version === undefined ? a.versions.at(-1)! : a.versions.find((v) => v.version === version)!).bytes;
    },
    fault(kind, n = 1, retryAfter = '300') {
      faults = { kind, n, retryAfter };
    },
    revokeTokens(refreshToo = false) {
      tokens.clear();
      if (refreshToo) refreshTokens.clear();
    },
    deleteAsset(id) {
      assets.delete(id);
    },
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  } as BynderReplay;
}

/** POST /auth/login with the portal as serverUrl, the confirm page, the replay's consent, the callback, the poll (test/helpers/browser.ts). */
export async function bynderSignIn(hub: TestHub, hubAccess: string, serverUrl: string | null): Promise<{ tokens: any; authorize: URL }> {
  const r = await oauthBrowserSignIn({ t: hub }, 'bynder', hubAccess, serverUrl ? { serverUrl } : {});
  return { tokens: r.tokens, authorize: r.authorize };
}

