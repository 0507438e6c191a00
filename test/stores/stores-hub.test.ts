/**
 * Two hub nodes in one process (two Hub instances, each with its own ClusterStores connections,
 * sharing the data dir's keys) over one PostgreSQL database and one Redis prefix: what a session
 * does on one node holds on the other. Also the HTTP face of an outage: 503 hub-unavailable and
 * /readyz naming the service that is down. (Separate server processes are issue 6's next step.)
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { ManualClock } from '../../src/clock.js';
import { defaultConfig } from '../../src/config.js';
import { Hub } from '../../src/hub.js';
import { ClusterStores } from '../../src/stores/index.js';
import type { Partner } from '../../src/stores/types.js';
import { assertError, bearer, tempDir } from '../helpers/hub.js';
import { makeKey, signPartnerJwt, type TestKey } from '../helpers/partner.js';
import { closedPort, clusterEnv, type ClusterEnv } from '../helpers/stores-env.js';

interface Node {
  hub: Hub;
  app: FastifyInstance;
}

describe('two hub nodes on the cluster stores', () => {
  let env: ClusterEnv | null = null;
  let nodes: Node[] = [];
  let key: TestKey;
  let partner: Partner;
  const clock = new ManualClock(Date.UTC(2026, 5, 1, 12));

  before(async () => {
    env = await clusterEnv();
    if (!env) return;
    const dataDir = tempDir();
    for (let i = 0; i < 2; i++) {
      const stores = await ClusterStores.open({ databaseUrl: env.databaseUrl, redisUrl: env.redisUrl, keyPrefix: env.keyPrefix });
      const hub = new Hub(defaultConfig({ dataDir, publicUrl: 'http://hub.test', logLevel: 'silent' }), { clock, stores });
      nodes.push({ hub, app: await buildApp(hub, { logger: false }) });
    }
    key = await makeKey();
    partner = await nodes[0]!.hub.stores.partners.create({
      id: 'p1', name: 'Partner One', issuer: 'https://partner.example/', audience: 'urn:damhub', jwksUrl: null, jwks: { keys: [key.publicJwk] },
      maxTokenAgeSec: 3600, rateLimitPerMin: 5, allowedOrigins: [], enabled: true,
    }, clock.now());
  });
  after(async () => {
    for (const n of nodes) {
      await n.app.close();
      await n.hub.close();
    }
    nodes = [];
    await env?.cleanup();
  });

  const exchange = async (n: Node) =>
    n.app.inject({ method: 'POST', url: '/api/v1/auth/exchangeToken', headers: { authorization: bearer(await signPartnerJwt(clock.now(), { key, issuer: partner.issuer })) } });
  const check = (n: Node, access: string) => n.app.inject({ url: '/api/v1/auth/checkToken', headers: { authorization: bearer(access) } });

  test('exchange on A, check and refresh on B, logout on A ends the session on B', async (t) => {
    if (!env) return t.skip('backing services unavailable');
    const [a, b] = nodes as [Node, Node];
    const ex = await exchange(a);
    assert.equal(ex.statusCode, 200, ex.body);
    const tokens = ex.json();
    assert.equal((await check(b, tokens.access_token)).statusCode, 200, 'B knows the session A created');

    const r = await b.app.inject({ url: '/api/v1/auth/refreshToken', headers: { authorization: bearer(tokens.access_token), 'provider-authorization': bearer(tokens.refresh_token) } });
    assert.equal(r.statusCode, 200, r.body);
    const next = r.json();
    assert.equal((await check(b, next.access_token)).statusCode, 200); // now cached on B

    assert.equal((await a.app.inject({ url: '/api/v1/auth/logout', headers: { authorization: bearer(next.access_token) } })).statusCode, 200);
    // B's principal cache holds the token (the manual clock never expires it): only the Redis
    // invalidation message can make B look again.
    const until = Date.now() + 5000;
    let res = await check(b, next.access_token);
    while (res.statusCode === 200 && Date.now() < until) {
      await new Promise((rs) => setTimeout(rs, 20));
      res = await check(b, next.access_token);
    }
    assertError(res, 'hub-access-token-invalid', 401);
    const again = await b.app.inject({ url: '/api/v1/auth/refreshToken', headers: { authorization: bearer(next.access_token), 'provider-authorization': bearer(next.refresh_token) } });
    // The hub's answer to a refresh token whose family was ended (as on one node): 403.
    assert.match(assertError(again, 'provider-access-token-invalid', 403).error.details, /session behind this refresh token was ended/);
  });

  test("a partner's exchange limit is one limit across nodes", async (t) => {
    if (!env) return t.skip('backing services unavailable');
    clock.advance(3600_000); // a fresh budget
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await exchange(nodes[i % 2]!)).statusCode);
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429]);
  });

  test('/readyz reports postgres and redis', async (t) => {
    if (!env) return t.skip('backing services unavailable');
    const res = await nodes[1]!.app.inject({ url: '/readyz' });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json().checks, { postgres: 'ok', redis: 'ok' });
  });
});

test('stores down: requests answer 503 hub-unavailable quickly and /readyz names each service', async () => {
  const stores = new ClusterStores({
    databaseUrl: `postgres://postgres@127.0.0.1:${await closedPort()}/damhub`,
    redisUrl: `redis://127.0.0.1:${await closedPort()}`,
    connectTimeoutMs: 1000,
    commandTimeoutMs: 1000,
  });
  const clock = new ManualClock(Date.UTC(2026, 5, 1, 12));
  const hub = new Hub(defaultConfig({ dataDir: tempDir(), publicUrl: 'http://hub.test', logLevel: 'silent' }), { clock, stores });
  const app = await buildApp(hub, { logger: false });
  try {
    const key = await makeKey();
    const jwt = await signPartnerJwt(clock.now(), { key, issuer: 'https://partner.example/' });
    const res = await app.inject({ method: 'POST', url: '/api/v1/auth/exchangeToken', headers: { authorization: bearer(jwt) } });
    assertError(res, 'hub-unavailable', 503);
    assert.equal(res.headers['retry-after'], '1');
    const ready = await app.inject({ url: '/readyz' });
    assert.equal(ready.statusCode, 503);
    const checks = ready.json().checks;
    assert.match(checks.postgres, /^down: postgres is unavailable/);
    assert.match(checks.redis, /^down: redis is unavailable/);
  } finally {
    await app.close();
    await hub.close();
  }
});
