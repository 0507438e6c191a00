/**
 * Issue 29, item 2: the demo library served its `.md` as application/octet-stream. The library
 * sniffs a file's type from a snapshot of its bytes, which has no name, so the extension
 * fallback for formats without a magic number (Markdown, SVG, CSV, YAML…) never applied. Against
 * the real CLI: the demo's Markdown file is listed and downloaded as text/markdown, and a library
 * of one's own gets its text formats and SVG from their names (mime-db, src/providers/kit/mime.ts)
 * while damaged or empty files are still judged by their bytes; an index an earlier version
 * wrote is corrected by the next scan.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { Database } from '../../src/stores/sqlite/driver.js';
import { formBrowserSignIn, pollDamLogin, startDamLogin, TestBrowser } from '../helpers/browser.js';
import { call } from '../helpers/cluster.js';
import { tempDir } from '../helpers/hub.js';
import { runCli, startServer, type ServerProcess } from '../helpers/process.js';

const running: ServerProcess[] = [];
after(async () => {
  for (const s of running) await s.stop();
});

/** The demo page's exchange, then the library's sign-in form as a browser fills it: both tokens. */
async function signedIn(hub: ServerProcess): Promise<{ access: string; dam: string }> {
  const jwt = (await call(`${hub.url}/demo/partner-token`, { method: 'POST' })).body.jwt as string;
  const exchange = await call(`${hub.url}/api/v1/auth/exchangeToken`, { method: 'POST', token: jwt });
  assert.equal(exchange.status, 200, JSON.stringify(exchange.body));
  const access = exchange.body.access_token as string;
  const { state, redirect_uri } = await startDamLogin({ url: hub.url }, access, 'library');
  const { submit } = await formBrowserSignIn(new TestBrowser(), redirect_uri, { username: 'demo', password: 'demo-password' });
  assert.equal(submit.status, 200, submit.body);
  const dam = (await pollDamLogin({ url: hub.url }, state)).access_token;
  assert.ok(dam, 'the library sign-in completed');
  return { access, dam };
}

/** The assets of one library folder by name. */
async function folder(hub: ServerProcess, tokens: { access: string; dam: string }, id: string): Promise<Map<string, any>> {
  const r = await call(`${hub.url}/api/v1/assets/folder/${encodeURIComponent(id)}?size=100`, { token: tokens.access, dam: tokens.dam });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return new Map(r.body.assets.map((a: any) => [a.name, a]));
}

test("npm start's demo library: brand-guidelines.md is listed and downloaded as text/markdown", async () => {
  const hub = await startServer(['--demo', '--data', tempDir('damhub-demo-types-')]);
  running.push(hub);
  const guide = (await folder(hub, await signedIn(hub), '/Documents')).get('brand-guidelines.md');
  assert.ok(guide, 'the demo library has its Markdown file');
  assert.equal(guide.mimeType, 'text/markdown');
  const download = await fetch(guide.downloadUrl);
  assert.equal(download.status, 200);
  assert.match(String(download.headers.get('content-type')), /^text\/markdown\b/);
  assert.match(await download.text(), /^# Brand guidelines/);
});

test('a library of its own: text formats and SVG by their names, damaged files by their bytes', async () => {
  const root = tempDir('damhub-own-types-');
  const files: Record<string, string | Buffer> = {
    'notes.md': '# Notes\n',
    'table.csv': 'a,b\n1,2\n',
    'config.yaml': 'a: 1\n',
    'feed.xml': '<feed xmlns="http://www.w3.org/2005/Atom"/>', // no <?xml declaration: optional
    'logo.svg': '<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20"><rect width="40" height="20" fill="#336699"/></svg>',
    'logo.xmp': '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"/></x:xmpmeta>',
    // A JPEG is known to file-type by its bytes: these are no JPEG, whatever the names say.
    'empty.jpg': Buffer.alloc(0),
    'not-a-photo.jpg': 'plain text, not a JPEG',
    'README': 'no extension at all',
  };
  for (const [name, body] of Object.entries(files)) fs.writeFileSync(path.join(root, name), body);
  const hub = await startServer(['--demo', '--library', root, '--data', tempDir('damhub-own-types-data-')]);
  running.push(hub);
  const tokens = await signedIn(hub);
  const assets = await folder(hub, tokens, 'root');
  const types = Object.fromEntries([...assets].map(([name, a]) => [name, a.mimeType]));
  assert.deepEqual(types, {
    'notes.md': 'text/markdown',
    'table.csv': 'text/csv',
    'config.yaml': 'application/yaml',
    'feed.xml': 'application/xml',
    'logo.svg': 'image/svg+xml',
    'logo.xmp': 'application/rdf+xml',
    'empty.jpg': 'application/octet-stream',
    'not-a-photo.jpg': 'application/octet-stream',
    'README': 'application/octet-stream',
  });
  // The library rasterises its own SVG files: the thumbnail is a JPEG rendition, not the icon.
  const thumb = await fetch(assets.get('logo.svg').thumbnailUrl);
  assert.equal(thumb.status, 200);
  assert.equal(thumb.headers.get('content-type'), 'image/jpeg');
});

test('an index an earlier version wrote: the next damhub index reads its untyped files again, once, if their names now give a type', async () => {
  const root = tempDir('damhub-old-index-');
  fs.writeFileSync(path.join(root, 'notes.md'), '# Notes\n');
  fs.writeFileSync(path.join(root, 'logo.svg'), '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>');
  fs.writeFileSync(path.join(root, 'blob.bin'), Buffer.from([0, 1, 2, 3]));
  const data = tempDir('damhub-old-index-data-');
  const index = async () => {
    const r = await runCli(['index', '--library', root, '--data', data]);
    assert.equal(r.code, 0, r.stderr);
    const db = new Database(path.join(data, 'library', 'library.sqlite'), { readonly: true });
    try {
      return Object.fromEntries((db.prepare('SELECT name, mime, kind, indexed_at FROM assets').all() as { name: string; mime: string; kind: string; indexed_at: number }[])
        .map((a) => [a.name, { mime: a.mime, kind: a.kind, indexedAt: a.indexed_at }]));
    } finally {
      db.close();
    }
  };
  const first = await index();
  // What versions before this fix wrote for these files: the type of a snapshot without a name.
  const db = new Database(path.join(data, 'library', 'library.sqlite'));
  db.prepare("UPDATE assets SET mime = 'application/octet-stream', kind = 'other' WHERE name IN ('notes.md', 'logo.svg')").run();
  db.close();
  const old = await index();
  const fixed = await index();
  assert.deepEqual([fixed['notes.md']!.mime, fixed['notes.md']!.kind], ['text/markdown', 'document']);
  assert.deepEqual([fixed['logo.svg']!.mime, fixed['logo.svg']!.kind], ['image/svg+xml', 'image']);
  assert.equal(old['notes.md']!.mime, 'text/markdown', 'corrected by the first scan after the upgrade');
  assert.equal(fixed['notes.md']!.indexedAt, old['notes.md']!.indexedAt, 'and read only once');
  assert.equal(fixed['blob.bin']!.mime, 'application/octet-stream');
  assert.equal(fixed['blob.bin']!.indexedAt, first['blob.bin']!.indexedAt, 'a file whose name gives no type is not read again');
});
