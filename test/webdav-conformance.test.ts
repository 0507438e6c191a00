/** The WebDAV connector passes the provider conformance suite against a real WebDAV server. */
import { after } from 'node:test';
import { runProviderConformance } from './conformance/provider-conformance.js';
import { solidJpeg } from './helpers/library.js';
import { startDavServer, startWebdavHub, type DavServer, type WebdavHub } from './helpers/webdav.js';

let dav: DavServer | undefined;
let h: WebdavHub | undefined;
after(async () => {
  await h?.t.close();
  await dav?.close();
});

runProviderConformance('webdav', async () => {
  const files: Record<string, Buffer | string> = {};
  for (let i = 0; i < 23; i++) files[`Photos/photo ${String(i).padStart(2, '0')}.jpg`] = await solidJpeg(32 + i, 24, [i * 10, 100, 200 - i * 5]);
  files['Photos/Trips/Été 2024/photo plage.jpg'] = await solidJpeg(40, 30, [250, 200, 10]);
  files['Photos/Sub/photo sub.jpg'] = await solidJpeg(40, 30, [5, 5, 5]);
  files['Docs/readme.txt'] = 'hello photo world';
  dav = await startDavServer(files);
  h = await startWebdavHub(dav);
  const w = h;
  return {
    descriptor: w.t.hub.providers.require('webdav').descriptor,
    bigFolderId: '/Photos',
    knownAssetId: '/Photos/photo 03.jpg',
    pageSize: 7,
    commonTerm: 'photo',
    async request(method, p, body) {
      const r = method === 'GET' ? await w.get(`/api/v1${p}`) : await w.post(`/api/v1${p}`, body);
      return { status: r.status, body: r.body };
    },
  };
});
