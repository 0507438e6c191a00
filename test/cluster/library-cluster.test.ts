/**
 * The library in cluster mode: the indexer lease (with a ManualClock), `damhub index` and
 * `damhub users` on the PostgreSQL index, and two real `damhub serve` processes on one database
 * and one shared library folder whose indexer is killed with SIGKILL.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { ManualClock } from '../../src/clock.js';
import { addAccount } from '../../src/providers/library/accounts.js';
import { PgLibraryIndex } from '../../src/providers/library/index/postgres.js';
import { LIBRARY_PG_MIGRATIONS, migrateLibraryPg } from '../../src/providers/library/index/postgres-schema.js';
import { IndexerLease } from '../../src/providers/library/indexer-lease.js';
import { ClusterStores } from '../../src/stores/index.js';
import { createPgPool, migratePg } from '../../src/stores/postgres/index.js';
import { cindexEnv, type CindexEnv } from '../helpers/cindex-env.js';
import { TestBrowser } from '../helpers/browser.js';
import { tempDir } from '../helpers/hub.js';
import { solidJpeg, writeFiles } from '../helpers/library.js';
import { makeKey, signPartnerJwt } from '../helpers/partner.js';
import { runCli, startServer, type ServerProcess } from '../helpers/process.js';

describe('indexer lease', () => {
  let env: CindexEnv | null = null;
  let pool: pg.Pool;
  before(async () => {
    env = await cindexEnv();
    if (!env) return;
    pool = createPgPool(env.databaseUrl);
    await migratePg(pool);
    await migrateLibraryPg(pool);
  });
  after(async () => {
    await pool?.end();
    await env?.cleanup();
  });

  test('one holder at a time; renewal keeps it; expiry hands it over; a clean stop releases it', async (t) => {
    if (!env) return t.skip('PostgreSQL or Redis unreachable');
    const clock = new ManualClock(Date.UTC(2026, 5, 1));
    const a = new IndexerLease(pool, 'node-a', clock, 10_000);
    const b = new IndexerLease(pool, 'node-b', clock, 10_000);
    const [ga, gb] = await Promise.all([a.tryAcquire(), b.tryAcquire()]);
    assert.equal(Number(ga) + Number(gb), 1, 'of two nodes asking at once exactly one gets it');
    const [holder, other] = ga ? [a, b] : [b, a];
    clock.advance(9_000);
    assert.equal(await holder.tryAcquire(), true, 'the holder renews');
    clock.advance(9_000); // 18 s after the start, 9 s after the renewal: still held
    assert.equal(await other.tryAcquire(), false);
    clock.advance(1_000); // the renewed lease has expired
    assert.equal(await other.tryAcquire(), true, 'an expired lease is taken over');
    assert.equal(await holder.tryAcquire(), false, 'the old holder cannot renew a lease it lost');
    assert.equal((await other.current())?.holder, other.holder);

    // Heartbeats report the change to the node: acquired once, lost once.
    const events: string[] = [];
    await holder.start({ acquired: () => void events.push('acquired'), lost: () => void events.push('lost') });
    assert.equal(holder.isHeld, false);
    await other.stop(); // other never started its heartbeat, so stop() only clears; release explicitly
    await other.release();
    await holder.beat();
    assert.deepEqual(events, ['acquired']);
    clock.advance(20_000);
    await new IndexerLease(pool, 'node-c', clock, 10_000).tryAcquire();
    await holder.beat();
    assert.deepEqual(events, ['acquired', 'lost']);
    assert.equal(holder.isHeld, false);
    await holder.stop();
    assert.equal((await holder.current())?.holder, 'node-c', 'stopping a node that lost the lease leaves the holder alone');
  });

  test('damhub index and damhub users work on the PostgreSQL index; index refuses while a node holds the lease', async (t) => {
    if (!env) return t.skip('PostgreSQL or Redis unreachable');
    await pool.query('DELETE FROM library_lease');
    const root = tempDir('cindex-lib-');
    writeFiles(root, { 'A/one.jpg': await solidJpeg(20, 10, [200, 10, 10]), 'A/B/two.jpg': await solidJpeg(10, 20, [10, 200, 10]), 'notes.txt': 'hello index' });
    const data = tempDir('cindex-data-');
    const db = ['--database-url', env.databaseUrl];
    const r = await runCli(['index', '--library', root, '--data', data, ...db]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /indexed 3 files: 3 added/);
    const index = new PgLibraryIndex(pool);
    assert.deepEqual([...(await index.fileStates()).keys()].sort(), ['A/B/two.jpg', 'A/one.jpg', 'notes.txt']);
    assert.deepEqual((await index.childFolders('A')).map((f) => f.path), ['A/B']);
    const hits = (await index.searchEngine()).search({ words: ['two'], folderPath: '', allowedRoots: null, filters: {}, limit: 10, after: null, params: null });
    assert.deepEqual((await index.assetsByRowids(hits.rowids)).map((a) => a.relPath), ['A/B/two.jpg']);
    const [two] = await index.assetsByRowids(hits.rowids);
    const one = (await index.assetsByIds([two!.id, 'no-such-id'])).concat(await index.assetsByIds([]));
    assert.deepEqual(one, [two], 'by id: in order, unknown ids skipped');
    assert.equal((await index.descriptors().pending()).length, 0, 'both images were described');
    assert.equal((await pool.query('SELECT count(*)::int AS n FROM library_lease')).rows[0].n, 0, 'the command released its lease');

    const add = await runCli(['users', 'add', 'carol', '--password-stdin', '--folders', 'A', '--data', data, ...db], {}, 'carol-password\n');
    assert.equal(add.code, 0, add.stderr);
    assert.deepEqual((await index.accountByName('carol'))?.folders, ['A']);
    const list = await runCli(['users', 'list', '--data', data, ...db]);
    assert.equal(list.stdout, 'carol\tA\n');

    const node = new IndexerLease(pool, 'serving-node', { now: () => Date.now() }, 60_000);
    assert.equal(await node.tryAcquire(), true);
    const refused = await runCli(['index', '--library', root, '--data', data, ...db]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /serving-node is the library's indexer/);
    await node.release();
  });
});

describe('the library applies its own PostgreSQL schema', () => {
  test('migratePg leaves the library tables alone; the index creates them on its first use, once', async (t) => {
    const env = await cindexEnv();
    if (!env) return t.skip('PostgreSQL or Redis unreachable');
    const pool = createPgPool(env.databaseUrl);
    try {
      const tables = async () => (await pool.query("SELECT count(*)::int AS n FROM information_schema.tables WHERE table_name LIKE 'library\\_%'")).rows[0].n as number;
      await migratePg(pool);
      assert.equal(await tables(), 0, 'the stores migrate their own tables only');
      const index = new PgLibraryIndex(pool);
      const lease = new IndexerLease(pool, 'node-a', { now: () => Date.now() }, 10_000);
      // Concurrent first uses share one migration.
      const [accounts, current] = await Promise.all([index.listAccounts(), lease.current()]);
      assert.deepEqual(accounts, []);
      assert.equal(current, null);
      assert.ok((await tables()) >= 10, 'the library tables exist');
      assert.deepEqual(await migrateLibraryPg(pool), [], 'nothing left to apply');
      assert.deepEqual((await pool.query('SELECT version FROM library_schema_migrations ORDER BY version')).rows.map((r) => r.version), LIBRARY_PG_MIGRATIONS.map((m) => m.version));
    } finally {
      await pool.end();
      await env.cleanup();
    }
  });
});

/**
 * Two nodes, one database, one library folder. Waiting for the cluster to converge is done by
 * polling a condition with a generous bound (the lease is 5 s here), never by asserting a time.
 */
