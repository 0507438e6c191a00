/**
 * @damhub/client's DAM login and content calls against the real hub (embedded library plus a
 * paging test provider) over loopback HTTP: the login completed through the library's sign-in
 * form while the client polls, cancelled, closed, aborted and timed out; DAM token refresh and
 * re-login; full traversals with a small size; search with filters; asset and versions;
 * capabilities; not-supported detection; responses checked against the OpenAPI document.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  capabilitiesOf, dataLocalesOf, DamhubError, defaultDataLocale, defaultProvider, isNotSupported, needsDamLogin, pageSizeFor, supports,
  type Asset, type DamhubClient, type LoginOpener,
} from '@damhub/client';
import type { FastifyInstance } from 'fastify';
import { integrationError } from '../../src/errors.js';
import type { LoginHost, Provider } from '../../src/providers/contract.js';
import type { FolderPage } from '../../src/providers/model.js';
import { formOpener, startClientHarness, type ClientHarness } from '../helpers/client-harness.js';
import { TestBrowser } from '../helpers/browser.js';
import { solidJpeg, writeFiles, libraryOf } from '../helpers/library.js';

const ACCOUNT = { name: 'alice', password: 'correct horse battery' };
let h: ClientHarness;
const files: Record<string, Buffer | string> = {};
/** Names of landscape "sunset" images. */
const landscapeSunsets = new Set<string>();

/**
 * A provider that pages the way the seed warns about: subfolders repeated on every page (and one
 * more appearing on page 2), a short first page followed by more, numeric-looking cursors.
 * Its sign-in page completes the login as soon as it is opened.
 */
function pagerProvider(id: string, image: boolean): Provider {
  const ids = Array.from({ length: 11 }, (_, i) => `p-${i}`);
  const pageOf = (offset: number, size: number) => {
    const take = offset === 0 ? size - 1 : size; // a short page that is not the last
    const page = ids.slice(offset, offset + take);
    const next = offset + page.length;
    return { page, more: next < ids.length ? { more: String(next) } : {} };
  };
  return {
    descriptor: {
      id, name: `Pager ${id}`, version: '1.0.0', logo: `/api/v1/auth/${id}/logo.svg`, glyph: 'P',
      features: { foldersOnEveryPage: true },
      paging: { defaultSize: 4, maxSize: 4 },
    },
    async beginLogin({ state }, host) {
      return { redirectUri: `${host.publicUrl}/api/v1/auth/${id}/signin?state=${encodeURIComponent(state)}` };
    },
    routes(app: FastifyInstance, host: LoginHost) {
      app.get(`/auth/${id}/signin`, { config: { auth: 'none' } }, async (req) => {
        await host.complete(String((req.query as { state: string }).state), { credentials: { u: 'p' }, accountId: 'p' });
        return { ok: true };
      });
    },
    async browse(_s, folderId, opts): Promise<FolderPage> {
      if (folderId !== 'root') throw integrationError('integration-not-found', id, `no folder ${folderId}`);
      const offset = opts.more ? Number(opts.more) : 0;
      const { page, more } = pageOf(offset, opts.size);
      const folders = [{ id: 'f/a', name: 'A' }, { id: 'f/b', name: 'B' }, ...(offset > 0 ? [{ id: 'f/c', name: 'C' }] : [])];
      return { id: 'root', name: 'Pager', folders, filters: [], totalAssetsCount: ids.length, assets: page.map((a) => ({ id: a, name: `${a}.bin` })), ...more };
    },
    ...(image ? {
      // Names the reference image's size on every asset, so a test can see which bytes arrived.
      async searchByImage(_s: unknown, ref: { bytes: Buffer }, opts: { size: number; more: string | null }) {
        const { page, more } = pageOf(opts.more ? Number(opts.more) : 0, opts.size);
        return { folders: [], filters: [], totalAssetsCount: ids.length, assets: page.map((a) => ({ id: a, name: `${a}-${ref.bytes.length}.bin` })), ...more };
      },
    } : {}),
  };
}

