/**
 * Reference images fetched from URLs: a local HTTP server plays every hostile or broken host (one
 * that hangs, one that redirects in a loop, one that streams without end, one that lies about its
 * content type), and the SSRF policy refuses private addresses unless they are allowlisted.
 * Timeouts are configured short; nothing here sleeps.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { AddressPolicy, FetchError, safeFetch } from '../../src/net/safe-fetch.js';
import { assertError } from '../helpers/hub.js';
import { startLibraryHub, type LibraryHarness } from '../helpers/library.js';
import { sceneJpeg } from '../helpers/scenes.js';
import { assetIdFor } from '../../src/providers/library/scanner.js';

const api = '/api/v1';
let server: http.Server;
let base: string;
let picture: Buffer;
let lib: LibraryHarness; // allowlists 127.0.0.1
let strict: LibraryHarness; // no allowlist
const hanging = new Set<http.ServerResponse>();

before(async () => {
  picture = await sceneJpeg(1);
  server = http.createServer((req, res) => {
    const u = new URL(req.url!, 'http://x');
    switch (u.pathname) {
      case '/picture.jpg':
        res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': picture.length });
        return res.end(picture);
      case '/no-type':
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        return res.end(picture);
      case '/text-as-jpeg':
        res.writeHead(200, { 'content-type': 'image/jpeg' });
        return res.end('<html>not a picture</html>');
      case '/hang':
        hanging.add(res); // never answers
        return;
      case '/slow-body':
        res.writeHead(200, { 'content-type': 'image/jpeg' });
        res.write(picture.subarray(0, 100));
        hanging.add(res); // the rest never comes
        return;
      case '/loop':
        res.writeHead(302, { location: '/loop' });
        return res.end();
      case '/hop': {
        const n = Number(u.searchParams.get('n'));
        res.writeHead(301, { location: n > 0 ? `/hop?n=${n - 1}` : '/picture.jpg' });
        return res.end();
      }
      case '/to-ipv6-loopback':
        res.writeHead(302, { location: `http://[::1]:${(server.address() as AddressInfo).port}/picture.jpg` });
        return res.end();
      case '/to-file':
        res.writeHead(302, { location: 'file:///etc/passwd' });
        return res.end();
      case '/endless': {
        res.writeHead(200, { 'content-type': 'image/jpeg' });
        const chunk = Buffer.alloc(64 * 1024, 0xff);
        const pump = () => {
          while (res.write(chunk)) { /* until the socket pushes back */ }
        };
        res.on('drain', pump);
        res.on('error', () => undefined);
        pump();
        return;
      }
      case '/announces-5gb':
        res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': String(5 * 1024 ** 3) });
        res.write(picture.subarray(0, 10));
        hanging.add(res);
        return;
      case '/missing':
        res.writeHead(404);
        return res.end();
      default:
        res.writeHead(500);
        return res.end();
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const fetchConfig = { imageFetchTimeoutMs: 600, imageFetchConnectTimeoutMs: 300, imageMaxBytes: 1024 * 1024 };
  lib = await startLibraryHub({ 'One/scene-1.jpg': picture }, { config: { ...fetchConfig, imageFetchAllow: ['127.0.0.1'] } });
  strict = await startLibraryHub({ 'One/scene-1.jpg': picture }, { config: fetchConfig });
});

after(async () => {
  for (const r of hanging) r.destroy();
  server.closeAllConnections();
  server.close();
  await lib.t.close();
  await strict.t.close();
});

const searchOn = (h: LibraryHarness, ref: string) => h.t.app.inject({ method: 'POST', url: `${api}/assets/search`, headers: h.headers, payload: { dataBase64: ref } });
const search = (ref: string) => searchOn(lib, ref);

test('an allowlisted URL is fetched and searched like an inline image', async () => {
  const res = await search(`${base}/picture.jpg`);
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json().assets[0].id, assetIdFor('One/scene-1.jpg'));
});

test('the content is judged by decoding, not by Content-Type', async () => {
  assert.equal((await search(`${base}/no-type`)).statusCode, 200);
  const body = assertError(await search(`${base}/text-as-jpeg`), 'hub-validation-error', 400);
  assert.match(body.error.details, /not an image/);
});

test('a loopback URL is refused without an allowlist entry (SSRF)', async () => {
  const body = assertError(await searchOn(strict, `${base}/picture.jpg`), 'hub-access-denied', 403);
  assert.match(body.error.details, /127\.0\.0\.1 is a loopback address/);
  assertError(await searchOn(strict, `http://localhost:${new URL(base).port}/picture.jpg`), 'hub-access-denied', 403);
});

test('a redirect is checked again: to a non-allowlisted address or another scheme it is refused', async () => {
  const body = assertError(await search(`${base}/to-ipv6-loopback`), 'hub-access-denied', 403);
  assert.match(body.error.details, /::1 is a loopback address/);
  assertError(await search(`${base}/to-file`), 'hub-validation-error', 400);
});

