/** The Dropbox connector passes the provider conformance suite against its documented-response replay server. */
import { after } from 'node:test';
import { dropboxConnector } from '../src/providers/dropbox/provider.js';
import { runProviderConformance } from './conformance/provider-conformance.js';
import { startDropboxReplay, type DropboxReplay } from './helpers/dropbox-replay.js';
import { bearer, type TestHub } from './helpers/hub.js';
import { oauthSignIn, startConnectorHub } from './helpers/saas.js';

let replay: DropboxReplay | undefined;
let t: TestHub | undefined;
after(async () => {
  await t?.close();
  await replay?.close();
});

runProviderConformance('dropbox', async () => {
  const tree = Array.from({ length: 23 }, (_, i) => `Photos/photo ${String(i).padStart(2, '0')}.jpg`);
  tree.push('Photos/Trips/photo beach.jpg', 'Photos/Sub/photo sub.jpg', 'Docs/readme.txt');
  replay = await startDropboxReplay(tree, { 'Photos/photo 03.jpg': 2 });
  const r = replay;
  const built = await startConnectorHub(dropboxConnector({
    clientId: 'dbx-app', clientSecret: 'dbx-secret', allowInsecureRequests: true,
    endpoints: { authorize: `${r.url}/oauth2/authorize`, token: `${r.url}/oauth2/token`, api: r.url },
  }));
  t = built.t;
  const provider = built.connector;
  const hub = t;
  const access = (await hub.login()).access_token;
  const dam = (await oauthSignIn(hub, 'dropbox', access)).access_token;
  return {
    descriptor: provider.descriptor,
    bigFolderId: r.ids['Photos']!,
    knownAssetId: r.ids['Photos/photo 03.jpg']!,
    pageSize: 7,
    commonTerm: 'photo',
    async request(method, p, body) {
      const res = await hub.app.inject({ method, url: `/api/v1${p}`, headers: { authorization: bearer(access), 'provider-authorization': bearer(dam) }, ...(body ? { payload: body as object } : {}) });
      return { status: res.statusCode, body: res.json() };
    },
  };
});
