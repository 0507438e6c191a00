/**
 * Dropbox thumbnails through the hub against the replay server (files/get_thumbnail_v2 answered
 * as documented: the image as the body, PreviewResult in Dropbox-API-Result): every image asset of
 * a listing, a search and a detail has a hub thumbnailUrl that loads as a JPEG; ten concurrent
 * loads of one cold thumbnail make one upstream call.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import sharp from 'sharp';
import { dropboxConnector } from '../../../src/providers/dropbox/provider.js';
import { startDropboxReplay, type DropboxReplay } from '../../helpers/dropbox-replay.js';
import { bearer, type TestHub } from '../../helpers/hub.js';
import { oauthSignIn, startConnectorHub } from '../../helpers/saas.js';

let r: DropboxReplay;
let t: TestHub;
let access: string;
let dam: string;

before(async () => {
  r = await startDropboxReplay(['Brand/logo.png', 'Brand/hero.jpg', 'Brand/guide.pdf', 'Brand/icon.svg']);
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

const get = async (url: string) => (await t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: { authorization: bearer(access), 'provider-authorization': bearer(dam) } })).json();
const load = (url: string) => {
  const u = new URL(url);
  return t.app.inject({ method: 'GET', url: u.pathname + u.search });
};

test('every image asset of a listing, a search and a detail has a thumbnailUrl that loads as a JPEG', async () => {
  const folder = await get(`/assets/folder/${encodeURIComponent(r.ids['Brand']!)}`);
  const byName = Object.fromEntries(folder.assets.map((a: any) => [a.name, a]));
  assert.equal(byName['guide.pdf'].thumbnailUrl, undefined);
  assert.equal(byName['icon.svg'].thumbnailUrl, undefined, 'Dropbox renders no SVG thumbnail');
  const search = await get('/assets/search?query=hero');
  const detail = await get(`/assets/asset/${encodeURIComponent(r.ids['Brand/logo.png']!)}`);
  for (const a of [byName['logo.png'], byName['hero.jpg'], search.assets[0], detail]) {
    assert.match(a.thumbnailUrl, /\/api\/v1\/connectors\/dropbox\/thumbnail\//);
    const res = await load(a.thumbnailUrl);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['content-type'], 'image/jpeg');
    const m = await sharp(res.rawPayload).metadata();
    assert.equal(m.format, 'jpeg');
    assert.ok(m.width! <= 256 && m.height! <= 256);
  }
});

test('ten concurrent loads of one cold thumbnail make one get_thumbnail_v2 call', async () => {
  const folder = await get(`/assets/folder/${encodeURIComponent(r.ids['Brand']!)}`);
  const hero = folder.assets.find((a: any) => a.name === 'hero.jpg');
  const id = r.ids['Brand/hero.jpg']!;
  const before = r.thumbnails.get(id) ?? 0;
  // The first test loaded it (no disk cache in this hub): this round is cold again.
  const all = await Promise.all(Array.from({ length: 10 }, () => load(hero.thumbnailUrl)));
  assert.ok(all.every((x) => x.statusCode === 200 && x.headers['content-type'] === 'image/jpeg'));
  assert.equal((r.thumbnails.get(id) ?? 0) - before, 1);
});
