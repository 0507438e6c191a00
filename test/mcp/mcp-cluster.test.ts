/**
 * MCP on two real `damhub serve` processes sharing one PostgreSQL database and one Redis, behind
 * one public URL (as behind a load balancer): the DAM connection an assistant makes through node
 * A's /mcp is held in the shared store, so node B's tools run under it without a new sign-in.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import pg from 'pg';
import { LEGACY_MCP_FILE } from '../../src/stores/legacy-mcp-file.js';
import { LIBRARY_USER, makeLibrary } from '../helpers/cluster.js';
import { TestBrowser } from '../helpers/browser.js';
import { tempDir } from '../helpers/hub.js';
import { ok } from '../helpers/mcp.js';
import { obtainAccessToken, startAuthServer, type AuthServer } from '../helpers/oauth-server.js';
import { runCli, startServer, type ServerProcess } from '../helpers/process.js';
import { clusterEnv, type ClusterEnv } from '../helpers/stores-env.js';

/** The address clients use; never contacted here: each client talks to one node directly. */
const PUBLIC_URL = 'http://damhub-lb.test';
const RESOURCE = `${PUBLIC_URL}/mcp`;

describe('MCP on two hub nodes sharing PostgreSQL and Redis', () => {
  let env: ClusterEnv | null = null;
  let as: AuthServer | null = null;
  let nodes: ServerProcess[] = [];
  const dataDirs: string[] = [];
  const clients: Client[] = [];

  before(async () => {
    env = await clusterEnv({ what: 'the MCP cluster test' });
    if (!env) return;
    as = await startAuthServer(RESOURCE);
    const nodeEnv = {
      DATABASE_URL: env.databaseUrl, REDIS_URL: env.redisUrl, DAMHUB_REDIS_PREFIX: env.keyPrefix, DAMHUB_USER_RATE_LIMIT: '0',
      DAMHUB_MCP_ISSUER: as.issuer, DAMHUB_MCP_JWKS_URL: as.jwksUrl,
    };
    // The library account lives in PostgreSQL with the index: created once, valid on every node.
    const add = await runCli(['users', 'add', LIBRARY_USER.name, '--password-stdin', '--data', tempDir('damhub-mcp-node-')], nodeEnv, `${LIBRARY_USER.password}\n`);
    assert.equal(add.code, 0, add.stderr);
    const library = makeLibrary();
    for (let i = 0; i < 2; i++) dataDirs.push(tempDir('damhub-mcp-node-'));
    // Own data dirs and ports, one public URL (the later --public-url wins over startServer's own).
    nodes = await Promise.all(dataDirs.map((dir) => startServer(['--data', dir, '--library', library, '--public-url', PUBLIC_URL], nodeEnv)));
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    const codes = await Promise.all(nodes.map((n) => n.stop()));
    await as?.close();
    await env?.cleanup();
    assert.deepEqual(codes, nodes.map(() => 0), 'every node drains and exits cleanly');
  });

  async function client(node: ServerProcess, token: string): Promise<Client> {
    const c = new Client({ name: 'damhub-mcp-cluster-test', version: '1.0.0' });
    await c.connect(new StreamableHTTPClientTransport(new URL(`${node.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
    clients.push(c);
    return c;
  }

  test('a DAM connection made through node A is used through node B without connecting again', async (t) => {
    if (!env || !as) return t.skip('backing services unavailable');
    const [a, b] = nodes as [ServerProcess, ServerProcess];
    const token = await obtainAccessToken(as.issuer, RESOURCE, 'erin-sub');
    const onA = await client(a, token);
    const onB = await client(b, token);

    const started = (await ok(onA, 'connect_provider', { provider: 'library' })).body;
    assert.equal(started.status, 'pending');
    const signIn = new URL(started.signInUrl);
    assert.equal(signIn.origin, PUBLIC_URL);
    // The sign-in in progress is the same on B: same URL, no second sign-in started.
    const pendingOnB = (await ok(onB, 'list_providers')).body.providers[0];
    assert.deepEqual([pendingOnB.connected, pendingOnB.signInUrl], [false, started.signInUrl]);

    // The user's browser (test/helpers/browser.ts) gets the form from node B and posts it to node A
    // through the load balancer: the cookie the form set holds on every node (a shared secret).
    const browser = new TestBrowser();
    assert.equal((await browser.open(`${b.url}${signIn.pathname}${signIn.search}`)).status, 200);
    const form = await browser.post(`${a.url}${signIn.pathname}`, { state: signIn.searchParams.get('state')!, username: LIBRARY_USER.name, password: LIBRARY_USER.password });
    assert.equal(form.status, 200, form.body);
    assert.equal((await ok(onA, 'connect_provider', { provider: 'library' })).body.status, 'connected', 'collected on A');

    // Node B: connected, and content tools run under the connection A collected.
    assert.equal((await ok(onB, 'list_providers')).body.providers[0].connected, true);
    assert.equal((await ok(onB, 'connect_provider', { provider: 'library' })).body.status, 'connected', 'no new sign-in on B');
    const root = (await ok(onB, 'browse_folder', { thumbnails: false })).body;
    assert.deepEqual(root.folders.map((f: { id: string }) => f.id).sort(), ['/press', '/projects']);
    const found = (await ok(onB, 'search_assets', { query: 'release', thumbnails: false })).body;
    assert.ok(found.assets.some((x: { name: string }) => x.name === 'release.txt'), JSON.stringify(found));

    // One row in PostgreSQL; no node keeps a file of its own.
    const db = new pg.Client({ connectionString: env.databaseUrl });
    await db.connect();
    try {
      const rows = (await db.query(`SELECT provider_id, access_token IS NOT NULL AS held, pending_state FROM mcp_connections`)).rows;
      assert.deepEqual(rows, [{ provider_id: 'library', held: true, pending_state: null }]);
    } finally {
      await db.end();
    }
    for (const dir of dataDirs) assert.ok(!fs.existsSync(`${dir}/${LEGACY_MCP_FILE}`), `${dir} holds no per-node MCP file`);
  });
});