before(async () => {
  for (let i = 0; i < 21; i++) {
    const landscape = i % 3 !== 0;
    const name = `sunset ${String(i).padStart(2, '0')}.jpg`;
    files[`Beach/${name}`] = await solidJpeg(landscape ? 80 + i : 40, landscape ? 40 : 80 + i, [10 * i, 200 - i, 90]);
    if (landscape) landscapeSunsets.add(name);
  }
  files['Beach/Rocks/rock sunset.jpg'] = await solidJpeg(30, 60, [1, 2, 3]);
  files['Beach/Rocks/pebble.jpg'] = await solidJpeg(30, 30, [4, 5, 6]);
  files['Beach/Sand/dune.jpg'] = await solidJpeg(31, 30, [7, 8, 9]);
  files['City/street.jpg'] = await solidJpeg(50, 30, [10, 11, 12]);
  files['City/night.jpg'] = await solidJpeg(50, 31, [13, 14, 15]);
  files['notes.md'] = '# notes\n';
  h = await startClientHarness({ files, providers: [pagerProvider('pager', false), pagerProvider('imager', true)], account: ACCOUNT });
});
after(async () => {
  await h?.close();
});

const fast = { pollIntervalMs: 5, maxPollIntervalMs: 20 };

function recordingFetch(onCall?: (path: string, url: URL) => void) {
  const calls: string[] = [];
  const urls: URL[] = [];
  const f = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const u = new URL(String(input instanceof Request ? input.url : input));
    const path = `${init?.method ?? 'GET'} ${u.pathname.replace('/api/v1', '')}`;
    calls.push(path);
    urls.push(u);
    onCall?.(path, u);
    return fetch(input, init);
  }) as typeof fetch;
  return { calls, urls, fetch: f, count: (p: string) => calls.filter((c) => c === p).length };
}

async function signedIn(o: Parameters<ClientHarness['client']>[0] = {}): Promise<DamhubClient> {
  const c = h.client(o);
  await c.loginToDam('library', { open: formOpener({ username: ACCOUNT.name, password: ACCOUNT.password }), ...fast });
  return c;
}

test('DAM login: the client polls while the user completes the library sign-in form in the "popup"', async () => {
  const rec = recordingFetch();
  const c = h.client({ sub: 'login-user', fetch: rec.fetch });
  let opened = '';
  const opener = formOpener({ username: ACCOUNT.name, password: ACCOUNT.password, onOpen: (u) => { opened = u; } });
  const conn = await c.loginToDam('library', { open: opener, ...fast });
  assert.equal(await opener.submitted, 200);
  assert.ok(opened.startsWith(`${h.origin}/api/v1/auth/library/signin?state=`));
  assert.equal(conn.providerId, 'library');
  assert.ok(conn.accessToken && conn.refreshToken && conn.userHash);
  assert.equal(conn.expiresAt, h.t.clock.now() + 24 * 3600_000);
  assert.equal(c.provider, 'library', 'the signed-in provider becomes the current one');
  assert.equal(rec.calls[0], 'POST /auth/exchangeToken');
  assert.equal(rec.calls[1], 'POST /auth/login');
  assert.ok(rec.count('GET /auth/login') >= 1);
  const root = await c.folder('root');
  assert.deepEqual(root.folders.map((f) => f.name).sort(), ['Beach', 'City']);
});

