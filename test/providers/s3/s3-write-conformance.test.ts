/**
 * The S3 connector passes the write conformance suite against OpenStack Swift's S3 API (s3api with
 * bucket versioning), started on loopback. S3 has no locks: the suite checks they are not offered.
 */
import { after } from 'node:test';
import { solidJpeg } from '../../helpers/library.js';
import { startSwiftS3, type RealS3 } from '../../helpers/real-servers.js';
import { startS3Hub, type S3Hub } from '../../helpers/s3.js';
import { hubDownloader, injectCaller, runWriteConformance } from '../../helpers/write-conformance.js';

let s3: RealS3 | undefined;
let h: S3Hub | undefined;
after(async () => {
  await h?.t.close();
  await s3?.close();
});

runWriteConformance('s3 (Swift s3api)', async () => {
  s3 = await startSwiftS3({ 'Scratch/': '' }, { versioning: true });
  h = await startS3Hub(s3);
  await h.t.hub.stores.partners.update(h.t.partner.id, { writes: true }, h.t.clock.now());
  return {
    provider: h.t.hub.providers.require('s3'),
    call: injectCaller(h.t.app, h.headers),
    download: hubDownloader(h.t.app, 'http://hub.test'),
    scratchFolderId: 'Scratch/',
    sample: { ext: 'jpg', one: await solidJpeg(24, 16, [200, 30, 30]), two: await solidJpeg(24, 16, [30, 30, 200]) },
  };
});
