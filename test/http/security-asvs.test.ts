/**
 * Security checks mapped to OWASP ASVS 4.0.3 level 2 (docs/security.md lists every item and the
 * test that covers it; many live in the area suites). This file holds the ones no area suite had:
 * kid injection and kid floods, forged hub tokens, CORS per partner, header injection, oversized
 * headers and bodies and slow clients on real sockets, security headers on every HTML page,
 * secrets in the log stream of the real process, and constant-time comparison of secrets.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { AddressInfo } from 'node:net';
import { SignJWT } from 'jose';
import { assertError, bearer, startTestHub, tempDir, type TestHub } from '../helpers/hub.js';
import { TestBrowser } from '../helpers/browser.js';
import { solidJpeg, startLibraryHub, writeFiles, type LibraryHarness } from '../helpers/library.js';
import { JwksServer, makeKey, signPartnerJwt } from '../helpers/partner.js';
import { REPO_ROOT, runCli, startServer } from '../helpers/process.js';

/** Sends raw bytes on a fresh connection and returns everything the server answers until it closes. */
function raw(port: number, bytes: string | Buffer, opts: { endAfterWrite?: boolean } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let out = '';
    s.on('data', (d) => (out += d));
    s.on('error', (e) => ((e as NodeJS.ErrnoException).code === 'ECONNRESET' ? resolve(out) : reject(e)));
    s.on('close', () => resolve(out));
    s.write(bytes, () => {
      if (opts.endAfterWrite) s.end();
    });
  });
}

function envelopeOf(response: string): { status: number; body: any; headers: string } {
  const [head, ...rest] = response.split('\r\n\r\n');
  return { status: Number(/^HTTP\/1\.1 (\d+)/.exec(head!)?.[1]), body: JSON.parse(rest.join('\r\n\r\n')), headers: head! };
}

describe('partner JWT: kid injection and kid floods (ASVS 3.5.3, 13.1.1)', () => {
  let t: TestHub;
  let jwks: JwksServer;
  let key: Awaited<ReturnType<typeof makeKey>>;
  before(async () => {
    jwks = new JwksServer();
    key = await makeKey('good-kid');
    jwks.keys = [key.publicJwk];
    const url = await jwks.start();
    t = await startTestHub({ partner: { jwksUrl: url, jwks: null } });
  });
  after(async () => {
    await t.close();
    await jwks.stop();
  });

  test('hostile kids (traversal, SQL, URL, NUL, 10 KB, non-strings) → 401 hub-sdk-token-invalid; a flood of them costs at most one refetch', async () => {
    const kids: unknown[] = ['../../../../etc/passwd', "' OR '1'='1", 'http://127.0.0.1:1/jwks', 'good-kid\u0000', 'k'.repeat(10_000), '%2e%2e%2fkeys.json', 42, { $ne: null }, ['good-kid'], null, ''];
    const fetchesBefore = jwks.fetches;
    for (const kid of kids) {
      const header: Record<string, unknown> = { alg: 'RS256', typ: 'JWT' };
      if (kid !== null) header.kid = kid;
      const jwt = await new SignJWT({ sub: 'u', email: 'u@example.com', aud: 'urn:damhub' }).setProtectedHeader(header as { alg: string }).setIssuer(t.partner.issuer)
        .setIssuedAt(Math.floor(t.clock.now() / 1000)).setExpirationTime(Math.floor(t.clock.now() / 1000) + 300).sign(key.privateKey);
      assertError(await t.app.inject({ method: 'POST', url: '/api/v1/auth/exchangeToken', headers: { authorization: bearer(jwt) } }), 'hub-sdk-token-invalid', 401);
    }
    assert.ok(jwks.fetches - fetchesBefore <= 2, `${jwks.fetches - fetchesBefore} JWKS fetches for ${kids.length} hostile kids`);
    // The partner's real key still works afterwards.
    const good = await signPartnerJwt(t.clock.now(), { key, issuer: t.partner.issuer });
    assert.equal((await t.app.inject({ method: 'POST', url: '/api/v1/auth/exchangeToken', headers: { authorization: bearer(good) } })).statusCode, 200);
  });
});