test('DAM login: Cancel in the sign-in form, a closed window, an abort mid-poll, and the 5-minute horizon', async () => {
  const c = h.client({ sub: 'login-cancel' });
  await assert.rejects(c.loginToDam('library', { open: formOpener({ username: '', password: '', cancel: true }), ...fast }),
    (e: unknown) => e instanceof DamhubError && e.code === 'client-login-cancelled' && e.source === 'client');

  // The user closes the popup without signing in.
  let polls = 0;
  const rec = recordingFetch((p) => { if (p === 'GET /auth/login') polls++; });
  const c2 = h.client({ sub: 'login-closed', fetch: rec.fetch });
  const closing: LoginOpener = () => ({ get closed() { return polls >= 3; } });
  await assert.rejects(c2.loginToDam('library', { open: closing, ...fast }), (e: unknown) => e instanceof DamhubError && e.code === 'client-login-cancelled' && /closed/.test(e.message));

  // The partner's UI aborts while the client is polling; the window is closed.
  const ac = new AbortController();
  let closedByClient = false;
  const rec3 = recordingFetch((p) => { if (p === 'GET /auth/login' && rec3.count('GET /auth/login') === 3) ac.abort(); });
  const c3 = h.client({ sub: 'login-abort', fetch: rec3.fetch });
  const idle: LoginOpener = () => ({ closed: false, close() { closedByClient = true; } });
  await assert.rejects(c3.loginToDam('library', { open: idle, signal: ac.signal, ...fast }), (e: Error) => e.name === 'AbortError');
  assert.equal(rec3.count('GET /auth/login'), 3, 'no poll after the abort');
  assert.ok(closedByClient);
  await assert.rejects(c3.loginToDam('library', { open: idle, signal: ac.signal }), (e: Error) => e.name === 'AbortError', 'an already aborted signal');
  assert.equal(rec3.count('POST /auth/login'), 1);

  // Nobody signs in: polling backs off and gives up at 5 minutes of the (shared, manual) clock.
  const rec4 = recordingFetch();
  const c4 = h.client({ sub: 'login-timeout', fetch: rec4.fetch, sleep: async (ms) => { h.t.clock.advance(ms); } });
  const started = h.t.clock.now();
  await assert.rejects(c4.loginToDam('library', { open: idle, pollIntervalMs: 1000, maxPollIntervalMs: 5000 }), (e: unknown) => e instanceof DamhubError && e.code === 'client-login-timeout');
  const elapsed = h.t.clock.now() - started;
  assert.ok(elapsed >= 300_000 && elapsed <= 301_000, `gave up after ${elapsed} ms`);
  const n = rec4.count('GET /auth/login');
  assert.ok(n > 55 && n < 70, `backoff: ${n} polls in 5 minutes (1 s growing ×1.5 to 5 s)`);
});

test('DAM login in a browser without an opener: a popup is opened before the first await, then navigated to redirect_uri', async () => {
  const c = h.client({ sub: 'popup-user' });
  await c.checkToken();
  const events: string[] = [];
  let submit: Promise<number> | null = null;
  const popup = {
    closed: false,
    close() { events.push('close'); this.closed = true; },
    location: {
      set href(url: string) {
        events.push(`navigate ${new URL(url).pathname}`);
        submit = (async () => {
          const browser = new TestBrowser();
          const html = (await browser.open(url)).body;
          const state = /name="state" value="([^"]+)"/.exec(html)![1]!;
          const res = await browser.post(new URL('/api/v1/auth/library/signin', url).href, { state, username: ACCOUNT.name, password: ACCOUNT.password });
          return res.status;
        })();
      },
    },
  };
  const g = globalThis as { window?: unknown };
  g.window = { open: (url: string, target: string) => { events.push(`open ${url} ${target}`); return popup; } };
  try {
    const pending = c.loginToDam('library', fast);
    assert.deepEqual(events, ['open about:blank damhub-login'], 'opened synchronously, inside the caller\'s gesture');
    const conn = await pending;
    assert.equal(await submit, 200);
    assert.ok(conn.accessToken);
    assert.deepEqual(events, ['open about:blank damhub-login', 'navigate /api/v1/auth/library/signin', 'close']);
  } finally {
    delete g.window;
  }
});

