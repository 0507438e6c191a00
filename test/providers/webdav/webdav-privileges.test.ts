/**
 * What the account may do, from a server that reports RFC 3744 DAV:current-user-privilege-set
 * (SabreDAV, Nextcloud, ownCloud do; Apache mod_dav and rclone answer the property 404, and then
 * everything the connector implements is allowed; the real-server tests cover that side). The
 * answers below are shaped as SabreDAV writes them.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseMultistatus, type WebdavCred } from '../../../src/providers/webdav/api.js';
import { assetPermissions, folderPermissions, lockHolder, ownLock, plainTag } from '../../../src/providers/webdav/entries.js';

const cred: WebdavCred = { url: 'https://cloud.example/remote.php/dav/files/alice/', user: 'alice', pass: 'x' };
const XML = 'application/xml; charset=utf-8';

const member = (href: string, collection: boolean, privileges: string[] | null, lockdiscovery = '<d:lockdiscovery/>') => `<d:response><d:href>${href}</d:href>
<d:propstat><d:prop>${collection ? '<d:resourcetype><d:collection/></d:resourcetype>' : '<d:resourcetype/><d:getcontentlength>3</d:getcontentlength><d:getetag>W/"abc"</d:getetag>'}${lockdiscovery}
${privileges ? `<d:current-user-privilege-set>${privileges.map((p) => `<d:privilege><${p}/></d:privilege>`).join('')}</d:current-user-privilege-set>` : ''}</d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat>
${privileges ? '' : '<d:propstat><d:prop><d:current-user-privilege-set/></d:prop><d:status>HTTP/1.1 404 Not Found</d:status></d:propstat>'}</d:response>`;
const doc = (...members: string[]) => `<?xml version="1.0"?><d:multistatus xmlns:d="DAV:" xmlns:s="http://sabredav.org/ns" xmlns:oc="http://owncloud.org/ns">${members.join('')}</d:multistatus>`;

test('a read-only share: nothing to add, update, delete or rename; reading is all', () => {
  const [folder, file] = parseMultistatus(doc(
    member('/remote.php/dav/files/alice/Shared/', true, ['d:read', 'd:read-current-user-privilege-set']),
    member('/remote.php/dav/files/alice/Shared/a.jpg', false, ['d:read']),
  ), XML, cred, 'PROPFIND');
  assert.deepEqual([...folder!.privileges!].sort(), ['read', 'read-current-user-privilege-set']);
  assert.deepEqual(assetPermissions(file!, folder!.privileges), {
    canUpdateAsset: false, canDeleteAsset: false, canRenameAsset: false, canLockAsset: false, canUnlockAsset: false, uploadExtensions: [],
  });
  assert.deepEqual(folderPermissions(folder!, new Set(['read'])), { canAddAsset: false, canAddFolder: false, canDeleteFolder: false, canRenameFolder: false });
});

test('aggregates: DAV:all and DAV:write grant what they contain', () => {
  const [folder, file] = parseMultistatus(doc(
    member('/remote.php/dav/files/alice/Mine/', true, ['d:all']),
    member('/remote.php/dav/files/alice/Mine/a.jpg', false, ['d:read', 'd:write']),
  ), XML, cred, 'PROPFIND');
  assert.deepEqual(assetPermissions(file!, folder!.privileges), {
    canUpdateAsset: true, canDeleteAsset: true, canRenameAsset: true, canLockAsset: true, canUnlockAsset: true, uploadExtensions: [],
  });
  assert.deepEqual(folderPermissions(folder!, folder!.privileges), { canAddAsset: true, canAddFolder: true, canDeleteFolder: true, canRenameFolder: true });
});

test('a drop box: files may be added (bind) but not removed (no unbind); content may be written', () => {
  const [folder, file] = parseMultistatus(doc(
    member('/remote.php/dav/files/alice/Drop/', true, ['d:read', 'd:bind']),
    member('/remote.php/dav/files/alice/Drop/a.jpg', false, ['d:read', 'd:write-content']),
  ), XML, cred, 'PROPFIND');
  const a = assetPermissions(file!, folder!.privileges);
  assert.equal(a.canUpdateAsset, true);
  assert.equal(a.canDeleteAsset, false);
  assert.equal(a.canRenameAsset, false);
  const f = folderPermissions(folder!, undefined);
  assert.equal(f.canAddAsset, true);
  assert.equal(f.canDeleteFolder, true, 'its parent reported nothing: allowed');
});

test('no privileges reported (Apache, rclone): all allowed; no locks reported (rclone): no locking; never the root', () => {
  const [root, file] = parseMultistatus(doc(
    member('/remote.php/dav/files/alice/', true, null),
    member('/remote.php/dav/files/alice/a.jpg', false, null, ''),
  ), XML, cred, 'PROPFIND');
  assert.equal(root!.privileges, undefined);
  assert.equal(file!.locks, undefined);
  assert.deepEqual(assetPermissions(file!, undefined), {
    canUpdateAsset: true, canDeleteAsset: true, canRenameAsset: true, canLockAsset: false, canUnlockAsset: false, uploadExtensions: [],
  });
  assert.deepEqual(folderPermissions(root!, undefined), { canAddAsset: true, canAddFolder: true, canDeleteFolder: false, canRenameFolder: false });
});

test('locks: the holder read back from the owner; the account\'s own lock found by its marker; weak ETags are the same content', () => {
  const lock = (owner: string, token: string) => `<d:activelock><d:locktype><d:write/></d:locktype><d:lockscope><d:exclusive/></d:lockscope><d:depth>0</d:depth><d:owner>${owner}</d:owner><d:timeout>Second-600</d:timeout><d:locktoken><d:href>${token}</d:href></d:locktoken></d:activelock>`;
  const [mine, theirs] = parseMultistatus(doc(
    member('/remote.php/dav/files/alice/a.jpg', false, null, `<d:lockdiscovery>${lock('<d:href>damhub:alice</d:href>', 'opaquelocktoken:1')}</d:lockdiscovery>`),
    member('/remote.php/dav/files/alice/b.jpg', false, null, `<d:lockdiscovery>${lock('Bob in Finder', 'opaquelocktoken:2')}</d:lockdiscovery>`),
  ), XML, cred, 'PROPFIND');
  assert.deepEqual(mine!.locks, [{ token: 'opaquelocktoken:1', owner: 'damhub:alice', exclusive: true }]);
  assert.equal(ownLock(mine!, cred)?.token, 'opaquelocktoken:1');
  assert.equal(lockHolder(mine!.locks![0]!), 'alice');
  assert.equal(ownLock(theirs!, cred), undefined);
  assert.equal(lockHolder(theirs!.locks![0]!), 'Bob in Finder');
  assert.equal(ownLock(mine!, { ...cred, user: 'bob' }), undefined, 'another account does not hold it');
  assert.equal(plainTag('W/"abc"'), '"abc"');
  assert.equal(plainTag('"abc"'), '"abc"');
});
