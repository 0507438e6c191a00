/**
 * The WebDAV connector's writes through the provider, against the two real servers the reads are
 * tested on (Apache httpd mod_dav_fs and `rclone serve webdav`): uploads through a temp name and
 * their conflicts, new versions under the server's ETag, rename, move, delete, folders, locks held
 * by one account and refused to another, a body that fails half-way and a folder deleted during
 * an upload (no temp left behind, checked with PROPFIND and on disk), and a full disk (Apache on
 * a tiny tmpfs answers 507).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chownSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { isHubError } from '../../../src/errors.js';
import { contentTagOf, lockedByOther } from '../../../src/providers/asset-state.js';
import type { Provider, ProviderSession, UploadBody, WriteCondition } from '../../../src/providers/contract.js';
import { startApacheDav, startRcloneDav, type RealDav } from '../../helpers/real-servers.js';
import { startWebdavHub, type WebdavHub } from '../../helpers/webdav.js';

const USERS = { alice: 'alice-pw', bob: 'bob-pw' };
const NO_COND: WriteCondition = { ifMatch: null, upstreamTag: null };

function session(dav: RealDav, user: keyof typeof USERS): ProviderSession {
  return { providerId: 'webdav', userId: `hub-${user}`, partnerId: 'partner-1', credentials: { url: dav.url, user, pass: USERS[user] } };
}

function body(content: string | Buffer): UploadBody {
  const b = Buffer.from(content);
  return { stream: Readable.from([b]), length: b.length, mimeType: 'text/plain' };
}

/** The rejection of `p`, which must be a HubError with `code`. */
async function refused(p: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(isHubError(e), `expected a HubError ${code}, got ${String(e)}`);
    assert.equal(e.code, code, e.details);
    return true;
  });
}

