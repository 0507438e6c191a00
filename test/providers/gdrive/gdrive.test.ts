/**
 * The Google Drive connector against its replay server (Drive's documented shapes): mapping,
 * scoped search through subfolders, versions from revisions, refresh, and upstream failures.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { DAM_ACCESS_TYP } from '../../../src/auth/provider-tokens.js';
import { googleDriveConnector } from '../../../src/providers/gdrive/provider.js';
import { driveFixture, startDriveReplay, type DriveReplay } from '../../helpers/gdrive-replay.js';
import { assertError, bearer, startTestHub, type TestHub } from '../../helpers/hub.js';
import { continueToVendor, TestBrowser } from '../../helpers/browser.js';
import { oauthSignIn, startConnectorHub } from '../../helpers/saas.js';

/** The upstream deadline: short for the hang test, long enough for a sign-in on a loaded machine (500 ms was not). */
const TIMEOUT_MS = 1500;
let r: DriveReplay;
let t: TestHub;
let access: string;
let dam: { access_token: string; refresh_token?: string };

before(async () => {
  r = await startDriveReplay(["Brand/logo.png", "Brand/Guides/Deep/guide o'brien.pdf", 'Brand/hero.jpg', 'notes.txt'], { 'Brand/logo.png': 3 });
  ({ t } = await startConnectorHub(googleDriveConnector({
    clientId: 'drive-app', clientSecret: 'drive-secret', allowInsecureRequests: true,
    endpoints: { authorize: `${r.url}/o/oauth2/v2/auth`, token: `${r.url}/token`, api: r.url },
  }), { timeoutMs: TIMEOUT_MS, retries: 1, retryBaseMs: 1 }));
  access = (await t.login()).access_token;
  dam = await oauthSignIn(t, 'gdrive', access);
});
after(async () => {
  await t?.close();
  await r?.close();
});

const get = (url: string, token = dam.access_token) =>
  t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: { authorization: bearer(access), 'provider-authorization': bearer(token) } });

test('sign-in: the account is about.user.permissionId; the offline refresh token is kept', async () => {
  const c = await t.hub.providerTokens.open(dam.access_token, DAM_ACCESS_TYP);
  assert.equal(c.cred.acct, driveFixture('about').response.user.permissionId);
  assert.match(String(c.cred.rt), /^1\/\/xEoDL4iW3cxlI7yDbSRFYNG01kVKM2C-259HOF2aQbI\./);
});

test('root browse and the File mapping (sizes from int64 strings, hashes, image size, links)', async () => {
  const res = await get('/assets/folder/root');
  assert.equal(res.statusCode, 200, res.body);
  const b = res.json();
  assert.equal(b.name, 'My Drive');
  assert.deepEqual(b.folders.map((f: any) => f.name), ['Brand']);
  const hero = (await get(`/assets/asset/${r.ids['Brand/hero.jpg']}`)).json();
  assert.equal(hero.name, 'hero.jpg');
  assert.equal(typeof hero.fileSize, 'number');
  assert.equal(hero.xSizePx, 1600);
  assert.equal(hero.ySizePx, 900);
  assert.match(hero.downloadHashMd5, /^[0-9a-f]{32}$/);
  assert.match(hero.downloadHashSha256, /^[0-9a-f]{64}$/);
  assert.match(hero.thumbnailUrl, /^http:\/\/hub\.test\/api\/v1\/connectors\/gdrive\/thumbnail\/hero\.jpg\.jpg\?g=/, 'a hub link: thumbnailLink needs the user\'s token');
  // A hub grant link, not webContentLink (which needs a Google session): gdrive-download.test.ts.
  assert.match(hero.downloadUrl, /^http:\/\/hub\.test\/api\/v1\/connectors\/gdrive\/download\/hero\.jpg\?g=/);
  assert.equal(hero.modified, Date.parse(driveFixture('files').file.modifiedTime));
  assertError(await get(`/assets/asset/${r.ids['Brand']}`), 'integration-not-found', 404, 'integration');
});

test('scoped search reaches files in sub-sub-folders and escapes quotes in the query language', async () => {
  const res = await get(`/assets/search?query=${encodeURIComponent("o'brien")}&parentId=${r.ids['Brand']}`);
  assert.equal(res.statusCode, 200, res.body);
  assert.deepEqual(res.json().assets.map((a: any) => a.name), ["guide o'brien.pdf"]);
  assert.ok(r.queries.some((q) => q.includes("name contains 'o\\'brien'")), 'the quote is escaped');
  const outside = await get(`/assets/search?query=notes&parentId=${r.ids['Brand']}`);
  assert.equal(outside.json().totalAssetsCount, 0);
  const everywhere = await get('/assets/search?query=notes');
  assert.equal(everywhere.json().totalAssetsCount, 1);
});