describe('forged hub tokens (ASVS 3.5.3)', () => {
  let t: TestHub;
  before(async () => {
    t = await startTestHub();
  });
  after(() => t.close());

  test('alg none, an RS256 header over the HMAC signature, a stripped signature, a hostile kid, claims swapped between two users → 401', async () => {
    const a = await t.login({ sub: 'forge-a' });
    const b = await t.login({ sub: 'forge-b' });
    const [h, p, s] = a.access_token.split('.') as [string, string, string];
    const header = JSON.parse(Buffer.from(h, 'base64url').toString());
    const enc = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const bClaims = b.access_token.split('.')[1]!;
    const forged = [
      `${enc({ ...header, alg: 'none' })}.${p}.`,
      `${enc({ ...header, alg: 'RS256' })}.${p}.${s}`,
      `${h}.${p}.`,
      `${enc({ ...header, kid: '../../keys.json' })}.${p}.${s}`,
      `${h}.${bClaims}.${s}`,
      `${h}.${p}.${s}x`,
    ];
    for (const tok of forged) assertError(await t.app.inject({ url: '/api/v1/auth/checkToken', headers: { authorization: bearer(tok) } }), 'hub-access-token-invalid', 401);
    assert.equal((await t.app.inject({ url: '/api/v1/auth/checkToken', headers: { authorization: bearer(a.access_token) } })).statusCode, 200);
  });
});

describe('CORS restricted to each partner\'s registered origins (ASVS 14.5.3)', () => {
  let t: TestHub;
  let other: { key: Awaited<ReturnType<typeof makeKey>>; issuer: string };
  before(async () => {
    t = await startTestHub({ partner: { allowedOrigins: ['https://a.partner.example'] } });
    other = { key: await makeKey(), issuer: 'https://b.partner.example/' };
    await t.hub.stores.partners.create({
      id: 'pb', name: 'Partner B', issuer: other.issuer, audience: 'urn:damhub', jwksUrl: null, jwks: { keys: [other.key.publicJwk] },
      maxTokenAgeSec: 3600, rateLimitPerMin: 60, allowedOrigins: ['https://b.partner.example'], enabled: true,
    }, t.clock.now());
  });
  after(() => t.close());

  test('a partner\'s token from another partner\'s origin → 403 hub-access-denied naming the origin check; its own origin, the hub\'s and none → 200', async () => {
    const a = await t.login();
    const check = (origin?: string) => t.app.inject({ url: '/api/v1/auth/checkToken', headers: { authorization: bearer(a.access_token), ...(origin ? { origin } : {}) } });
    const denied = assertError(await check('https://b.partner.example'), 'hub-access-denied', 403);
    assert.match(denied.error.details, /origin check/);
    const own = await check('https://a.partner.example');
    assert.equal(own.statusCode, 200);
    assert.equal(own.headers['access-control-allow-origin'], 'https://a.partner.example');
    assert.equal((await check('http://hub.test')).statusCode, 200);
    assert.equal((await check()).statusCode, 200);
    assertError(await check('https://evil.example'), 'hub-access-denied', 403);
  });

  test('exchange: partner A\'s JWT sent from partner B\'s origin → 403; from A\'s origin it works', async () => {
    const jwt = await t.jwt({ sub: 'cors-x' });
    assertError(await t.app.inject({ method: 'POST', url: '/api/v1/auth/exchangeToken', headers: { authorization: bearer(jwt), origin: 'https://b.partner.example' } }), 'hub-access-denied', 403);
    const ok = await t.app.inject({ method: 'POST', url: '/api/v1/auth/exchangeToken', headers: { authorization: bearer(await t.jwt({ sub: 'cors-y' })), origin: 'https://a.partner.example' } });
    assert.equal(ok.statusCode, 200, ok.body);
    const bJwt = await signPartnerJwt(t.clock.now(), { key: other.key, issuer: other.issuer, sub: 'b-user' });
    assert.equal((await t.app.inject({ method: 'POST', url: '/api/v1/auth/exchangeToken', headers: { authorization: bearer(bJwt), origin: 'https://b.partner.example' } })).statusCode, 200);
  });

  test('a preflight from an origin no enabled partner registered gets no CORS headers', async () => {
    const res = await t.app.inject({ method: 'OPTIONS', url: '/api/v1/auth/checkToken', headers: { origin: 'https://evil.example', 'access-control-request-method': 'GET' } });
    assert.equal(res.headers['access-control-allow-origin'], undefined);
  });
});

