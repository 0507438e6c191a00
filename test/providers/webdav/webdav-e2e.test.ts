/**
 * WebDAV end to end through the hub against two real, unrelated WebDAV servers started on
 * loopback (Apache httpd with mod_dav_fs, the collection under /dav/; `rclone serve webdav`): DAM login through the form
 * (a wrong password first), browse, page, search, asset, download bytes equal (whole and a
 * range), and the isolation rules: another user's DAM token, an altered download link, ids that
 * try to leave the connection root.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertError } from '../../helpers/hub.js';
import { solidJpeg } from '../../helpers/library.js';
import { startApacheDav, startRcloneDav, type RealDav } from '../../helpers/real-servers.js';
import { signInWebdav, startWebdavHub, type WebdavHub } from '../../helpers/webdav.js';

for (const [server, startDav] of [['Apache mod_dav', startApacheDav], ['rclone serve webdav', startRcloneDav]] as const) describe(server, () => {
  let dav: RealDav;
  let h: WebdavHub;
  const files: Record<string, Buffer | string> = {};

  before(async () => {
    for (let i = 0; i < 12; i++) files[`Shoot/img ${i}.jpg`] = await solidJpeg(20 + i, 20, [i * 20, 50, 90]);
    files['Shoot/notes/plan.txt'] = 'the plan';
    files['Shoot/notes/brief.md'] = '# Brief';
    // Debian's /etc/mime.types, Apache's table, has no type for Adobe's DNG raw files: Apache
    // sends none, and the name decides (rclone reads shared-mime-info's, which has one).
    files['Shoot/notes/raw scan.dng'] = 'not really a raw file';
    files['secret.txt'] = 'top level';
    dav = await startDav(files, { alice: 'alice-pw', bob: 'bob-pw' });
    h = await startWebdavHub(dav);
  });
  after(async () => {
    await h?.t.close();
    await dav?.close();
  });

  test('a server URL in a refused address range is named on the sign-in form, not called unavailable', async () => {
    const { access_token } = await h.t.login({ sub: 'user-ssrf', email: 'ssrf@partner.example' });
    const port = new URL(dav.url).port;
    // 127.0.0.1 is allowlisted for the test server; its IPv4-compatible form must not slip through.
    const r = await signInWebdav(h.t, access_token, { serverUrl: `http://[::7f00:1]:${port}/`, username: 'alice', password: 'alice-pw' });
    assert.equal(r.token, null);
    assert.match(r.page, /The server address is not allowed: ::7f00:1 is an ipv4Compatible address \(::\/96/);
    assert.doesNotMatch(r.page, /unavailable/);
  });

  test('a wrong password shows the form again; the right one completes the login', async () => {
    const { access_token } = await h.t.login({ sub: 'user-2', email: 'two@partner.example' });
    const wrong = await signInWebdav(h.t, access_token, { serverUrl: dav.url, username: 'alice', password: 'nope' });
    assert.equal(wrong.status, 401);
    assert.match(wrong.page, /did not accept these credentials/);
    assert.doesNotMatch(wrong.page, /nope/, 'the password is never echoed');
    assert.equal(wrong.token, null);
    const css = /href="([^"]+\.css)"/.exec(wrong.page)![1]!;
    const sheet = await h.t.app.inject({ method: 'GET', url: css });
    assert.equal(sheet.statusCode, 200);
    assert.match(String(sheet.headers['content-type']), /^text\/css/);
    const providers = await h.t.app.inject({ method: 'GET', url: '/api/v1/auth/providers', headers: { authorization: `Bearer ${access_token}` } });
    const webdav = providers.json().find((p: any) => p.id === 'webdav');
    assert.equal(webdav.capabilities.serverUrl, true);
    assert.equal(webdav.capabilities.similarSearch, false);
  });

  test('browse, page, search, asset and download: bytes equal', async () => {
    const root = await h.get('/api/v1/assets/folder/root');
    assert.equal(root.status, 200, JSON.stringify(root.body));
    assert.deepEqual(root.body.folders.map((f: any) => f.id), ['/Shoot']);
    assert.deepEqual(root.body.assets.map((a: any) => a.name), ['secret.txt']);

    const seen: string[] = [];
    let more: string | undefined;
    do {
      const r = await h.get(`/api/v1/assets/folder/${encodeURIComponent('/Shoot')}?size=5${more ? `&more=${encodeURIComponent(more)}` : ''}`);
      assert.equal(r.status, 200);
      seen.push(...r.body.assets.map((a: any) => a.name));
      more = r.body.more;
    } while (more);
    assert.equal(seen.length, 12);
    assert.equal(seen[0], 'img 0.jpg');
    assert.equal(seen[2], 'img 2.jpg', 'numeric name order');

    const s = await h.get('/api/v1/assets/search?query=IMG%201&size=50');
    assert.deepEqual(s.body.assets.map((a: any) => a.name), ['img 1.jpg', 'img 10.jpg', 'img 11.jpg']);
    const scoped = await h.get(`/api/v1/assets/search?query=plan&parentId=${encodeURIComponent('/Shoot/notes')}`);
    assert.deepEqual(scoped.body.assets.map((a: any) => a.id), ['/Shoot/notes/plan.txt']);

    const a = await h.get(`/api/v1/assets/asset/${encodeURIComponent('/Shoot/img 7.jpg')}`);
    assert.equal(a.status, 200);
    assert.equal(a.body.mimeType, 'image/jpeg');
    assert.equal(a.body.fileSize, (files['Shoot/img 7.jpg'] as Buffer).length);
    assert.match(a.body.downloadHashFileAttributes, /^\d+-\d+$/);
    const u = new URL(a.body.downloadUrl);
    assert.equal(u.origin, 'http://hub.test');
    assert.ok(!u.pathname.includes(u.searchParams.get('g')!), 'the grant is not in the path (paths are logged)');
    const dl = await h.t.app.inject({ method: 'GET', url: u.pathname + u.search });
    assert.equal(dl.statusCode, 200);
    assert.ok(dl.rawPayload.equals(files['Shoot/img 7.jpg'] as Buffer), 'downloaded bytes equal the file');
    assert.match(String(dl.headers['content-disposition']), /attachment; filename\*=UTF-8''img%207\.jpg/);
    const part = await h.t.app.inject({ method: 'GET', url: u.pathname + u.search, headers: { range: 'bytes=0-9' } });
    assert.equal(part.statusCode, 206);
    assert.ok(part.rawPayload.equals((files['Shoot/img 7.jpg'] as Buffer).subarray(0, 10)));
  });

  test('a member the server gives no type for gets the one its name has in mime-db (issue 29)', async () => {
    const r = await h.get(`/api/v1/assets/folder/${encodeURIComponent('/Shoot/notes')}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(Object.fromEntries(r.body.assets.map((a: any) => [a.name, a.mimeType])), {
      'brief.md': 'text/markdown', 'plan.txt': 'text/plain', 'raw scan.dng': 'image/x-adobe-dng',
    });
  });

  test('an altered or foreign download link is refused', async () => {
    const a = await h.get(`/api/v1/assets/asset/${encodeURIComponent('/secret.txt')}`);
    const u = new URL(a.body.downloadUrl);
    const token = u.searchParams.get('g')!;
    const altered = token.slice(0, -3) + (token.endsWith('AAA') ? 'BBB' : 'AAA');
    assertError(await h.t.app.inject({ method: 'GET', url: `${u.pathname}?g=${altered}` }), 'hub-access-denied', 403);
    assertError(await h.t.app.inject({ method: 'GET', url: `${u.pathname}?g=not-a-grant` }), 'hub-access-denied', 403);
    assertError(await h.t.app.inject({ method: 'GET', url: u.pathname }), 'hub-access-denied', 403);
  });

  test('a download link ends with the partner it came from: disabled, it is refused at once; re-enabled, it works again', async () => {
    const a = await h.get(`/api/v1/assets/asset/${encodeURIComponent('/secret.txt')}`);
    const u = new URL(a.body.downloadUrl);
    const get = () => h.t.app.inject({ method: 'GET', url: u.pathname + u.search });
    assert.equal((await get()).statusCode, 200);
    const partner = h.t.partner.id;
    await h.t.hub.stores.partners.update(partner, { enabled: false }, h.t.clock.now());
    try {
      const body = assertError(await get(), 'hub-access-denied', 403);
      assert.match(body.error.details, /the partner it was made for is disabled or removed/);
    } finally {
      await h.t.hub.stores.partners.update(partner, { enabled: true }, h.t.clock.now());
    }
    assert.equal((await get()).statusCode, 200);
  });

  test('another user\'s DAM token is refused; ids cannot leave the connection root', async () => {
    const { access_token: bobAccess } = await h.t.login({ sub: 'bob', email: 'bob@partner.example' });
    const bob = await signInWebdav(h.t, bobAccess, { serverUrl: dav.url, username: 'bob', password: 'bob-pw' });
    assert.ok(bob.token);
    const cross = await h.t.app.inject({ method: 'GET', url: '/api/v1/assets/folder/root', headers: { authorization: `Bearer ${h.access}`, 'provider-authorization': `Bearer ${bob.token}` } });
    assertError(cross, 'provider-access-token-invalid', 403);
    // Renewing bob's connection re-checks his credentials and yields a working DAM token.
    const renewed = await h.t.app.inject({ method: 'GET', url: '/api/v1/auth/refreshToken', headers: { authorization: `Bearer ${bobAccess}`, 'provider-authorization': `Bearer ${bob.refresh}` } });
    assert.equal(renewed.statusCode, 200, renewed.body);
    const again = await h.t.app.inject({ method: 'GET', url: '/api/v1/assets/folder/root', headers: { authorization: `Bearer ${bobAccess}`, 'provider-authorization': `Bearer ${renewed.json().access_token}` } });
    assert.equal(again.statusCode, 200, again.body);
    for (const id of ['/../secret.txt', '/Shoot/../../etc/passwd', '../secret.txt']) {
      const r = await h.t.app.inject({ method: 'GET', url: `/api/v1/assets/asset/${encodeURIComponent(id)}`, headers: h.headers });
      assertError(r, 'integration-not-found', 404, 'integration');
    }
    // The server's own 404 (Apache answers with an HTML page) reaches details as words, not markup.
    const missing = assertError(await h.t.app.inject({ method: 'GET', url: `/api/v1/assets/asset/${encodeURIComponent('/Shoot/nope.jpg')}`, headers: h.headers }), 'integration-not-found', 404, 'integration');
    assert.match(missing.error.details, /answered 404/);
    assert.doesNotMatch(missing.error.details, /<\/?[a-z!][^>]*>/i, 'no HTML in details');
    const folder = await h.get(`/api/v1/assets/folder/${encodeURIComponent('/Shoot/img 1.jpg')}`);
    assert.equal(folder.status, 404, `a file is not a folder: ${JSON.stringify(folder.body)}`);
  });
});
