/**
 * The embedded library's write operations, called on the provider directly over a temp library
 * folder (SQLite index): each one's effect on disk, in the index, in search and in the versions;
 * no temp file ever visible (a body that fails half-way, a full disk through the write seam);
 * conflict modes; folder-not-empty; write rights enforced and stated in capabilities; locks.
 * test/library/postgres/library-writes-pg-index.test.ts runs it again over the PostgreSQL index.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { contentTagOf, etagOf, lockedByOther } from '../../src/providers/asset-state.js';
import type { ProviderSession, WriteCondition } from '../../src/providers/contract.js';
import type { LibraryProvider } from '../../src/providers/library/provider.js';
import { assetIdFor, isSkippedName, WORK_PREFIX } from '../../src/providers/library/scanner.js';
import { alternativeName as numbered } from '../../src/providers/names.js';
import { LibraryIndex } from '../../src/providers/library/index/sqlite.js';
import { SQLITE_INDEX_SCHEMA_VERSION } from '../../src/providers/library/index/sqlite-schema.js';
import { solidJpeg, writeFiles } from '../helpers/library.js';
import { body, everyName, failingBody, LIST, libraryDirs, makeLibrary, sessionOf } from '../helpers/library-writes.js';

const NO_COND: WriteCondition = { ifMatch: null, upstreamTag: null };
const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const code = (c: string, details?: RegExp) => (e: unknown) => {
  assert.equal((e as { code?: string }).code, c, String(e));
  if (details) assert.match((e as { details?: string }).details ?? '', details);
  return true;
};

let dirs: { root: string; data: string };
let lib: LibraryProvider;
let writer: ProviderSession;
let reader: ProviderSession;
let other: ProviderSession;
let red: Buffer;
let blue: Buffer;

before(async () => {
  dirs = libraryDirs();
  red = await solidJpeg(40, 30, [220, 10, 10]);
  blue = await solidJpeg(30, 40, [10, 10, 220]);
  writeFiles(dirs.root, {
    'Open/existing.jpg': red,
    'Open/notes.txt': 'notes v1',
    'Open/Sub/deep.txt': 'deep',
    'Closed/shut.txt': 'shut',
  });
  lib = await makeLibrary(dirs.root, dirs.data);
  await lib.rescan();
  writer = await sessionOf(lib, 'writer', [], ['Open']);
  reader = await sessionOf(lib, 'reader', [], []);
  other = await sessionOf(lib, 'other', [], ['Open']);
});
after(() => lib.close());

const search = async (s: ProviderSession, query: string) => (await lib.search(s, { query, parentId: null }, LIST)).assets.map((a) => a.name).sort();
const names = async (s: ProviderSession, folderId: string) => (await lib.browse(s, folderId, LIST)).assets.map((a) => a.name).sort();
const onDisk = (rel: string) => fs.readFileSync(path.join(dirs.root, rel));

describe('upload', () => {
  test('a new asset: bytes on disk, indexed, searchable, browsable, thumbnailed and described in the same request', async () => {
    const view = await lib.viewVersion(writer);
    const { asset, created } = await lib.upload(writer, { parentId: '/Open', name: 'zebra.jpg', onConflict: 'fail' }, body(blue));
    assert.equal(created, true);
    assert.equal(asset.id, assetIdFor('Open/zebra.jpg'));
    assert.equal(asset.version, 1);
    assert.equal(asset.downloadHashSha256, sha(blue));
    assert.equal(asset.versionComment, 'Uploaded by writer');
    assert.equal(asset.xSizePx, 30);
    assert.deepEqual(onDisk('Open/zebra.jpg'), blue);
    assert.deepEqual(await search(writer, 'zebra'), ['zebra.jpg'], 'found by a search right after the write');
    assert.ok((await names(writer, '/Open')).includes('zebra.jpg'));
    assert.ok(lib.renditions.has(asset.id, 1, 'thumbnail'), 'the thumbnail is made');
    assert.deepEqual((await lib.index.descriptors().pending()).map((p) => p.id), [], 'the image descriptor is made');
    assert.ok(lib.similarity.index.has(asset.id), 'and searchable by image on this node at once');
    assert.equal(contentTagOf(asset), `1:${sha(blue)}`);
    assert.notEqual(await lib.viewVersion(writer), view, 'cached browse pages drop');
    assert.deepEqual(everyName(path.join(dirs.root, 'Open')).filter((n) => n.startsWith('.')), [], 'no temp file left');
  });

  test('onConflict fail → asset-exists, nothing written; rename → "name (2).ext", "(3)"; version → one version later, created false', async () => {
    const before = everyName(dirs.root);
    await assert.rejects(lib.upload(writer, { parentId: '/Open', name: 'notes.txt', onConflict: 'fail' }, body('other notes')), code('asset-exists', /\/Open\/notes\.txt/));
    assert.deepEqual(everyName(dirs.root), before);
    assert.equal(onDisk('Open/notes.txt').toString(), 'notes v1');

    const r2 = await lib.upload(writer, { parentId: '/Open', name: 'notes.txt', onConflict: 'rename' }, body('notes two'));
    const r3 = await lib.upload(writer, { parentId: '/Open', name: 'notes.txt', onConflict: 'rename' }, body('notes three'));
    assert.deepEqual([r2.asset.name, r2.created, r3.asset.name], ['notes (2).txt', true, 'notes (3).txt']);
    assert.equal(onDisk('Open/notes (3).txt').toString(), 'notes three');
    assert.equal(numbered('README', 2), 'README (2)');

    const original = (await lib.asset(writer, assetIdFor('Open/notes.txt'), { uiLocale: 'en', timeZone: null }))!;
    const v = await lib.upload(writer, { parentId: '/Open', name: 'notes.txt', onConflict: 'version' }, body('notes v2'));
    assert.equal(v.created, false);
    assert.equal(v.asset.id, original.id);
    assert.equal(v.asset.version, original.version! + 1);
    assert.equal(onDisk('Open/notes.txt').toString(), 'notes v2');
    const versions = await lib.versions(writer, original.id, { withMaster: true, uiLocale: 'en' });
    assert.deepEqual(versions.versions.map((x) => [x.version, x.downloadHashSha256]), [[2, sha('notes v2')], [1, sha('notes v1')]]);
    // The old version's bytes are kept (the version store) and served.
    const old = await lib.media({ assetId: original.id, version: 1, rendition: 'original' });
    assert.equal(old.kind === 'file' && fs.readFileSync(old.path, 'utf8'), 'notes v1');
    // onConflict version onto a free name is a plain new asset.
    const fresh = await lib.upload(writer, { parentId: '/Open', name: 'fresh.txt', onConflict: 'version' }, body('fresh'));
    assert.deepEqual([fresh.created, fresh.asset.version], [true, 1]);
  });

  test('two saves onto one name at once: both become versions, none is lost', async () => {
    const first = await lib.upload(writer, { parentId: '/Open', name: 'race.txt', onConflict: 'fail' }, body('r0'));
    const [x, y] = await Promise.all(['r1', 'r2'].map((b) => lib.upload(writer, { parentId: '/Open', name: 'race.txt', onConflict: 'version' }, body(b))));
    assert.deepEqual([x!.asset.version, y!.asset.version].sort(), [2, 3]);
    const all = await lib.versions(writer, first.asset.id, { withMaster: true, uiLocale: 'en' });
    assert.deepEqual(all.versions.map((v) => v.downloadHashSha256).sort(), ['r0', 'r1', 'r2'].map(sha).sort());
  });

  test('a body that fails half-way leaves the folder and the index as they were', async () => {
    const before = everyName(dirs.root);
    const states = [...(await lib.index.fileStates())].sort();
    await assert.rejects(lib.upload(writer, { parentId: '/Open', name: 'half.bin', onConflict: 'fail' }, failingBody(Buffer.alloc(64 * 1024, 7))), /the client went away/);
    assert.deepEqual(everyName(dirs.root), before, 'no partial file, no temp file');
    assert.deepEqual([...(await lib.index.fileStates())].sort(), states, 'the index is unchanged');
    const id = assetIdFor('Open/notes.txt');
    const cur = (await lib.index.asset(id))!;
    await assert.rejects(lib.update(writer, id, failingBody(Buffer.from('half a new ver')), NO_COND), /the client went away/);
    assert.deepEqual(everyName(dirs.root), before);
    assert.equal(onDisk('Open/notes.txt').toString(), 'notes v2', 'the asset keeps its bytes');
    assert.deepEqual(await lib.index.asset(id), cur, 'and its index row');
  });

  test('names the library cannot show are refused; an unknown folder is not found; any type is taken', async () => {
    await assert.rejects(lib.upload(writer, { parentId: '/Open', name: '.hidden.jpg', onConflict: 'fail' }, body('x')), code('asset-name-invalid', /hidden/));
    await assert.rejects(lib.upload(writer, { parentId: '/Nope', name: 'a.txt', onConflict: 'fail' }, body('x')), code('integration-not-found'));
    assert.equal(lib.uploadExtensions(), null);
  });
});

describe('update, rename, move, delete', () => {
  test('update: the same id one version later; its tag, ETag and thumbnail change; the old version stays', async () => {
    const { asset: a } = await lib.upload(writer, { parentId: '/Open', name: 'swatch.jpg', onConflict: 'fail' }, body(red));
    const tag = contentTagOf(a)!;
    const view = await lib.viewVersion(writer);
    const b = await lib.update(writer, a.id, body(blue), { ifMatch: etagOf(a), upstreamTag: tag });
    assert.equal(b.id, a.id);
    assert.equal(b.version, 2);
    assert.equal(b.versionComment, 'New version uploaded by writer');
    assert.deepEqual([b.xSizePx, b.ySizePx], [30, 40]);
    assert.notEqual(contentTagOf(b), tag);
    assert.notEqual(etagOf(b), etagOf(a));
    assert.notEqual(await lib.viewVersion(writer), view);
    assert.ok(lib.renditions.has(a.id, 2, 'thumbnail'));
    assert.deepEqual((await lib.versions(writer, a.id, { withMaster: false, uiLocale: 'en' })).versions.map((v) => v.downloadHashSha256), [sha(red)]);
    // The same bytes saved again are still a new version (an explicit save), with a new tag.
    const c = await lib.update(writer, a.id, body(blue), { ifMatch: etagOf(b), upstreamTag: contentTagOf(b) });
    assert.equal(c.version, 3);
    assert.notEqual(etagOf(c), etagOf(b));
  });

  test('update with a stale upstream tag, or over a file changed on disk, is a version conflict (and the change is indexed)', async () => {
    const { asset: a } = await lib.upload(writer, { parentId: '/Open', name: 'edited.txt', onConflict: 'fail' }, body('one'));
    await assert.rejects(lib.update(writer, a.id, body('two'), { ifMatch: '"x"', upstreamTag: '0:stale' }), code('asset-version-conflict'));
    fs.writeFileSync(path.join(dirs.root, 'Open/edited.txt'), 'changed outside the hub');
    await assert.rejects(lib.update(writer, a.id, body('two'), { ifMatch: etagOf(a), upstreamTag: contentTagOf(a) }), code('asset-version-conflict', /changed on disk/));
    const now = (await lib.asset(writer, a.id, { uiLocale: 'en', timeZone: null }))!;
    assert.equal(now.downloadHashSha256, sha('changed outside the hub'), 'the next read carries the new ETag');
    assert.equal(onDisk('Open/edited.txt').toString(), 'changed outside the hub');
  });

  test('an edit outside the hub: a conditional rename or delete is a conflict; an unconditional rename moves it and indexes the change', async () => {
    const { asset: a } = await lib.upload(writer, { parentId: '/Open', name: 'outside.txt', onConflict: 'fail' }, body('mine'));
    fs.writeFileSync(path.join(dirs.root, 'Open/outside.txt'), 'theirs, longer');
    await assert.rejects(lib.deleteAsset(writer, a.id, { ifMatch: etagOf(a), upstreamTag: contentTagOf(a) }), code('asset-version-conflict'));
    const fresh = (await lib.asset(writer, a.id, { uiLocale: 'en', timeZone: null }))!;
    fs.writeFileSync(path.join(dirs.root, 'Open/outside.txt'), 'theirs again, longer still');
    await assert.rejects(lib.renameAsset(writer, a.id, 'inside.txt', { ifMatch: etagOf(fresh), upstreamTag: contentTagOf(fresh) }), code('asset-version-conflict'));
    assert.ok(fs.existsSync(path.join(dirs.root, 'Open/outside.txt')), 'nothing moved');
    fs.writeFileSync(path.join(dirs.root, 'Open/outside.txt'), 'and once more, with more bytes');
    const r = await lib.renameAsset(writer, a.id, 'inside.txt', NO_COND);
    assert.equal(r.downloadHashSha256, sha('and once more, with more bytes'));
    assert.equal(r.version, 4);
  });

  test('rename: a new id at the new path, with its versions, renditions and search terms; onto a taken name → asset-exists', async () => {
    const { asset: a } = await lib.upload(writer, { parentId: '/Open', name: 'giraffe.jpg', onConflict: 'fail' }, body(red));
    await lib.update(writer, a.id, body(blue), NO_COND);
    const r = await lib.renameAsset(writer, a.id, 'okapi.jpg', NO_COND);
    assert.equal(r.id, assetIdFor('Open/okapi.jpg'));
    assert.equal(r.version, 2);
    assert.ok(fs.existsSync(path.join(dirs.root, 'Open/okapi.jpg')));
    assert.ok(!fs.existsSync(path.join(dirs.root, 'Open/giraffe.jpg')));
    await assert.rejects(lib.asset(writer, a.id, { uiLocale: 'en', timeZone: null }), code('integration-not-found'));
    assert.deepEqual((await lib.versions(writer, r.id, { withMaster: false, uiLocale: 'en' })).versions.map((v) => v.downloadHashSha256), [sha(red)]);
    assert.ok(lib.renditions.has(r.id, 2, 'thumbnail'), 'renditions follow the new id');
    assert.ok(lib.similarity.index.has(r.id) && !lib.similarity.index.has(a.id), 'so does the image descriptor');
    assert.deepEqual(await search(writer, 'okapi'), ['okapi.jpg']);
    assert.deepEqual(await search(writer, 'giraffe'), []);
    const before = everyName(dirs.root);
    await assert.rejects(lib.renameAsset(writer, r.id, 'existing.jpg', NO_COND), code('asset-exists'));
    assert.deepEqual(everyName(dirs.root), before);
    assert.deepEqual(onDisk('Open/existing.jpg'), red, 'the other file is untouched');
    // A new extension is read again under its new type.
    const t = await lib.renameAsset(writer, r.id, 'okapi.bin', NO_COND);
    assert.equal(t.mimeType, 'image/jpeg', 'sniffed from the bytes');
    assert.equal(t.version, 2, 'same bytes, same version');
  });

  test('move: into another folder, renamed on the way; out of the write folders → integration-forbidden naming the folder', async () => {
    const { asset: a } = await lib.upload(writer, { parentId: '/Open', name: 'mover.txt', onConflict: 'fail' }, body('moving'));
    const m = await lib.moveAsset(writer, a.id, { parentId: '/Open/Sub', name: 'moved.txt' }, NO_COND);
    assert.equal(m.id, assetIdFor('Open/Sub/moved.txt'));
    assert.equal(m.relatedFolderId, '/Open/Sub');
    assert.equal(onDisk('Open/Sub/moved.txt').toString(), 'moving');
    assert.ok((await names(writer, '/Open/Sub')).includes('moved.txt'));
    assert.ok(!(await names(writer, '/Open')).includes('mover.txt'));
    await assert.rejects(lib.moveAsset(writer, m.id, { parentId: '/Closed', name: null }, NO_COND), code('integration-forbidden', /\/Closed/));
    assert.ok(fs.existsSync(path.join(dirs.root, 'Open/Sub/moved.txt')));
  });

  test('delete: the file, its index row, its versions and its search terms go', async () => {
    const { asset: a } = await lib.upload(writer, { parentId: '/Open', name: 'ephemeral.txt', onConflict: 'fail' }, body('v1'));
    await lib.update(writer, a.id, body('v2'), NO_COND);
    await lib.deleteAsset(writer, a.id, NO_COND);
    assert.ok(!fs.existsSync(path.join(dirs.root, 'Open/ephemeral.txt')));
    assert.equal(await lib.index.asset(a.id), null);
    assert.deepEqual(await lib.index.versions(a.id), []);
    assert.deepEqual(await search(writer, 'ephemeral'), []);
    // Uploaded again at the same path: a new asset with no history of the deleted one.
    const again = await lib.upload(writer, { parentId: '/Open', name: 'ephemeral.txt', onConflict: 'fail' }, body('again'));
    assert.deepEqual([again.asset.version, (await lib.index.versions(a.id)).length], [1, 0]);
  });
});

describe('folders', () => {
  test('create: on disk and in the index, kept by a rescan while empty; a taken name → asset-exists', async () => {
    const f = await lib.createFolder(writer, '/Open', 'Fresh');
    assert.deepEqual(f, { id: '/Open/Fresh', name: 'Fresh' });
    assert.ok(fs.statSync(path.join(dirs.root, 'Open/Fresh')).isDirectory());
    await lib.rescan();
    assert.ok((await lib.browse(writer, '/Open', LIST)).folders.some((x) => x.id === '/Open/Fresh'), 'an empty folder survives a scan');
    assert.equal((await lib.browse(writer, '/Open/Fresh', LIST)).assets.length, 0);
    await assert.rejects(lib.createFolder(writer, '/Open', 'Fresh'), code('asset-exists'));
    await assert.rejects(lib.createFolder(writer, '/Open', 'notes.txt'), code('asset-exists'));
  });

  test('rename and move: every asset below follows with its versions; into itself is refused', async () => {
    await lib.createFolder(writer, '/Open', 'Album');
    await lib.createFolder(writer, '/Open/Album', 'Inner');
    const { asset: a } = await lib.upload(writer, { parentId: '/Open/Album/Inner', name: 'quokka.txt', onConflict: 'fail' }, body('q1'));
    await lib.update(writer, a.id, body('q2'), NO_COND);
    const r = await lib.updateFolder(writer, '/Open/Album', { parentId: null, name: 'Albums' });
    assert.deepEqual(r, { id: '/Open/Albums', name: 'Albums' });
    const moved = (await lib.index.asset(assetIdFor('Open/Albums/Inner/quokka.txt')))!;
    assert.equal(moved.version, 2);
    assert.equal((await lib.index.versions(moved.id)).length, 1);
    assert.equal(await lib.index.asset(a.id), null);
    assert.deepEqual((await lib.browse(writer, '/Open/Albums', LIST)).folders.map((f) => f.id), ['/Open/Albums/Inner']);
    await assert.rejects(lib.browse(writer, '/Open/Album', LIST), code('integration-not-found'));
    assert.deepEqual(await search(writer, 'quokka'), ['quokka.txt']);
    await assert.rejects(lib.updateFolder(writer, '/Open/Albums', { parentId: '/Open/Albums/Inner', name: null }), code('hub-validation-error'));
    const m = await lib.updateFolder(writer, '/Open/Albums/Inner', { parentId: '/Open/Sub', name: null });
    assert.equal(m.id, '/Open/Sub/Inner');
    assert.equal(onDisk('Open/Sub/Inner/quokka.txt').toString(), 'q2');
    await assert.rejects(lib.updateFolder(writer, '/Open/Sub/Inner', { parentId: '/Open', name: 'Sub' }), code('asset-exists'));
  });

  test('delete: folder-not-empty unless recursive; recursive takes everything below from disk and index', async () => {
    await lib.createFolder(writer, '/Open', 'Doomed');
    await lib.createFolder(writer, '/Open/Doomed', 'Below');
    const { asset: a } = await lib.upload(writer, { parentId: '/Open/Doomed/Below', name: 'wombat.txt', onConflict: 'fail' }, body('w'));
    await assert.rejects(lib.deleteFolder(writer, '/Open/Doomed', { recursive: false }), code('folder-not-empty'));
    assert.ok(fs.existsSync(path.join(dirs.root, 'Open/Doomed/Below/wombat.txt')));
    await lib.deleteFolder(writer, '/Open/Doomed', { recursive: true });
    assert.ok(!fs.existsSync(path.join(dirs.root, 'Open/Doomed')));
    assert.equal(await lib.index.asset(a.id), null);
    assert.equal(await lib.index.folder('Open/Doomed/Below'), null);
    assert.deepEqual(await search(writer, 'wombat'), []);
    assert.deepEqual(everyName(path.join(dirs.root, 'Open')).filter((n) => n.startsWith(WORK_PREFIX)), [], 'nothing left under a work name');
    // An empty folder (a .DS_Store aside) goes without recursive.
    await lib.createFolder(writer, '/Open', 'Empty');
    fs.writeFileSync(path.join(dirs.root, 'Open/Empty/.DS_Store'), 'x');
    await lib.deleteFolder(writer, '/Open/Empty', { recursive: false });
    assert.ok(!fs.existsSync(path.join(dirs.root, 'Open/Empty')));
    await assert.rejects(lib.deleteFolder(writer, 'root', { recursive: true }), code('integration-forbidden'));
  });
});

test('a folder deleted while an upload into it runs: integration-not-found, and nothing left anywhere', async () => {
  await lib.createFolder(writer, '/Open', 'Vanishing');
  let deleting: Promise<unknown> | null = null;
  // The body's first read deletes the folder (another account, recursive), then the bytes come.
  const stream = new Readable({
    read() {
      deleting ??= lib.deleteFolder(other, '/Open/Vanishing', { recursive: true }).then(() => {
        this.push(Buffer.from('late bytes'));
        this.push(null);
      }, (e: Error) => this.destroy(e));
    },
  });
  await assert.rejects(lib.upload(writer, { parentId: '/Open/Vanishing', name: 'late.txt', onConflict: 'fail' }, { stream, length: null, mimeType: 'text/plain' }), code('integration-not-found'));
  assert.ok(!fs.existsSync(path.join(dirs.root, 'Open/Vanishing')));
  assert.deepEqual(everyName(path.join(dirs.root, 'Open')).filter((n) => n.split('/').pop()!.startsWith('.')), []);
  assert.equal(await lib.index.folder('Open/Vanishing'), null);
  assert.deepEqual(await search(writer, 'late'), []);
});

describe('write rights', () => {
  test('an account without write folders may not write anywhere: integration-forbidden naming the folder, nothing changed', async () => {
    const before = everyName(dirs.root);
    const id = assetIdFor('Open/existing.jpg');
    await assert.rejects(lib.upload(reader, { parentId: '/Open', name: 'r.txt', onConflict: 'fail' }, body('r')), code('integration-forbidden', /may not write in \/Open/));
    await assert.rejects(lib.update(reader, id, body('r'), NO_COND), code('integration-forbidden', /\/Open/));
    await assert.rejects(lib.renameAsset(reader, id, 'r.jpg', NO_COND), code('integration-forbidden'));
    await assert.rejects(lib.deleteAsset(reader, id, NO_COND), code('integration-forbidden'));
    await assert.rejects(lib.lockAsset(reader, id), code('integration-forbidden'));
    await assert.rejects(lib.createFolder(reader, '/Open', 'R'), code('integration-forbidden'));
    await assert.rejects(lib.deleteFolder(reader, '/Open/Sub', { recursive: true }), code('integration-forbidden'));
    await assert.rejects(lib.upload(writer, { parentId: 'root', name: 'top.txt', onConflict: 'fail' }, body('t')), code('integration-forbidden', /the library root/));
    assert.deepEqual(everyName(dirs.root), before);
  });

  test('capabilities state the rights: on assets, and on browse pages (a write folder itself cannot be renamed or deleted)', async () => {
    const all = { canDeleteAsset: true, canUpdateAsset: true, canLockAsset: true, canUnlockAsset: true, canRenameAsset: true, uploadExtensions: [] };
    const none = { canDeleteAsset: false, canUpdateAsset: false, canLockAsset: false, canUnlockAsset: false, canRenameAsset: false, uploadExtensions: [] };
    const id = assetIdFor('Open/existing.jpg');
    assert.deepEqual((await lib.asset(writer, id, { uiLocale: 'en', timeZone: null })).capabilities, all);
    assert.deepEqual((await lib.asset(reader, id, { uiLocale: 'en', timeZone: null })).capabilities, none);
    assert.deepEqual((await lib.asset(writer, assetIdFor('Closed/shut.txt'), { uiLocale: 'en', timeZone: null })).capabilities, none);
    assert.ok((await lib.browse(writer, '/Open', LIST)).assets.every((a) => a.capabilities!.canUpdateAsset));
    assert.ok((await lib.search(writer, { query: 'shut', parentId: null }, LIST)).assets.every((a) => !a.capabilities!.canUpdateAsset));
    const caps = async (s: ProviderSession, f: string) => (await lib.browse(s, f, LIST)).capabilities;
    assert.deepEqual(await caps(writer, '/Open'), { canAddAsset: true, canAddFolder: true, canRenameFolder: false, canDeleteFolder: false });
    assert.deepEqual(await caps(writer, '/Open/Sub'), { canAddAsset: true, canAddFolder: true, canRenameFolder: true, canDeleteFolder: true });
    assert.deepEqual(await caps(writer, 'root'), { canAddAsset: false, canAddFolder: false, canRenameFolder: false, canDeleteFolder: false });
    assert.deepEqual(await caps(writer, '/Closed'), { canAddAsset: false, canAddFolder: false, canRenameFolder: false, canDeleteFolder: false });
    assert.deepEqual(await caps(reader, '/Open/Sub'), { canAddAsset: false, canAddFolder: false, canRenameFolder: false, canDeleteFolder: false });
    // A limited account writes only where it also sees; '/' (whole library) as a write folder.
    const limited = await sessionOf(lib, 'limited', ['Open'], ['/']);
    assert.deepEqual(await caps(limited, '/Open'), { canAddAsset: true, canAddFolder: true, canRenameFolder: false, canDeleteFolder: false });
    assert.deepEqual(await caps(limited, 'root'), { canAddAsset: false, canAddFolder: false, canRenameFolder: false, canDeleteFolder: false });
    await assert.rejects(lib.upload(limited, { parentId: '/Closed', name: 'x.txt', onConflict: 'fail' }, body('x')), code('integration-not-found'), 'a folder it cannot see is not disclosed');
    const admin = await sessionOf(lib, 'admin', [], ['/']);
    assert.deepEqual(await caps(admin, 'root'), { canAddAsset: true, canAddFolder: true, canRenameFolder: false, canDeleteFolder: false });
    assert.deepEqual(await caps(admin, '/Closed'), { canAddAsset: true, canAddFolder: true, canRenameFolder: true, canDeleteFolder: true });
  });
});

describe('locks', () => {
  test('lock: lockedBy names the holder; others see it as someone else\'s and are refused with asset-locked; unlock releases', async () => {
    const { asset: a } = await lib.upload(writer, { parentId: '/Open', name: 'locked.txt', onConflict: 'fail' }, body('l'));
    const view = await lib.viewVersion(other);
    const l = await lib.lockAsset(writer, a.id);
    assert.equal(l.lockedBy, 'writer');
    assert.equal(lockedByOther(l), false);
    assert.notEqual(await lib.viewVersion(other), view, 'listings show lockedBy: cached pages drop');
    const seen = await lib.asset(other, a.id, { uiLocale: 'en', timeZone: null });
    assert.equal(seen.lockedBy, 'writer');
    assert.equal(lockedByOther(seen), true);
    assert.equal((await lib.browse(other, '/Open', LIST)).assets.find((x) => x.id === a.id)!.lockedBy, 'writer');
    assert.equal((await lib.lockAsset(writer, a.id)).lockedBy, 'writer', 'locking again is a no-op');
    await assert.rejects(lib.lockAsset(other, a.id), code('asset-locked', /locked by writer/));
    await assert.rejects(lib.update(other, a.id, body('x'), NO_COND), code('asset-locked', /writer/));
    await assert.rejects(lib.deleteAsset(other, a.id, NO_COND), code('asset-locked'));
    await assert.rejects(lib.renameAsset(other, a.id, 'y.txt', NO_COND), code('asset-locked'));
    await assert.rejects(lib.unlockAsset(other, a.id), code('asset-locked'));
    await assert.rejects(lib.upload(other, { parentId: '/Open', name: 'locked.txt', onConflict: 'version' }, body('x')), code('asset-locked'));
    // The holder writes; a rename carries the lock to the new id.
    const u = await lib.update(writer, a.id, body('l2'), NO_COND);
    assert.equal(u.lockedBy, 'writer');
    const r = await lib.renameAsset(writer, a.id, 'still-locked.txt', NO_COND);
    assert.equal(r.lockedBy, 'writer');
    const un = await lib.unlockAsset(writer, r.id);
    assert.equal(un.lockedBy, undefined);
    assert.equal((await lib.unlockAsset(writer, r.id)).lockedBy, undefined, 'unlocking an unlocked asset is a no-op');
    assert.equal((await lib.update(other, r.id, body('mine now'), NO_COND)).version, 3);
  });

  test('a folder holding someone else\'s locked asset is neither moved nor deleted; removing an account releases its locks', async () => {
    await lib.createFolder(writer, '/Open/Sub', 'LockBox');
    const { asset: a } = await lib.upload(writer, { parentId: '/Open/Sub/LockBox', name: 'held.txt', onConflict: 'fail' }, body('h'));
    const holder = await sessionOf(lib, 'holder', [], ['Open']);
    await lib.lockAsset(holder, a.id);
    await assert.rejects(lib.deleteFolder(other, '/Open/Sub/LockBox', { recursive: true }), code('asset-locked', /holder/));
    await assert.rejects(lib.updateFolder(other, '/Open/Sub/LockBox', { parentId: null, name: 'Box' }), code('asset-locked'));
    assert.ok(fs.existsSync(path.join(dirs.root, 'Open/Sub/LockBox/held.txt')));
    assert.equal(await lib.index.removeAccount('holder'), true);
    assert.equal(await lib.index.lock(a.id), null);
    await lib.deleteFolder(other, '/Open/Sub/LockBox', { recursive: true });
  });
});

test('the scan never indexes the library\'s work names (an upload in progress)', async () => {
  assert.equal(isSkippedName(`${WORK_PREFIX}upload-abc`), true);
  fs.writeFileSync(path.join(dirs.root, 'Open', `${WORK_PREFIX}upload-inprogress`), 'partial');
  await lib.rescan();
  assert.ok(!(await names(writer, '/Open')).some((n) => n.startsWith('.')));
  fs.rmSync(path.join(dirs.root, 'Open', `${WORK_PREFIX}upload-inprogress`));
});

test('an index file from before writes (schema 3) gains write folders (none) and locks on open', () => {
  const file = path.join(libraryDirs().data, 'old.sqlite');
  const made = new LibraryIndex(file);
  made.db.exec("DROP TABLE asset_locks; ALTER TABLE accounts DROP COLUMN write_folders; PRAGMA user_version = 3;");
  made.db.prepare("INSERT INTO accounts (id, name, password_hash, folders, created_at) VALUES ('a1', 'olde', 'x', '[\"A\"]', 1)").run();
  made.close();
  const opened = new LibraryIndex(file);
  try {
    assert.equal(opened.db.pragma('user_version', { simple: true }), SQLITE_INDEX_SCHEMA_VERSION);
    assert.deepEqual(opened.accountByName('olde'), { id: 'a1', name: 'olde', passwordHash: 'x', folders: ['A'], writeFolders: [], createdAt: 1 });
    assert.deepEqual(opened.takeLock({ assetId: 'x'.repeat(22), accountId: 'a1', lockedBy: 'olde', lockedAt: 2 }).lockedBy, 'olde');
  } finally {
    opened.close();
  }
});