describe('two serve processes share the index; SIGKILL of the indexer moves the lease', () => {
  let env: CindexEnv | null = null;
  const servers: ServerProcess[] = [];
  after(async () => {
    for (const s of servers) await s.stop('SIGKILL');
    await env?.cleanup();
  });

  test('the survivor takes the lease, indexes what was added after the kill, and every file is searchable and browsable on every node', async (t) => {
    env = await cindexEnv();
    if (!env) return t.skip('PostgreSQL or Redis unreachable');
    const root = tempDir('cindex-shared-lib-');
    const data = tempDir('cindex-shared-data-');
    const initial: Record<string, Buffer | string> = {
      'Shots/alpha.jpg': await solidJpeg(30, 20, [250, 0, 0]),
      'Shots/bravo.jpg': await solidJpeg(20, 30, [0, 250, 0]),
      'Docs/charlie.txt': 'charlie notes',
    };
    writeFiles(root, initial);

    // The partner and the library account, written once to the shared database.
    const key = await makeKey();
    const issuer = 'https://cindex-partner.example/';
    const setup = await ClusterStores.open({ databaseUrl: env.databaseUrl, redisUrl: env.redisUrl, keyPrefix: env.keyPrefix });
    try {
      await setup.partners.create({ id: 'cindex', name: 'Cindex', issuer, audience: 'urn:damhub', jwksUrl: null, jwks: { keys: [key.publicJwk] },
        maxTokenAgeSec: 3600, rateLimitPerMin: 1000, allowedOrigins: [], enabled: true }, Date.now());
      await addAccount(new PgLibraryIndex(setup.pg.pool), 'alice', 'correct horse', [], Date.now());
    } finally {
      await setup.close();
    }

    const args = ['--data', data, '--library', root, '--database-url', env.databaseUrl, '--redis-url', env.redisUrl];
    const nodeEnv = { DAMHUB_REDIS_PREFIX: env.keyPrefix, DAMHUB_LIBRARY_LEASE_SEC: '5', DAMHUB_LIBRARY_RESCAN_SEC: '0' };
    const a = await startServer(args, nodeEnv);
    servers.push(a);
    const b = await startServer(args, nodeEnv);
    servers.push(b);
    assert.match(b.output(), /another node is the indexer/, 'the second node serves reads only');

    const pool = new pg.Pool({ connectionString: env.databaseUrl, max: 2 });
    t.after(() => pool.end());
    const holderPid = async () => {
      const r = await pool.query('SELECT holder FROM library_lease WHERE expires_at > $1', [Date.now()]);
      return r.rows[0] ? Number(String(r.rows[0].holder).split(':')[1]) : null;
    };
    assert.equal(await holderPid(), a.child.pid, 'the first node is the indexer');

    // A user signed in through both nodes: the DAM login starts on A, is submitted and polled on B.
    const ex = await fetch(`${a.url}/api/v1/auth/exchangeToken`, { method: 'POST', headers: { authorization: `Bearer ${await signPartnerJwt(Date.now(), { key, issuer, sub: 'u1' })}` } });
    assert.equal(ex.status, 200, await ex.clone().text());
    const { access_token } = await ex.json() as { access_token: string };
    const start = await fetch(`${a.url}/api/v1/auth/login?provider=library&polling=true`, { method: 'POST', headers: { authorization: `Bearer ${access_token}` } });
    const { state, redirect_uri } = await start.json() as { state: string; redirect_uri: string };
    // The form page opened on A sets the login's cookie (test/helpers/browser.ts); B checks it with the shared secret.
    const browser = new TestBrowser();
    assert.equal((await browser.open(redirect_uri)).status, 200);
    const form = await browser.post(`${b.url}/api/v1/auth/library/signin`, { state, username: 'alice', password: 'correct horse' });
    assert.equal(form.status, 200);
    const poll = await fetch(`${b.url}/api/v1/auth/login?state=${encodeURIComponent(state)}&polling=true`);
    const dam = (await poll.json() as { access_token: string }).access_token;
    assert.ok(dam);
    const headers = { authorization: `Bearer ${access_token}`, 'provider-authorization': `Bearer ${dam}` };
    const get = async (node: ServerProcess, p: string) => {
      const r = await fetch(`${node.url}/api/v1${p}`, { headers });
      assert.equal(r.status, 200, `${p} on ${node.url}: ${await r.clone().text()}`);
      return r.json() as Promise<{ assets: { name: string }[]; folders: { id: string }[]; totalAssetsCount: number }>;
    };
    const search = async (node: ServerProcess, q: string) => (await get(node, `/assets/search?query=${encodeURIComponent(q)}&size=50`)).assets.map((x) => x.name).sort();
    const until = async (what: string, cond: () => Promise<boolean>) => {
      for (let i = 0; i < 600; i++) {
        if (await cond()) return;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.fail(`gave up waiting: ${what}\nA:\n${a.output()}\nB:\n${b.output()}`);
    };

    assert.deepEqual(await search(b, 'alpha'), ['alpha.jpg'], 'the reader answers from the index the indexer wrote');
    // Written while A is the indexer: its watcher indexes it, B's engine catches up from the change sequence.
    writeFiles(root, { 'Shots/delta.jpg': await solidJpeg(25, 25, [0, 0, 250]) });
    await until('B finds delta.jpg', async () => (await search(b, 'delta')).length === 1);

    a.child.kill('SIGKILL');
    await a.stop();
    // Added with no live indexer: only the takeover's rescan can find them.
    writeFiles(root, { 'Shots/echo.jpg': await solidJpeg(26, 24, [120, 120, 0]), 'Docs/foxtrot.txt': 'foxtrot notes' });
    await until('B holds the lease', async () => (await holderPid()) === b.child.pid);
    await until('B finds echo.jpg and foxtrot.txt', async () => (await search(b, 'echo')).length === 1 && (await search(b, 'foxtrot')).length === 1);
    writeFiles(root, { 'Shots/golf.jpg': await solidJpeg(21, 23, [0, 120, 120]) });
    await until('B, now the indexer, indexes golf.jpg from its watcher', async () => (await search(b, 'golf')).length === 1);

    // A node started now (A's replacement) is a reader of the same complete index.
    const c = await startServer(args, nodeEnv);
    servers.push(c);
    assert.equal(await holderPid(), b.child.pid, 'the lease stays with the live indexer');
    const expected = { Shots: ['alpha.jpg', 'bravo.jpg', 'delta.jpg', 'echo.jpg', 'golf.jpg'], Docs: ['charlie.txt', 'foxtrot.txt'] };
    const onDisk = Object.fromEntries(Object.keys(expected).map((f) => [f, fs.readdirSync(path.join(root, f)).sort()]));
    assert.deepEqual(onDisk, expected);
    for (const node of [b, c]) {
      for (const [folder, names] of Object.entries(expected)) {
        const page = await get(node, `/assets/folder/${encodeURIComponent(`/${folder}`)}?size=50`);
        assert.deepEqual(page.assets.map((x) => x.name).sort(), names, `${folder} browsed on ${node.url}`);
        assert.equal(page.totalAssetsCount, names.length);
        for (const n of names) assert.deepEqual(await search(node, n.replace(/\..*$/, '')), [n], `${n} searched on ${node.url}`);
      }
    }
    assert.equal((await pool.query('SELECT count(*)::int AS n FROM library_assets')).rows[0].n, 7, 'nothing missing or doubled in the index');
  });
});
