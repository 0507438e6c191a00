/**
 * Store outages under load, through two real hub processes: a Redis server stopped and started
 * again, and every PostgreSQL connection of the test database killed (pg_terminate_backend),
 * while workers exchange, call and refresh on both nodes. No 500 and no hang at any time, only
 * 503 hub-unavailable while a store is down, full service afterwards by itself, and nothing lost
 * that a client had been told succeeded (sessions, a completed DAM login).
 *
 * The Redis here is this test's own `redis-server` on a free port (never the machine's shared
 * one), with an append-only file so that a restart keeps what it had acknowledged, as a production
 * Redis configured for the hub does (docs/scaling.md).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { clusterEnv, PG_ADMIN_URL, type ClusterEnv } from '../helpers/stores-env.js';
import { addPartner, api, call, damSignIn, exchange, makeLibrary, poll, startNodes, type Answer, type ClusterUrls, type TestPartner } from '../helpers/cluster.js';
import { tempDir } from '../helpers/hub.js';
import { freePort, type ServerProcess } from '../helpers/process.js';

class OwnRedis {
  private child: ChildProcess | null = null;
  constructor(readonly port: number, private readonly dir: string) {}
  get url() {
    return `redis://127.0.0.1:${this.port}/0`;
  }
  async start(): Promise<void> {
    const child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'yes',
      '--appendfsync', 'always', '--dir', this.dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    let out = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`redis-server did not start:\n${out}`)), 20_000);
      child.stdout!.on('data', (d) => {
        out += d;
        if (out.includes('Ready to accept connections')) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.on('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`redis-server exited with ${code}:\n${out}`));
      });
    });
  }
  async stop(): Promise<void> {
    const c = this.child;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGTERM');
    await exited;
    this.child = null;
  }
}

interface Sample {
  op: string;
  status: number;
  code?: string;
  ms: number;
}

interface Pair {
  access_token: string;
  refresh_token: string;
}

/** Workers exchanging, calling and refreshing across two nodes until stopped. */
class Load {
  readonly samples: Sample[] = [];
  readonly failures: string[] = [];
  /** Every session a client was told exists, with the latest pair it was handed. */
  readonly confirmed = new Map<string, Pair>();
  private running = true;
  private readonly done: Promise<void[]>;
  private n = 0;

  constructor(private readonly nodes: ServerProcess[], private readonly partner: TestPartner, workers: number) {
    this.done = Promise.all(Array.from({ length: workers }, (_, w) => this.worker(w)));
  }

  private async timed(op: string, p: Promise<Answer>): Promise<Answer | null> {
    const t0 = performance.now();
    try {
      const a = await p;
      this.samples.push({ op, status: a.status, code: a.body?.errorCode, ms: performance.now() - t0 });
      return a;
    } catch (e) {
      // A timeout here is a hang (the call is bounded at 10 s); anything else a broken connection.
      this.failures.push(`${op}: ${(e as Error).name} ${(e as Error).message}`);
      return null;
    }
  }

  private async worker(w: number): Promise<void> {
    while (this.running) {
      const i = this.n++;
      const [x, y] = [this.nodes[i % 2]!, this.nodes[(i + 1) % 2]!];
      const ex = await this.timed('exchange', exchange(x, await this.partner.jwt(`load-${w}-${i}`)));
      if (ex?.status !== 200) continue;
      const id = `load-${w}-${i}`;
      this.confirmed.set(id, ex.body);
      await this.timed('checkToken', call(api(y, '/auth/checkToken'), { token: ex.body.access_token }, 10_000));
      const r = await this.timed('refresh', call(api(y, '/auth/refreshToken'), { token: ex.body.access_token, dam: ex.body.refresh_token }, 10_000));
      if (r?.status === 200) this.confirmed.set(id, r.body);
      await this.timed('providers', call(api(x, '/auth/providers'), { token: ex.body.access_token }, 10_000));
    }
  }

