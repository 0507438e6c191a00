/**
 * Drive thumbnails through the hub against the replay server: every image asset of a listing, a
 * search and a detail has a hub thumbnailUrl that loads as a JPEG; the hub fetches a fresh
 * thumbnailLink with the user's token (the File reference: a file not shared publicly needs a
 * credentialed request), once for ten concurrent loads of a cold thumbnail.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import sharp from 'sharp';
import { googleDriveConnector } from '../../../src/providers/gdrive/provider.js';
import { startDriveReplay, type DriveReplay } from '../../helpers/gdrive-replay.js';
import { bearer, type TestHub } from '../../helpers/hub.js';
import { oauthSignIn, startConnectorHub } from '../../helpers/saas.js';

let r: DriveReplay;
let t: TestHub;
let access: string;
let dam: string;

before(async () => {
  r = await startDriveReplay(['Brand/logo.png', 'Brand/hero.jpg', 'Brand/notes.txt']);
  ({ t } = await startConnectorHub(googleDriveConnector({
    clientId: 'drive-app', clientSecret: 'drive-secret', allowInsecureRequests: true,
    endpoints: { authorize: `${r.url}/o/oauth2/v2/auth`, token: `${r.url}/token`, api: r.url },
  })));
  access = (await t.login()).access_token;
  dam = (await oauthSignIn(t, 'gdrive', access)).access_token;
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
  assert.equal(byName['notes.txt'].thumbnailUrl, undefined);
  const search = await get('/assets/search?query=hero');
  const detail = await get(`/assets/asset/${encodeURIComponent(r.ids['Brand/logo.png']!)}`);
  for (const a of [byName['logo.png'], byName['hero.jpg'], search.assets[0], detail]) {
    assert.match(a.thumbnailUrl, /\/api\/v1\/connectors\/gdrive\/thumbnail\//);
    const res = await load(a.thumbnailUrl);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['content-type'], 'image/jpeg');
    const m = await sharp(res.rawPayload).metadata();
    assert.equal(m.format, 'jpeg');
    assert.deepEqual([m.width, m.height], [220, 124]);
  }
});

test('ten concurrent loads of one cold thumbnail fetch its thumbnailLink once', async () => {
  const folder = await get(`/assets/folder/${encodeURIComponent(r.ids['Brand']!)}`);
  const hero = folder.assets.find((a: any) => a.name === 'hero.jpg');
  const id = r.ids['Brand/hero.jpg']!;
  const before = r.thumbnails.get(id) ?? 0;
  const all = await Promise.all(Array.from({ length: 10 }, () => load(hero.thumbnailUrl)));
  assert.ok(all.every((x) => x.statusCode === 200 && x.headers['content-type'] === 'image/jpeg'));
  assert.equal((r.thumbnails.get(id) ?? 0) - before, 1);
});
