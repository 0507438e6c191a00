/**
 * MCP over Streamable HTTP at /mcp, with the SDK's own client against a listening hub, and OAuth
 * 2.1 + PKCE tokens from a real authorization server on loopback (oidc-provider).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ManualClock } from '../../src/clock.js';
import { addAccount } from '../../src/providers/library/accounts.js';
import { startTestHub, tempDir, type TestHub } from '../helpers/hub.js';
import { TestBrowser } from '../helpers/browser.js';
import { solidJpeg, writeFiles, libraryOf } from '../helpers/library.js';
import { callTool, mcpLibraryFiles, ok, refused, TOOL_NAMES } from '../helpers/mcp.js';
import { obtainAccessToken, startAuthServer, type AuthServer } from '../helpers/oauth-server.js';
import { freePort } from '../helpers/process.js';

let as: AuthServer;
let t: TestHub;
let clock: ManualClock;
let publicUrl: string;
let resource: string;
let token: string;
let client: Client;
let files: Record<string, Buffer>;
let root: string;

const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };
const post = (headers: Record<string, string> = {}, body: unknown = initialize) => fetch(resource, {
  method: 'POST',
  headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
  body: JSON.stringify(body),
});

before(async () => {
  const port = await freePort();
  publicUrl = `http://127.0.0.1:${port}`;
  resource = `${publicUrl}/mcp`;
  as = await startAuthServer(resource);
  root = tempDir('damhub-mcp-lib-');
  files = await mcpLibraryFiles();
  writeFiles(root, files);
  clock = new ManualClock(Date.now());
  t = await startTestHub({ clock, config: { libraryDir: root, publicUrl, mcpIssuer: as.issuer, mcpJwksUrl: as.jwksUrl, userRateLimitPerMin: 0 } });
  await t.hub.start();
  await addAccount(libraryOf(t.hub).index, 'alice', 'correct horse', ['brand'], clock.now());
  await t.app.listen({ host: '127.0.0.1', port });
  token = await obtainAccessToken(as.issuer, resource, 'alice-sub');
  client = new Client({ name: 'damhub-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(resource), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
});

after(async () => {
  await client?.close();
  await t?.close();
  await as?.close();
});

test('without a token: 401 with a WWW-Authenticate challenge naming the protected-resource metadata', async () => {
  const res = await post();
  assert.equal(res.status, 401);
  const challenge = res.headers.get('www-authenticate') ?? '';
  const m = /^Bearer resource_metadata="([^"]+)"/.exec(challenge);
  assert.ok(m, challenge);
  const body = await res.json() as any;
  assert.equal(body.error.code, 'hub-access-token-missing');
  assert.equal(body.error.source, 'hub');
  // What an MCP client does next: the metadata names this resource and the authorization server.
  const meta = await (await fetch(m[1]!)).json() as any;
  assert.equal(meta.resource, resource);
  assert.deepEqual(meta.authorization_servers, [as.issuer]);
  const rootMeta = await (await fetch(`${publicUrl}/.well-known/oauth-protected-resource`)).json() as any;
  assert.equal(rootMeta.resource, resource);
  // The SDK's client, given no credentials, cannot connect.
  const anon = new Client({ name: 'anon', version: '1' });
  await assert.rejects(anon.connect(new StreamableHTTPClientTransport(new URL(resource))));
  await anon.close();
});

test('a token that does not verify is refused with error="invalid_token"', async () => {
  const [h, p] = token.split('.');
  const forged = `${h}.${p}.${Buffer.from('not the signature').toString('base64url')}`;
  for (const bad of ['garbage', forged]) {
    const res = await post({ authorization: `Bearer ${bad}` });
    assert.equal(res.status, 401);
    assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer resource_metadata="[^"]+", error="invalid_token"/);
    assert.equal((await res.json() as any).error.code, 'hub-access-token-invalid');
  }
});

test('tools: strict input schemas, one per operation', async () => {
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((x) => x.name).sort(), TOOL_NAMES);
  for (const x of tools) assert.equal((x.inputSchema as any).additionalProperties, false, `${x.name} input schema is strict`);
  const extra = await callTool(client, 'browse_folder', { folderId: 'root', bogus: 1 });
  assert.equal(extra.isError, true);
  assert.match(JSON.stringify(extra.body), /bogus|unrecognized/i);
  const badType = await callTool(client, 'search_assets', { size: -1 });
  assert.equal(badType.isError, true);
});

test('every tool against the embedded library, DAM sign-in through connect_provider', async () => {
  let providers = (await ok(client, 'list_providers')).body.providers;
  assert.deepEqual(providers.map((p: any) => [p.id, p.connected]), [['library', false]]);
  // Not connected yet: the hub refuses, and says how to fix it.
  const missing = await refused(client, 'browse_folder', {}, 'provider-access-token-missing', 'hub');
  assert.match(missing.details, /connect_provider/);

  const started = (await ok(client, 'connect_provider', { provider: 'library' })).body;
  assert.equal(started.status, 'pending');
  const signIn = new URL(started.signInUrl);
  assert.equal(signIn.origin, publicUrl);
  // The user's browser (test/helpers/browser.ts): the form page sets the login's cookie, the POST carries it.
  const browser = new TestBrowser();
  const form = await browser.open(signIn.href);
  assert.equal(form.status, 200);
  assert.equal((await ok(client, 'connect_provider', {})).body.status, 'pending', 'still pending before the user signs in');
  const submitted = await browser.post(`${publicUrl}/api/v1/auth/library/signin`, { state: signIn.searchParams.get('state')!, username: 'alice', password: 'correct horse' });
  assert.equal(submitted.status, 200);
  assert.equal((await ok(client, 'connect_provider', {})).body.status, 'connected');
  providers = (await ok(client, 'list_providers')).body.providers;
  assert.equal(providers[0].connected, true);

  // Browse: alice may only see /brand.
  const root = (await ok(client, 'browse_folder', { thumbnails: false })).body;
  assert.deepEqual(root.folders.map((f: any) => f.id), ['/brand']);
  const brand = await ok(client, 'browse_folder', { folderId: '/brand' });
  assert.deepEqual(brand.body.assets.map((a: any) => a.name).sort(), ['blue-banner.jpg', 'red-logo.jpg']);
  assert.deepEqual(brand.body.folders.map((f: any) => f.id), ['/brand/print']);
  assert.equal(brand.images.length, 2, 'thumbnails as image content');
  for (const img of brand.images) assert.equal(Buffer.from(img.data, 'base64')[0], 0xff);

  // Paging with the hub's sealed cursors.
  const p1 = (await ok(client, 'browse_folder', { folderId: '/brand', size: 1, thumbnails: false })).body;
  assert.equal(p1.assets.length, 1);
  assert.equal(typeof p1.more, 'string');
  const p2 = (await ok(client, 'browse_folder', { folderId: '/brand', size: 1, more: p1.more, thumbnails: false })).body;
  assert.equal(p2.assets.length, 1);
  assert.notEqual(p2.assets[0].id, p1.assets[0].id);
  await refused(client, 'browse_folder', { folderId: '/brand', size: 1, more: `${p1.more}x` }, 'hub-validation-error', 'hub');
  await refused(client, 'search_assets', { query: 'red', size: 1, more: p1.more }, 'hub-validation-error', 'hub');

  // Keyword search, scoped and filtered.
  const red = (await ok(client, 'search_assets', { query: 'red', thumbnails: false })).body;
  assert.deepEqual(red.assets.map((a: any) => a.name), ['red-logo.jpg']);
  const all = (await ok(client, 'search_assets', { parentId: '/brand', thumbnails: false })).body;
  assert.equal(all.totalAssetsCount, 3);
  assert.ok(!JSON.stringify(all).includes('plans.jpg'), 'nothing outside the allowed folder');
  const option = all.filters?.[0]?.options?.find((o: any) => o.count > 0 && o.count < all.totalAssetsCount);
  if (option) {
    const filtered = (await ok(client, 'search_assets', { parentId: '/brand', filters: [option.id], thumbnails: false })).body;
    assert.equal(filtered.totalAssetsCount, option.count);
  }

  // Search by image: from an asset and from a data URI.
  const redId = red.assets[0].id;
  const byAsset = (await ok(client, 'search_by_image', { assetId: redId, thumbnails: false })).body;
  assert.equal(byAsset.assets[0].id, redId);
  const dataUri = `data:image/jpeg;base64,${(await solidJpeg(50, 50, [20, 45, 215])).toString('base64')}`;
  const byUri = (await ok(client, 'search_by_image', { imageUrl: dataUri, size: 2, thumbnails: false })).body;
  assert.equal(byUri.assets[0].name, 'blue-banner.jpg');
  const both = await callTool(client, 'search_by_image', { imageUrl: dataUri, assetId: redId });
  assert.equal(both.isError, true);

  // One asset with metadata and renditions, versions, download links.
  const asset = await ok(client, 'get_asset', { assetId: redId });
  assert.equal(asset.body.asset.name, 'red-logo.jpg');
  assert.ok(asset.body.asset.conversions.some((c: any) => c.id === 'thumbnail'));
  assert.equal(asset.images.length, 1);
  const versions = (await ok(client, 'list_versions', { assetId: redId, withMaster: true })).body;
  assert.equal(versions.versions.length, 1);
  assert.equal(versions.versions[0].version, asset.body.asset.version);
  const link = (await ok(client, 'get_download_link', { assetId: redId })).body;
  const download = await fetch(link.url);
  assert.equal(download.status, 200);
  assert.deepEqual(Buffer.from(await download.arrayBuffer()), files['brand/red-logo.jpg']);
  assert.ok(link.expiresAt > clock.now());
  const thumb = (await ok(client, 'get_download_link', { assetId: redId, rendition: 'thumbnail' })).body;
  assert.match(thumb.url, /\/assets\/thumbnail\//);
  await refused(client, 'get_download_link', { assetId: redId, rendition: 'poster' }, 'integration-not-available', 'integration');
  await refused(client, 'get_download_link', { assetId: redId, version: 9 }, 'integration-not-found', 'integration');
  await refused(client, 'get_asset', { assetId: 'no-such-asset' }, 'integration-not-found', 'integration');
});

test('browse_folder is served from the page cache while the view is unchanged, and asks the provider again once it changes', async (tc) => {
  const library = libraryOf(t.hub);
  // Counts the provider's browse calls, calling through (restored when the test ends).
  const browse = tc.mock.method(library, 'browse');
  const calls = () => browse.mock.callCount();
  const args = { folderId: '/brand', size: 2, uiLocale: 'de', thumbnails: false };
  const hits = t.app.pageCache.hits;
  const first = (await ok(client, 'browse_folder', args)).body;
  assert.equal(calls(), 1);
  const second = (await ok(client, 'browse_folder', args)).body;
  assert.equal(calls(), 1, 'the second identical call is not the provider\'s');
  assert.equal(t.app.pageCache.hits, hits + 1);
  // The cached entry holds the REST answer's bytes: parsed back, the tool says the same.
  assert.deepEqual(second, first);
  // Another request is another entry.
  await ok(client, 'browse_folder', { ...args, size: 1 });
  assert.equal(calls(), 2);

  // A library change moves the provider's view version: the provider is asked again.
  writeFiles(root, { 'brand/aaa-new-mark.jpg': await solidJpeg(30, 30, [200, 0, 0]) });
  await library.scanner.scan();
  const changed = (await ok(client, 'browse_folder', args)).body;
  assert.equal(calls(), 3);
  assert.equal(changed.totalAssetsCount, first.totalAssetsCount + 1);
  assert.ok(changed.assets.some((a: any) => a.name === 'aaa-new-mark.jpg'));
  await ok(client, 'browse_folder', args);
  assert.equal(calls(), 3, 'and the new page is cached in turn');
});

test('a folder the DAM account may not open is refused by the DAM (source integration)', async () => {
  const e = await refused(client, 'browse_folder', { folderId: '/secret' }, 'integration-forbidden', 'integration');
  assert.equal(e.provider, 'library');
  await refused(client, 'search_assets', { parentId: '/secret' }, 'integration-forbidden', 'integration');
  await refused(client, 'browse_folder', { provider: 'nope' }, 'hub-validation-error', 'hub');
});

test('an expired access token is refused with the challenge (injected clock)', async () => {
  const live = await post({ authorization: `Bearer ${token}` });
  assert.equal(live.status, 200);
  const { exp } = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { exp: number };
  const now = clock.now();
  clock.set(exp * 1000 - 1000);
  assert.equal((await post({ authorization: `Bearer ${token}` })).status, 200, 'still valid a second before exp');
  clock.set(exp * 1000);
  const res = await post({ authorization: `Bearer ${token}` });
  assert.equal(res.status, 401);
  const challenge = res.headers.get('www-authenticate') ?? '';
  assert.match(challenge, /resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/mcp"/);
  assert.match(challenge, /error="invalid_token", error_description="the access token has expired"/);
  assert.equal((await res.json() as any).error.code, 'hub-access-token-invalid');
  await assert.rejects(client.callTool({ name: 'list_providers', arguments: {} }));
  clock.set(now);
});

test('the connection the hub holds is the signed-in user\'s alone', async () => {
  const other = await obtainAccessToken(as.issuer, resource, 'bob-sub');
  const bob = new Client({ name: 'bob', version: '1' });
  await bob.connect(new StreamableHTTPClientTransport(new URL(resource), { requestInit: { headers: { authorization: `Bearer ${other}` } } }));
  try {
    assert.equal((await ok(bob, 'list_providers')).body.providers[0].connected, false);
    await refused(bob, 'get_asset', { assetId: 'anything' }, 'provider-access-token-missing', 'hub');
  } finally {
    await bob.close();
  }
  assert.equal((await ok(client, 'list_providers')).body.providers[0].connected, true);
});
