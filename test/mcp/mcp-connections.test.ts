/**
 * The DAM connections MCP holds per user (src/mcp/connections.ts over Stores.mcpConnections), in
 * process on the embedded store: the upgrade from the per-node file of earlier versions, and the
 * races between two calls acting on one row (an assistant's parallel tool calls, or two nodes).
 * Each race is forced into the losing order by holding one call at a barrier, so the outcome does
 * not depend on scheduling; the cross-node store semantics are in test/helpers/stores-suite.ts.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ManualClock } from '../../src/clock.js';
import { defaultConfig, LOCAL_MCP_ISSUER } from '../../src/config.js';
import { isHubError } from '../../src/errors.js';
import { Hub } from '../../src/hub.js';
import type { McpConnections } from '../../src/mcp/connections.js';
import { identityFor, mcpPartner, type McpIdentity } from '../../src/mcp/identity.js';
import { toolContext } from '../../src/mcp/server.js';
import { addAccount } from '../../src/providers/library/accounts.js';
import { LEGACY_MCP_FILE } from '../../src/stores/legacy-mcp-file.js';
import { tempDir } from '../helpers/hub.js';
import { writeLegacyMcpFile } from '../helpers/legacy-mcp.js';
import { writeFiles, libraryOf } from '../helpers/library.js';

const LIBRARY = { 'brand/readme.txt': 'brand notes', 'secret/plans.txt': 'plans' };

interface Setup {
  hub: Hub;
  connections: McpConnections;
  accountId: string;
  /** A hub user of the MCP partner, connected to the library (sign-in started, completed, collected). */
  connected(sub: string): Promise<McpIdentity>;
}

async function open(dataDir: string, root: string, clock: ManualClock): Promise<Hub> {
  const hub = new Hub(defaultConfig({ dataDir, libraryDir: root, logLevel: 'silent' }), { clock, watchLibrary: false });
  await hub.start();
  return hub;
}

async function setup(hub: Hub, accountId: string): Promise<Setup> {
  const { connections } = await toolContext(hub);
  const partner = await mcpPartner(hub, LOCAL_MCP_ISSUER, null);
  return {
    hub, connections, accountId,
    async connected(sub) {
      const id = { user: await identityFor(hub, partner, sub), partner, scopes: [], clientId: 'test' };
      await signIn(hub, connections, id, accountId);
      assert.deepEqual(await connections.state(id, 'library'), { status: 'connected' });
      return id;
    },
  };
}

/** connect_provider, then the user's sign-in completing the login state (as the library's form does). */
async function signIn(hub: Hub, connections: McpConnections, id: McpIdentity, accountId: string): Promise<string> {
  await connections.start(id, 'library', null);
  const state = (await hub.stores.mcpConnections.get(id.user.id, 'library'))!.pendingState!;
  await hub.damLogin.complete(state, { credentials: { acc: accountId }, accountId });
  return state;
}

