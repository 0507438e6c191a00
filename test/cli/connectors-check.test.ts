/**
 * `damhub connectors check` as a user runs it: the real CLI process against real servers on
 * loopback (Apache mod_dav, OpenStack Swift's S3 API), against a WebDAV server whose listing
 * changes between pages (duplicates across pages), with wrong credentials, and with usage errors.
 * Dropbox and Google Drive through their OAuth sign-in against their replay servers, the browser
 * step done by following the printed URL. Secrets given on stdin never appear in the output.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { spawn } from 'node:child_process';
import { CLI, freePort, REPO_ROOT, runCli } from '../helpers/process.js';
import { continueToVendor, TestBrowser, vendorConsent } from '../helpers/browser.js';
import { startDropboxReplay } from '../helpers/dropbox-replay.js';
import { startDriveReplay } from '../helpers/gdrive-replay.js';
import { solidJpeg } from '../helpers/library.js';
import { startApacheDav, startSwiftS3, type RealDav, type RealS3 } from '../helpers/real-servers.js';
import { tempDir } from '../helpers/hub.js';

const ENV = { DAMHUB_CONNECTOR_ALLOW_HOSTS: '127.0.0.1', DAMHUB_LOG_LEVEL: 'silent' };
const PASSWORD = 'alice-Secret-pw-7731';

let dav: RealDav;
let s3: RealS3;

async function files(): Promise<Record<string, Buffer | string>> {
  const f: Record<string, Buffer | string> = {};
  for (let i = 0; i < 11; i++) f[`Photos/sunset ${String(i).padStart(2, '0')}.jpg`] = await solidJpeg(32 + i, 24, [i * 10, 100, 200]);
  f['Photos/Trips/sunset beach.jpg'] = await solidJpeg(40, 30, [250, 200, 10]);
  f['Docs/readme.txt'] = 'hello world';
  return f;
}

before(async () => {
  const f = await files();
  dav = await startApacheDav(f, { alice: PASSWORD });
  s3 = await startSwiftS3(Object.fromEntries(Object.entries(f).map(([k, v]) => [k, v])), { versioning: true });
});
after(async () => {
  await dav?.close();
  await s3?.close();
});

const report = (stdout: string) => JSON.parse(stdout) as { passed: boolean; signIn: { outcome: string; detail: string }; checks: { name: string; outcome: string; detail: string; answers: { status: number }[] }[] };

function assertNoSecret(out: { stdout: string; stderr: string }, ...secrets: string[]) {
  for (const s of secrets) {
    assert.ok(!out.stdout.includes(s), 'a secret appears on stdout');
    assert.ok(!out.stderr.includes(s), 'a secret appears on stderr');
  }
}

test('webdav on Apache mod_dav: every check passes, the password read from stdin appears nowhere', async () => {
  const r = await runCli(['connectors', 'check', 'webdav', '--server-url', dav.url, '--field', 'username=alice', '--field', 'password=-', '--json'], ENV, `${PASSWORD}\n`);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  const rep = report(r.stdout);
  assert.equal(rep.passed, true);
  assert.equal(rep.signIn.outcome, 'pass');
  const byName = Object.fromEntries(rep.checks.map((c) => [c.name, c]));
  for (const name of ['providers: listed with capabilities and paging', 'browse: root folder', 'browse: folder ids round-trip', 'browse: paging (sizes, cursors, no duplicates, totalAssetsCount)', 'search', 'asset detail: absolute URLs, declared hash', 'download: downloadUrl with no session', 'versions', 'unknown ids: integration-not-found', 'refresh']) {
    assert.equal(byName[name]?.outcome, 'pass', `${name}: ${JSON.stringify(byName[name])}`);
  }
  // The root has no assets: paging ran in Photos (11 assets) over several pages, search derived "sunset".
  assert.match(byName['browse: paging (sizes, cursors, no duplicates, totalAssetsCount)']!.detail, /^11 assets in [3-9] pages/);
  assert.match(byName['search']!.detail, /"sunset": 12 hits/);
  assert.match(byName['download: downloadUrl with no session']!.detail, /bytes/);
  assert.match(byName['versions']!.detail, /not offered/);
  assertNoSecret(r, PASSWORD);
});

test('webdav: the text report names each check, its answers and timings', async () => {
  const dir = tempDir();
  const file = path.join(dir, 'fields.json');
  fs.writeFileSync(file, JSON.stringify({ username: 'alice', password: PASSWORD }));
  const r = await runCli(['connectors', 'check', 'webdav', '--server-url', dav.url, '--fields-file', file, '--max-assets', '1'], ENV);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /^PASS {2}sign-in {2}\(\d+ ms\)$/m);
  assert.match(r.stdout, /^PASS {2}browse: root folder {2}\(\d+ ms\)\n {6}2 folders, 0 assets\n {8}GET \/assets\/folder\/root\?size=\d+ -> 200 \(\d+ ms\) \{/m);
  assert.match(r.stdout, /all checks passed/);
  assertNoSecret(r, PASSWORD);
});

test('webdav with a wrong password: exit 1, the sign-in failure named, the wrong password nowhere', async () => {
  const wrong = 'not-the-Password-9921';
  const r = await runCli(['connectors', 'check', 'webdav', '--server-url', dav.url, '--field', 'username=alice', '--field', 'password=-', '--json'], ENV, `${wrong}\n`);
  assert.equal(r.code, 1, r.stdout + r.stderr);
  const rep = report(r.stdout);
  assert.equal(rep.passed, false);
  assert.equal(rep.signIn.outcome, 'fail');
  assert.match(rep.signIn.detail, /^the sign-in failed: .*(rejected|password|credentials|401)/i);
  assert.deepEqual(rep.checks, [], 'nothing runs without a connection');
  assertNoSecret(r, wrong);
});

test('s3 on OpenStack Swift (endpoint from --server-url): every check passes, versions listed, the secret key appears nowhere', async () => {
  const r = await runCli(['connectors', 'check', 's3', '--server-url', s3.endpoint, '--field', `region=${s3.region}`, '--field', `bucket=${s3.bucket}`,
    '--field', `accessKeyId=${s3.accessKeyId}`, '--field', 'secretAccessKey=-', '--term', 'sunset', '--json'], ENV, `${s3.secretAccessKey}\n`);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  const rep = report(r.stdout);
  assert.ok(rep.checks.every((c) => c.outcome === 'pass'), JSON.stringify(rep.checks.filter((c) => c.outcome !== 'pass')));
  const byName = Object.fromEntries(rep.checks.map((c) => [c.name, c]));
  assert.match(byName['versions']!.detail, /\d+ versions/);
  // The presigned URL straight to Swift downloads with no session.
  assert.match(byName['download: downloadUrl with no session']!.detail, /\d+ bytes/);
  assertNoSecret(r, s3.secretAccessKey);
});

test('a listing that changes between pages: the paging check fails, named, and the exit code is 1', async () => {
  // Every depth-1 PROPFIND lists one more file sorting first, so offset paging repeats an asset.
  let listings = 0;
  const entry = (href: string, collection: boolean, size = 10) => `<d:response><d:href>${href}</d:href><d:propstat><d:prop><d:displayname>${href.split('/').filter(Boolean).at(-1)}</d:displayname>${collection ? '<d:resourcetype><d:collection/></d:resourcetype>' : `<d:resourcetype/><d:getcontentlength>${size}</d:getcontentlength><d:getcontenttype>image/jpeg</d:getcontenttype><d:getetag>"e${size}"</d:getetag>`}</d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>`;
  const server = http.createServer((req, res) => {
    req.resume();
    const xml = (s: string) => res.writeHead(207, { 'content-type': 'application/xml; charset=utf-8' }).end(`<?xml version="1.0"?><d:multistatus xmlns:d="DAV:">${s}</d:multistatus>`);
    if (req.method === 'OPTIONS') return res.writeHead(200, { dav: '1' }).end();
    if (req.method !== 'PROPFIND') return res.writeHead(404).end();
    if (req.headers.depth === '0') return xml(entry('/dav/', true));
    const extra = Array.from({ length: listings++ }, (_, i) => entry(`/dav/a${String(i).padStart(3, '0')}.jpg`, false, 50 + i)).join('');
    xml(entry('/dav/', true) + extra + Array.from({ length: 9 }, (_, i) => entry(`/dav/f${i}.jpg`, false, 100 + i)).join(''));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/dav/`;
    const r = await runCli(['connectors', 'check', 'webdav', '--server-url', url, '--field', 'username=u', '--field', 'password=-', '--json'], ENV, 'pw-of-the-fault-server\n');
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const rep = report(r.stdout);
    const paging = rep.checks.find((c) => c.name.startsWith('browse: paging'))!;
    assert.equal(paging.outcome, 'fail');
    assert.match(paging.detail, /appears twice across the pages|totalAssetsCount/);
    assert.equal(rep.checks.find((c) => c.name === 'browse: root folder')!.outcome, 'pass', 'the failure is pinned on the paging check, not on everything');
  } finally {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
});

test('usage errors exit 2: no id, unknown connector, a password typed on the command line, a missing field', async () => {
  const none = await runCli(['connectors', 'check'], ENV);
  assert.equal(none.code, 2);
  assert.match(none.stderr, /takes one connector id/);
  assert.match(none.stderr, /damhub connectors check ID/);
  const unknown = await runCli(['connectors', 'check', 'ftp'], ENV);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /no connector "ftp" is enabled/);
  const typed = await runCli(['connectors', 'check', 'webdav', '--server-url', dav.url, '--field', 'username=alice', '--field', `password=${PASSWORD}`], ENV);
  assert.equal(typed.code, 2, typed.stdout + typed.stderr);
  assert.match(typed.stderr, /puts a secret on the command line/);
  assertNoSecret(typed, PASSWORD);
  const missing = await runCli(['connectors', 'check', 'webdav', '--server-url', dav.url, '--field', 'username=alice'], ENV);
  assert.equal(missing.code, 2, missing.stdout + missing.stderr);
  assert.match(missing.stderr, /needs --field password=…/);
  const badStandIn = await runCli(['connectors', 'check', 'dropbox'], { ...ENV, DAMHUB_DROPBOX_CLIENT_ID: 'app', DAMHUB_DROPBOX_ENDPOINTS: '{"authorize": "ftp://x"}' });
  assert.equal(badStandIn.code, 2);
  assert.match(badStandIn.stderr, /DAMHUB_DROPBOX_ENDPOINTS: authorize must be an http\(s\) URL/);
  const noApp = await runCli(['connectors', 'check', 'gdrive'], ENV);
  assert.equal(noApp.code, 2);
  assert.match(noApp.stderr, /set DAMHUB_GDRIVE_CLIENT_ID/);
  const noStdin = await runCli(['connectors', 'check', 'webdav', '--field', 'password=-'], ENV, '');
  assert.equal(noStdin.code, 2);
  assert.match(noStdin.stderr, /stdin has no line for it/);
});

/**
 * Runs `damhub connectors check <id>` for an OAuth connector over its replay and does the browser
 * step: opens the printed sign-in URL (the replay consents at once) and follows it back to the hub.
 */
