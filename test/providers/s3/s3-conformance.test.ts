/** The S3 connector passes the provider conformance suite against OpenStack Swift's S3 API (s3api), started on loopback. */
import { after } from 'node:test';
import { runProviderConformance } from '../../helpers/provider-conformance.js';
import { solidJpeg } from '../../helpers/library.js';
import { startSwiftS3, type RealS3 } from '../../helpers/real-servers.js';
import { startS3Hub, type S3Hub } from '../../helpers/s3.js';

let s3: RealS3 | undefined;
let h: S3Hub | undefined;
after(async () => {
  await h?.t.close();
  await s3?.close();
});

runProviderConformance('s3', async () => {
  const objects: Record<string, Buffer | string> = {};
  for (let i = 0; i < 23; i++) objects[`Photos/photo ${String(i).padStart(2, '0')}.jpg`] = await solidJpeg(32 + i, 24, [i * 10, 100, 200 - i * 5]);
  objects['Photos/Trips/Été 2024/photo plage.jpg'] = await solidJpeg(40, 30, [250, 200, 10]);
  objects['Photos/Sub/photo sub.jpg'] = await solidJpeg(40, 30, [5, 5, 5]);
  objects['Docs/readme.txt'] = 'hello photo world';
  s3 = await startSwiftS3(objects);
  h = await startS3Hub(s3);
  const w = h;
  return {
    provider: w.t.hub.providers.require('s3'),
    bigFolderId: 'Photos/',
    knownAssetId: 'Photos/photo 03.jpg',
    pageSize: 7,
    commonTerm: 'photo',
    async request(method, p, body) {
      const r = method === 'GET' ? await w.get(`/api/v1${p}`) : await w.post(`/api/v1${p}`, body);
      return { status: r.status, body: r.body };
    },
  };
});