  since(mark: number): Sample[] {
    return this.samples.slice(mark);
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > until) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const ready = async (nodes: ServerProcess[], service: string, want: boolean) =>
  (await Promise.all(nodes.map((n) => call(`${n.url}/readyz`, {}, 5000)))).every((r) => (r.body.checks?.[service] === 'ok') === want);

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('store outages under load, two nodes', () => {
  let env: ClusterEnv | null = null;
  let redis: OwnRedis | null = null;
  let nodes: ServerProcess[] = [];
  let u: ClusterUrls;
  let partner: TestPartner;

  before(async () => {
    env = await clusterEnv();
    if (!env) return;
    redis = new OwnRedis(await freePort(), tempDir('damhub-redis-'));
    await redis.start();
    u = { databaseUrl: env.databaseUrl, redisUrl: redis.url, keyPrefix: env.keyPrefix };
    partner = await addPartner(u, 'cf-main', 1_000_000);
    nodes = await startNodes(u, makeLibrary(), 2);
  });
  after(async () => {
    await Promise.all(nodes.map((n) => n.stop()));
    await redis?.stop();
    await env?.cleanup();
  });

  test('Redis stopped and started, PostgreSQL connections killed: 503s only while down, nothing confirmed lost', async (t) => {
    if (!env) return t.skip('backing services unavailable');
    const [a, b] = nodes as [ServerProcess, ServerProcess];
    // Confirmed before any outage: a session, and a DAM login whose sign-in succeeded (not yet polled).
    const first = await exchange(a, await partner.jwt('before-outage'));
    assert.equal(first.status, 200);
    const state = await damSignIn(a, b, first.body.access_token);

    const load = new Load(nodes, partner, 4);
    await pause(800);

    // Redis down.
    const redisMark = load.samples.length;
    await redis!.stop();
    await waitFor('both nodes to report redis down', () => ready(nodes, 'redis', false));
    await pause(1000);
    const whileRedisDown = load.since(redisMark);
    await redis!.start();
    await waitFor('both nodes to report redis up again', () => ready(nodes, 'redis', true));
    await pause(800);

    // PostgreSQL: every backend of this test's database killed, three times in a row.
    const pgMark = load.samples.length;
    const admin = new pg.Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 3000 });
    await admin.connect();
    let killed = 0;
    try {
      for (let i = 0; i < 3; i++) {
        const r = await admin.query('SELECT pg_terminate_backend(pid) AS k FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [new URL(env.databaseUrl).pathname.slice(1)]);
        killed += r.rows.filter((x) => x.k === true).length;
        await pause(300);
      }
    } finally {
      await admin.end();
    }
    await pause(1000);
    await load.stop();
    const afterPgKill = load.since(pgMark);

    // No 500, no hang, no other answer than success or 503 hub-unavailable.
    assert.deepEqual(load.failures, [], 'every call answered within its bound');
    const bad = load.samples.filter((s) => s.status !== 200 && !(s.status === 503 && s.code === 'hub-unavailable'));
    assert.deepEqual(bad, [], 'only 200 or 503 hub-unavailable');
    assert.ok(whileRedisDown.some((s) => s.status === 503), 'the Redis outage was seen as 503s');
    assert.ok(killed > 0, 'connections of the test database were killed');
    const slowest503 = Math.max(...load.samples.filter((s) => s.status === 503).map((s) => s.ms));
    const counts = (xs: Sample[]) => xs.reduce<Record<string, number>>((m, s) => ((m[`${s.op} ${s.status}`] = (m[`${s.op} ${s.status}`] ?? 0) + 1), m), {});
    t.diagnostic(`redis down: ${JSON.stringify(counts(whileRedisDown))}`);
    t.diagnostic(`postgres backends killed (${killed}): ${JSON.stringify(counts(afterPgKill))}`);
    t.diagnostic(`all: ${load.samples.length} calls, slowest 503 ${slowest503.toFixed(0)} ms`);

    // Full service afterwards, on both nodes, without a restart.
    for (const n of nodes) {
      const r = await call(`${n.url}/readyz`);
      assert.deepEqual(r.body.checks, { postgres: 'ok', redis: 'ok' });
      assert.equal((await exchange(n, await partner.jwt(`after-${n.url}`))).status, 200);
    }
    // The DAM login signed in before the Redis restart hands its tokens out, once.
    const won = await poll(b, state);
    assert.equal(typeof won.body.access_token, 'string', JSON.stringify(won.body));
    assert.match((await poll(a, state)).body.error, /already completed/);
    // Every session a client was told about still refreshes (a refresh answered 503 may have
    // committed; the client retries with the pair it holds, which the grace window accepts).
    load.confirmed.set('before-outage', first.body);
    let i = 0;
    for (const [id, pair] of load.confirmed) {
      const r = await call(api(nodes[i++ % 2]!, '/auth/refreshToken'), { token: pair.access_token, dam: pair.refresh_token });
      assert.equal(r.status, 200, `${id}: ${JSON.stringify(r.body)}`);
    }
    t.diagnostic(`${load.confirmed.size} confirmed sessions refreshed after the outages`);
  });
});
