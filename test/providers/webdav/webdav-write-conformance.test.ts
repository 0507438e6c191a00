/**
 * The WebDAV connector passes the write conformance suite (test/helpers/write-conformance.ts)
 * against the two real servers its reads are tested on: Apache httpd mod_dav_fs and `rclone serve
 * webdav`. Locks are offered on Apache only (rclone reports no lockdiscovery: docs/connectors.md).
 */
import { after } from 'node:test';
import { solidJpeg } from '../../helpers/library.js';
import { startApacheDav, startRcloneDav, type RealDav } from '../../helpers/real-servers.js';
import { signInWebdav, startWebdavHub, type WebdavHub } from '../../helpers/webdav.js';
import { hubDownloader, injectCaller, runWriteConformance } from '../../helpers/write-conformance.js';

const running: { dav?: RealDav; h?: WebdavHub }[] = [];
after(async () => {
  for (const r of running) {
    await r.h?.t.close();
    await r.dav?.close();
  }
});

const USERS = { alice: 'alice-pw', bob: 'bob-pw' };

for (const [name, startDav] of [['webdav (Apache mod_dav)', startApacheDav], ['webdav (rclone serve webdav)', startRcloneDav]] as const) {
  runWriteConformance(name, async () => {
    const r: { dav?: RealDav; h?: WebdavHub } = {};
    running.push(r);
    r.dav = await startDav({ 'Scratch/.keep': '' }, USERS);
    const w = (r.h = await startWebdavHub(r.dav));
    await w.t.hub.stores.partners.update(w.t.partner.id, { writes: true }, w.t.clock.now());
    const bob = await w.t.login({ sub: 'bob' });
    const other = await signInWebdav(w.t, bob.access_token, { serverUrl: r.dav.url, username: 'bob', password: USERS.bob });
    return {
      provider: w.t.hub.providers.require('webdav'),
      call: injectCaller(w.t.app, w.headers),
      callAsOther: injectCaller(w.t.app, { authorization: `Bearer ${bob.access_token}`, 'provider-authorization': `Bearer ${other.token}` }),
      download: hubDownloader(w.t.app, 'http://hub.test'),
      scratchFolderId: '/Scratch',
      sample: { ext: 'jpg', one: await solidJpeg(24, 16, [200, 30, 30]), two: await solidJpeg(24, 16, [30, 30, 200]) },
    };
  });
}
