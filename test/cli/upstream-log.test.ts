/**
 * Issue 29: a hub whose connector could not reach its upstream logged no cause; the person signing
 * in read "The asset library is unavailable; try again later." and the operator found nothing in
 * the log. The upstream client every connector shares (src/providers/kit/http.ts) now logs it at
 * warn, naming the connector, the host and the cause: a real `damhub serve` with the WebDAV
 * connector, signed in to through its form as a browser does, pointed at a closed port, a name
 * that does not resolve, and a server that never answers. The password never reaches the log.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { formBrowserSignIn, startDamLogin, TestBrowser } from '../helpers/browser.js';
import { call } from '../helpers/cluster.js';
import { tempDir } from '../helpers/hub.js';
import { makeKey, signPartnerJwt, type TestKey } from '../helpers/partner.js';
import { freePort, runCli, startServer, type ServerProcess } from '../helpers/process.js';

const PASSWORD = 'pw-never-in-the-log-8812';
const ISSUER = 'https://upstream-log.example/';

let hub: ServerProcess;
let key: TestKey;
/** Accepts connections and never says a byte. */
let silent: net.Server;
const sockets = new Set<net.Socket>();

before(async () => {
  const data = tempDir('damhub-upstream-log-');
  key = await makeKey();
  const jwks = path.join(tempDir(), 'jwks.json');
  fs.writeFileSync(jwks, JSON.stringify({ keys: [key.publicJwk] }));
  const add = await runCli(['partners', 'add', '--issuer', ISSUER, '--jwks-file', jwks, '--data', data]);
  assert.equal(add.code, 0, add.stderr);
  hub = await startServer(['--data', data], {
    DAMHUB_CONNECTORS: 'webdav', DAMHUB_CONNECTOR_ALLOW_HOSTS: '127.0.0.1', DAMHUB_CONNECTOR_TIMEOUT_MS: '300', DAMHUB_LOG_LEVEL: 'info',
  });
  silent = net.createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
});

after(async () => {
  await hub?.stop();
  for (const s of sockets) s.destroy();
  await new Promise<void>((r) => (silent ? silent.close(() => r()) : r()));
});

/** The WebDAV sign-in form submitted with `serverUrl`, as a browser does; the form's page answers. */
async function signIn(serverUrl: string): Promise<string> {
  const jwt = await signPartnerJwt(Date.now(), { key, issuer: ISSUER, sub: 'user-1', email: 'user1@example.com' });
  const ex = await call(`${hub.url}/api/v1/auth/exchangeToken`, { method: 'POST', token: jwt });
  assert.equal(ex.status, 200, JSON.stringify(ex.body));
  const { redirect_uri } = await startDamLogin({ url: hub.url }, ex.body.access_token, 'webdav', serverUrl);
  const { submit } = await formBrowserSignIn(new TestBrowser(), redirect_uri, { serverUrl, username: 'u', password: PASSWORD });
  assert.equal(submit.status, 400, submit.body);
  assert.match(submit.body, /The server could not be used/);
  return submit.body;
}

interface LogLine {
  level: number;
  msg: string;
  connector?: string;
  host?: string;
  cause?: string;
}

/** The hub's first log line that `match` accepts, waited for (bounded: the line is written as the sign-in fails). */
async function logLine(match: (l: LogLine) => boolean): Promise<LogLine> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const lines = hub.output().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as LogLine);
    const hit = lines.find(match);
    if (hit) return hit;
    assert.ok(Date.now() < deadline, `no such log line in:\n${hub.output().slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('a closed port: one warn line names the connector, host:port and ECONNREFUSED', async () => {
  const port = await freePort();
  await signIn(`http://127.0.0.1:${port}/dav/`);
  const line = await logLine((l) => l.host === `127.0.0.1:${port}`);
  assert.equal(line.level, 40, 'warn');
  assert.equal(line.connector, 'webdav');
  assert.equal(line.cause, 'ECONNREFUSED');
  assert.match(line.msg, new RegExp(`^webdav: 127\\.0\\.0\\.1:${port} refused the connection \\(ECONNREFUSED\\)`));
});

test('a name that does not resolve: the DNS failure at warn, with the host name', async () => {
  await signIn('http://nonexistent.invalid/dav/');
  const line = await logLine((l) => l.host === 'nonexistent.invalid');
  assert.equal(line.level, 40);
  assert.equal(line.connector, 'webdav');
  assert.match(String(line.cause), /^(ENOTFOUND|EAI_[A-Z]+)$/);
  assert.match(line.msg, /could not be resolved in DNS/);
});

test('a server that never answers: the timeout at warn, with its deadline', async () => {
  const port = (silent.address() as net.AddressInfo).port;
  await signIn(`http://127.0.0.1:${port}/dav/`);
  const line = await logLine((l) => l.host === `127.0.0.1:${port}` && l.connector === 'webdav');
  assert.equal(line.level, 40);
  assert.equal(line.cause, 'timeout');
  assert.match(line.msg, /gave no answer within 300 ms/);
});

test('no password, credentials or path in the log', () => {
  const out = hub.output();
  assert.ok(!out.includes(PASSWORD), 'the password is not logged');
  assert.ok(!out.includes(Buffer.from(`u:${PASSWORD}`).toString('base64')), 'the Basic credentials are not logged');
  for (const l of out.split('\n').filter((x) => x.includes('"connector":"webdav"'))) assert.doesNotMatch(l, /"host":"[^"]*\//, 'the host field is a host, not a URL');
});