/** Polls `cond` (bounded: a hang fails the test). */
async function until(cond: () => Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('gave up waiting');
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Resolves when `n` callers have arrived; each caller waits for all of them. */
function barrier(n: number): () => Promise<void> {
  let arrived = 0;
  let open!: () => void;
  const all = new Promise<void>((r) => (open = r));
  return () => {
    if (++arrived === n) open();
    return all;
  };
}

describe('MCP held connections', () => {
  let dataDir: string;
  let root: string;
  let clock: ManualClock;
  let s: Setup;

  before(async () => {
    dataDir = tempDir('damhub-mcp-conn-');
    root = tempDir('damhub-mcp-conn-lib-');
    writeFiles(root, LIBRARY);
    clock = new ManualClock(Date.UTC(2026, 5, 1, 12));
    const hub = await open(dataDir, root, clock);
    const acc = await addAccount(libraryOf(hub).index, 'dana', 'dana-password', ['brand'], clock.now());
    s = await setup(hub, acc.id);
  });
  after(async () => {
    await s?.hub.close();
  });

  test('upgrade: a connection held in the old per-node file is taken over at start, the file removed', async () => {
    const id = await s.connected('upgrade-sub');
    const held = (await s.hub.stores.mcpConnections.get(id.user.id, 'library'))!;
    // As an earlier version left it: the row in <data>/mcp.sqlite, nothing in the hub's store.
    await s.hub.stores.mcpConnections.remove(id.user.id, 'library');
    writeLegacyMcpFile(dataDir, [held]);
    await s.hub.close();

    const hub = await open(dataDir, root, clock);
    s = await setup(hub, s.accountId);
    assert.ok(!fs.existsSync(path.join(dataDir, LEGACY_MCP_FILE)), 'the old file is gone');
    assert.deepEqual(fs.readdirSync(dataDir).filter((f) => f.startsWith(LEGACY_MCP_FILE)), [], 'and its WAL and SHM files');
    assert.deepEqual(await hub.stores.mcpConnections.get(id.user.id, 'library'), held);
    assert.deepEqual(await s.connections.state(id, 'library'), { status: 'connected' });
    const dam = await s.connections.session(id, 'library');
    assert.equal(dam.providerId, 'library');
    assert.equal(dam.credentials.acc, s.accountId, 'the held connection opens, no new sign-in');
    assert.equal((await toolContext(hub)).upgraded, null, 'a later start finds nothing to import');
  });

  test('two calls collecting one finished sign-in: both see the connection (the slower one does not report a failure)', async () => {
    const partner = await mcpPartner(s.hub, LOCAL_MCP_ISSUER, null);
    const id = { user: await identityFor(s.hub, partner, 'collect-sub'), partner, scopes: [], clientId: 'test' };
    await signIn(s.hub, s.connections, id, s.accountId);
    // The second poll waits until the first call has collected the tokens and stored them, after
    // both calls read the row with the sign-in pending: the order in which the slower call used to
    // clear the row's sign-in and answer "failed" from what it had read.
    const poll = s.hub.damLogin.poll.bind(s.hub.damLogin);
    let polls = 0;
    s.hub.damLogin.poll = async (state) => {
      if (++polls === 2) await until(async () => !!(await s.hub.stores.mcpConnections.get(id.user.id, 'library'))?.accessToken);
      return poll(state);
    };
    try {
      const both = await Promise.all([s.connections.state(id, 'library'), s.connections.state(id, 'library')]);
      assert.deepEqual(both, [{ status: 'connected' }, { status: 'connected' }]);
      assert.equal(polls, 2, 'both calls polled');
    } finally {
      s.hub.damLogin.poll = poll;
    }
    assert.equal((await s.connections.session(id, 'library')).providerId, 'library');
  });

  describe('renewing an expired connection', () => {
    let refresh: Hub['connections']['refresh'];
    before(() => {
      refresh = s.hub.connections.refresh.bind(s.hub.connections);
    });
    const restore = () => {
      s.hub.connections.refresh = refresh;
    };
    const expire = () => clock.advance((s.hub.config.providerTokenTtlSec + 60) * 1000);

    test('by two calls at once: both succeed, one renewal is stored', async () => {
      const id = await s.connected('renew-sub');
      const expired = (await s.hub.stores.mcpConnections.get(id.user.id, 'library'))!.accessToken;
      expire();
      // Both calls hold the expired token before either stores its renewal.
      const both = barrier(2);
      const issued: string[] = [];
      s.hub.connections.refresh = async (token, who) => {
        await both();
        const r = await refresh(token, who);
        issued.push(r.access_token);
        return r;
      };
      try {
        const sessions = await Promise.all([s.connections.session(id, 'library'), s.connections.session(id, 'library')]);
        assert.deepEqual(sessions.map((x) => x.credentials.acc), [s.accountId, s.accountId]);
      } finally {
        restore();
      }
      assert.equal(issued.length, 2, 'both calls renewed');
      const row = (await s.hub.stores.mcpConnections.get(id.user.id, 'library'))!;
      assert.notEqual(row.accessToken, expired);
      assert.ok(issued.includes(row.accessToken!), 'the row holds one of the two renewals');
    });

    test('when the DAM refuses the slower renewal (the faster one used the refresh credentials), the slower call uses the stored one', async () => {
      const id = await s.connected('refused-sub');
      const expired = (await s.hub.stores.mcpConnections.get(id.user.id, 'library'))!.accessToken;
      expire();
      const both = barrier(2);
      let calls = 0;
      s.hub.connections.refresh = async (token, who) => {
        await both();
        if (++calls === 1) return refresh(token, who);
        // The slower renewal is answered once the faster one is stored, as a DAM that rotates refresh credentials would.
        await until(async () => (await s.hub.stores.mcpConnections.get(id.user.id, 'library'))?.accessToken !== expired);
        throw new Error('refresh credentials already used');
      };
      try {
        const sessions = await Promise.all([s.connections.session(id, 'library'), s.connections.session(id, 'library')]);
        assert.deepEqual(sessions.map((x) => x.credentials.acc), [s.accountId, s.accountId]);
      } finally {
        restore();
      }
      assert.equal(calls, 2, 'both calls renewed');
    });

    test('a renewal finishing after the connection was removed does not bring it back', async () => {
      const id = await s.connected('removed-sub');
      expire();
      s.hub.connections.refresh = async (token, who) => {
        const r = await refresh(token, who);
        await s.connections.disconnect(id, 'library');
        return r;
      };
      try {
        await assert.rejects(s.connections.session(id, 'library'), (e) => isHubError(e) && e.code === 'provider-access-token-missing');
      } finally {
        restore();
      }
      assert.equal(await s.hub.stores.mcpConnections.get(id.user.id, 'library'), null);
      assert.deepEqual(await s.connections.state(id, 'library'), { status: 'none' });
    });

    test('a renewal keeps a sign-in started meanwhile pending', async () => {
      const id = await s.connected('restart-sub');
      expire();
      let url = '';
      s.hub.connections.refresh = async (token, who) => {
        const r = await refresh(token, who);
        url = await s.connections.start(id, 'library', null);
        return r;
      };
      try {
        assert.equal((await s.connections.session(id, 'library')).credentials.acc, s.accountId);
      } finally {
        restore();
      }
      const row = (await s.hub.stores.mcpConnections.get(id.user.id, 'library'))!;
      assert.ok(row.accessToken);
      assert.equal(row.pendingUrl, url, 'the new sign-in is still there to be collected');
    });
  });
});