test('versions: every revision page, newest first, numbered from the oldest; the current one only with withMaster', async () => {
  const older = await get(`/assets/assetversions/${r.ids['Brand/logo.png']}`);
  assert.equal(older.statusCode, 200, older.body);
  assert.deepEqual(older.json().versions.map((x: any) => x.version), [3, 2, 1], 'without withMaster: the earlier revisions');
  const res = await get(`/assets/assetversions/${r.ids['Brand/logo.png']}?withMaster=true`);
  assert.equal(res.statusCode, 200, res.body);
  const v = res.json();
  assert.deepEqual(v.versions.map((x: any) => x.version), [4, 3, 2, 1], 'four revisions over two pages of two');
  assert.equal(new Set(v.versions.map((x: any) => x.downloadHashMd5)).size, 4);
  assert.deepEqual(v.versions.slice(1).map((x: any) => x.version), older.json().versions.map((x: any) => x.version));
  // Drive's File.version counts every change (it is 8 here); reported as the asset's version it
  // names a version the list above does not have.
  const a = (await get(`/assets/asset/${r.ids['Brand/logo.png']}`)).json();
  assert.ok(a.version === undefined || a.version === 4, `the asset's version ${a.version} is one assetversions lists`);
});

test('403 userRateLimitExceeded and 429 are integration-unavailable 503; Retry-After passes on', async () => {
  r.fault('rate-limit-403');
  const a = assertError(await get('/assets/folder/root'), 'integration-unavailable', 503, 'integration');
  assert.match(a.error.details, /userRateLimitExceeded/);
  r.fault('rate-limit-429');
  const res = await get('/assets/folder/root');
  assertError(res, 'integration-unavailable', 503, 'integration');
  assert.equal(res.headers['retry-after'], '30');
});

test('an HTML error page and a hang are clear integration-unavailable errors', async () => {
  // Reading an asset is one upstream call, tried twice: exactly two failed attempts, on that
  // asset's path only. (Browse runs two calls in parallel, and an earlier test's call may still be
  // retrying, so how a counted number of faults falls between calls would be up to timing.)
  const hero = r.ids['Brand/hero.jpg'];
  r.fault('html', 2, `/files/${hero}`);
  assertError(await get(`/assets/asset/${hero}`), 'integration-unavailable', 502, 'integration');
  // A success closes the kit's circuit breaker again (it counts consecutive failures per host).
  assert.equal((await get(`/assets/asset/${hero}`)).statusCode, 200);
  r.fault('hang', 2, `/files/${hero}`);
  const hung = assertError(await get(`/assets/asset/${hero}`), 'integration-unavailable', 504, 'integration');
  assert.match(hung.error.details, new RegExp(`no answer within ${TIMEOUT_MS} ms`));
});

test('revoked access: integration-auth-failed with the documented message; the DAM refresh recovers', async () => {
  r.revokeTokens();
  const body = assertError(await get('/assets/folder/root'), 'integration-auth-failed', 401, 'integration');
  assert.match(body.error.details, /Invalid Credentials/);
  const ref = await t.app.inject({ method: 'GET', url: '/api/v1/auth/refreshToken', headers: { authorization: bearer(access), 'provider-authorization': bearer(dam.refresh_token!) } });
  assert.equal(ref.statusCode, 200, ref.body);
  assert.equal((await get('/assets/folder/root', ref.json().access_token)).statusCode, 200);
});

test('configured OAuth apps register both connectors; the popup goes to the vendors\' documented authorization endpoints with PKCE', async () => {
  const h = await startTestHub({ config: { oauthApps: { dropbox: { clientId: 'dbx-id', clientSecret: 's' }, gdrive: { clientId: 'g-id', clientSecret: 's' } } } });
  try {
    const hubAccess = (await h.login()).access_token;
    const list = await h.app.inject({ method: 'GET', url: '/api/v1/auth/providers', headers: { authorization: bearer(hubAccess) } });
    const ids = list.json().map((p: any) => p.id);
    assert.ok(ids.includes('dropbox') && ids.includes('gdrive'), ids.join());
    for (const [id, endpoint, extra] of [['dropbox', 'https://www.dropbox.com/oauth2/authorize', 'token_access_type'], ['gdrive', 'https://accounts.google.com/o/oauth2/v2/auth', 'access_type']] as const) {
      const res = await h.app.inject({ method: 'POST', url: `/api/v1/auth/login?provider=${id}`, headers: { authorization: bearer(hubAccess) } });
      // The hub's confirm page first; its Continue goes on to the vendor.
      const u = new URL(await continueToVendor(new TestBrowser(h), res.json().redirect_uri));
      assert.equal(`${u.origin}${u.pathname}`, endpoint);
      assert.equal(u.searchParams.get('redirect_uri'), `http://hub.test/api/v1/auth/callback/${id}`);
      assert.equal(u.searchParams.get('code_challenge_method'), 'S256');
      assert.equal(u.searchParams.get(extra), 'offline');
    }
  } finally {
    await h.close();
  }
});
