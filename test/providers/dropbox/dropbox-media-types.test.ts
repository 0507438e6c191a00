/**
 * Issue 29, item 2: Dropbox reports no media type, so the hub names one from the file name. The
 * SaaS connectors' own table knew `.indd` but not `.md`, while the library's knew `.md` and the
 * WebDAV and S3 tables knew neither; now every connector asks mime-db (src/providers/kit/mime.ts).
 * Against the Dropbox replay, through the hub.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { dropboxConnector } from '../../../src/providers/dropbox/provider.js';
import { startDropboxReplay, type DropboxReplay } from '../../helpers/dropbox-replay.js';
import { bearer, type TestHub } from '../../helpers/hub.js';
import { oauthSignIn, startConnectorHub } from '../../helpers/saas.js';

let r: DropboxReplay;
let t: TestHub;
let access: string;
let dam: string;

const NAMES: Record<string, string> = {
  'brief.md': 'text/markdown',
  'config.yaml': 'application/yaml',
  'layout.indd': 'application/x-indesign',
  'scan.DNG': 'image/x-adobe-dng',
  'still.heic': 'image/heic',
  'cover.ai': 'application/postscript',
  'LICENSE': 'application/octet-stream',
  'archive.unknownext': 'application/octet-stream',
};

before(async () => {
  r = await startDropboxReplay(Object.keys(NAMES).map((n) => `Docs/${n}`));
  ({ t } = await startConnectorHub(dropboxConnector({
    clientId: 'dbx-app', clientSecret: 'dbx-secret', allowInsecureRequests: true,
    endpoints: { authorize: `${r.url}/oauth2/authorize`, token: `${r.url}/oauth2/token`, api: r.url },
  })));
  access = (await t.login()).access_token;
  dam = (await oauthSignIn(t, 'dropbox', access)).access_token;
});
after(async () => {
  await t?.close();
  await r?.close();
});

test('browse: each file gets the type its name has in mime-db, application/octet-stream when it has none', async () => {
  const res = await t.app.inject({ method: 'GET', url: `/api/v1/assets/folder/${encodeURIComponent(r.ids['Docs']!)}?size=50`, headers: { authorization: bearer(access), 'provider-authorization': bearer(dam) } });
  assert.equal(res.statusCode, 200, res.body);
  assert.deepEqual(Object.fromEntries(res.json().assets.map((a: any) => [a.name, a.mimeType])), NAMES);
});