test('DAM connection: missing → needsDamLogin; refresh rotates it; proactive refresh near expiry; an invalid one is dropped or re-logged-in', async () => {
  const fresh = h.client({ sub: 'dam-user' });
  await assert.rejects(fresh.folder('root', { provider: 'library' }), (e: unknown) => needsDamLogin(e) && (e as DamhubError).code === 'client-no-dam-connection');

  const rec = recordingFetch();
  const c = await signedIn({ sub: 'dam-user', fetch: rec.fetch });
  const first = c.damConnection()!;
  const renewed = await c.refreshDam('library');
  assert.notEqual(renewed.accessToken, first.accessToken);
  assert.equal((await c.folder('root')).id, 'root');

  // 24 hours later both the hub token and the DAM token are due: each is refreshed once, before the call.
  h.t.clock.advance(24 * 3600_000 - 30_000);
  const before = rec.count('GET /auth/refreshToken');
  assert.equal((await c.folder('root')).id, 'root');
  assert.equal(rec.count('GET /auth/refreshToken') - before, 2);
  assert.equal(rec.calls.at(-1), 'GET /assets/folder/root');
  assert.equal(rec.calls.filter((x) => x === 'GET /assets/folder/root').length, 2, 'no failed content call');

  // A connection the hub rejects and that cannot be refreshed is forgotten; needsDamLogin says what to do.
  await c.setDamConnection('library', { accessToken: 'a.b.c.d.e' });
  await assert.rejects(c.folder('root'), (e: unknown) => e instanceof DamhubError && e.code === 'provider-access-token-invalid' && needsDamLogin(e));
  assert.equal(c.damConnection('library'), undefined);

  // With autoDamLogin the client runs the login itself and retries.
  const auto = h.client({ sub: 'dam-user', autoDamLogin: true, openLoginWindow: formOpener({ username: ACCOUNT.name, password: ACCOUNT.password }) });
  await auto.setDamConnection('library', { accessToken: 'a.b.c.d.e' });
  auto.provider = 'library';
  const root = await auto.folder('root');
  assert.equal(root.id, 'root');
  assert.notEqual(auto.damConnection('library')!.accessToken, 'a.b.c.d.e');

  // ensureDamConnection: the stored one when usable, a login otherwise.
  assert.equal((await auto.ensureDamConnection('library')).accessToken, auto.damConnection('library')!.accessToken);
});

test('full traversal with size 3: every asset exactly once, size stable on every page, folders de-duplicated', async () => {
  const rec = recordingFetch();
  const c = await signedIn({ sub: 'walker', fetch: rec.fetch });
  const seen = new Map<string, string>();
  const folderIds: string[] = [];
  let pages = 0;
  const walk = async (folderId: string, path: string) => {
    for await (const page of c.folderPages(folderId, { size: 3 })) {
      pages++;
      assert.ok(page.assets.length <= 3);
      for (const a of page.assets) {
        assert.ok(!seen.has(a.id), `asset ${a.name} seen twice`);
        seen.set(a.id, path ? `${path}/${a.name}` : a.name);
      }
      for (const f of page.folders) {
        folderIds.push(f.id);
        await walk(f.id, path ? `${path}/${f.name}` : f.name);
      }
    }
  };
  await walk('root', '');
  assert.deepEqual([...seen.values()].sort(), Object.keys(files).sort());
  assert.equal(new Set(folderIds).size, folderIds.length);
  assert.equal(folderIds.length, 4); // Beach, Beach/Rocks, Beach/Sand, City
  assert.ok(pages >= 10);
  const folderCalls = rec.urls.filter((u) => u.pathname.includes('/assets/folder/'));
  assert.equal(folderCalls.length, pages);
  assert.ok(folderCalls.every((u) => u.searchParams.get('size') === '3'), 'size is the same on every page');
  assert.ok(folderCalls.some((u) => u.searchParams.has('more')));

  // The collected form, and the asset iterator.
  const beachId = (await c.folder('root')).folders.find((f) => f.name === 'Beach')!.id;
  const beach = await c.collectFolder(beachId, { size: 4 });
  assert.equal(beach.assets.length, 21);
  assert.equal(beach.more, undefined);
  assert.equal(beach.totalAssetsCount, 21);
  assert.deepEqual(beach.folders.map((f) => f.name).sort(), ['Rocks', 'Sand']);
  const names: string[] = [];
  for await (const a of c.folderAssets(beachId, { size: 5 })) names.push(a.name);
  assert.equal(names.length, 21);
});

