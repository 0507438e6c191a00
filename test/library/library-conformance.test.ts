/** The embedded library passes the provider conformance suite over a generated tree. */
import { after } from 'node:test';
import { assetIdFor } from '../../src/providers/library/scanner.js';
import { runProviderConformance } from '../helpers/provider-conformance.js';
import { solidJpeg, startLibraryHub, type LibraryHarness } from '../helpers/library.js';

let lib: LibraryHarness | undefined;
after(() => lib?.t.close());

runProviderConformance('library', async () => {
  const files: Record<string, Buffer | string> = {};
  for (let i = 0; i < 23; i++) files[`Photos/photo ${String(i).padStart(2, '0')}.jpg`] = await solidJpeg(32 + i, 24, [i * 10, 100, 200 - i * 5]);
  files['Photos/Trips/Été 2024/photo plage.jpg'] = await solidJpeg(40, 30, [250, 200, 10]);
  files['Photos/Sub/photo sub.jpg'] = await solidJpeg(40, 30, [5, 5, 5]);
  files['Docs/readme.txt'] = 'hello photo world';
  lib = await startLibraryHub(files);
  const l = lib;
  return {
    provider: l.t.hub.providers.require('library'),
    bigFolderId: '/Photos',
    knownAssetId: assetIdFor('Photos/photo 03.jpg'),
    pageSize: 7,
    commonTerm: 'photo',
    async request(method, p, body) {
      const r = method === 'GET' ? await l.get(`/api/v1${p}`) : await l.post(`/api/v1${p}`, body);
      return { status: r.status, body: r.body };
    },
  };
});
