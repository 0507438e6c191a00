/**
 * The real server process, started the way README says, with a partner registered through the
 * CLI and its JWKS served by a local HTTP server: exchange → check → refresh → logout over HTTP,
 * then a graceful SIGTERM.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { tempDir } from '../helpers/hub.js';
import { JwksServer, makeKey, signPartnerJwt, type TestKey } from '../helpers/partner.js';
import { runCli, startServer, type ServerProcess } from '../helpers/process.js';

let jwks: JwksServer;
let key: TestKey;
let server: ServerProcess;
const issuer = 'https://partner.e2e.example/';

before(async () => {
  jwks = new JwksServer();
  key = await makeKey();
  jwks.keys = [key.publicJwk];
  const jwksUrl = await jwks.start();
  const data = tempDir();
  const add = await runCli(['partners', 'add', '--issuer', issuer, '--jwks-url', jwksUrl, '--data', data, '--id', 'e2e', '--rate-limit', '100']);
  assert.equal(add.code, 0, add.stderr);
  server = await startServer(['--data', data]);
});

after(async () => {
  await server?.stop();
  await jwks?.stop();
});

test('exchange → check → refresh → logout over HTTP against the real process', async () => {
  const api = `${server.url}/api/v1`;
  const jwt = await signPartnerJwt(Date.now(), { key, issuer, sub: 'e2e-user', email: 'e2e@example.com', extra: { name: 'E2E User' } });
  const ex = await fetch(`${api}/auth/exchangeToken`, { method: 'POST', headers: { authorization: `Bearer ${jwt}` } });
  assert.equal(ex.status, 200, await ex.clone().text());
  assert.ok(ex.headers.get('x-request-id'));
  const pair = (await ex.json()) as { access_token: string; refresh_token: string; expires_in: number; token_type: string };
  assert.equal(pair.expires_in, 3600);
  assert.equal(pair.token_type, 'Bearer');
  assert.equal(jwks.fetches, 1);

  const check = await fetch(`${api}/auth/checkToken`, { headers: { authorization: `Bearer ${pair.access_token}` } });
  assert.equal(check.status, 200);
  const who = (await check.json()) as { user: { email: string; name: string }; account: { issuer: string }; userHash: string };
  assert.equal(who.user.email, 'e2e@example.com');
  assert.equal(who.user.name, 'E2E User');
  assert.equal(who.account.issuer, issuer);
  assert.match(who.userHash, /^[A-Za-z0-9_-]{16,}$/);

  const ref = await fetch(`${api}/auth/refreshToken`, { headers: { authorization: `Bearer ${pair.access_token}`, 'provider-authorization': `Bearer ${pair.refresh_token}` } });
  assert.equal(ref.status, 200);
  const pair2 = (await ref.json()) as { access_token: string; refresh_token: string };
  assert.notEqual(pair2.refresh_token, pair.refresh_token);

  const check2 = await fetch(`${api}/auth/checkToken`, { headers: { authorization: `Bearer ${pair2.access_token}` } });
  assert.equal(check2.status, 200);

  const out = await fetch(`${api}/auth/logout`, { headers: { authorization: `Bearer ${pair2.access_token}` } });
  assert.equal(out.status, 200);
  assert.equal(await out.text(), 'OK');

  const after1 = await fetch(`${api}/auth/checkToken`, { headers: { authorization: `Bearer ${pair2.access_token}` } });
  assert.equal(after1.status, 401);
  assert.equal(((await after1.json()) as { errorCode: string }).errorCode, 'hub-access-token-invalid');
  const after2 = await fetch(`${api}/auth/refreshToken`, { headers: { authorization: `Bearer ${pair2.access_token}`, 'provider-authorization': `Bearer ${pair2.refresh_token}` } });
  assert.equal(after2.status, 403);
  assert.equal(((await after2.json()) as { errorCode: string }).errorCode, 'provider-access-token-invalid');

  // The same JWT a second time is a replay.
  const replay = await fetch(`${api}/auth/exchangeToken`, { method: 'POST', headers: { authorization: `Bearer ${jwt}` } });
  assert.equal(replay.status, 401);

  const ready = await fetch(`${server.url}/readyz`);
  assert.equal(ready.status, 200);
  assert.ok(!server.output().includes(pair.access_token), 'tokens never reach the log');
  assert.ok(!server.output().includes(jwt), 'partner JWTs never reach the log');
});

test('SIGTERM drains an in-flight request and exits 0', async () => {
  // A request whose body is still to come when the signal arrives. `Expect: 100-continue` makes
  // the hub say when it has read the headers (its 100 Continue), so the request is surely in
  // flight there: a request merely sent before the signal may not have been read yet, and a
  // connection with nothing read is idle, which a drain rightly closes.
  const req = http.request(`${server.url}/api/v1/auth/exchangeToken`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'content-length': '2', expect: '100-continue' },
  });
  const inflight = new Promise<number>((resolve, reject) => {
    req.on('response', (r) => { r.resume(); r.on('end', () => resolve(r.statusCode!)); });
    req.on('error', reject);
  });
  req.flushHeaders();
  await new Promise<void>((resolve, reject) => { req.once('continue', resolve); req.once('error', reject); });
  const stopped = server.stop('SIGTERM');
  req.end('{}');
  // The drain let it finish normally (no partner JWT: 401 in the envelope), not a cut socket.
  assert.equal(await inflight, 401);
  assert.equal(await stopped, 0);
});