test('a provider that repeats subfolders on every page and sends a short page first: folders once, every asset', async () => {
  const c = h.client({ sub: 'pager-user' });
  await c.loginToDam('pager', { open: async (url) => { await (await fetch(url)).text(); }, ...fast });
  const pages = [];
  for await (const p of c.folderPages('root', { size: 100 })) pages.push(p);
  // size 100 is clamped to the provider maximum (4); the first page is short (3) and not the last.
  assert.deepEqual(pages.map((p) => p.assets.length), [3, 4, 4]);
  assert.deepEqual(pages.map((p) => p.folders.map((f) => f.id)), [['f/a', 'f/b'], ['f/c'], []]);
  const all = pages.flatMap((p) => p.assets.map((a) => a.id));
  assert.deepEqual(all, Array.from({ length: 11 }, (_, i) => `p-${i}`));
  const collected = await c.collectFolder('root', { size: 4 });
  assert.deepEqual(collected.folders.map((f) => f.id), ['f/a', 'f/b', 'f/c']);
  assert.equal(collected.assets.length, 11);

  // Search by image on a provider without the capability: the hub answers 501, the client says "not supported".
  const providers = await c.providers();
  const pager = providers.find((p) => p.id === 'pager')!;
  assert.equal(supports(pager, 'similarSearch'), false);
  await assert.rejects(c.searchByImage({ bytes: new Uint8Array([0x89, 0x50, 0x4e, 0x47]), mimeType: 'image/png' }), (e: unknown) => {
    assert.ok(e instanceof DamhubError);
    assert.equal(e.status, 501);
    assert.equal(e.code, 'integration-not-supported');
    assert.equal(e.provider, 'pager');
    assert.equal(isNotSupported(e), true);
    assert.equal(needsDamLogin(e), false);
    return true;
  });
  // Keyword search is not declared either.
  await assert.rejects(c.search({ query: 'x' }), (e: unknown) => isNotSupported(e));
});

test('search by image pages to the end with bytes, a Blob, or a downloadUrl from a result as the reference', async () => {
  const c = await signedIn({ sub: 'image-user' });
  await c.loginToDam('imager', { open: async (url) => { await (await fetch(url)).text(); }, ...fast });
  assert.equal(c.provider, 'imager');
  const jpeg = await solidJpeg(20, 20, [1, 200, 3]);
  const names: string[] = [];
  const sizes: number[] = [];
  for await (const page of c.imageSearchPages(new Blob([new Uint8Array(jpeg)], { type: 'image/jpeg' }), { size: 4 })) {
    sizes.push(page.assets.length);
    names.push(...page.assets.map((a) => a.name));
  }
  assert.deepEqual(sizes, [3, 4, 4]);
  assert.equal(names.length, 11);
  assert.ok(names.every((n) => n.endsWith(`-${jpeg.length}.bin`)), 'the same reference image on every page');
  const viaBytes = await c.searchByImage({ bytes: jpeg, mimeType: 'image/jpeg' });
  assert.equal(viaBytes.assets[0]!.name, `p-0-${jpeg.length}.bin`);
  // The downloadUrl of a library asset is a valid reference: the hub resolves it itself.
  const city = (await c.folder('root', { provider: 'library' })).folders.find((f) => f.name === 'City')!;
  const street = (await c.collectFolder(city.id, { provider: 'library' })).assets.find((a) => a.name === 'street.jpg')!;
  const byUrl = await c.searchByImage(street.downloadUrl!);
  assert.equal(byUrl.assets[0]!.name, `p-0-${street.fileSize}.bin`);
  assert.equal(supports((await c.providers()).find((p) => p.id === 'imager'), 'similarSearch'), true);
});

test('keyword search with a filter taken from the response: every page, only matching assets, counts agree', async () => {
  const c = await signedIn({ sub: 'searcher' });
  const first = await c.search({ query: 'sunset', size: 5 });
  assert.ok(first.more !== undefined);
  const orientation = first.filters.find((f) => f.id === 'orientation');
  assert.ok(orientation, `filters: ${first.filters.map((f) => f.id)}`);
  const landscape = orientation.options.find((o) => /landscape/i.test(o.id));
  assert.ok(landscape);
  const found: Asset[] = [];
  for await (const page of c.searchPages({ query: 'sunset', size: 5, filters: [landscape.id] })) {
    found.push(...page.assets);
    assert.equal(page.totalAssetsCount, landscapeSunsets.size);
  }
  assert.deepEqual(found.map((a) => a.name).sort(), [...landscapeSunsets].sort());
  assert.ok(found.every((a) => a.xSizePx! > a.ySizePx!));
  assert.equal(landscape.count, landscapeSunsets.size);
  // Scoped to a folder.
  const beachId = (await c.folder('root')).folders.find((f) => f.name === 'Beach')!.id;
  const rocks = [];
  for await (const a of c.searchAssets({ query: 'sunset', parentId: beachId, size: 50 })) rocks.push(a.name);
  assert.equal(rocks.length, 22);
});

