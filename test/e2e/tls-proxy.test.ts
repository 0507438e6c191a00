/**
 * Issue 29, item 1, "Behind a TLS reverse proxy": Debian's nginx running the repository's
 * deploy/nginx/damhub.conf (test/helpers/nginx.ts: only its listen ports replaced) with a
 * self-signed certificate, in front of the real hub process on loopback, started as
 * docs/operating.md says: `--public-url https://damhub.example.com:<nginx port>` and
 * DAMHUB_TRUSTED_PROXIES=127.0.0.1. The test's HTTP client trusts the certificate and resolves
 * damhub.example.com to 127.0.0.1 (an undici Agent as the process's fetch dispatcher).
 *
 * Through the proxy, everything the hub hands out names the public https origin, never the hub's
 * own http://127.0.0.1:<port>: the token exchange, the API reference, the DAM login (library form
 * and an OAuth connector through its vendor replay: start page, confirm page, the redirect_uri
 * sent to the vendor, the callback), the sign-in cookie (__Host-, Secure although the hub speaks
 * plain HTTP), browse and the media URLs (which are then fetched through the proxy), and /mcp's
 * OAuth metadata. Forged Host / X-Forwarded-Host / X-Forwarded-Proto change none of it. And
 * X-Forwarded-For gives the client's address (the request log's `ip`) only when the socket is a
 * trusted proxy: the client reaches nginx from 127.0.0.5, an address the hub does not trust.
 */
import assert from 'node:assert/strict';
import dns from 'node:dns';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import tls from 'node:tls';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { Agent, setGlobalDispatcher } from 'undici';
import { continueToVendor, formOf, pollDamLogin, startDamLogin, TestBrowser, vendorConsent } from '../helpers/browser.js';
import { startDropboxReplay, type DropboxReplay } from '../helpers/dropbox-replay.js';
import { tempDir } from '../helpers/hub.js';
import { selfSignedCert, SHIPPED_SERVER_NAME, startNginx, type Nginx, type TlsCert } from '../helpers/nginx.js';
import { JwksServer, makeKey, signPartnerJwt, type TestKey } from '../helpers/partner.js';
import { freePort, REPO_ROOT, runCli, startServer, type ServerProcess } from '../helpers/process.js';

const HOST = SHIPPED_SERVER_NAME;
/** The address the test's client connects from: not a trusted proxy. */
const CLIENT_ADDRESS = '127.0.0.5';
const ISSUER = 'https://partner.proxy.example/';
const MCP_ISSUER = 'https://as.proxy.example';
const PASSWORD = 'proxy test password';

let cert: TlsCert;
let nginx: Nginx;
let hub: ServerProcess;
let replay: DropboxReplay;
let jwks: JwksServer;
let partnerKey: TestKey;
let mcpKey: TestKey;
let PUBLIC: string;
let photo: Buffer;

/** damhub.example.com is this machine; every other name as the system resolves it. */
const lookup = ((hostname: string, options: dns.LookupOptions, cb: (...a: unknown[]) => void) => {
  if (hostname !== HOST) return dns.lookup(hostname, options as dns.LookupAllOptions, cb as never);
  if (options.all) cb(null, [{ address: '127.0.0.1', family: 4 }]);
  else cb(null, '127.0.0.1', 4);
}) as never;

/** What the hub must never hand out behind the proxy: its own origin, or the public host over http. */
function assertPublicOnly(text: string, what: string): void {
  assert.ok(!text.includes(hub.url), `${what} names the hub's own origin ${hub.url}: ${text.slice(0, 600)}`);
  assert.ok(!text.includes(`http://${HOST}`), `${what} names the public host over http: ${text.slice(0, 600)}`);
  assert.ok(!/http:\/\/127\.0\.0\.1:\d+\/(api|mcp|\.well-known)/.test(text.replace(new RegExp(replay.url, 'g'), '')), `${what} names a loopback hub URL: ${text.slice(0, 600)}`);
}

