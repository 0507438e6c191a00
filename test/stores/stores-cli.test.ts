/**
 * The command line in cluster mode: `damhub migrate`, the both-or-neither rule for
 * --database-url/--redis-url, partners commands against PostgreSQL, and two real `damhub serve`
 * processes on one database and one Redis prefix (exchange on A, check on B).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { tempDir } from '../helpers/hub.js';
import { makeKey, signPartnerJwt } from '../helpers/partner.js';
import { runCli, startServer, type ServerProcess } from '../helpers/process.js';
import { clusterEnv, type ClusterEnv } from '../helpers/stores-env.js';

const clean = { DATABASE_URL: '', REDIS_URL: '', DAMHUB_DATA_DIR: '', DAMHUB_ADMIN_KEY: '' };

test('serve with only one of --database-url/--redis-url is a usage error (exit 2)', async () => {
  const onlyDb = await runCli(['serve', '--database-url', 'postgres://127.0.0.1:1/x', '--data', tempDir()], clean);
  assert.equal(onlyDb.code, 2, onlyDb.stderr);
  assert.match(onlyDb.stderr.split('\n')[0]!, /^damhub: --database-url needs --redis-url too/);
  const onlyRedis = await runCli(['serve', '--data', tempDir()], { ...clean, REDIS_URL: 'redis://127.0.0.1:1' });
  assert.equal(onlyRedis.code, 2, onlyRedis.stderr);
  assert.match(onlyRedis.stderr.split('\n')[0]!, /^damhub: --redis-url needs --database-url too/);
});

describe('cluster mode from the command line', () => {
  let env: ClusterEnv | null = null;
  const servers: ServerProcess[] = [];
  before(async () => {
    env = await clusterEnv();
  });
  after(async () => {
    for (const s of servers) await s.stop();
    await env?.cleanup();
  });

  test('migrate, partners add/list, two serve processes sharing the session state', async (t) => {
    if (!env) return t.skip('backing services unavailable');
    const cluster = { ...clean, DAMHUB_REDIS_PREFIX: env.keyPrefix };
    const first = await runCli(['migrate', '--database-url', env.databaseUrl], cluster);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /applied migrations 1/);
    const second = await runCli(['migrate'], { ...cluster, DATABASE_URL: env.databaseUrl });
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stdout, /up to date/);

    const key = await makeKey();
    const dir = tempDir();
    const jwksFile = path.join(dir, 'jwks.json');
    fs.writeFileSync(jwksFile, JSON.stringify({ keys: [key.publicJwk] }));
    const add = await runCli(['partners', 'add', '--id', 'cli-p', '--issuer', 'https://cli.example/', '--jwks-file', jwksFile,
      '--database-url', env.databaseUrl, '--redis-url', env.redisUrl], cluster);
    assert.equal(add.code, 0, add.stderr);
    const list = await runCli(['partners', 'list'], { ...cluster, DATABASE_URL: env.databaseUrl, REDIS_URL: env.redisUrl });
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^cli-p\tenabled\thttps:\/\/cli\.example\//m);

    // Two nodes: separate processes, one data dir for the shared signing keys, one database, one Redis.
    const dataDir = tempDir();
    const nodeEnv = { ...cluster, DATABASE_URL: env.databaseUrl, REDIS_URL: env.redisUrl };
    servers.push(await startServer(['--data', dataDir], nodeEnv));
    servers.push(await startServer(['--data', dataDir], nodeEnv));
    const [a, b] = servers as [ServerProcess, ServerProcess];
    assert.match(a.output(), /stores: +PostgreSQL \+ Redis/);

    const jwt = await signPartnerJwt(Date.now(), { key, issuer: 'https://cli.example/' });
    const ex = await fetch(`${a.url}/api/v1/auth/exchangeToken`, { method: 'POST', headers: { authorization: `Bearer ${jwt}`, 'content-type': 'application/json' }, body: JSON.stringify({ email: 'u@example.com' }) });
    assert.equal(ex.status, 200, await ex.clone().text());
    const { access_token } = (await ex.json()) as { access_token: string };
    const check = await fetch(`${b.url}/api/v1/auth/checkToken`, { headers: { authorization: `Bearer ${access_token}` } });
    assert.equal(check.status, 200, await check.clone().text());
    const replay = await fetch(`${b.url}/api/v1/auth/exchangeToken`, { method: 'POST', headers: { authorization: `Bearer ${jwt}`, 'content-type': 'application/json' }, body: JSON.stringify({ email: 'u@example.com' }) });
    assert.equal(replay.status, 401, 'the JWT used on A is a replay on B');
    const ready = await fetch(`${b.url}/readyz`);
    assert.equal(ready.status, 200);
    assert.deepEqual(((await ready.json()) as { checks: unknown }).checks, { postgres: 'ok', redis: 'ok' });

    const rm = await runCli(['partners', 'remove', 'cli-p'], { ...cluster, DATABASE_URL: env.databaseUrl, REDIS_URL: env.redisUrl });
    assert.equal(rm.code, 0, rm.stderr);
    for (const s of servers.splice(0)) assert.equal(await s.stop(), 0);
  });
});