test('asset, versions after a change on disk, providers, capabilities and provider info', async () => {
  const c = await signedIn({ sub: 'reader' });
  const city = (await c.folder('root')).folders.find((f) => f.name === 'City')!;
  const night = (await c.collectFolder(city.id)).assets.find((a) => a.name === 'night.jpg')!;
  const asset = await c.asset(night.id, { uiLocale: 'de' });
  assert.equal(asset.id, night.id);
  assert.equal(asset.mimeType, 'image/jpeg');
  assert.match(asset.downloadHashSha256!, /^[0-9a-f]{64}$/);
  writeFiles(h.root!, { 'City/night.jpg': await solidJpeg(64, 40, [200, 1, 1]) });
  await libraryOf(h.t.hub).scanner.scan();
  const versions = await c.versions(night.id, { withMaster: true });
  assert.equal(versions.id, night.id);
  assert.ok(versions.versions.length >= 2, JSON.stringify(versions.versions.map((v) => v.version)));
  assert.equal(new Set(versions.versions.map((v) => v.version)).size, versions.versions.length);

  const providers = await c.providers();
  const lib = defaultProvider(providers)!;
  assert.equal(lib.id, 'library');
  const caps = capabilitiesOf(lib);
  assert.equal(caps.browse, true);
  assert.equal(caps.versions, true);
  assert.equal(caps.assetHashAlgorithm, 'Sha256');
  assert.equal(pageSizeFor(lib, 10_000), lib.paging.maxSize);
  assert.equal(pageSizeFor(lib), lib.paging.defaultSize);
  const info = await c.providerInfo({ uiLocale: 'fr' });
  assert.ok(dataLocalesOf(info).length >= 1);
  assert.equal(typeof defaultDataLocale(info), 'string');

  // Abort a content call in flight.
  const ac = new AbortController();
  const p = c.folder('root', { signal: ac.signal });
  ac.abort();
  await assert.rejects(p, (e: Error) => e.name === 'AbortError');
});

/** Every field in a live value is declared by the OpenAPI schema (and so by the generated types). */
function undeclared(value: unknown, schema: Record<string, any>, components: Record<string, any>, at: string, out: string[]): void {
  if (schema.$ref) return undeclared(value, components[String(schema.$ref).split('/').pop()!], components, at, out);
  if (schema.anyOf) {
    const branch = schema.anyOf.find((s: Record<string, any>) => (s.type === 'object') === (typeof value === 'object' && value !== null && !Array.isArray(value))) ?? schema.anyOf[0];
    return undeclared(value, branch, components, at, out);
  }
  if (Array.isArray(value)) return value.forEach((v, i) => schema.items && undeclared(v, schema.items, components, `${at}[${i}]`, out));
  if (value && typeof value === 'object') {
    if (schema.additionalProperties === true) return;
    for (const [k, v] of Object.entries(value)) {
      const prop = schema.properties?.[k] ?? (typeof schema.additionalProperties === 'object' ? schema.additionalProperties : null);
      if (!prop) out.push(`${at}.${k}`);
      else undeclared(v, prop, components, `${at}.${k}`, out);
    }
  }
}

test('every field the hub returns is declared in its OpenAPI document (from which the client types are generated)', async () => {
  const c = await signedIn({ sub: 'typed' });
  const doc = await (await fetch(`${h.api}/openapi.json`)).json();
  const components = doc.components.schemas;
  const schemaOf = (method: string, path: string) => doc.paths[`/api/v1${path}`][method].responses['200'].content['application/json'].schema;
  const beach = (await c.folder('root')).folders.find((f) => f.name === 'Beach')!;
  const page = await c.folder(beach.id, { size: 2 });
  const checks: [unknown, Record<string, unknown>][] = [
    [await c.checkToken(), schemaOf('get', '/auth/checkToken')],
    [await c.providers(), schemaOf('get', '/auth/providers')],
    [page, components.FolderResult],
    [await c.search({ query: 'sunset', size: 2 }), components.SearchResult],
    [await c.asset(page.assets[0]!.id), components.Asset],
    [await c.versions(page.assets[0]!.id, { withMaster: true }), components.VersionsResult],
  ];
  const out: string[] = [];
  for (const [value, schema] of checks) undeclared(value, schema, components, '$', out);
  assert.deepEqual(out, []);
});