test('redirects are followed up to the cap; a loop is a 400 naming the cause', async () => {
  assert.equal((await search(`${base}/hop?n=2`)).statusCode, 200, 'three redirects are fine');
  const body = assertError(await search(`${base}/loop`), 'hub-validation-error', 400);
  assert.match(body.error.details, /more than 3 redirects/);
});

test('a host that hangs is a 400 after the configured timeout, and the hub answers others meanwhile', async () => {
  const pending = search(`${base}/hang`);
  const other = await lib.get(`${api}/auth/providers`);
  assert.equal(other.status, 200);
  const body = assertError(await pending, 'hub-validation-error', 400);
  assert.match(body.error.details, /timed out after 600 ms/);
  assertError(await search(`${base}/slow-body`), 'hub-validation-error', 400);
});

test('an endless body is cut at the byte limit: 413', async () => {
  const body = assertError(await search(`${base}/endless`), 'hub-payload-too-large', 413);
  assert.match(body.error.details, /over the limit of 1048576 bytes/);
  assertError(await search(`${base}/announces-5gb`), 'hub-payload-too-large', 413);
});

test('an upstream error status is a 400 naming it', async () => {
  const body = assertError(await search(`${base}/missing`), 'hub-validation-error', 400);
  assert.match(body.error.details, /HTTP 404/);
});

test('a connection that cannot be made fails fast with a 400', async () => {
  const closed = http.createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const port = (closed.address() as AddressInfo).port;
  await new Promise((r) => closed.close(r));
  const body = assertError(await search(`http://127.0.0.1:${port}/x.jpg`), 'hub-validation-error', 400);
  assert.match(body.error.details, /ECONNREFUSED/);
});

test('the address policy: public unicast only, unless allowlisted', () => {
  const p = new AddressPolicy([]);
  for (const a of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1', '255.255.255.255', '::1', '::', 'fe80::1', 'fd00:ec2::254', 'fc00::1', 'ff02::1', '::ffff:127.0.0.1', '::ffff:169.254.169.254', '64:ff9b::7f00:1', '2002:7f00:1::1']) {
    assert.ok(p.refusal(a), `${a} must be refused`);
  }
  for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8']) assert.equal(p.refusal(a), null, `${a} is public`);
  const allow = new AddressPolicy(['10.0.0.0/8', '::1', 'Images.Internal.Example']);
  assert.equal(allow.refusal('10.20.30.40'), null);
  assert.equal(allow.refusal('::1'), null);
  assert.ok(allow.refusal('192.168.0.1'));
  assert.ok(allow.hostAllowed('images.internal.example'));
});

/**
 * Every special-purpose range of the IANA IPv4 and IPv6 registries, with the rule the refusal
 * must name (ipaddr.js's range name, or the policy's own ipv4Compatible / notGlobalUnicast) and
 * the range it must quote.
 */
