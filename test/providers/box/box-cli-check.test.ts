/**
 * `damhub connectors check box` as an operator runs it, over the Box replay named in
 * DAMHUB_BOX_ENDPOINTS: the real CLI process prints the sign-in URL, the browser step is done by
 * following it, and every check passes (downloads go through the hub's grant, so the download
 * check fetches real bytes). The client secret appears nowhere in the output.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { CLI, freePort, REPO_ROOT } from '../../helpers/process.js';
import { continueToVendor, TestBrowser, vendorConsent } from '../../helpers/browser.js';
import { BOX_CLIENT, startBoxReplay } from '../../helpers/box-replay.js';

test('box over its replay: sign-in through the printed URL, then every check passes', async () => {
  const tree = Array.from({ length: 9 }, (_, i) => `Photos/photo ${i}.jpg`).concat('Photos/Trips/photo beach.jpg', 'Docs/readme.txt');
  const replay = await startBoxReplay(tree, { 'Photos/photo 3.jpg': 2 });
  const port = await freePort();
  const hub = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [CLI, 'connectors', 'check', 'box', '--port', String(port), '--public-url', hub, '--timeout', '60', '--json'], {
    cwd: REPO_ROOT,
    env: {
      ...process.env, DAMHUB_CONNECTOR_ALLOW_HOSTS: '127.0.0.1', DAMHUB_LOG_LEVEL: 'silent',
      DAMHUB_BOX_CLIENT_ID: BOX_CLIENT.id, DAMHUB_BOX_CLIENT_SECRET: BOX_CLIENT.secret,
      DAMHUB_BOX_ENDPOINTS: JSON.stringify({ authorize: `${replay.url}/api/oauth2/authorize`, token: `${replay.url}/oauth2/token`, api: `${replay.url}/2.0`, app: replay.url }),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
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
    assert.ok(signInUrl.startsWith(`${hub}/api/v1/auth/box/connect?state=`), signInUrl);
    const browser = new TestBrowser();
    const authorize = await continueToVendor(browser, signInUrl);
    assert.ok(authorize.startsWith(`${replay.url}/api/oauth2/authorize?`), authorize);
    assert.match(authorize, /[?&]code_challenge_method=S256(&|$)/);
    assert.match(authorize, /[?&]scope=root_readonly(&|$)/);
    const back = await vendorConsent(browser, authorize);
    assert.ok(back.startsWith(`${hub}/api/v1/auth/callback/box?`), back);
    assert.equal((await browser.open(back)).status, 200);
    assert.equal(await exited, 0, stdout + stderr);
    const rep = JSON.parse(stdout) as { passed: boolean; checks: { name: string; outcome: string; detail: string }[] };
    assert.equal(rep.passed, true);
    assert.deepEqual(rep.checks.filter((c) => c.outcome === 'fail'), []);
    const byName = Object.fromEntries(rep.checks.map((c) => [c.name, c]));
    assert.equal(byName['download: downloadUrl with no session']?.outcome, 'pass', JSON.stringify(byName['download: downloadUrl with no session']));
    assert.match(byName['asset detail: absolute URLs, declared hash']!.detail, /downloadHashSha1/);
    for (const out of [stdout, stderr]) assert.ok(!out.includes(BOX_CLIENT.secret), 'the client secret appears in the output');
  } finally {
    if (child.exitCode === null) child.kill();
    await exited;
    await replay.close();
  }
});
