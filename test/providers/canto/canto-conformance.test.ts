/**
 * The Canto connector passes the provider conformance suite against its documented-response
 * replay: an album of 23 assets (three pages of 7) inside a folder that also holds a second album
 * (Canto's albums hold content, its folders hold albums), one asset with two earlier versions.
 */
import { after } from 'node:test';
import { startCantoReplay, type CantoReplay } from '../../helpers/canto-replay.js';
import { bearer, type TestHub } from '../../helpers/hub.js';
import { runProviderConformance } from '../../helpers/provider-conformance.js';
import { cantoSignIn, startCantoHub } from './harness.js';

let replay: CantoReplay | undefined;
let t: TestHub | undefined;
after(async () => {
  await t?.close();
  await replay?.close();
});

runProviderConformance('canto', async () => {
  const tree = Array.from({ length: 23 }, (_, i) => `Library/Photos/photo ${String(i).padStart(2, '0')}.jpg`);
  tree.push('Library/Trips/photo beach.jpg', 'Docs/readme.txt');
  const r = (replay = await startCantoReplay(tree, { 'Library/Photos/photo 03.jpg': 2 }));
  const built = await startCantoHub(r.url);
  const hub = (t = built.t);
  const access = (await hub.login()).access_token;
  const dam = (await cantoSignIn(hub, access, r.url)).access_token;
  return {
    provider: built.connector,
    bigFolderId: r.ids['Library/Photos']!,
    subfolderParentId: r.ids['Library']!,
    knownAssetId: r.ids['Library/Photos/photo 03.jpg']!,
    pageSize: 7,
    commonTerm: 'photo',
    async request(method, p, body) {
      const res = await hub.app.inject({ method, url: `/api/v1${p}`, headers: { authorization: bearer(access), 'provider-authorization': bearer(dam) }, ...(body ? { payload: body as object } : {}) });
      return { status: res.statusCode, body: res.json() };
    },
  };
});
