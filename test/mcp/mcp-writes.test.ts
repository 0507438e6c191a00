/**
 * The MCP write tools (src/mcp/write-tools.ts) over an MCP client in process, against the
 * in-memory DAM: behind the partner's opt-in like REST, destructive ones marked, upload_from_url
 * under the hub's fetch protection, and batch answering each operation's own result.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ManualClock } from '../../src/clock.js';
import { defaultConfig, LOCAL_MCP_ISSUER } from '../../src/config.js';
import { Hub } from '../../src/hub.js';
import { identityFor, mcpPartner } from '../../src/mcp/identity.js';
import { createMcpServer, toolContext } from '../../src/mcp/server.js';
import { tempDir } from '../helpers/hub.js';
import { memoryDam, type MemoryDam } from '../helpers/memory-dam.js';
import { ok, refused } from '../helpers/mcp.js';

let hub: Hub;
let dam: MemoryDam;
let client: Client;
let files: http.Server;
let base: string;
let partnerId: string;

before(async () => {
  files = http.createServer((req, res) => {
    if (req.url === '/files/report.txt') return res.end('a report fetched over http\n');
    if (req.url === '/files/huge.txt') {
      res.writeHead(200, { 'content-length': String(2048) });
      return res.end(Buffer.alloc(2048, 'x'));
    }
    res.statusCode = 404;
    res.end();
  });
  await new Promise<void>((r) => files.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;
  dam = memoryDam();
  hub = new Hub(defaultConfig({ dataDir: tempDir(), logLevel: 'silent', libraryDir: null, imageFetchAllow: ['127.0.0.1'], maxUploadBytes: 1024 }), { clock: new ManualClock(Date.UTC(2026, 10, 1)), providers: [dam] });
  await hub.start();
  const ctx = await toolContext(hub);
  const partner = await mcpPartner(hub, LOCAL_MCP_ISSUER, null);
  partnerId = partner.id;
  const user = await identityFor(hub, partner, 'assistant-user');
  const id = { user, partner, scopes: [], clientId: 'test' };
  await ctx.connections.start(id, 'memdam', null);
  const state = (await hub.stores.mcpConnections.get(user.id, 'memdam'))!.pendingState!;
  await hub.damLogin.complete(state, { credentials: { account: 'alice' }, accountId: 'alice' });
  const [a, b] = InMemoryTransport.createLinkedPair();
  // One session for all tests: the operator's opt-in below applies to its next call.
  await createMcpServer(ctx, id).connect(a);
  client = new Client({ name: 'test', version: '1' });
  await client.connect(b);
});

after(async () => {
  await client?.close();
  await hub?.close();
  files?.close();
});

async function writesOn(on: boolean) {
  await hub.stores.partners.update(partnerId, { writes: on }, hub.clock.now());
}

test('the write tools are listed, destructive ones marked so', async () => {
  const { tools } = await client.listTools();
  const by = Object.fromEntries(tools.map((t) => [t.name, t.annotations]));
  for (const name of ['rename_asset', 'move_asset', 'delete_asset', 'batch']) assert.equal(by[name]?.destructiveHint, true, name);
  for (const name of ['upload_from_url', 'create_folder']) {
    assert.equal(by[name]?.readOnlyHint, false, name);
    assert.equal(by[name]?.destructiveHint, false, name);
  }
  assert.equal(by.browse_folder?.readOnlyHint, true);
});

test('writes need the partner\'s opt-in, as over REST', async () => {
  await writesOn(false);
  await refused(client, 'create_folder', { provider: 'memdam', parentId: 'root', name: 'Nope' }, 'writes-disabled', 'hub');
  await refused(client, 'upload_from_url', { provider: 'memdam', parentId: 'root', url: `${base}/files/report.txt` }, 'writes-disabled', 'hub');
  assert.equal(dam.folders.size, 1);
  assert.equal(dam.assets.size, 0);
});

test('upload_from_url, rename, move and delete, with the audit', async () => {
  await writesOn(true);
  const folder = (await ok(client, 'create_folder', { provider: 'memdam', parentId: 'root', name: 'Reports' })).body.folder;
  const up = (await ok(client, 'upload_from_url', { provider: 'memdam', parentId: folder.id, url: `${base}/files/report.txt` })).body;
  assert.equal(up.created, true);
  assert.equal(up.asset.name, 'report.txt');
  assert.equal(dam.assets.get(up.asset.id)!.versions[0]!.toString(), 'a report fetched over http\n');
  const renamed = (await ok(client, 'rename_asset', { provider: 'memdam', assetId: up.asset.id, name: 'q3.txt', ifMatch: up.etag })).body;
  assert.equal(renamed.asset.name, 'q3.txt');
  // A rename keeps the content and so its ETag; an ETag of other content is refused.
  assert.equal(renamed.etag, up.etag);
  await refused(client, 'rename_asset', { provider: 'memdam', assetId: up.asset.id, name: 'q4.txt', ifMatch: '"someone-elses"' }, 'asset-version-conflict', 'hub');
  await ok(client, 'move_asset', { provider: 'memdam', assetId: up.asset.id, parentId: 'root' });
  assert.equal(dam.assets.get(up.asset.id)!.parent, 'root');
  await ok(client, 'delete_asset', { provider: 'memdam', assetId: up.asset.id });
  assert.equal(dam.assets.size, 0);
  // The clock stands still here, so the audit's order among these is its tie-break (request id): compare as sets.
  const ops = (await hub.stores.audit.list({ since: 0, limit: 20 })).filter((e) => e.requestId.startsWith('mcp-')).map((e) => `${e.operation}:${e.result}`).sort();
  assert.deepEqual(ops, ['create-folder:ok', 'delete:ok', 'move:ok', 'rename:asset-version-conflict', 'rename:ok', 'upload:ok']);
});

test('upload_from_url keeps the hub\'s fetch rules and size limit', async () => {
  await writesOn(true);
  await refused(client, 'upload_from_url', { provider: 'memdam', parentId: 'root', url: 'http://10.1.2.3/x.txt' }, 'hub-validation-error', 'hub');
  await refused(client, 'upload_from_url', { provider: 'memdam', parentId: 'root', url: `${base}/files/huge.txt` }, 'hub-payload-too-large', 'hub');
  await refused(client, 'upload_from_url', { provider: 'memdam', parentId: 'root', url: `${base}/files/report.txt`, name: 'a/b.txt' }, 'asset-name-invalid', 'hub');
  assert.equal(dam.assets.size, 0);
});

test('batch: up to 10 operations, each with its own result; more is refused', async () => {
  await writesOn(true);
  const r = (await ok(client, 'batch', { provider: 'memdam', operations: [
    { op: 'create_folder', parentId: 'root', name: 'Batch' },
    { op: 'create_folder', parentId: 'root', name: 'Batch' },
    { op: 'upload_from_url', parentId: 'root', url: `${base}/files/report.txt`, name: 'batch.txt' },
  ] })).body;
  assert.deepEqual(r.results.map((x: any) => [x.op, x.ok, x.error?.code]), [['create_folder', true, undefined], ['create_folder', false, 'asset-exists'], ['upload_from_url', true, undefined]]);
  assert.equal(r.failed, 1);
  const eleven = Array.from({ length: 11 }, (_, i) => ({ op: 'create_folder', parentId: 'root', name: `F${i}` }));
  const res = await client.callTool({ name: 'batch', arguments: { provider: 'memdam', operations: eleven } });
  assert.equal(res.isError, true);
  assert.equal([...dam.folders.values()].filter((f) => /^F\d+$/.test(f.name)).length, 0, 'nothing of a refused batch was done');
});
