/**
 * The Dropbox connector against its replay server (responses built from Dropbox's documented
 * examples): what it maps, versions, the DAM refresh, and the upstream failures of issue 7's
 * "Bad input" list.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { DAM_ACCESS_TYP } from '../../../src/auth/provider-tokens.js';
import { dropboxConnector } from '../../../src/providers/dropbox/provider.js';
import { dropboxFixture, startDropboxReplay, type DropboxReplay } from '../../helpers/dropbox-replay.js';
import { assertError, bearer, type TestHub } from '../../helpers/hub.js';
import { oauthSignIn, startConnectorHub } from '../../helpers/saas.js';

let r: DropboxReplay;
let t: TestHub;
let access: string;
let dam: { access_token: string; refresh_token?: string };

const TIMEOUT_MS = 800;

before(async () => {
  r = await startDropboxReplay(['Brand/logo.png', 'Brand/Guides/guide.pdf', 'Brand/hero.jpg', 'Brand/icon.svg', 'notes.txt'], { 'Brand/logo.png': 2 });
  ({ t } = await startConnectorHub(dropboxConnector({
    clientId: 'dbx-app', clientSecret: 'dbx-secret', allowInsecureRequests: true, maxEntries: 3,
    endpoints: { authorize: `${r.url}/oauth2/authorize`, token: `${r.url}/oauth2/token`, api: r.url },
  }), { timeoutMs: TIMEOUT_MS, retries: 1, retryBaseMs: 1 }));
  access = (await t.login()).access_token;
  dam = await oauthSignIn(t, 'dropbox', access);
});
after(async () => {
  await t?.close();
  await r?.close();
});

const get = (url: string, token = dam.access_token) =>
  t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: { authorization: bearer(access), 'provider-authorization': bearer(token) } });

test('sign-in keeps the documented account_id and the offline refresh token inside the DAM token', async () => {
  const c = await t.hub.providerTokens.open(dam.access_token, DAM_ACCESS_TYP);
  assert.equal(c.cred.acct, dropboxFixture('oauth2_token').code.account_id);
  assert.match(String(c.cred.rt), /^nBiM85CZALsAAAAAAAAAAQXHBoNpNutK4ngsXHsqW4iGz9tisb3JyjGqikMJIYbd\./);
  assert.equal(c.cred.exp, t.clock.now() + 14400 * 1000, 'expires_in of the token response');
});

test('root browse: folders and files mapped from FileMetadata/FolderMetadata', async () => {
  const res = await get('/assets/folder/root');
  assert.equal(res.statusCode, 200, res.body);
  const b = res.json();
  assert.equal(b.name, 'Dropbox');
  assert.deepEqual(b.folders, [{ id: r.ids['Brand'], name: 'Brand' }]);
  assert.equal(b.totalAssetsCount, 1);
  const a = b.assets[0];
  assert.equal(a.name, 'notes.txt');
  assert.equal(a.id, r.ids['notes.txt']);
  assert.equal(a.parentPath, '/');
  assert.equal(a.mimeType, 'text/plain');
  assert.match(a.downloadHashSha256Split4MB, /^[0-9a-f]{64}$/);
  assert.equal(typeof a.modified, 'number');
});

test('asset: get_metadata plus the documented temporary link as downloadUrl', async () => {
  const res = await get(`/assets/asset/${encodeURIComponent(r.ids['Brand/hero.jpg']!)}`);
  assert.equal(res.statusCode, 200, res.body);
  const a = res.json();
  assert.equal(a.name, 'hero.jpg');
  assert.equal(a.parentPath, '/Brand');
  assert.equal(a.mimeType, 'image/jpeg');
  assert.equal(a.downloadUrl, dropboxFixture('get_temporary_link').response.link);
  const folderAsAsset = await get(`/assets/asset/${encodeURIComponent(r.ids['Brand']!)}`);
  assertError(folderAsAsset, 'integration-not-found', 404, 'integration');
});

test('versions: list_revisions, newest first, numbered from the oldest; the current one only with withMaster', async () => {
  const older = await get(`/assets/assetversions/${encodeURIComponent(r.ids['Brand/logo.png']!)}`);
  assert.equal(older.statusCode, 200, older.body);
  assert.deepEqual(older.json().versions.map((x: any) => x.version), [2, 1], 'without withMaster: the earlier revisions');
  const res = await get(`/assets/assetversions/${encodeURIComponent(r.ids['Brand/logo.png']!)}?withMaster=true`);
  assert.equal(res.statusCode, 200, res.body);
  const v = res.json();
  assert.equal(v.name, 'logo.png');
  assert.deepEqual(v.versions.map((x: any) => x.version), [3, 2, 1]);
  assert.deepEqual(v.versions.slice(1), older.json().versions);
  assert.equal(new Set(v.versions.map((x: any) => x.downloadHashSha256Split4MB)).size, 3, 'each revision has its own content hash');
  assert.ok(v.versions[0].modified > v.versions[2].modified);
});

test('search scoped to a folder', async () => {
  const res = await get(`/assets/search?query=guide&parentId=${encodeURIComponent(r.ids['Brand']!)}`);
  assert.equal(res.statusCode, 200, res.body);
  assert.deepEqual(res.json().assets.map((a: any) => a.name), ['guide.pdf']);
  const none = await get(`/assets/search?query=notes&parentId=${encodeURIComponent(r.ids['Brand']!)}`);
  assert.equal(none.json().totalAssetsCount, 0);
});

test('a folder over the configured entry bound is a clear integration error, not an unbounded read', async () => {
  const res = await get(`/assets/folder/${encodeURIComponent(r.ids['Brand']!)}`);
  const body = assertError(res, 'integration-operation-failed', 400, 'integration');
  assert.match(body.error.message, /more than 3 items/);
});

test('429 with Retry-After: integration-unavailable 503 passing Retry-After on', async () => {
  r.fault('rate-limit');
  const res = await get('/assets/folder/root');
  const body = assertError(res, 'integration-unavailable', 503, 'integration');
  assert.equal(res.headers['retry-after'], '300');
  assert.match(body.error.details, /too_many_requests/);
});

test('a cursor Dropbox no longer accepts (409 reset): a clear integration-operation-failed naming it', async () => {
  r.fault('cursor-reset');
  const body = assertError(await get('/assets/folder/root'), 'integration-operation-failed', 400, 'integration');
  assert.match(body.error.details, /answered 409: reset\//);
});

test('HTML instead of JSON: integration-unavailable 502', async () => {
  r.fault('html');
  const body = assertError(await get('/assets/folder/root'), 'integration-unavailable', 502, 'integration');
  assert.match(body.error.details, /expected JSON but the answer is text\/html/);
});

test('an upstream that hangs once is retried (reads are idempotent); one that keeps hanging is integration-unavailable 504', async () => {
  r.fault('hang', 1);
  assert.equal((await get('/assets/folder/root')).statusCode, 200, 'the retry after the timeout answers');
  r.fault('hang', 2);
  const body = assertError(await get('/assets/folder/root'), 'integration-unavailable', 504, 'integration');
  assert.match(body.error.details, new RegExp(`no answer within ${TIMEOUT_MS} ms`));
});

test('token revoked mid-traversal: integration-auth-failed; the DAM refresh then gets a working token', async () => {
  const first = await get('/assets/folder/root');
  assert.equal(first.statusCode, 200);
  r.revokeTokens();
  const body = assertError(await get('/assets/folder/root'), 'integration-auth-failed', 401, 'integration');
  assert.match(body.error.details, /invalid_access_token/);
  const ref = await t.app.inject({ method: 'GET', url: '/api/v1/auth/refreshToken', headers: { authorization: bearer(access), 'provider-authorization': bearer(dam.refresh_token!) } });
  assert.equal(ref.statusCode, 200, ref.body);
  const renewed = ref.json();
  const again = await get('/assets/folder/root', renewed.access_token);
  assert.equal(again.statusCode, 200, again.body);
  const c = await t.hub.providerTokens.open(renewed.access_token, DAM_ACCESS_TYP);
  assert.match(String(c.cred.rt), /^nBiM85/, 'Dropbox does not rotate refresh tokens: the first one is kept');
});
