/**
 * Issue 29: `damhub connectors check webdav --server-url http://127.0.0.1:8999/` (nothing
 * listening) and `http://nonexistent.invalid/` printed nothing and exited 0: the upstream client's
 * retry back-off was an unref'd timer, the only thing left in the CLI's event loop (it listens on
 * no socket), so the process ran out of work mid-check. Here every way the sign-in check can fail,
 * against the real CLI and real servers on loopback: the run ends with exit 1 and a report whose
 * sign-in line names the cause.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { tempDir } from '../helpers/hub.js';
import { freePort, runCli } from '../helpers/process.js';

const ENV = { DAMHUB_CONNECTOR_ALLOW_HOSTS: '127.0.0.1', DAMHUB_CONNECTOR_TIMEOUT_MS: '300', DAMHUB_LOG_LEVEL: 'silent' };
const PASSWORD = 'pw-of-the-failure-tests-4471';

interface Report {
  passed: boolean;
  signIn: { outcome: string; detail: string };
  checks: unknown[];
}

/** `damhub connectors check webdav` against `url`, the password on stdin; exit 1 and a failed sign-in, whose detail is returned. */
async function failedSignIn(url: string, env: Record<string, string> = ENV): Promise<string> {
  const t0 = Date.now();
  const r = await runCli(['connectors', 'check', 'webdav', '--server-url', url, '--field', 'username=u', '--field', 'password=-', '--timeout', '60', '--json'], env, `${PASSWORD}\n`);
  assert.equal(r.code, 1, `exit ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`);
  assert.notEqual(r.stdout, '', 'a report is printed');
  const rep = JSON.parse(r.stdout) as Report;
  assert.equal(rep.passed, false);
  assert.equal(rep.signIn.outcome, 'fail');
  assert.deepEqual(rep.checks, [], 'nothing runs without a connection');
  assert.ok(!r.stdout.includes(PASSWORD) && !r.stderr.includes(PASSWORD), 'the password appears nowhere');
  assert.ok(Date.now() - t0 < 45_000, 'the run ends within its deadlines');
  return rep.signIn.detail;
}

/** Servers that answer PROPFIND wrongly, by path: /s401/ → 401, …, /html/ → a web page (200), /slow/ → never. */
let faults: http.Server;
let faultsUrl: string;
/** Accepts connections and never says a byte. */
let silent: net.Server;
const silentSockets = new Set<net.Socket>();
/** HTTPS with a self-signed certificate the hub does not trust. */
let tls: https.Server;

before(async () => {
  faults = http.createServer((req, res) => {
    req.resume();
    const m = /^\/s(\d{3})\//.exec(req.url ?? '');
    if (m) return res.writeHead(Number(m[1]), { 'content-type': 'text/plain', ...(m[1] === '401' ? { 'www-authenticate': 'Basic realm="dav"' } : {}) }).end(`status ${m[1]} from the fault server`);
    if (req.url?.startsWith('/html/')) return res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><html><head><title>Welcome</title></head><body><h1>Welcome to nginx!</h1></body></html>');
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => faults.listen(0, '127.0.0.1', r));
  faultsUrl = `http://127.0.0.1:${(faults.address() as net.AddressInfo).port}`;

  silent = net.createServer((s) => {
    silentSockets.add(s);
    s.on('close', () => silentSockets.delete(s));
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));

  const dir = tempDir('damhub-tls-');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
    '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem')], { stdio: 'ignore' });
  tls = https.createServer({ key: fs.readFileSync(path.join(dir, 'key.pem')), cert: fs.readFileSync(path.join(dir, 'cert.pem')) }, (req, res) => {
    req.resume();
    res.writeHead(207, { 'content-type': 'application/xml' }).end('<?xml version="1.0"?><d:multistatus xmlns:d="DAV:"/>');
  });
  await new Promise<void>((r) => tls.listen(0, '127.0.0.1', r));
});

after(async () => {
  for (const s of silentSockets) s.destroy();
  faults?.closeAllConnections();
  tls?.closeAllConnections();
  await Promise.all([faults, silent, tls].map((s) => new Promise<void>((r) => (s ? s.close(() => r()) : r()))));
});

test('nothing listening: exit 1, the sign-in fails naming ECONNREFUSED and the host', async () => {
  const port = await freePort();
  const detail = await failedSignIn(`http://127.0.0.1:${port}/`);
  assert.match(detail, new RegExp(`127\\.0\\.0\\.1:${port} refused the connection \\(ECONNREFUSED\\)`));
});

test('a host name that does not resolve: exit 1, the DNS failure named', async () => {
  const detail = await failedSignIn('http://nonexistent.invalid/');
  assert.match(detail, /nonexistent\.invalid could not be resolved in DNS \((ENOTFOUND|EAI_[A-Z]+)\)/);
});

test('a server that accepts and never answers: exit 1 after DAMHUB_CONNECTOR_TIMEOUT_MS, the timeout named', async () => {
  const port = (silent.address() as net.AddressInfo).port;
  const detail = await failedSignIn(`http://127.0.0.1:${port}/dav/`);
  assert.match(detail, new RegExp(`127\\.0\\.0\\.1:${port} gave no answer within 300 ms`));
});

test('https with a certificate the hub does not trust: exit 1, the TLS failure named', async () => {
  const port = (tls.address() as net.AddressInfo).port;
  const detail = await failedSignIn(`https://127.0.0.1:${port}/dav/`);
  assert.match(detail, new RegExp(`127\\.0\\.0\\.1:${port} failed the TLS handshake \\((DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|ERR_TLS_CERT_ALTNAME_INVALID)`));
});

test('401 and 403: exit 1, the credentials refused, the status named', async () => {
  for (const status of [401, 403]) {
    const detail = await failedSignIn(`${faultsUrl}/s${status}/`);
    assert.match(detail, /did not accept these credentials/, `${status}: ${detail}`);
    assert.match(detail, new RegExp(`PROPFIND /s${status}/ answered ${status}`), `${status}: ${detail}`);
  }
});

test('404 and 500: exit 1, the status and what the server said named', async () => {
  for (const status of [404, 500]) {
    const detail = await failedSignIn(`${faultsUrl}/s${status}/`);
    assert.match(detail, new RegExp(`PROPFIND /s${status}/ answered ${status}: status ${status} from the fault server`), `${status}: ${detail}`);
  }
});

test('a web server that does not speak WebDAV: exit 1, "expected 207 Multi-Status" and what it answered', async () => {
  const detail = await failedSignIn(`${faultsUrl}/html/`);
  assert.match(detail, /expected 207 Multi-Status, got 200; the answer began: <!doctype html><html><head><title>Welcome/);
});

test('a loopback server without DAMHUB_CONNECTOR_ALLOW_HOSTS: the refusal names the variable to set, not the config key', async () => {
  const detail = await failedSignIn(`${faultsUrl}/dav/`, { DAMHUB_CONNECTOR_ALLOW_HOSTS: '', DAMHUB_LOG_LEVEL: 'silent' });
  assert.match(detail, /not allowed: 127\.0\.0\.1 is a loopback address .*An administrator can allow it with DAMHUB_CONNECTOR_ALLOW_HOSTS\./);
  assert.doesNotMatch(detail, /allowHosts/);
});