const SPECIAL: [address: string, rule: string, range: string][] = [
  ['0.1.2.3', 'unspecified', '0.0.0.0/8'],
  ['10.1.2.3', 'private', '10.0.0.0/8'],
  ['172.31.255.254', 'private', '172.16.0.0/12'],
  ['192.168.1.1', 'private', '192.168.0.0/16'],
  ['100.64.0.1', 'carrierGradeNat', '100.64.0.0/10'],
  ['100.127.255.254', 'carrierGradeNat', '100.64.0.0/10'],
  ['127.0.0.1', 'loopback', '127.0.0.0/8'],
  ['127.255.255.254', 'loopback', '127.0.0.0/8'],
  ['169.254.169.254', 'linkLocal', '169.254.0.0/16'],
  ['192.0.0.170', 'reserved', '192.0.0.0/24'],
  ['192.0.2.1', 'reserved', '192.0.2.0/24'],
  ['192.88.99.1', 'reserved', '192.88.99.0/24'],
  ['198.18.0.1', 'reserved', '198.18.0.0/15'],
  ['198.19.255.254', 'reserved', '198.18.0.0/15'],
  ['198.51.100.7', 'reserved', '198.51.100.0/24'],
  ['203.0.113.9', 'reserved', '203.0.113.0/24'],
  ['240.0.0.1', 'reserved', '240.0.0.0/4'],
  ['224.0.0.1', 'multicast', '224.0.0.0/4'],
  ['239.255.255.250', 'multicast', '224.0.0.0/4'],
  ['255.255.255.255', 'broadcast', '255.255.255.255/32'],
  ['192.31.196.1', 'as112', '192.31.196.0/24'],
  ['192.175.48.1', 'as112', '192.175.48.0/24'],
  ['192.52.193.1', 'amt', '192.52.193.0/24'],
  ['::', 'unspecified', '::/128'],
  ['::1', 'loopback', '::1/128'],
  ['::7f00:1', 'ipv4Compatible', '::/96'],
  ['::a00:1', 'ipv4Compatible', '::/96'],
  ['::808:808', 'ipv4Compatible', '::/96'],
  ['::ffff:127.0.0.1', 'loopback', '127.0.0.0/8'],
  ['::ffff:169.254.169.254', 'linkLocal', '169.254.0.0/16'],
  ['::ffff:0:a00:1', 'rfc6145', '::ffff:0:0:0/96'],
  ['64:ff9b::7f00:1', 'loopback', '127.0.0.0/8'],
  ['64:ff9b::a00:1', 'private', '10.0.0.0/8'],
  ['64:ff9b::a9fe:a9fe', 'linkLocal', '169.254.0.0/16'],
  ['64:ff9b:1::808:808', 'rfc6052', '64:ff9b:1::/48'],
  ['2002:a00:1::1', '6to4', '2002::/16'],
  ['2002:7f00:1::1', '6to4', '2002::/16'],
  ['2002:808:808::1', '6to4', '2002::/16'],
  ['2001:0:4136:e378:8000:63bf:f5ff:fffe', 'teredo', '2001::/32'],
  ['2001:2::1', 'benchmarking', '2001:2::/48'],
  ['2001:3::1', 'amt', '2001:3::/32'],
  ['2001:4:112::1', 'as112v6', '2001:4:112::/48'],
  ['2001:10::1', 'deprecatedOrchid', '2001:10::/28'],
  ['2001:20::1', 'orchid2', '2001:20::/28'],
  ['2001:db8::1', 'reserved', '2001:db8::/32'],
  ['3fff::1', 'reserved', '3fff::/20'],
  ['100::1', 'discard', '100::/64'],
  ['5f00::1', 'segmentRouting', '5f00::/16'],
  ['fc00::1', 'uniqueLocal', 'fc00::/7'],
  ['fd00:ec2::254', 'uniqueLocal', 'fc00::/7'],
  ['fe80::1', 'linkLocal', 'fe80::/10'],
  ['fec0::1', 'deprecatedSiteLocal', 'fec0::/10'],
  ['ff02::1', 'multicast', 'ff00::/8'],
  ['ff05::1:3', 'multicast', 'ff00::/8'],
  ['1::1', 'notGlobalUnicast', '2000::/3'],
  ['4000::1', 'notGlobalUnicast', '2000::/3'],
];

test('the address policy refuses every special-purpose range, naming the rule and the range', () => {
  const p = new AddressPolicy([]);
  for (const [address, rule, range] of SPECIAL) {
    const why = p.refusal(address);
    assert.ok(why, `${address} must be refused (${rule})`);
    assert.ok(why.includes(` ${rule} address (`) && why.includes(range), `${address}: "${why}" names ${rule} ${range}`);
  }
  // Global unicast, and NAT64 of a global IPv4 address (what DNS64 answers on an IPv6-only network).
  for (const a of ['8.8.8.8', '93.184.216.34', '1.1.1.1', '2606:4700:4700::1111', '2a00:1450:4001::1', '::ffff:8.8.8.8', '64:ff9b::808:808']) assert.equal(p.refusal(a), null, `${a} is global`);
});

test('an IPv4-compatible IPv6 URL ([::127.0.0.1]) is refused before any connection, naming the rule', async () => {
  let connected = 0;
  const counter = (socket: import('node:net').Socket) => { connected++; socket.destroy(); };
  server.on('connection', counter);
  try {
    const port = new URL(base).port;
    for (const [url, rule] of [[`http://[::127.0.0.1]:${port}/picture.jpg`, /::7f00:1 is an ipv4Compatible address \(::\/96/], [`http://[64:ff9b::127.0.0.1]:${port}/picture.jpg`, /NAT64 address \(64:ff9b::\/96\) embedding 127\.0\.0\.1 is a loopback address/], [`http://[::ffff:0:127.0.0.1]:${port}/picture.jpg`, /rfc6145 address/]] as const) {
      const body = assertError(await searchOn(strict, url), 'hub-access-denied', 403);
      assert.match(body.error.details, rule);
      await assert.rejects(safeFetch(url, { allow: [], connectTimeoutMs: 200, totalTimeoutMs: 400, maxBytes: 1e6, maxRedirects: 0 }), (e: unknown) => e instanceof FetchError && e.kind === 'refused');
    }
    assert.equal(connected, 0);
  } finally {
    server.off('connection', counter);
  }
});

test('safeFetch refuses non-http schemes and credentials in URLs', async () => {
  const opts = { allow: [], connectTimeoutMs: 100, totalTimeoutMs: 200, maxBytes: 10, maxRedirects: 0 };
  for (const u of ['file:///etc/passwd', 'gopher://x/', 'http://user:pw@example.com/a.jpg']) {
    await assert.rejects(safeFetch(u, opts), (e: unknown) => e instanceof FetchError && e.kind === 'invalid-url');
  }
});