describe('on real sockets: header injection, oversized headers and bodies, slow clients (ASVS 5.1.x, 12.1.1, 13.1.x)', () => {
  let lib: LibraryHarness;
  let port: number;
  let evilId: string;
  before(async () => {
    lib = await startLibraryHub({ 'docs/evil\r\nSet-Cookie: pwned=1.jpg': await solidJpeg(20, 20, [9, 9, 9]) }, { config: { bodyLimitBytes: 64 * 1024 } });
    await lib.t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (lib.t.app.server.address() as AddressInfo).port;
    const page = (await lib.get('/api/v1/assets/search?query=evil')).body;
    evilId = page.assets[0].id;
  });
  after(() => lib.t.close());

  test('a file name with CR/LF cannot inject a response header (Content-Disposition is percent-encoded)', async () => {
    const a = (await lib.get(`/api/v1/assets/asset/${encodeURIComponent(evilId)}`)).body;
    const res = await fetch(a.downloadUrl.replace('http://hub.test', `http://127.0.0.1:${port}`));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('set-cookie'), null);
    assert.match(res.headers.get('content-disposition')!, /^attachment; filename\*=UTF-8''evil%0D%0ASet-Cookie%3A%20pwned%3D1\.jpg$/);
  });

  test('CR or LF inside a request header → 400 envelope, never echoed', async () => {
    const out = await raw(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nx-request-id: a\rSet-Cookie: pwned=1\r\n\r\n');
    const e = envelopeOf(out);
    assert.equal(e.status, 400);
    assert.equal(e.body.errorCode, 'hub-validation-error');
    assert.ok(!/set-cookie/i.test(e.headers));
  });

  test('headers over 16 KiB → 431 in the envelope; the server keeps serving', async () => {
    const out = await raw(port, `GET /healthz HTTP/1.1\r\nHost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`);
    const e = envelopeOf(out);
    assert.equal(e.status, 431);
    assert.equal(e.body.errorCode, 'hub-validation-error');
    assert.equal(e.body.error.status, 431);
    assert.match(e.headers, /x-request-id: \S+/);
    assert.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
  });

  test('a body over the limit → 413 envelope before the whole body is read; a declared length over it is refused the same', async () => {
    const big = Buffer.alloc(200 * 1024, 0x61);
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/assets/search`, { method: 'POST', headers: { ...lib.headers, 'content-type': 'application/json' }, body: Buffer.concat([Buffer.from('{"dataBase64":"'), big, Buffer.from('"}')]) });
    assert.equal(res.status, 413);
    assert.equal(((await res.json()) as { errorCode: string }).errorCode, 'hub-payload-too-large');
    const out = await raw(port, `POST /api/v1/auth/exchangeToken HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${10 * 1024 * 1024}\r\nConnection: close\r\n\r\n{"email":`);
    assert.equal(envelopeOf(out).status, 413);
  });

  test('slow clients (slowloris): 50 connections dribbling headers do not stop others from being served', async () => {
    const socks: net.Socket[] = [];
    for (let i = 0; i < 50; i++) {
      const s = net.connect(port, '127.0.0.1');
      s.on('error', () => {});
      s.write('GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ');
      socks.push(s);
    }
    for (const s of socks) s.write('a');
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/assets/folder/root`, { headers: lib.headers });
    assert.equal(res.status, 200);
    for (const s of socks) s.destroy();
  });
});