async function runOAuthCheck(id: string, env: Record<string, string>, authorizeUrl: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const port = await freePort();
  const hub = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [CLI, 'connectors', 'check', id, '--port', String(port), '--public-url', hub, '--timeout', '60', '--json'], {
    cwd: REPO_ROOT, env: { ...process.env, ...ENV, ...env }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
  try {
    const signInUrl = await new Promise<string>((resolve, reject) => {
      child.stderr.on('data', (d) => {
        stderr += d;
        const m = /^ {2}(https?:\/\/\S+)$/m.exec(stderr);
        if (m) resolve(m[1]!);
      });
      child.on('close', () => reject(new Error(`exited before printing a sign-in URL: ${stdout}${stderr}`)));
    });
    // The printed URL is the hub's confirm page; the browser passes it, the vendor, the callback (test/helpers/browser.ts).
    assert.ok(signInUrl.startsWith(`${hub}/api/v1/auth/${id}/connect?state=`), signInUrl);
    const browser = new TestBrowser();
    const authorize = await continueToVendor(browser, signInUrl);
    assert.ok(authorize.startsWith(`${authorizeUrl}?`), authorize);
    const back = await vendorConsent(browser, authorize);
    assert.ok(back.startsWith(`${hub}/api/v1/auth/callback/${id}?`), back);
    assert.equal((await browser.open(back)).status, 200);
    return { code: await exited, stdout, stderr };
  } finally {
    if (child.exitCode === null) child.kill();
    await exited;
  }
}

const OAUTH_CHECKS = ['browse: paging (sizes, cursors, no duplicates, totalAssetsCount)', 'search', 'asset detail: absolute URLs, declared hash', 'versions', 'unknown ids: integration-not-found', 'refresh'];

test('dropbox over its replay: the CLI prints the sign-in URL, waits for the browser step, and runs every check', async () => {
  const tree = Array.from({ length: 9 }, (_, i) => `Photos/photo ${i}.jpg`).concat('Photos/Trips/photo beach.jpg', 'Docs/readme.txt');
  const replay = await startDropboxReplay(tree, { 'Photos/photo 3.jpg': 2 });
  try {
    const { code, stdout, stderr } = await runOAuthCheck('dropbox', {
      DAMHUB_DROPBOX_CLIENT_ID: 'dbx-app', DAMHUB_DROPBOX_CLIENT_SECRET: 'dbx-secret-value-4410',
      DAMHUB_DROPBOX_ENDPOINTS: JSON.stringify({ authorize: `${replay.url}/oauth2/authorize`, token: `${replay.url}/oauth2/token`, api: replay.url }),
    }, `${replay.url}/oauth2/authorize`);
    // Every check but the download passes: the replay answers get_temporary_link with the documented
    // example's link (a dropboxusercontent.com host), which it does not serve and which cannot be reached here.
    assert.equal(code, 1, stdout + stderr);
    const rep = report(stdout);
    const download = rep.checks.find((c) => c.name === 'download: downloadUrl with no session')!;
    assert.equal(download.outcome, 'fail');
    assert.match(download.detail, /^the downloadUrl of id:\S+: \S*dropboxusercontent\.com could not be reached: /);
    assert.deepEqual(rep.checks.filter((c) => c.outcome === 'fail').map((c) => c.name), ['download: downloadUrl with no session']);
    assert.equal(rep.signIn.outcome, 'pass');
    const byName = Object.fromEntries(rep.checks.map((c) => [c.name, c]));
    for (const name of OAUTH_CHECKS) assert.equal(byName[name]?.outcome, 'pass', `${name}: ${JSON.stringify(byName[name])}`);
    assert.match(byName['asset detail: absolute URLs, declared hash']!.detail, /downloadHashSha256Split4MB/);
    assert.match(byName['search']!.detail, /"photo": 10 hits/);
    assertNoSecret({ stdout, stderr }, 'dbx-secret-value-4410');
  } finally {
    await replay.close();
  }
});

test('gdrive over its replay: every check passes, the download through the hub\'s grant included (exit 0)', async () => {
  const tree = Array.from({ length: 9 }, (_, i) => `Photos/photo ${i}.jpg`).concat('Photos/Trips/photo beach.jpg', 'Docs/readme.txt');
  const replay = await startDriveReplay(tree, { 'Photos/photo 3.jpg': 2 });
  try {
    const { code, stdout, stderr } = await runOAuthCheck('gdrive', {
      DAMHUB_GDRIVE_CLIENT_ID: 'drive-app', DAMHUB_GDRIVE_CLIENT_SECRET: 'drive-secret',
      DAMHUB_GDRIVE_ENDPOINTS: JSON.stringify({ authorize: `${replay.url}/o/oauth2/v2/auth`, token: `${replay.url}/token`, api: replay.url }),
    }, `${replay.url}/o/oauth2/v2/auth`);
    const rep = report(stdout);
    assert.deepEqual(rep.checks.filter((c) => c.outcome === 'fail').map((c) => `${c.name}: ${c.detail}`), []);
    assert.equal(code, 0, stdout + stderr);
    assert.equal(rep.signIn.outcome, 'pass');
    const byName = Object.fromEntries(rep.checks.map((c) => [c.name, c]));
    for (const name of [...OAUTH_CHECKS, 'download: downloadUrl with no session']) assert.equal(byName[name]?.outcome, 'pass', `${name}: ${JSON.stringify(byName[name])}`);
    assert.equal(byName['asset detail: absolute URLs, declared hash']!.detail, '3 assets');
    assert.ok(replay.contentRequests.length > 0, 'the download reached Drive\'s alt=media through the hub');
    assertNoSecret({ stdout, stderr }, 'drive-secret');
  } finally {
    await replay.close();
  }
});

test('a server that stops answering after the sign-in: --timeout ends the run with exit 1, the timeout named', async () => {
  const server = http.createServer((req, res) => {
    req.resume();
    if (req.method === 'PROPFIND' && req.headers.depth === '0') {
      return res.writeHead(207, { 'content-type': 'application/xml' }).end('<?xml version="1.0"?><d:multistatus xmlns:d="DAV:"><d:response><d:href>/dav/</d:href><d:propstat><d:prop><d:resourcetype><d:collection/></d:resourcetype></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response></d:multistatus>');
    }
    if (req.method === 'OPTIONS') return res.writeHead(200, { dav: '1' }).end();
    // Every listing hangs.
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/dav/`;
    const t0 = Date.now();
    const r = await runCli(['connectors', 'check', 'webdav', '--server-url', url, '--field', 'username=u', '--field', 'password=-', '--timeout', '3', '--json'], ENV, 'pw-of-the-hanging-server\n');
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const rep = report(r.stdout);
    assert.equal(rep.signIn.outcome, 'pass');
    // What finished before the timeout is reported; the listing that hung is not.
    assert.deepEqual(rep.checks.map((c) => [c.name, c.outcome]), [['providers: listed with capabilities and paging', 'pass'], ['timeout', 'fail']]);
    assert.match(rep.checks[1]!.detail, /did not finish within --timeout 3 s/);
    assert.ok(Date.now() - t0 < 30_000, 'the run ends soon after the timeout, not when the upstream gives up');
  } finally {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
});
