/**
 * `damhub mcp` over stdio: the SDK's StdioClientTransport spawns the built CLI, which acts for the
 * hub user named by --user with the DAM connection the hub holds for that user, sealed under a key
 * that has since been rotated (`damhub keys rotate`).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { decodeProtectedHeader } from 'jose';
import { defaultConfig, LOCAL_MCP_ISSUER } from '../../src/config.js';
import { Hub } from '../../src/hub.js';
import { loadOrCreateKeyRing } from '../../src/auth/keys.js';
import { identityFor, mcpPartner } from '../../src/mcp/identity.js';
import { toolContext } from '../../src/mcp/server.js';
import { addAccount } from '../../src/providers/library/accounts.js';
import { tempDir } from '../helpers/hub.js';
import { writeFiles, libraryOf } from '../helpers/library.js';
import { mcpLibraryFiles, ok, refused, TOOL_NAMES } from '../helpers/mcp.js';
import { CLI, REPO_ROOT, runCli } from '../helpers/process.js';

let dataDir: string;
let root: string;
let client: Client;
let transport: StdioClientTransport;
let oldKid: string;

before(async () => {
  dataDir = tempDir('damhub-mcp-stdio-');
  root = tempDir('damhub-mcp-stdio-lib-');
  writeFiles(root, await mcpLibraryFiles());
  // A DAM connection made earlier (the HTTP test drives the sign-in page; here the login state
  // machine is completed directly, as the library's sign-in form does).
  const hub = new Hub(defaultConfig({ dataDir, libraryDir: root, logLevel: 'silent' }), { watchLibrary: false });
  await hub.start();
  const acc = await addAccount(libraryOf(hub).index, 'carol', 'carol-password', ['brand'], Date.now());
  const partner = await mcpPartner(hub, LOCAL_MCP_ISSUER, null);
  const user = await identityFor(hub, partner, 'carol-sub');
  const ctx = await toolContext(hub);
  const id = { user, partner, scopes: [], clientId: 'test' };
  await ctx.connections.start(id, 'library', null);
  const pending = (await hub.stores.mcpConnections.get(user.id, 'library'))!;
  await hub.damLogin.complete(pending.pendingState!, { credentials: { acc: acc.id }, accountId: acc.id });
  assert.deepEqual(await ctx.connections.state(id, 'library'), { status: 'connected' });
  oldKid = decodeProtectedHeader((await hub.stores.mcpConnections.get(user.id, 'library'))!.accessToken!).kid!;
  await hub.close();

  const rotated = await runCli(['keys', 'rotate', '--data', dataDir]);
  assert.equal(rotated.code, 0, rotated.stderr);
  assert.notEqual(loadOrCreateKeyRing(dataDir, Date.now()).active('enc').kid, oldKid, 'the stored connection predates the active key');

  transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', '--data', dataDir, '--library', root, '--user', 'carol-sub'],
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? '' },
    stderr: 'pipe',
  });
  client = new Client({ name: 'damhub-stdio-test', version: '1.0.0' });
  await client.connect(transport);
});

after(async () => {
  await client?.close();
});

test('stdio: every tool, with the held connection sealed under a rotated key', async () => {
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((x) => x.name).sort(), TOOL_NAMES);
  const providers = (await ok(client, 'list_providers')).body.providers;
  assert.deepEqual(providers.map((p: any) => [p.id, p.connected]), [['library', true]]);
  assert.equal((await ok(client, 'connect_provider', { provider: 'library' })).body.status, 'connected');

  const rootPage = (await ok(client, 'browse_folder', { thumbnails: false })).body;
  assert.deepEqual(rootPage.folders.map((f: any) => f.id), ['/brand']);
  const brand = await ok(client, 'browse_folder', { folderId: '/brand' });
  assert.equal(brand.body.assets.length, 2);
  assert.equal(brand.images.length, 2);
  const found = (await ok(client, 'search_assets', { query: 'poster', thumbnails: false })).body;
  assert.deepEqual(found.assets.map((a: any) => a.name), ['green-poster.jpg']);
  const greenId = found.assets[0].id;
  assert.equal((await ok(client, 'search_by_image', { assetId: greenId, size: 1, thumbnails: false })).body.assets[0].id, greenId);
  const asset = (await ok(client, 'get_asset', { assetId: greenId, thumbnails: false })).body.asset;
  assert.equal(asset.name, 'green-poster.jpg');
  assert.ok(asset.conversions.length > 0, 'renditions');
  assert.equal((await ok(client, 'list_versions', { assetId: greenId, withMaster: true })).body.versions.length, 1);
  assert.match((await ok(client, 'get_download_link', { assetId: greenId })).body.url, /\/api\/v1\/assets\/download\/library\//);

  await refused(client, 'browse_folder', { folderId: '/secret' }, 'integration-forbidden', 'integration');
  await refused(client, 'search_by_image', { imageUrl: 'data:image/png;base64,AAAA' }, 'hub-validation-error', 'hub');
});

test('stdio: usage errors are one line and exit 2', async () => {
  const r = await runCli(['mcp', '--data', dataDir]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /^damhub: mcp needs --user SUB/);
});