test('every HTML page carries CSP with frame-ancestors \'none\', nosniff and no-store or the plugin\'s CSP (ASVS 14.4.3, 14.4.4, 14.4.7)', async () => {
  const lib = await startLibraryHub({ 'a.txt': 'x' }, { config: { demo: true } });
  try {
    const start = await lib.t.app.inject({ method: 'POST', url: '/api/v1/auth/login?provider=library&polling=true', headers: { authorization: lib.headers.authorization } });
    const form = new URL(start.json().redirect_uri);
    const pages = ['/demo', form.pathname + form.search, '/api/v1/auth/library/signin?state=unknown', '/api/v1/docs/', '/api/v1/docs/static/index.html'];
    let html = 0;
    for (const url of pages) {
      let res = await lib.t.app.inject({ url });
      if (res.statusCode === 302) res = await lib.t.app.inject({ url: String(res.headers.location) });
      if (!String(res.headers['content-type']).startsWith('text/html')) continue;
      html++;
      assert.match(String(res.headers['content-security-policy']), /frame-ancestors 'none'/, url);
      assert.match(String(res.headers['content-security-policy']), /default-src 'self'/, url);
      assert.equal(res.headers['x-content-type-options'], 'nosniff', url);
    }
    assert.ok(html >= 4, `only ${html} HTML pages found`);
  } finally {
    await lib.t.close();
  }
});

test('no secret reaches the log stream of the real process, at trace level, on success and failure paths (ASVS 7.1.1, 7.1.2)', async () => {
  const data = tempDir();
  const root = tempDir('damhub-loglib-');
  writeFiles(root, { 'pic.jpg': await solidJpeg(16, 16, [1, 2, 3]) });
  const key = await makeKey();
  const issuer = 'https://partner.logs.example/';
  const jwksFile = path.join(data, '..', `jwks-${path.basename(data)}.json`);
  fs.writeFileSync(jwksFile, JSON.stringify({ keys: [key.publicJwk] }));
  assert.equal((await runCli(['partners', 'add', '--issuer', issuer, '--jwks-file', jwksFile, '--data', data])).code, 0);
  const password = 'pw-Sup3r-s3cret-phrase';
  assert.equal((await runCli(['users', 'add', 'logger', '--password-stdin', '--data', data], {}, password)).code, 0);
  const server = await startServer(['--data', data, '--library', root], { DAMHUB_LOG_LEVEL: 'trace' });
  const secrets: string[] = [password];
  try {
    const api = `${server.url}/api/v1`;
    const jwt = await signPartnerJwt(Date.now(), { key, issuer, sub: 'log-user' });
    secrets.push(jwt);
    const pair = (await (await fetch(`${api}/auth/exchangeToken`, { method: 'POST', headers: { authorization: bearer(jwt) } })).json()) as { access_token: string; refresh_token: string };
    secrets.push(pair.access_token, pair.refresh_token);
    // Replay (rejected), then the DAM login through the real form.
    await fetch(`${api}/auth/exchangeToken`, { method: 'POST', headers: { authorization: bearer(jwt) } });
    const start = (await (await fetch(`${api}/auth/login?provider=library&polling=true`, { method: 'POST', headers: { authorization: bearer(pair.access_token) } })).json()) as { state: string };
    secrets.push(start.state);
    const browser = new TestBrowser();
    const form = await browser.open(`${api}/auth/library/signin?state=${encodeURIComponent(start.state)}`);
    // The login's browser cookie is a secret too: it must not be logged either.
    secrets.push(...browser.cookies.values());
    assert.equal(form.status, 200);
    await browser.post(`${api}/auth/library/signin`, { state: start.state, username: 'logger', password: 'wrong-guess-123' });
    await browser.post(`${api}/auth/library/signin`, { state: start.state, username: 'logger', password });
    const dam = (await (await fetch(`${api}/auth/login?state=${start.state}&polling=true`)).json()) as { access_token: string; refresh_token: string };
    secrets.push(dam.access_token, dam.refresh_token, 'wrong-guess-123');
    const h = { authorization: bearer(pair.access_token), 'provider-authorization': bearer(dam.access_token) };
    const page = (await (await fetch(`${api}/assets/folder/root`, { headers: h })).json()) as { assets: { downloadUrl: string }[] };
    const media = new URL(page.assets[0]!.downloadUrl);
    secrets.push(media.searchParams.get('sig')!);
    await (await fetch(media)).arrayBuffer();
    await fetch(`${api}/auth/refreshToken`, { headers: { authorization: bearer(pair.access_token), 'provider-authorization': bearer(pair.refresh_token) } });
    await fetch(`${api}/auth/checkToken`, { headers: { authorization: bearer(`${pair.access_token}x`) } });
    const adminKey = fs.readFileSync(path.join(data, 'admin.key'), 'utf8').trim();
    secrets.push(adminKey);
    await fetch(`${api}/admin/partners`, { headers: { authorization: bearer(adminKey) } });
    await fetch(`${api}/admin/partners`, { headers: { authorization: bearer(`${adminKey}x`) } });
    await fetch(`${api}/auth/logout`, { headers: { authorization: bearer(pair.access_token) } });
  } finally {
    await server.stop();
  }
  const log = server.output();
  assert.ok(log.split('\n').length > 20, 'the trace log was captured');
  for (const s of secrets) {
    assert.ok(s && s.length >= 8);
    assert.ok(!log.includes(s), `a secret (${s.slice(0, 6)}…) is in the log`);
    // Also no large fragment of it (a token cut at a dot, say).
    for (const part of s.split('.')) if (part.length >= 24) assert.ok(!log.includes(part), `a part of a secret (${part.slice(0, 6)}…) is in the log`);
  }
});