async function json(url: string, init: RequestInit = {}): Promise<{ status: number; body: any; text: string; headers: Headers }> {
  const r = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
  const text = await r.text();
  let body: any = null;
  try { body = JSON.parse(text); } catch { /* not JSON */ }
  return { status: r.status, body, text, headers: r.headers };
}

async function hubSession(sub: string): Promise<string> {
  const jwt = await signPartnerJwt(Date.now(), { key: partnerKey, issuer: ISSUER, sub, email: `${sub}@example.com` });
  const ex = await json(`${PUBLIC}/api/v1/auth/exchangeToken`, { method: 'POST', headers: { authorization: `Bearer ${jwt}` } });
  assert.equal(ex.status, 200, ex.text);
  assertPublicOnly(ex.text, 'the exchange');
  return ex.body.access_token;
}

/** The request log line of request id `id` (the hub writes it when it answers; polled, bounded). */
async function logLine(id: string): Promise<{ req: { ip: string } }> {
  const until = Date.now() + 10_000;
  for (;;) {
    const line = hub.output().split('\n').find((l) => l.includes(`"id":"${id}"`) && l.includes('request completed'));
    if (line) return JSON.parse(line);
    assert.ok(Date.now() < until, `no log line for request ${id}:\n${hub.output().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A raw HTTP(S) request (Host and any header as given, which fetch does not allow), from `localAddress`. */
function raw(url: string, headers: Record<string, string>, localAddress?: string): Promise<{ status: number; text: string; headers: http.IncomingHttpHeaders }> {
  const u = new URL(url);
  const mod = u.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = mod.request({
      host: '127.0.0.1', port: u.port, path: u.pathname + u.search, method: 'GET', headers, localAddress,
      ...(u.protocol === 'https:' ? { ca: cert.cert, servername: HOST } : {}),
      timeout: 30_000,
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, text, headers: res.headers }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error(`no answer from ${url}`)));
    req.end();
  });
}

before(async () => {
  cert = selfSignedCert(HOST);
  // Every fetch of this process (the test's and TestBrowser's): trusts the test certificate,
  // resolves the public host to loopback, connects from an address the hub does not trust.
  setGlobalDispatcher(new Agent({ localAddress: CLIENT_ADDRESS, connect: { ca: [...tls.rootCertificates, cert.cert], lookup } }));

  jwks = new JwksServer();
  partnerKey = await makeKey();
  mcpKey = await makeKey();
  jwks.keys = [partnerKey.publicJwk, mcpKey.publicJwk];
  const jwksUrl = await jwks.start();
  replay = await startDropboxReplay(['Photos/a.jpg']);

  const data = tempDir('damhub-proxy-data-');
  const library = tempDir('damhub-proxy-lib-');
  photo = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#3a7' } }).png().toBuffer();
  fs.writeFileSync(path.join(library, 'photo.png'), photo);
  const add = await runCli(['partners', 'add', '--issuer', ISSUER, '--jwks-url', jwksUrl, '--data', data, '--id', 'proxy', '--rate-limit', '1000']);
  assert.equal(add.code, 0, add.stderr);
  const user = await runCli(['users', 'add', 'alice', '--data', data], { DAMHUB_USER_PASSWORD: PASSWORD });
  assert.equal(user.code, 0, user.stderr);

  // The public URL names nginx's port, known before nginx starts; nginx then gets the hub's.
  const httpsPort = await freePort();
  PUBLIC = `https://${HOST}:${httpsPort}`;
  const u = replay.url;
  hub = await startServer(['--data', data, '--library', library, '--public-url', PUBLIC], {
    DAMHUB_LOG_LEVEL: 'info',
    DAMHUB_TRUSTED_PROXIES: '127.0.0.1',
    DAMHUB_DROPBOX_CLIENT_ID: 'dbx-app',
    DAMHUB_DROPBOX_CLIENT_SECRET: 'dbx-secret',
    DAMHUB_DROPBOX_ENDPOINTS: JSON.stringify({ authorize: `${u}/oauth2/authorize`, token: `${u}/oauth2/token`, api: u }),
    DAMHUB_CONNECTOR_ALLOW_HOSTS: '127.0.0.1',
    DAMHUB_MCP_ISSUER: MCP_ISSUER,
    DAMHUB_MCP_JWKS_URL: jwksUrl,
  });
  nginx = await startNginx([new URL(hub.url).host], cert, { httpsPort });
});

after(async () => {
  await nginx?.close();
  await hub?.stop();
  await replay?.close();
  await jwks?.stop();
});

describe('nginx (deploy/nginx/damhub.conf) in front of the hub', () => {
  test('TLS 1.3 and 1.2 with the certificate, HTTP/2 offered; plain HTTP is a redirect to https', async () => {
    for (const version of ['TLSv1.3', 'TLSv1.2'] as const) {
      const got = await new Promise<{ protocol: string | null; alpn: string | false | null }>((resolve, reject) => {
        const s = tls.connect({ host: '127.0.0.1', port: nginx.httpsPort, servername: HOST, ca: cert.cert, minVersion: version, maxVersion: version, ALPNProtocols: ['h2', 'http/1.1'] }, () => {
          resolve({ protocol: s.getProtocol(), alpn: s.alpnProtocol });
          s.end();
        });
        s.on('error', reject);
      });
      assert.deepEqual(got, { protocol: version, alpn: 'h2' });
    }
    const plain = await raw(`http://127.0.0.1:${nginx.httpPort}/api/v1/auth/providers?x=1`, { host: HOST });
    assert.equal(plain.status, 301);
    assert.equal(plain.headers.location, `https://${HOST}/api/v1/auth/providers?x=1`);
    const hsts = await fetch(`${PUBLIC}/healthz`);
    assert.equal(hsts.status, 200);
    assert.match(hsts.headers.get('strict-transport-security') ?? '', /max-age=\d+/);
  });

  test('the token exchange, the provider list and the API reference carry the public https origin', async () => {
    const access = await hubSession('lister');
    const providers = await json(`${PUBLIC}/api/v1/auth/providers`, { headers: { authorization: `Bearer ${access}` } });
    assert.equal(providers.status, 200, providers.text);
    for (const p of providers.body as { id: string; loginUrl: string }[]) assert.ok(p.loginUrl.startsWith(`${PUBLIC}/api/v1/auth/login?`), p.loginUrl);
    assert.deepEqual((providers.body as { id: string }[]).map((p) => p.id).sort(), ['dropbox', 'library']);
    assertPublicOnly(providers.text, 'the provider list');
    const openapi = await json(`${PUBLIC}/api/v1/openapi.json`);
    assert.equal(openapi.status, 200);
    assert.deepEqual(openapi.body.servers, [{ url: PUBLIC }]);
    assertPublicOnly(openapi.text, 'the OpenAPI document');
  });

  test('library sign-in: the popup URL, the form page and its __Host-/Secure cookie, then browse and media URLs, all on the public origin', async () => {
    const access = await hubSession('alice-user');
    const start = await startDamLogin({ url: PUBLIC }, access, 'library');
    assert.ok(start.redirect_uri.startsWith(`${PUBLIC}/api/v1/auth/library/signin?state=`), start.redirect_uri);
    const browser = new TestBrowser();
    const page = await browser.open(start.redirect_uri);
    assert.equal(page.status, 200, page.body.slice(0, 300));
    assertPublicOnly(page.body, 'the sign-in page');
    const cookie = String(page.headers['set-cookie']);
    assert.match(cookie, /^__Host-damhub-login-[A-Za-z0-9_-]+=[A-Za-z0-9_-]+; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Lax; Secure$/, 'the https public URL makes the cookie __Host- and Secure, although the hub itself is on http');
    const form = formOf(page);
    assert.ok(form.action.startsWith(`${PUBLIC}/`), form.action);
    const done = await browser.post(form.action, { state: form.state, username: 'alice', password: PASSWORD });
    assert.equal(done.status, 200, done.body.slice(0, 300));
    assertPublicOnly(done.body, 'the signed-in page');
    const tokens = await pollDamLogin({ url: PUBLIC }, start.state);
    assert.equal(typeof tokens.access_token, 'string', JSON.stringify(tokens));

    const list = await json(`${PUBLIC}/api/v1/assets/folder/root`, { headers: { authorization: `Bearer ${access}`, 'provider-authorization': `Bearer ${tokens.access_token}` } });
    assert.equal(list.status, 200, list.text);
    assertPublicOnly(list.text, 'the browse page');
    const asset = (list.body.assets as { name: string; downloadUrl: string; thumbnailUrl: string }[]).find((a) => a.name === 'photo.png');
    assert.ok(asset, list.text);
    assert.ok(asset.downloadUrl.startsWith(`${PUBLIC}/api/v1/assets/download/`), asset.downloadUrl);
    assert.ok(asset.thumbnailUrl.startsWith(`${PUBLIC}/api/v1/assets/thumbnail/`), asset.thumbnailUrl);
    // The links work through the proxy (they are the grant: no session headers).
    const download = await fetch(asset.downloadUrl);
    assert.equal(download.status, 200);
    assert.deepEqual(Buffer.from(await download.arrayBuffer()), photo, 'the original, byte for byte');
    const thumb = await fetch(asset.thumbnailUrl);
    assert.equal(thumb.status, 200);
    assert.match(thumb.headers.get('content-type') ?? '', /^image\//);
    await thumb.arrayBuffer();
  });

  test('an OAuth connector (Dropbox replay): the confirm page, the redirect_uri sent to the vendor and the callback are on the public origin', async () => {
    const access = await hubSession('dropbox-user');
    const start = await startDamLogin({ url: PUBLIC }, access, 'dropbox');
    assert.ok(start.redirect_uri.startsWith(`${PUBLIC}/api/v1/auth/dropbox/connect?state=`), start.redirect_uri);
    const browser = new TestBrowser();
    const authorize = new URL(await continueToVendor(browser, start.redirect_uri));
    assert.equal(authorize.origin, replay.url);
    assert.equal(authorize.searchParams.get('redirect_uri'), `${PUBLIC}/api/v1/auth/callback/dropbox`);
    assert.ok([...browser.cookies.keys()].every((k) => k.startsWith('__Host-')), [...browser.cookies.keys()].join());
    const back = await vendorConsent(browser, authorize.href);
    assert.ok(back.startsWith(`${PUBLIC}/api/v1/auth/callback/dropbox?`), back);
    const cb = await browser.open(back);
    assert.equal(cb.status, 200, cb.body.slice(0, 300));
    assertPublicOnly(cb.body, 'the callback page');
    const tokens = await pollDamLogin({ url: PUBLIC }, start.state);
    assert.equal(typeof tokens.access_token, 'string', JSON.stringify(tokens));
  });

  test('/mcp: the protected-resource metadata and the 401 challenge name the public origin; a token for the public resource is accepted', async () => {
    for (const p of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
      const meta = await json(`${PUBLIC}${p}`);
      assert.equal(meta.status, 200, meta.text);
      assert.equal(meta.body.resource, `${PUBLIC}/mcp`);
      assert.deepEqual(meta.body.authorization_servers, [MCP_ISSUER]);
      assert.equal(meta.body.resource_documentation, `${PUBLIC}/api/v1/docs`);
      assertPublicOnly(meta.text, p);
    }
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'proxy-test', version: '1' } } });
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const anonymous = await json(`${PUBLIC}/mcp`, { method: 'POST', headers, body });
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.headers.get('www-authenticate'), `Bearer resource_metadata="${PUBLIC}/.well-known/oauth-protected-resource/mcp"`);
    const token = await signPartnerJwt(Date.now(), { key: mcpKey, issuer: MCP_ISSUER, sub: 'assistant', email: 'assistant@example.com', audience: `${PUBLIC}/mcp` });
    const ok = await json(`${PUBLIC}/mcp`, { method: 'POST', headers: { ...headers, authorization: `Bearer ${token}` }, body });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.result.serverInfo.name, 'damhub');
  });

  test('forged Host, X-Forwarded-Host and X-Forwarded-Proto change no URL the hub hands out, through nginx or from the trusted address itself', async () => {
    const access = await hubSession('forger');
    const forged = { host: 'evil.example', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'http', authorization: `Bearer ${access}` };
    for (const [where, base] of [['through nginx', `https://127.0.0.1:${nginx.httpsPort}`], ['directly, from the trusted proxy address', hub.url]] as const) {
      const r = await raw(`${base}/api/v1/auth/providers`, forged);
      assert.equal(r.status, 200, `${where}: ${r.text}`);
      for (const p of JSON.parse(r.text) as { loginUrl: string }[]) assert.ok(p.loginUrl.startsWith(`${PUBLIC}/`), `${where}: ${p.loginUrl}`);
      assert.doesNotMatch(r.text, /evil\.example/, where);
    }
  });

  test('X-Forwarded-For names the client only when it comes from a trusted proxy', async () => {
    const forgedFor = '203.0.113.9';
    // Through nginx: nginx appends the address it saw (127.0.0.5) to the client's forged list;
    // the hub trusts nginx's socket (127.0.0.1) and takes the nearest untrusted entry.
    // (/api/v1/auth/providers: answered 401 without a session, and logged at info, unlike /healthz.)
    const via = await raw(`https://127.0.0.1:${nginx.httpsPort}/api/v1/auth/providers`, { host: HOST, 'x-forwarded-for': forgedFor, 'x-request-id': 'xff-through-nginx' }, CLIENT_ADDRESS);
    assert.equal(via.status, 401);
    assert.equal((await logLine('xff-through-nginx')).req.ip, CLIENT_ADDRESS, 'the address nginx saw, not the forged one');
    // Straight to the hub from an address it does not trust: the header is ignored.
    const direct = await raw(`${hub.url}/api/v1/auth/providers`, { 'x-forwarded-for': forgedFor, 'x-request-id': 'xff-untrusted' }, CLIENT_ADDRESS);
    assert.equal(direct.status, 401);
    assert.equal((await logLine('xff-untrusted')).req.ip, CLIENT_ADDRESS, 'the socket address');
    // From the trusted address: believed.
    const trusted = await raw(`${hub.url}/api/v1/auth/providers`, { 'x-forwarded-for': forgedFor, 'x-request-id': 'xff-trusted' }, '127.0.0.1');
    assert.equal(trusted.status, 401);
    assert.equal((await logLine('xff-trusted')).req.ip, forgedFor);
    assert.equal(nginx.errorLog().match(/\[(emerg|alert|crit)\]/g), null, nginx.errorLog());
  });

  test('the hub never builds a URL from request headers: src/ reads no Host, X-Forwarded-* , request.hostname or request.protocol', () => {
    const offenders: string[] = [];
    const walk = (dir: string): void => {
      for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.name.endsWith('.ts')) {
          fs.readFileSync(p, 'utf8').split('\n').forEach((line, i) => {
            if (/^\s*(\/\/|\*|\/\*)/.test(line)) return; // a comment may name them
            if (/\b(req|request)\.(hostname|host|protocol|ips)\b|headers\s*(\.\s*host\b|\[\s*['"](host|x-forwarded-[a-z]+|forwarded)['"])/i.test(line)) offenders.push(`${path.relative(REPO_ROOT, p)}:${i + 1}: ${line.trim()}`);
          });
        }
      }
    };
    walk(path.join(REPO_ROOT, 'src'));
    assert.deepEqual(offenders, []);
  });
});
