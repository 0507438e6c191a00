/**
 * Issue 28, item 5: `damhub serve --demo --library my-folder` left the library account
 * demo/demo-password (the whole library), the demo partner and its private key in the data
 * directory for good. Against the real CLI: a demo over one's own folder leaves nothing once it
 * stops; leftovers (a crashed demo, an older version's key file) are named at start with the
 * command that removes them, and `damhub demo clean` removes them (SQLite and cluster mode).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { exportJWK, generateKeyPair } from 'jose';
import { ClusterStores } from '../../src/stores/index.js';
import { DEMO_ISSUER } from '../../src/demo/partner.js';
import { formBrowserSignIn, TestBrowser } from '../helpers/browser.js';
import { tempDir } from '../helpers/hub.js';
import { CLI, runCli, startServer, type ServerProcess } from '../helpers/process.js';
import { clusterEnv } from '../helpers/stores-env.js';
import { call } from '../helpers/cluster.js';

const DEMO = { name: 'demo', password: 'demo-password' };

/** runCli, killed after 30 s (code null then). */
function runBounded(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

function myFolder(): string {
  const root = tempDir('damhub-my-folder-');
  fs.mkdirSync(path.join(root, 'private'), { recursive: true });
  fs.writeFileSync(path.join(root, 'private', 'salaries.txt'), 'not for the demo account');
  return root;
}

/** A partner JWT from the demo page's stand-in backend (the demo partner's key). */
async function demoJwt(hub: ServerProcess): Promise<string> {
  const r = await call(`${hub.url}/demo/partner-token`, { method: 'POST' });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.jwt;
}

/** Exchange → hub access token, or the failed answer's status. */
async function exchange(hub: ServerProcess, jwt: string): Promise<{ status: number; code?: string; access?: string }> {
  const r = await call(`${hub.url}/api/v1/auth/exchangeToken`, { method: 'POST', token: jwt });
  return { status: r.status, code: r.body?.errorCode, access: r.body?.access_token };
}

/** The library sign-in form with these credentials: its status (200 signed in, 401 refused). */
async function librarySignIn(hub: ServerProcess, access: string, user: { name: string; password: string }): Promise<number> {
  const start = await call(`${hub.url}/api/v1/auth/login?provider=library&polling=true`, { method: 'POST', token: access });
  assert.equal(start.status, 200, JSON.stringify(start.body));
  // As a browser does it: the form page sets the cookie binding the login to this browser (issue 28).
  const { submit } = await formBrowserSignIn(new TestBrowser(), start.body.redirect_uri, { username: user.name, password: user.password });
  return submit.status;
}

/** Signs in as the demo account and uploads a small text file to the library's root: the answer. */
async function demoUpload(hub: ServerProcess, access: string): Promise<{ status: number; code?: string }> {
  const start = await call(`${hub.url}/api/v1/auth/login?provider=library&polling=true`, { method: 'POST', token: access });
  const { submit } = await formBrowserSignIn(new TestBrowser(), start.body.redirect_uri, { username: DEMO.name, password: DEMO.password });
  assert.equal(submit.status, 200);
  const poll = await call(`${hub.url}/api/v1/auth/login?state=${encodeURIComponent(start.body.state)}&polling=true`);
  const r = await call(`${hub.url}/api/v1/assets/upload?parentId=root&name=demo-note.txt`, {
    method: 'POST', token: access, headers: { 'provider-authorization': `Bearer ${poll.body.access_token}`, 'content-type': 'text/plain' }, body: 'saved from the demo',
  });
  return { status: r.status, code: r.body?.errorCode };
}

test('serve --demo --library: the demo works while it runs; once stopped, no demo account, partner or key is left, and a restart without --demo warns of nothing', async () => {
  const data = tempDir('damhub-demo-data-');
  const folder = myFolder();
  const demo = await startServer(['--demo', '--library', folder, '--data', data]);
  let unused: string;
  try {
    const { status, access } = await exchange(demo, await demoJwt(demo));
    assert.equal(status, 200);
    assert.equal(await librarySignIn(demo, access!, DEMO), 200, 'the demo account signs in during the demo');
    // One's own folder: the demo reads it, never writes to it (the demo partner has no writes here).
    assert.deepEqual(await demoUpload(demo, access!), { status: 403, code: 'writes-disabled' });
    assert.equal(fs.existsSync(path.join(folder, 'demo-note.txt')), false);
    assert.equal(fs.existsSync(path.join(data, 'demo-partner.json')), false, "the demo partner's private key is never written");
    unused = await demoJwt(demo); // a JWT of the demo partner, kept for after the stop
    assert.match(demo.output(), /library login: {2}demo \/ demo-password \(removed with the demo partner when this hub stops\)/);
  } finally {
    assert.equal(await demo.stop(), 0);
  }

  const plain = await startServer(['--library', folder, '--data', data]);
  try {
    assert.doesNotMatch(plain.output(), /demo mode left/, 'nothing was left to warn about');
    const ex = await exchange(plain, unused);
    assert.deepEqual([ex.status, ex.code], [403, 'hub-sdk-partner-unknown'], 'the demo partner cannot exchange any more');
    const accounts = await runCli(['users', 'list', '--data', data]);
    assert.doesNotMatch(accounts.stdout, /^demo\t/m, 'no demo account in the library');
    assert.equal(fs.existsSync(path.join(data, 'demo-partner.json')), false);
  } finally {
    assert.equal(await plain.stop(), 0);
  }
});

test('leftovers of a crashed demo and of an older version are named at start with the command that removes them; damhub demo clean removes them', async () => {
  const data = tempDir('damhub-demo-data-');
  const folder = myFolder();
  // A demo that never gets to clean up (SIGKILL), as after a crash.
  const crashed = await startServer(['--demo', '--library', folder, '--data', data]);
  const jwt = await demoJwt(crashed);
  await crashed.stop('SIGKILL');
  // The key file an older version wrote.
  const { publicKey } = await generateKeyPair('RS256', { extractable: true });
  fs.writeFileSync(path.join(data, 'demo-partner.json'), JSON.stringify({ kid: 'demo-old', publicJwk: await exportJWK(publicKey) }), { mode: 0o600 });

  const warned = await startServer(['--library', folder, '--data', data]);
  try {
    const out = warned.output();
    for (const what of [/the library account demo/, /the demo partner \(id demo\)/, /the demo partner's private key \(demo-partner\.json\)/]) {
      assert.match(out, new RegExp(`damhub: warning: demo mode left ${what.source}.*remove it with: damhub demo clean --data ${data.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`), out);
    }
    // What the warning is about: the leftovers still work until removed.
    const ex = await exchange(warned, jwt);
    assert.equal(ex.status, 200, 'the leftover demo partner still exchanges');
    assert.equal(await librarySignIn(warned, ex.access!, DEMO), 200, 'the leftover demo account still signs in');
  } finally {
    assert.equal(await warned.stop(), 0);
  }

  const clean = await runCli(['demo', 'clean', '--data', data]);
  assert.equal(clean.code, 0, clean.stderr);
  assert.match(clean.stdout, /removed the library account demo/);
  assert.match(clean.stdout, /removed the demo partner/);
  assert.match(clean.stdout, /removed the demo partner's private key/);
  assert.equal(fs.existsSync(path.join(data, 'demo-partner.json')), false);
  assert.equal((await runCli(['demo', 'clean', '--data', data])).stdout, 'no demo account, partner or key found\n');

  const after = await startServer(['--library', folder, '--data', data]);
  try {
    assert.doesNotMatch(after.output(), /demo mode left/);
    assert.doesNotMatch((await runCli(['users', 'list', '--data', data])).stdout, /^demo\t/m);
  } finally {
    assert.equal(await after.stop(), 0);
  }
});

test('plain demo (npm start, the generated demo library) keeps its demo partner, key and account across restarts', async () => {
  const data = tempDir('damhub-demo-data-');
  const first = await startServer(['--demo', '--data', data]);
  try {
    assert.match(first.output(), /library login: {2}demo \/ demo-password\n/);
  } finally {
    assert.equal(await first.stop(), 0);
  }
  assert.equal(fs.existsSync(path.join(data, 'demo-partner.json')), true);
  const second = await startServer(['--demo', '--data', data]);
  try {
    const { status, access } = await exchange(second, await demoJwt(second));
    assert.equal(status, 200);
    assert.equal(await librarySignIn(second, access!, DEMO), 200);
    // The generated demo library is the demo's own: the /demo page's picker may upload into it.
    assert.deepEqual(await demoUpload(second, access!), { status: 201, code: undefined });
    assert.equal(fs.readFileSync(path.join(data, 'demo-library', 'demo-note.txt'), 'utf8'), 'saved from the demo');
  } finally {
    assert.equal(await second.stop(), 0);
  }
});

describe('cluster mode', () => {
  test('serve --demo --library is refused in cluster mode; damhub demo clean removes planted leftovers from PostgreSQL', async (t) => {
    const env = await clusterEnv();
    if (!env) return t.skip('backing services unavailable');
    try {
      const urls = ['--database-url', env.databaseUrl, '--redis-url', env.redisUrl];
      const prefix = { DAMHUB_REDIS_PREFIX: env.keyPrefix };
      // Bounded: a hub that does not refuse would serve until killed.
      const refused = await runBounded(['serve', '--demo', '--port', '0', '--library', myFolder(), '--data', tempDir(), ...urls], prefix);
      assert.equal(refused.code, 2, refused.stderr);
      assert.match(refused.stderr, /--demo with your own --library runs on one node/);

      // Planted the way an older version left them: the account in the shared index, the partner in PostgreSQL.
      const add = await runCli(['users', 'add', 'demo', '--data', tempDir(), '--database-url', env.databaseUrl], { DAMHUB_USER_PASSWORD: DEMO.password });
      assert.equal(add.code, 0, add.stderr);
      const keep = await runCli(['users', 'add', 'alice', '--data', tempDir(), '--database-url', env.databaseUrl], { DAMHUB_USER_PASSWORD: 'correct horse battery' });
      assert.equal(keep.code, 0, keep.stderr);
      const stores = await ClusterStores.open(env);
      const { publicKey } = await generateKeyPair('RS256', { extractable: true });
      await stores.partners.create({ id: 'demo', name: 'Demo partner', issuer: DEMO_ISSUER, audience: 'urn:damhub', jwksUrl: null, jwks: { keys: [await exportJWK(publicKey)] }, maxTokenAgeSec: 3600, rateLimitPerMin: 600, allowedOrigins: [], enabled: true }, Date.now());
      await stores.close();

      const clean = await runCli(['demo', 'clean', ...urls], prefix);
      assert.equal(clean.code, 0, clean.stderr);
      assert.match(clean.stdout, /removed the library account demo/);
      assert.match(clean.stdout, /removed the demo partner \(id demo\)/);
      const after = await ClusterStores.open(env);
      try {
        assert.equal(await after.partners.get('demo'), null);
      } finally {
        await after.close();
      }
      const list = await runCli(['users', 'list', '--data', tempDir(), '--database-url', env.databaseUrl]);
      assert.doesNotMatch(list.stdout, /^demo\t/m);
      assert.match(list.stdout, /^alice\t/m, 'other accounts stay');
    } finally {
      await env.cleanup();
    }
  });
});