test('secrets are compared in constant time: every comparison site uses timingSafeEqual, no secret is compared with === (ASVS 2.9.x, 6.2.x)', () => {
  const src = path.join(REPO_ROOT, 'src');
  const files = fs.readdirSync(src, { recursive: true, withFileTypes: true }).filter((f) => f.isFile() && f.name.endsWith('.ts')).map((f) => path.join(f.parentPath, f.name));
  // Where secrets are compared: admin key, password hashes, media URL signatures. (Cursors are
  // AES-256-GCM: their tag is checked inside OpenSSL's decipher.final, no comparison of ours.)
  for (const rel of ['http/auth.ts', 'providers/library/accounts.ts', 'content/media-urls.ts']) {
    assert.match(fs.readFileSync(path.join(src, rel), 'utf8'), /timingSafeEqual\(/, rel);
  }
  const suspicious = /\b(\w*(?:sig|mac|secret|password|adminKey|hash|digest)\w*)\s*(?:===|!==|==|!=)\s*(\w+)/gi;
  const found: string[] = [];
  for (const f of files) {
    const text = fs.readFileSync(f, 'utf8');
    for (const m of text.matchAll(suspicious)) {
      const [all, left, right] = m as unknown as [string, string, string];
      // Type tags, lengths, algorithm names and nullish checks are not secrets.
      if (/length|size|type|typ|alg|use|undefined|null|algorithm|kind|status/i.test(all) || /^(hashAlgorithm|hashes|hashSecret)$/i.test(left) || /^['"]/.test(right)) continue;
      if (/\.(length|size)\b/.test(all)) continue;
      found.push(`${path.relative(src, f)}: ${all}`);
    }
  }
  assert.deepEqual(found, [], 'comparisons of secret-looking values without timingSafeEqual');
});

test('library sign-in: five wrong passwords end the login state; the right password afterwards does not revive it (ASVS 2.2.1)', async () => {
  const lib = await startLibraryHub({ 'a.txt': 'x' });
  try {
    const start = await lib.t.app.inject({ method: 'POST', url: '/api/v1/auth/login?provider=library&polling=true', headers: { authorization: lib.headers.authorization } });
    const { state, redirect_uri } = start.json();
    const browser = new TestBrowser(lib.t);
    assert.equal((await browser.open(redirect_uri)).status, 200);
    const submit = (password: string) => browser.post('/api/v1/auth/library/signin', { state, username: 'alice', password });
    for (let i = 0; i < 4; i++) assert.equal((await submit(`guess-${i}`)).status, 401);
    const fifth = await submit('guess-4');
    assert.match(fifth.body, /Too many failed attempts/);
    assert.equal((await submit('correct horse')).status, 400);
    const poll = await lib.t.app.inject({ url: `/api/v1/auth/login?state=${encodeURIComponent(state)}&polling=true` });
    assert.equal(poll.json().access_token, undefined);
    assert.match(poll.json().error, /too many failed/);
  } finally {
    await lib.t.close();
  }
});
