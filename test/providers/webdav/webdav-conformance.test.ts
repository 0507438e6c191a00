/**
 * The WebDAV connector passes the provider conformance suite against two real, unrelated WebDAV
 * servers started on loopback: Apache httpd with mod_dav_fs (a collection under /dav/) and
 * `rclone serve webdav` (the collection at the root).
 */
import { after } from 'node:test';
import { runProviderConformance } from '../../helpers/provider-conformance.js';
import { solidJpeg } from '../../helpers/library.js';
import { startApacheDav, startRcloneDav, type RealDav } from '../../helpers/real-servers.js';
import { startWebdavHub, type WebdavHub } from '../../helpers/webdav.js';

const running: { dav?: RealDav; h?: WebdavHub }[] = [];
after(async () => {
  for (const r of running) {
    await r.h?.t.close();
    await r.dav?.close();
  }
});

async function files(): Promise<Record<string, Buffer | string>> {
  const f: Record<string, Buffer | string> = {};
  for (let i = 0; i < 23; i++) f[`Photos/photo ${String(i).padStart(2, '0')}.jpg`] = await solidJpeg(32 + i, 24, [i * 10, 100, 200 - i * 5]);
  f['Photos/Trips/Été 2024/photo plage.jpg'] = await solidJpeg(40, 30, [250, 200, 10]);
  f['Photos/Sub/photo sub.jpg'] = await solidJpeg(40, 30, [5, 5, 5]);
  f['Docs/readme.txt'] = 'hello photo world';
  return f;
}

for (const [name, startDav] of [['webdav (Apache mod_dav)', startApacheDav], ['webdav (rclone serve webdav)', startRcloneDav]] as const) {
  runProviderConformance(name, async () => {
    const r: { dav?: RealDav; h?: WebdavHub } = {};
    running.push(r);
    r.dav = await startDav(await files());
    const w = (r.h = await startWebdavHub(r.dav));
    return {
      provider: w.t.hub.providers.require('webdav'),
      bigFolderId: '/Photos',
      knownAssetId: '/Photos/photo 03.jpg',
      pageSize: 7,
      commonTerm: 'photo',
      async request(method, p, body) {
        const res = method === 'GET' ? await w.get(`/api/v1${p}`) : await w.post(`/api/v1${p}`, body);
        return { status: res.status, body: res.body };
      },
    };
  });
}
