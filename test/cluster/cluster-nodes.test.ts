/**
 * Three real `damhub serve` processes on one PostgreSQL database and one Redis: any node answers
 * any request. Sessions, logins, revocations, rate limits and the key ring are one state across
 * the nodes, not one per node.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeProtectedHeader } from 'jose';
import { ClusterStores } from '../../src/stores/index.js';
import { makeKey, signPartnerJwt } from '../helpers/partner.js';
import { clusterEnv, type ClusterEnv } from '../helpers/stores-env.js';
import { addPartner, api, call, damSignIn, exchange, makeLibrary, poll, startNodes, type TestPartner } from '../helpers/cluster.js';
import { runCli, type ServerProcess } from '../helpers/process.js';

describe('three hub nodes sharing PostgreSQL and Redis', () => {
  let env: ClusterEnv | null = null;
  let nodes: ServerProcess[] = [];
  let partner: TestPartner;
  let limited: TestPartner;
  const LIMIT = 4;

  before(async () => {
    env = await clusterEnv();
    if (!env) return;
    partner = await addPartner(env, 'cn-main', 10_000);
    limited = await addPartner(env, 'cn-limited', LIMIT);
    nodes = await startNodes(env, makeLibrary(), 3);
  });
  after(async () => {
    const codes = await Promise.all(nodes.map((n) => n.stop()));
    await env?.cleanup();
    assert.deepEqual(codes, nodes.map(() => 0), 'every node drains and exits cleanly');
  });

  test('every node reports both stores ready', async (t) => {
    if (!env) return t.skip('backing services unavailable');
    for (const n of nodes) {
      const r = await call(`${n.url}/readyz`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual(r.body.checks, { postgres: 'ok', redis: 'ok' });
    }
  });

  test('exchange on A, call on B and C; the JWT is spent on every node', async (t) => {
    if (!env) return t.skip('backing services unavailable');
    const [a, b, c] = nodes as [ServerProcess, ServerProcess, ServerProcess];
    const jwt = await partner.jwt('u-exchange');
    const ex = await exchange(a, jwt);
    assert.equal(ex.status, 200, JSON.stringify(ex.body));
    for (const n of [b, c]) {
      const check = await call(api(n, '/auth/checkToken'), { token: ex.body.access_token });
      assert.equal(check.status, 200, JSON.stringify(check.body));
      assert.equal(check.body.account.id, 'cn-main');
      assert.equal(check.body.user.email, 'u-exchange@example.com');
    }
    const replay = await exchange(c, jwt);
    assert.equal(replay.status, 401, 'the JWT exchanged on A is a replay on C');
    // The user hash is the same whichever node computes it (shared secret).
    const hashes = await Promise.all(nodes.map((n) => call(api(n, '/auth/checkToken'), { token: ex.body.access_token })));
    assert.equal(new Set(hashes.map((h) => h.body.userHash)).size, 1);
  });

  test('a DAM login started on A, signed in through B, is handed out by exactly one poll', async (t) => {
    if (!env) return t.skip('backing services unavailable');
    const [a, b, c] = nodes as [ServerProcess, ServerProcess, ServerProcess];
    const ex = await exchange(a, await partner.jwt('u-login'));
    assert.equal(ex.status, 200);
    const start = await call(api(a, '/auth/login?provider=library&polling=true'), { method: 'POST', token: ex.body.access_token });
    const pending = await poll(c, start.body.state);
    assert.deepEqual(pending.body, {}, 'pending on C before the sign-in');

    const state = await damSignIn(a, b, ex.body.access_token);
    // Six polls at once, two per node: one gets the tokens, the others hear they were handed out.
    const polls = await Promise.all([c, a, b, c, a, b].map((n) => poll(n, state)));
    const winners = polls.filter((p) => typeof p.body.access_token === 'string');
    assert.equal(winners.length, 1, JSON.stringify(polls.map((p) => p.body)));
    assert.equal(typeof winners[0]!.body.refresh_token, 'string');
    for (const p of polls.filter((x) => x !== winners[0])) {
      assert.equal(p.status, 200);
      assert.match(p.body.error, /already completed/);
    }
    // The library account and index are shared: the DAM token browses the same root on every node.
    const roots = await Promise.all([a, b, c].map((n) => call(api(n, '/assets/folder/root'), { token: ex.body.access_token, dam: winners[0]!.body.access_token })));
    for (const r of roots) assert.equal(r.status, 200, JSON.stringify(r.body));
    const names = roots.map((r) => (r.body.folders as { name: string }[]).map((f) => f.name).sort());
    assert.deepEqual(names[0], ['press', 'projects']);
    assert.deepEqual(names[1], names[0]);
    assert.deepEqual(names[2], names[0]);
  });

  test('logout on A: the refresh token is dead on B and the access token on C within a second', async (t) => {
    if (!env) return t.skip('backing services unavailable');
    const [a, b, c] = nodes as [ServerProcess, ServerProcess, ServerProcess];
    const ex = await exchange(a, await partner.jwt('u-logout'));
    // C caches the principal now; only the invalidation message can drop it before its TTL.
    assert.equal((await call(api(c, '/auth/checkToken'), { token: ex.body.access_token })).status, 200);
    const out = await call(api(a, '/auth/logout'), { token: ex.body.access_token });
    assert.equal(out.status, 200);
    const refresh = await call(api(b, '/auth/refreshToken'), { token: ex.body.access_token, dam: ex.body.refresh_token });
    assert.equal(refresh.status, 403, JSON.stringify(refresh.body));
    assert.equal(refresh.body.errorCode, 'provider-access-token-invalid');
    const statuses: number[] = [];
    const until = Date.now() + 1000;
    do statuses.push((await call(api(c, '/auth/checkToken'), { token: ex.body.access_token })).status);
    while (statuses.at(-1) === 200 && Date.now() < until);
    assert.equal(statuses.at(-1), 401, `C still accepted the token a second after the logout: ${statuses.join(',')}`);
  });

  test('a refresh token rotated on B: the new pair works on A, and rotates again there', async (t) => {
    if (!env) return t.skip('backing services unavailable');
    const [a, b, c] = nodes as [ServerProcess, ServerProcess, ServerProcess];
    const ex = await exchange(c, await partner.jwt('u-refresh'));
    const r1 = await call(api(b, '/auth/refreshToken'), { token: ex.body.access_token, dam: ex.body.refresh_token });
    assert.equal(r1.status, 200, JSON.stringify(r1.body));
    assert.notEqual(r1.body.refresh_token, ex.body.refresh_token);
    const check = await call(api(a, '/auth/checkToken'), { token: r1.body.access_token });
    assert.equal(check.status, 200);
    const r2 = await call(api(a, '/auth/refreshToken'), { token: r1.body.access_token, dam: r1.body.refresh_token });
    assert.equal(r2.status, 200, JSON.stringify(r2.body));
  });

  test('a DAM refresh token is one rotation family across the nodes: rotated on A, answered within grace on B, reused on B after two rotations and dead on A', async (t) => {
    if (!env) return t.skip('backing services unavailable');
    const [a, b, c] = nodes as [ServerProcess, ServerProcess, ServerProcess];
    const ex = await exchange(a, await partner.jwt('u-dam-refresh'));
    const state = await damSignIn(a, b, ex.body.access_token);
    const first = (await poll(c, state)).body as { refresh_token: string };
    const refresh = (n: ServerProcess, dam: string) => call(api(n, '/auth/refreshToken'), { token: ex.body.access_token, dam });
    const onA = await refresh(a, first.refresh_token);
    assert.equal(onA.status, 200, JSON.stringify(onA.body));
    // B sees A's rotation: the same token again is a concurrent refresh within the grace window.
    const onB = await refresh(b, first.refresh_token);
    assert.equal(onB.status, 200, JSON.stringify(onB.body));
    const browse = await call(api(b, '/assets/folder/root'), { token: ex.body.access_token, dam: onB.body.access_token });
    assert.equal(browse.status, 200, 'the pair answered within grace is usable');
    const onC = await refresh(c, onB.body.refresh_token);
    assert.equal(onC.status, 200, JSON.stringify(onC.body));
    // Two rotations later the first token is neither current nor previous: a reuse, whatever the clock.
    const reuse = await refresh(b, first.refresh_token);
    assert.equal(reuse.status, 403, JSON.stringify(reuse.body));
    assert.equal(reuse.body.errorCode, 'provider-access-token-invalid');
    const newest = await refresh(a, onC.body.refresh_token);
    assert.equal(newest.status, 403, `the family's newest token is revoked on every node: ${JSON.stringify(newest.body)}`);
  });

  test(`a partner's exchange limit of ${LIMIT} per minute is one limit across the nodes`, async (t) => {
    if (!env) return t.skip('backing services unavailable');
    const jwts = await Promise.all(Array.from({ length: LIMIT + 1 }, (_, i) => limited.jwt(`u-limit-${i}`)));
    const answers = await Promise.all(jwts.map((jwt, i) => exchange(nodes[i % nodes.length]!, jwt)));
    const statuses = answers.map((x) => x.status).sort();
    assert.deepEqual(statuses, [...Array(LIMIT).fill(200), 429], JSON.stringify(answers.map((x) => x.body)));
    const denied = answers.find((x) => x.status === 429)!;
    assert.equal(denied.body.errorCode, 'hub-rate-limited');
    assert.ok(Number(denied.headers.get('retry-after')) >= 1);
  });

  test('keys rotate on the shared ring: every node signs with the new key and accepts the old tokens', async (t) => {
    if (!env) return t.skip('backing services unavailable');
    const before = await exchange(nodes[0]!, await partner.jwt('u-keys-old'));
    const oldKid = decodeProtectedHeader(before.body.access_token).kid;
    const rot = await runCli(['keys', 'rotate', '--database-url', env.databaseUrl, '--redis-url', env.redisUrl], { DAMHUB_REDIS_PREFIX: env.keyPrefix });
    assert.equal(rot.code, 0, rot.stderr);
    const newKid = /new keys: (sig-\S+),/.exec(rot.stdout)?.[1];
    assert.ok(newKid && newKid !== oldKid, rot.stdout);
    // Each node hears the rotation through Redis and reloads the ring from PostgreSQL (milliseconds).
    const fresh: string[] = [];
    for (const [i, n] of nodes.entries()) {
      let token = '';
      const until = Date.now() + 5000;
      do token = (await exchange(n, await partner.jwt(`u-keys-${i}`))).body.access_token;
      while (decodeProtectedHeader(token).kid !== newKid && Date.now() < until);
      assert.equal(decodeProtectedHeader(token).kid, newKid, `node ${i} did not switch to the rotated key`);
      fresh.push(token);
    }
    for (const n of nodes) {
      for (const token of [before.body.access_token, ...fresh]) {
        const r = await call(api(n, '/auth/checkToken'), { token });
        assert.equal(r.status, 200, JSON.stringify(r.body));
      }
    }
  });

  test('a partner JWKS fetched by one node serves every node (one fetch for the cluster)', async (t) => {
    if (!env) return t.skip('backing services unavailable');
    const key = await makeKey();
    let fetches = 0;
    const jwksServer = http.createServer((_req, res) => {
      fetches++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [key.publicJwk] }));
    });
    await new Promise<void>((r) => jwksServer.listen(0, '127.0.0.1', r));
    try {
      const issuer = 'https://cn-jwks.example/';
      const stores = await ClusterStores.open(env);
      await stores.partners.create({
        id: 'cn-jwks', name: 'cn-jwks', issuer, audience: 'urn:damhub', enabled: true, allowedOrigins: [],
        jwksUrl: `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/jwks.json`, jwks: null, maxTokenAgeSec: 3600, rateLimitPerMin: 100,
      }, Date.now());
      await stores.close();
      for (const [i, n] of nodes.entries()) {
        const r = await exchange(n, await signPartnerJwt(Date.now(), { key, issuer, sub: `jwks-${i}` }));
        assert.equal(r.status, 200, JSON.stringify(r.body));
      }
      assert.equal(fetches, 1, 'B and C took the JWKS A fetched from Redis');
    } finally {
      jwksServer.close();
    }
  });
});
