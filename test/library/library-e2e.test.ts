/**
 * The whole library flow over HTTP against the real server process: exchange, DAM login by
 * submitting the sign-in form as a browser would, browse from root, page with a small size,
 * search with filters, read an asset and its versions (after a change on disk), fetch a
 * thumbnail and a download and compare bytes.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { tempDir } from '../helpers/hub.js';
import { TestBrowser } from '../helpers/browser.js';
import { solidJpeg, writeFiles } from '../helpers/library.js';
import { makeKey, signPartnerJwt, type TestKey } from '../helpers/partner.js';
import { runCli, startServer, type ServerProcess } from '../helpers/process.js';

let server: ServerProcess;
let key: TestKey;
let lib: string;
let data: string;
const issuer = 'https://partner.lib.example';

before(async () => {
  key = await makeKey();
  data = tempDir();
  lib = tempDir('damhub-e2e-lib-');
  const files: Record<string, Buffer | string> = { 'notes/sunset notes.md': '# Notes\n' };
  for (let i = 0; i < 9; i++) files[`Beach/sunset ${i}.jpg`] = await solidJpeg(60 + i, i % 2 ? 80 : 40, [200, 100 + i * 10, 50]);
  files['Beach/Rocks/rock sunset.png'] = await (await import('sharp')).default({ create: { width: 20, height: 20, channels: 3, background: '#888' } }).png().toBuffer();
  writeFiles(lib, files);
  const jwksFile = path.join(data, 'jwks.json');
  fs.writeFileSync(jwksFile, JSON.stringify({ keys: [key.publicJwk] }));
  assert.equal((await runCli(['partners', 'add', '--issuer', issuer, '--jwks-file', jwksFile, '--data', data])).code, 0);
  const user = await runCli(['users', 'add', 'bob', '--password-stdin', '--data', data], {}, 'bob-secret-pw\n');
  assert.equal(user.code, 0, user.stderr);
  server = await startServer(['--data', data, '--library', lib]);
});

after(async () => {
  await server?.stop();
});

async function json(res: Response) {
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`not JSON (${res.status}): ${text.slice(0, 200)}`);
  }
}

test('library end to end over HTTP', async () => {
  const api = `${server.url}/api/v1`;
  const jwt = await signPartnerJwt(Date.now(), { key, issuer, sub: 'bob-at-partner', email: 'bob@example.com' });
  const tokens = await json(await fetch(`${api}/auth/exchangeToken`, { method: 'POST', headers: { authorization: `Bearer ${jwt}` } }));
  const auth = { authorization: `Bearer ${tokens.access_token}` };

  const providers = await json(await fetch(`${api}/auth/providers`, { headers: auth }));
  const library = providers.find((p: { id: string }) => p.id === 'library');
  assert.ok(library, 'the library is listed');
  assert.equal(library.isDefault, true);
  assert.equal(library.capabilities.similarSearch, true);

  // DAM login: open redirect_uri like a popup would, submit the form, poll.
  const start = await json(await fetch(`${api}/auth/login?provider=library&polling=true`, { method: 'POST', headers: auth }));
  assert.deepEqual(await json(await fetch(`${api}/auth/login?state=${start.state}&polling=true`)), {});
  // A browser (test/helpers/browser.ts): the form page sets the login's cookie, the POSTs carry it.
  const browser = new TestBrowser();
  const formPage = await browser.open(start.redirect_uri);
  assert.equal(formPage.status, 200);
  const html = formPage.body;
  const state = /name="state" value="([^"]+)"/.exec(html)?.[1];
  assert.equal(state, start.state);
  const action = new URL(/<form method="post" action="([^"]+)"/.exec(html)![1]!, server.url).href;
  const wrong = await browser.post(action, { state: state!, username: 'bob', password: 'nope-nope' });
  assert.equal(wrong.status, 401);
  const signin = await browser.post(action, { state: state!, username: 'bob', password: 'bob-secret-pw' });
  assert.equal(signin.status, 200);
  const dam = await json(await fetch(`${api}/auth/login?state=${start.state}&polling=true`));
  assert.ok(dam.access_token && dam.refresh_token && dam.userHash);
  const h = { ...auth, 'provider-authorization': `Bearer ${dam.access_token}` };

  // Browse from root.
  const root = await json(await fetch(`${api}/assets/folder/root`, { headers: h }));
  assert.deepEqual(root.folders.map((f: { name: string }) => f.name).sort(), ['Beach', 'notes']);
  const beachId = root.folders.find((f: { name: string }) => f.name === 'Beach').id;

  // Page through Beach with size 4: 9 assets → 3 pages; subfolder Rocks on the first page only.
  const seen: string[] = [];
  let more: string | undefined;
  let pages = 0;
  do {
    const page = await json(await fetch(`${api}/assets/folder/${encodeURIComponent(beachId)}?size=4${more ? `&more=${encodeURIComponent(more)}` : ''}`, { headers: h }));
    pages++;
    if (pages === 1) assert.deepEqual(page.folders.map((f: { name: string }) => f.name), ['Rocks']);
    assert.equal(page.totalAssetsCount, 9);
    seen.push(...page.assets.map((a: { name: string }) => a.name));
    more = page.more;
  } while (more);
  assert.equal(pages, 3);
  assert.deepEqual(seen, [...seen].sort());
  assert.equal(new Set(seen).size, 9);

  // Search with a filter: "sunset" matches 9 JPEGs, 1 PNG and the markdown; type:image and ext:png narrow it.
  const all = await json(await fetch(`${api}/assets/search?query=sunset&size=50`, { headers: h }));
  assert.equal(all.totalAssetsCount, 11);
  const typeFacet = all.filters.find((f: { id: string }) => f.id === 'type');
  assert.ok(typeFacet.options.some((o: { id: string; count: number }) => o.id === 'type:image' && o.count === 10));
  const png = await json(await fetch(`${api}/assets/search?query=suns&filters=type:image&filters=ext:png`, { headers: h }));
  assert.equal(png.totalAssetsCount, 1);
  assert.equal(png.assets[0].name, 'rock sunset.png');
  assert.equal(png.filters.find((f: { id: string }) => f.id === 'ext').options.find((o: { id: string }) => o.id === 'ext:png').isActive, true);

  // One asset, its thumbnail and its download.
  const first = all.assets.find((a: { name: string }) => a.name === 'sunset 3.jpg');
  const asset = await json(await fetch(`${api}/assets/asset/${encodeURIComponent(first.id)}`, { headers: h }));
  const original = fs.readFileSync(path.join(lib, 'Beach/sunset 3.jpg'));
  assert.equal(asset.fileSize, original.length);
  assert.equal(asset.downloadHashSha256, createHash('sha256').update(original).digest('hex'));
  assert.equal(asset.xSizePx, 63);
  const download = await fetch(asset.downloadUrl);
  assert.equal(download.status, 200);
  assert.equal(download.headers.get('content-type'), 'image/jpeg');
  assert.deepEqual(Buffer.from(await download.arrayBuffer()), original);
  const thumb = await fetch(asset.thumbnailUrl);
  assert.equal(thumb.status, 200);
  assert.equal(thumb.headers.get('content-type'), 'image/jpeg');
  const thumbBytes = Buffer.from(await thumb.arrayBuffer());
  assert.equal(thumbBytes[0], 0xff);
  assert.equal(thumbBytes[1], 0xd8);
  const ranged = await fetch(asset.downloadUrl, { headers: { range: 'bytes=0-9' } });
  assert.equal(ranged.status, 206);
  assert.deepEqual(Buffer.from(await ranged.arrayBuffer()), original.subarray(0, 10));
  // One character of the signature changed (to another one: replacing it with 'A' changed nothing
  // when the signature began with 'A', one run in 64).
  const tampered = await fetch(asset.downloadUrl.replace(/sig=(.)/, (_m: string, c: string) => `sig=${c === 'A' ? 'B' : 'A'}`));
  assert.equal(tampered.status, 403);

  // Change the file on disk: the watcher (or a rescan) makes version 2, and version 1 stays downloadable.
  const changed = await solidJpeg(63, 80, [1, 2, 3]);
  fs.writeFileSync(path.join(lib, 'Beach/sunset 3.jpg'), changed);
  let v: any;
  // The watcher debounces, then rescans and describes the file; on a loaded machine that can take
  // seconds. Poll up to a minute (the usual case returns within the first few polls).
  for (let i = 0; i < 600; i++) {
    v = await json(await fetch(`${api}/assets/assetversions/${encodeURIComponent(first.id)}?withMaster=true`, { headers: h }));
    if (v.versions?.length === 2) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(v.versions.length, 2, 'the watcher indexed the change');
  assert.equal(v.versions[0].version, 2);
  assert.equal(v.versions[1].version, 1);
  const oldBytes = Buffer.from(await (await fetch(v.versions[1].downloadUrl)).arrayBuffer());
  assert.deepEqual(oldBytes, original);
  const newBytes = Buffer.from(await (await fetch(v.versions[0].downloadUrl)).arrayBuffer());
  assert.deepEqual(newBytes, changed);
});