/** A raw WebDAV request to the server, as another client would make it. */
async function raw(dav: RealDav, method: string, rel: string, opts: { user?: keyof typeof USERS; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; text: string; headers: Headers }> {
  const user = opts.user ?? 'alice';
  const res = await fetch(new URL(rel.replace(/^\//, ''), dav.url), {
    method, body: opts.body,
    headers: { authorization: `Basic ${Buffer.from(`${user}:${USERS[user]}`).toString('base64')}`, ...opts.headers },
  });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

/** Member names of a folder as the server lists them (depth-1 PROPFIND, the folder itself left out). */
async function davNames(dav: RealDav, folder: string): Promise<string[]> {
  const r = await raw(dav, 'PROPFIND', folder.endsWith('/') ? folder : `${folder}/`, { headers: { depth: '1' } });
  assert.equal(r.status, 207, r.text);
  const self = new URL(folder.replace(/^\//, '').replace(/\/?$/, '/'), dav.url).pathname;
  return [...r.text.matchAll(/<(?:\w+:)?href>([^<]+)<\/(?:\w+:)?href>/g)]
    .map((m) => decodeURIComponent(new URL(m[1]!, dav.url).pathname))
    .filter((p) => p.replace(/\/$/, '') !== decodeURIComponent(self).replace(/\/$/, '') && p.startsWith(decodeURIComponent(self)))
    .map((p) => p.slice(decodeURIComponent(self).length).replace(/\/$/, ''))
    .sort();
}

/** The server's ETag of a file (depth-0 PROPFIND). */
async function davEtag(dav: RealDav, rel: string): Promise<string | undefined> {
  const r = await raw(dav, 'PROPFIND', rel, { headers: { depth: '0' } });
  return /<(?:\w+:)?getetag>([^<]+)</.exec(r.text)?.[1];
}

const noTemps = (names: string[]) => names.filter((n) => n.startsWith('.damhub-upload-'));

/** Waits (polling the disk, not the clock) until a temp upload exists in `dir`; answers its name. */
async function tempAppears(dir: string): Promise<string> {
  for (let i = 0; i < 2000; i++) {
    const hit = readdirSync(dir).find((n) => n.startsWith('.damhub-upload-') || n.startsWith('.davfs.tmp'));
    if (hit) return hit;
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`no upload in progress appeared in ${dir}`);
}

const SERVERS = [['Apache mod_dav', startApacheDav], ['rclone serve webdav', startRcloneDav]] as const;

for (const [serverName, startDav] of SERVERS) {
  const apache = serverName.startsWith('Apache');
  describe(`webdav writes (${serverName})`, () => {
    let dav: RealDav;
    let w: WebdavHub;
    let p: Provider;
    let alice: ProviderSession;
    let bob: ProviderSession;
    before(async () => {
      dav = await startDav({
        'Up/keep.txt': 'keep', 'Up/taken.txt': 'taken', 'Docs/a.txt': 'aaa', 'Docs/b.txt': 'bbb',
        'Tree/sub/leaf.txt': 'leaf', 'Locks/doc.txt': 'v1', 'Locks/other.txt': 'other',
      }, USERS);
      w = await startWebdavHub(dav);
      p = w.t.hub.providers.require('webdav');
      alice = session(dav, 'alice');
      bob = session(dav, 'bob');
    });
    after(async () => {
      await w?.t.close();
      await dav?.close();
    });

    test('the write operations are capabilities; WebDAV takes any file type', async () => {
      const caps = w.t.hub.providers.capabilities('webdav')!;
      for (const cap of ['upload', 'update', 'rename', 'move', 'delete', 'folders', 'lock'] as const) assert.equal(caps[cap], true, cap);
      assert.equal(await p.uploadExtensions!(alice, null), null);
    });

    test('upload: a new asset through a temp name; its content tag is the server ETag', async () => {
      const r = await p.upload!(alice, { parentId: '/Up', name: 'new file.txt', onConflict: 'fail' }, body('hello world'));
      assert.equal(r.created, true);
      assert.equal(r.asset.id, '/Up/new file.txt');
      assert.equal(r.asset.name, 'new file.txt');
      assert.equal(r.asset.fileSize, 11);
      assert.equal(readFileSync(path.join(dav.root, 'Up/new file.txt'), 'utf8'), 'hello world');
      // Apache marks the ETag weak in the second of the change (W/"…"): the same content, the same tag.
      assert.equal(contentTagOf(r.asset), (await davEtag(dav, '/Up/new%20file.txt'))?.replace(/^W\//, ''));
      assert.deepEqual(noTemps(await davNames(dav, '/Up')), []);
      // The asset reads back the same, with its permissions stated (nothing reported: all allowed).
      const a = await p.asset!(alice, '/Up/new file.txt', { uiLocale: 'en', timeZone: null });
      assert.equal(contentTagOf(a), contentTagOf(r.asset));
      assert.equal(a.capabilities?.canUpdateAsset, true);
      assert.equal(a.capabilities?.canDeleteAsset, true);
      assert.equal(a.capabilities?.canLockAsset, apache, 'locks are offered only where the server reports them');
    });

    test('upload onto a taken name: fail → asset-exists, rename → "name (2)", version → the same asset, new content', async () => {
      await refused(p.upload!(alice, { parentId: '/Up', name: 'taken.txt', onConflict: 'fail' }, body('other')), 'asset-exists');
      assert.equal(readFileSync(path.join(dav.root, 'Up/taken.txt'), 'utf8'), 'taken');
      const renamed = await p.upload!(alice, { parentId: '/Up', name: 'taken.txt', onConflict: 'rename' }, body('second'));
      assert.equal(renamed.created, true);
      assert.equal(renamed.asset.id, '/Up/taken (2).txt');
      const third = await p.upload!(alice, { parentId: '/Up', name: 'taken.txt', onConflict: 'rename' }, body('third'));
      assert.equal(third.asset.id, '/Up/taken (3).txt');
      const before = await davEtag(dav, '/Up/taken.txt');
      const version = await p.upload!(alice, { parentId: '/Up', name: 'taken.txt', onConflict: 'version' }, body('taken, version 2'));
      assert.equal(version.created, false);
      assert.equal(version.asset.id, '/Up/taken.txt');
      assert.equal(readFileSync(path.join(dav.root, 'Up/taken.txt'), 'utf8'), 'taken, version 2');
      assert.notEqual(contentTagOf(version.asset), before);
      // version onto a free name creates it; onto a folder's name it is a conflict, never a replaced folder.
      assert.equal((await p.upload!(alice, { parentId: '/Up', name: 'fresh.txt', onConflict: 'version' }, body('fresh'))).created, true);
      await refused(p.upload!(alice, { parentId: '/', name: 'Docs', onConflict: 'version' }, body('x')), 'asset-exists');
      assert.deepEqual(noTemps([...await davNames(dav, '/Up'), ...await davNames(dav, '/')]), []);
    });

    test('upload into a folder that does not exist: integration-not-found, nothing left', async () => {
      await refused(p.upload!(alice, { parentId: '/Nowhere', name: 'x.txt', onConflict: 'fail' }, body('x')), 'integration-not-found');
      assert.deepEqual(noTemps(await davNames(dav, '/')), []);
    });

    test('a body that fails half-way: its own error, no temp and no asset left behind', async () => {
      const stream = new PassThrough();
      const failed = new Error('client went away');
      const half = Buffer.alloc(256 * 1024, 'a');
      stream.write(half);
      const up = p.upload!(alice, { parentId: '/Up', name: 'cut.bin', onConflict: 'fail' }, { stream, length: half.length * 2, mimeType: 'application/octet-stream' });
      await tempAppears(path.join(dav.root, 'Up'));
      stream.destroy(failed);
      await assert.rejects(up, (e) => e === failed);
      // The server may still be closing its side: the temp goes once it is done (a PROPFIND sees it).
      for (let i = 0; i < 200 && noTemps(readdirSync(path.join(dav.root, 'Up'))).length; i++) await new Promise((r) => setTimeout(r, 10));
      assert.deepEqual(noTemps(await davNames(dav, '/Up')), []);
      assert.deepEqual(readdirSync(path.join(dav.root, 'Up')).filter((n) => n.startsWith('.') || n === 'cut.bin'), []);
    });

    test('a folder deleted while uploading into it: integration-not-found, no temp left', async () => {
      await raw(dav, 'MKCOL', '/Doomed/');
      const stream = new PassThrough();
      stream.write(Buffer.alloc(128 * 1024, 'b'));
      const up = p.upload!(alice, { parentId: '/Doomed', name: 'late.bin', onConflict: 'fail' }, { stream, length: null, mimeType: 'application/octet-stream' });
      await tempAppears(path.join(dav.root, 'Doomed'));
      const del = await raw(dav, 'DELETE', '/Doomed/', { user: 'bob' });
      stream.end(Buffer.alloc(128 * 1024, 'c'));
      if (apache) {
        // Apache deletes the folder under the upload, then fails the PUT (500): the folder is named gone.
        assert.equal(del.status, 204);
        await refused(up, 'integration-not-found');
        assert.ok(!(await davNames(dav, '/')).includes('Doomed'), 'the folder stays deleted');
        assert.deepEqual(noTemps(await davNames(dav, '/')), []);
      } else {
        // rclone refuses to delete a folder a file is being written into (405): the upload completes.
        assert.equal(del.status, 405);
        assert.equal((await up).asset.id, '/Doomed/late.bin');
        assert.deepEqual(await davNames(dav, '/Doomed'), ['late.bin']);
      }
    });

    test('update: a new version under the server ETag; a stale tag or a change made elsewhere is asset-version-conflict', async () => {
      await p.upload!(alice, { parentId: '/Docs', name: 'v.txt', onConflict: 'fail' }, body('one'));
      const read = await p.asset!(alice, '/Docs/v.txt', { uiLocale: 'en', timeZone: null });
      const tag = contentTagOf(read)!;
      assert.ok(tag);
      await refused(p.update!(alice, '/Docs/v.txt', body('never'), { ifMatch: '"h"', upstreamTag: '"not-the-etag"' }), 'asset-version-conflict');
      assert.equal(readFileSync(path.join(dav.root, 'Docs/v.txt'), 'utf8'), 'one');
      const updated = await p.update!(alice, '/Docs/v.txt', body('two, longer'), { ifMatch: '"h"', upstreamTag: tag });
      assert.equal(updated.id, '/Docs/v.txt');
      assert.equal(readFileSync(path.join(dav.root, 'Docs/v.txt'), 'utf8'), 'two, longer');
      assert.notEqual(contentTagOf(updated), tag);
      // Another client writes; an update still based on the first read is refused.
      const second = contentTagOf(updated)!;
      assert.equal((await raw(dav, 'PUT', '/Docs/v.txt', { user: 'bob', body: 'bob was here, at length' })).status < 300, true);
      await refused(p.update!(alice, '/Docs/v.txt', body('three'), { ifMatch: '"h"', upstreamTag: second }), 'asset-version-conflict');
      assert.equal(readFileSync(path.join(dav.root, 'Docs/v.txt'), 'utf8'), 'bob was here, at length');
      await refused(p.update!(alice, '/Docs/missing.txt', body('x'), NO_COND), 'integration-not-found');
      assert.deepEqual(noTemps(await davNames(dav, '/Docs')), []);
    });

    test('rename and move: the answer carries the new id; a taken name is asset-exists; a missing folder not-found', async () => {
      const renamed = await p.renameAsset!(alice, '/Docs/a.txt', 'a renamed.txt', NO_COND);
      assert.equal(renamed.id, '/Docs/a renamed.txt');
      assert.equal(renamed.parentPath, '/Docs');
      await refused(p.renameAsset!(alice, '/Docs/a renamed.txt', 'b.txt', NO_COND), 'asset-exists');
      assert.equal(readFileSync(path.join(dav.root, 'Docs/b.txt'), 'utf8'), 'bbb');
      const moved = await p.moveAsset!(alice, '/Docs/a renamed.txt', { parentId: '/Up', name: null }, NO_COND);
      assert.equal(moved.id, '/Up/a renamed.txt');
      const both = await p.moveAsset!(alice, '/Up/a renamed.txt', { parentId: '/Docs', name: 'a.txt' }, NO_COND);
      assert.equal(both.id, '/Docs/a.txt');
      await refused(p.moveAsset!(alice, '/Docs/a.txt', { parentId: '/Nowhere', name: null }, NO_COND), 'integration-not-found');
      await refused(p.renameAsset!(alice, '/Docs/gone.txt', 'x.txt', NO_COND), 'integration-not-found');
      await refused(p.renameAsset!(alice, '/Docs/a.txt', 'c.txt', { ifMatch: '"h"', upstreamTag: '"stale"' }), 'asset-version-conflict');
      assert.equal(readFileSync(path.join(dav.root, 'Docs/a.txt'), 'utf8'), 'aaa');
    });

    test('delete: gone; a stale tag is asset-version-conflict and deletes nothing', async () => {
      await p.upload!(alice, { parentId: '/Docs', name: 'del.txt', onConflict: 'fail' }, body('bye'));
      await refused(p.deleteAsset!(alice, '/Docs/del.txt', { ifMatch: '"h"', upstreamTag: '"stale"' }), 'asset-version-conflict');
      assert.ok((await davNames(dav, '/Docs')).includes('del.txt'));
      const tag = contentTagOf(await p.asset!(alice, '/Docs/del.txt', { uiLocale: 'en', timeZone: null }));
      await p.deleteAsset!(alice, '/Docs/del.txt', { ifMatch: '"h"', upstreamTag: tag });
      assert.ok(!(await davNames(dav, '/Docs')).includes('del.txt'));
      await refused(p.deleteAsset!(alice, '/Docs/del.txt', NO_COND), 'integration-not-found');
    });

    test('folders: create (taken → asset-exists, no parent → not-found), rename/move, delete (non-empty unless recursive)', async () => {
      assert.deepEqual(await p.createFolder!(alice, '/', 'New Folder'), { id: '/New Folder', name: 'New Folder' });
      assert.ok(statSync(path.join(dav.root, 'New Folder')).isDirectory());
      await refused(p.createFolder!(alice, '/', 'New Folder'), 'asset-exists');
      await refused(p.createFolder!(alice, '/', 'Docs'), 'asset-exists');
      await refused(p.createFolder!(alice, '/No/Such', 'x'), 'integration-not-found');
      assert.deepEqual(await p.createFolder!(alice, '/New Folder', 'inner'), { id: '/New Folder/inner', name: 'inner' });
      assert.deepEqual(await p.updateFolder!(alice, '/New Folder', { parentId: null, name: 'Renamed' }), { id: '/Renamed', name: 'Renamed' });
      assert.ok(statSync(path.join(dav.root, 'Renamed/inner')).isDirectory());
      assert.deepEqual(await p.updateFolder!(alice, '/Renamed', { parentId: '/Tree', name: null }), { id: '/Tree/Renamed', name: 'Renamed' });
      await refused(p.updateFolder!(alice, '/Tree/Renamed', { parentId: '/', name: 'Docs' }), 'asset-exists');
      await refused(p.updateFolder!(alice, '/Tree', { parentId: '/Tree/sub', name: null }), 'hub-validation-error');
      await refused(p.deleteFolder!(alice, '/Tree', { recursive: false }), 'folder-not-empty');
      await refused(p.deleteFolder!(alice, '/Tree/Renamed', { recursive: false }), 'folder-not-empty');
      await p.deleteFolder!(alice, '/Tree/Renamed/inner', { recursive: false });
      await p.deleteFolder!(alice, '/Tree', { recursive: true });
      assert.ok(!(await davNames(dav, '/')).includes('Tree'));
      await refused(p.deleteFolder!(alice, '/Tree', { recursive: true }), 'integration-not-found');
      await refused(p.deleteFolder!(alice, '/', { recursive: true }), 'integration-forbidden');
      await refused(p.deleteFolder!(alice, '/Docs/b.txt', { recursive: false }), 'integration-not-found');
    });

    test('browse hides temp uploads and states what the account may do in the folder', async () => {
      // A temp left by a hub that died mid-upload is not content.
      assert.ok((await raw(dav, 'PUT', '/Up/.damhub-upload-stray', { body: 'partial' })).status < 300);
      const page = await p.browse!(alice, '/Up', { size: 100, more: null, filters: [], timeZone: null, dataLocale: null, uiLocale: 'en' });
      assert.ok(!page.assets.some((a) => a.name.startsWith('.damhub-upload-')), page.assets.map((a) => a.name).join());
      assert.deepEqual(page.capabilities, { canAddAsset: true, canAddFolder: true, canDeleteFolder: true, canRenameFolder: true });
      const root = await p.browse!(alice, 'root', { size: 100, more: null, filters: [], timeZone: null, dataLocale: null, uiLocale: 'en' });
      assert.equal(root.capabilities?.canDeleteFolder, false, 'the connection root is never deleted');
      assert.equal(root.capabilities?.canRenameFolder, false);
      const found = await p.search!(alice, { query: 'damhub', parentId: null }, { size: 100, more: null, filters: [], timeZone: null, dataLocale: null, uiLocale: 'en' });
      assert.deepEqual(found.assets, []);
      await raw(dav, 'DELETE', '/Up/.damhub-upload-stray');
    });

    if (apache) {
      // (rclone holds a folder's listing until a file being written into it is complete.)
      test('nothing is at the final name, and no temp is listed, while the body is still coming', async () => {
        const stream = new PassThrough();
        const first = Buffer.alloc(64 * 1024, 'p');
        stream.write(first);
        const up = p.upload!(alice, { parentId: '/Up', name: 'slow.txt', onConflict: 'fail' }, { stream, length: null, mimeType: 'text/plain' });
        await tempAppears(path.join(dav.root, 'Up'));
        const page = await p.browse!(alice, '/Up', { size: 100, more: null, filters: [], timeZone: null, dataLocale: null, uiLocale: 'en' });
        assert.ok(!page.assets.some((a) => a.name.startsWith('.') || a.name === 'slow.txt'), page.assets.map((a) => a.name).join());
        stream.end('and the rest');
        assert.equal((await up).asset.fileSize, first.length + 'and the rest'.length);
      });

      test('locks: held by one account (its writes carry the token), refused to another with asset-locked, released', async () => {
        const locked = await p.lockAsset!(alice, '/Locks/doc.txt');
        assert.equal(locked.lockedBy, 'alice');
        assert.equal(lockedByOther(locked), false);
        assert.match((await raw(dav, 'PROPFIND', '/Locks/doc.txt', { headers: { depth: '0' } })).text, /damhub:alice/);
        // Locking again is a no-op for the holder.
        assert.equal((await p.lockAsset!(alice, '/Locks/doc.txt')).lockedBy, 'alice');
        // Bob sees Alice's lock, and every write of his is refused.
        const seen = await p.asset!(bob, '/Locks/doc.txt', { uiLocale: 'en', timeZone: null });
        assert.equal(seen.lockedBy, 'alice');
        assert.equal(lockedByOther(seen), true);
        await refused(p.update!(bob, '/Locks/doc.txt', body('bob'), NO_COND), 'asset-locked');
        await refused(p.upload!(bob, { parentId: '/Locks', name: 'doc.txt', onConflict: 'version' }, body('bob')), 'asset-locked');
        await refused(p.renameAsset!(bob, '/Locks/doc.txt', 'bob.txt', NO_COND), 'asset-locked');
        await refused(p.deleteAsset!(bob, '/Locks/doc.txt', NO_COND), 'asset-locked');
        await refused(p.lockAsset!(bob, '/Locks/doc.txt'), 'asset-locked');
        await refused(p.unlockAsset!(bob, '/Locks/doc.txt'), 'asset-locked');
        assert.equal(readFileSync(path.join(dav.root, 'Locks/doc.txt'), 'utf8'), 'v1');
        assert.deepEqual(noTemps(await davNames(dav, '/Locks')), []);
        // Alice writes under her lock, which stays.
        const v2 = await p.update!(alice, '/Locks/doc.txt', body('v2 by alice'), { ifMatch: '"h"', upstreamTag: contentTagOf(locked) });
        assert.equal(readFileSync(path.join(dav.root, 'Locks/doc.txt'), 'utf8'), 'v2 by alice');
        assert.equal(v2.lockedBy, 'alice');
        const v3 = await p.upload!(alice, { parentId: '/Locks', name: 'doc.txt', onConflict: 'version' }, body('v3 by alice, longer'));
        assert.equal(v3.asset.lockedBy, 'alice');
        // Released: Bob may write again.
        const unlocked = await p.unlockAsset!(alice, '/Locks/doc.txt');
        assert.equal(unlocked.lockedBy, undefined);
        assert.equal(lockedByOther(unlocked), false);
        assert.equal((await p.unlockAsset!(alice, '/Locks/doc.txt')).lockedBy, undefined, 'unlocking an unlocked asset is a no-op');
        await p.update!(bob, '/Locks/doc.txt', body('bob now'), NO_COND);
        assert.equal(readFileSync(path.join(dav.root, 'Locks/doc.txt'), 'utf8'), 'bob now');
        // The holder may rename and delete under the lock; a lock does not move with the file (RFC 4918 7.5).
        await p.lockAsset!(alice, '/Locks/doc.txt');
        const moved = await p.renameAsset!(alice, '/Locks/doc.txt', 'doc moved.txt', NO_COND);
        assert.equal(moved.id, '/Locks/doc moved.txt');
        assert.equal(moved.lockedBy, undefined);
        await p.lockAsset!(alice, '/Locks/doc moved.txt');
        await p.deleteAsset!(alice, '/Locks/doc moved.txt', NO_COND);
        assert.ok(!(await davNames(dav, '/Locks')).includes('doc moved.txt'));
      });

      test('a lock taken by another WebDAV client names its owner; deleting its folder is asset-locked', async () => {
        const r = await raw(dav, 'LOCK', '/Locks/other.txt', {
          user: 'bob', headers: { 'content-type': 'application/xml', timeout: 'Second-600' },
          body: '<?xml version="1.0"?><d:lockinfo xmlns:d="DAV:"><d:lockscope><d:exclusive/></d:lockscope><d:locktype><d:write/></d:locktype><d:owner>Bob in Finder</d:owner></d:lockinfo>',
        });
        assert.equal(r.status, 200, r.text);
        const a = await p.asset!(alice, '/Locks/other.txt', { uiLocale: 'en', timeZone: null });
        assert.equal(a.lockedBy, 'Bob in Finder');
        assert.equal(lockedByOther(a), true);
        await refused(p.update!(alice, '/Locks/other.txt', body('x'), NO_COND), 'asset-locked');
        await refused(p.deleteFolder!(alice, '/Locks', { recursive: true }), 'asset-locked');
        assert.equal(readFileSync(path.join(dav.root, 'Locks/other.txt'), 'utf8'), 'other');
        await raw(dav, 'UNLOCK', '/Locks/other.txt', { user: 'bob', headers: { 'lock-token': r.headers.get('lock-token')! } });
      });

      test('a full disk: integration-storage-full (507), no temp left', async (t) => {
        // mod_dav has no quota of its own; a 256 KiB tmpfs as a folder of the DocumentRoot is one.
        const dir = path.join(dav.root, 'Full');
        mkdirSync(dir);
        const m = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', dir], { encoding: 'utf8' });
        assert.equal(m.status, 0, `mounting a tmpfs needs root: ${m.stderr}`);
        t.after(() => {
          spawnSync('umount', [dir]);
        });
        const st = statSync(path.dirname(dir));
        chownSync(dir, st.uid, st.gid);
        await refused(p.upload!(alice, { parentId: '/Full', name: 'big.bin', onConflict: 'fail' }, body(Buffer.alloc(600 * 1024, 7))), 'integration-storage-full');
        assert.deepEqual(await davNames(dav, '/Full'), []);
        assert.deepEqual(readdirSync(dir), []);
      });
    } else {
      test('rclone reports no locks: locking is not offered (integration-not-supported); a lock another client took still refuses writes', async () => {
        await refused(p.lockAsset!(alice, '/Locks/doc.txt'), 'integration-not-supported');
        await refused(p.unlockAsset!(alice, '/Locks/doc.txt'), 'integration-not-supported');
        const a = await p.asset!(alice, '/Locks/doc.txt', { uiLocale: 'en', timeZone: null });
        assert.equal(a.capabilities?.canLockAsset, false);
        assert.equal(a.capabilities?.canUnlockAsset, false);
        const r = await raw(dav, 'LOCK', '/Locks/other.txt', {
          user: 'bob', headers: { 'content-type': 'application/xml', timeout: 'Second-600' },
          body: '<?xml version="1.0"?><d:lockinfo xmlns:d="DAV:"><d:lockscope><d:exclusive/></d:lockscope><d:locktype><d:write/></d:locktype><d:owner>Bob</d:owner></d:lockinfo>',
        });
        assert.equal(r.status, 200, r.text);
        await refused(p.update!(alice, '/Locks/other.txt', body('x'), NO_COND), 'asset-locked');
        await refused(p.deleteAsset!(alice, '/Locks/other.txt', NO_COND), 'asset-locked');
        assert.equal(readFileSync(path.join(dav.root, 'Locks/other.txt'), 'utf8'), 'other');
        assert.deepEqual(noTemps(await davNames(dav, '/Locks')), []);
      });
    }
  });
}
