/**
 * MCP `connect_provider` for an OAuth connector, in Chromium (issue 28, item 2): the link the tool
 * hands out is the hub's confirm page, which names the application, the hub user and the system;
 * its Continue goes on to the vendor (the Dropbox replay here), which comes back to the callback,
 * and the next connect_provider finds the connection. The same vendor link opened in another
 * browser (another Chromium profile: the victim's) is refused at the callback and finishes nothing.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { chromium, type BrowserContext } from 'playwright-core';
import { ManualClock } from '../../src/clock.js';
import { dropboxConnector } from '../../src/providers/dropbox/provider.js';
import { startDropboxReplay, type DropboxReplay } from '../helpers/dropbox-replay.js';
import type { TestHub } from '../helpers/hub.js';
import { ok } from '../helpers/mcp.js';
import { obtainAccessToken, startAuthServer, type AuthServer } from '../helpers/oauth-server.js';
import { freePort } from '../helpers/process.js';
import { startConnectorHub } from '../helpers/saas.js';

const CHROMIUM = '/usr/bin/chromium';

let as: AuthServer;
let replay: DropboxReplay;
let t: TestHub;
let client: Client;
const contexts: BrowserContext[] = [];
const profiles: string[] = [];

/** A Chromium profile of its own: one person's browser. */
async function browser(): Promise<BrowserContext> {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'damhub-chromium-'));
  profiles.push(profile);
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  contexts.push(ctx);
  await ctx.addInitScript(() => {
    const g = globalThis as any;
    g.__cspViolations = [];
    g.document.addEventListener('securitypolicyviolation', (e: any) => g.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  return ctx;
}

before(async () => {
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  const resource = `${publicUrl}/mcp`;
  as = await startAuthServer(resource);
  replay = await startDropboxReplay(['Photos/beach.jpg', 'notes.txt']);
  const u = replay.url;
  // MCP tokens come from a real authorization server: the hub's clock is real time.
  ({ t } = await startConnectorHub(
    dropboxConnector({ clientId: 'dbx-app', clientSecret: 'dbx-secret', allowInsecureRequests: true, endpoints: { authorize: `${u}/oauth2/authorize`, token: `${u}/oauth2/token`, api: u } }),
    {},
    { clock: new ManualClock(Date.now()), config: { publicUrl, mcpIssuer: as.issuer, mcpJwksUrl: as.jwksUrl, userRateLimitPerMin: 0 } },
  ));
  await t.app.listen({ host: '127.0.0.1', port });
  const token = await obtainAccessToken(as.issuer, resource, 'carol-sub');
  client = new Client({ name: 'damhub-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(resource), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
});

after(async () => {
  for (const c of contexts) await c.close();
  for (const p of profiles) fs.rmSync(p, { recursive: true, force: true });
  await client?.close();
  await t?.close();
  await replay?.close();
  await as?.close();
});

test('connect_provider (Dropbox) in Chromium: the link shows the hub\'s confirm page; a vendor link passed to another browser is refused; Continue in the user\'s own browser connects', async () => {
  const started = (await ok(client, 'connect_provider', { provider: 'dropbox' })).body;
  assert.equal(started.status, 'pending');
  const link = new URL(started.signInUrl);
  assert.equal(link.pathname, '/api/v1/auth/dropbox/connect');

  const mine = await browser();
  const page = await mine.newPage();
  await page.goto(link.href);
  assert.equal(await page.locator('h1').textContent(), 'Connect Dropbox');
  assert.equal(await page.locator('dt:text("Application") + dd').textContent(), 'MCP clients');
  assert.equal(await page.locator('dt:text("System") + dd').textContent(), 'Dropbox');
  assert.match((await page.locator('main').textContent())!, /If someone sent you this link, choose Cancel/);

  // The attack: Continue in this browser, but the vendor link goes to someone else's browser.
  // The browser follows the Continue's 303 to the vendor inside one navigation, which page.route
  // does not see hop by hop: the Continue POST itself is sent (with this browser's cookie) and
  // stopped at its redirect, whose target is the vendor link the attacker passes on.
  let caught!: (url: string) => void;
  const intercepted = new Promise<string>((r) => { caught = r; });
  await page.route('**/api/v1/auth/dropbox/connect', async (route) => {
    if (route.request().method() !== 'POST') return route.continue();
    const res = await route.fetch({ maxRedirects: 0 });
    caught(res.headers().location ?? `no redirect: ${res.status()}`);
    await route.fulfill({ status: 200, contentType: 'text/plain', body: 'stopped by the test' });
  });
  await page.getByRole('button', { name: 'Continue' }).click();
  const vendorUrl = await intercepted;
  assert.ok(vendorUrl.startsWith(`${replay.url}/oauth2/authorize?`), vendorUrl);
  const victim = await (await browser()).newPage();
  await victim.goto(vendorUrl);
  await victim.waitForURL(/\/api\/v1\/auth\/callback\/dropbox\?/);
  assert.equal(await victim.locator('h1').textContent(), 'Open this sign-in where you started it');
  assert.equal((await ok(client, 'connect_provider', {})).body.status, 'pending', 'the victim\'s consent connected nobody');

  // The user's own browser goes on: the vendor, the callback, connected.
  await page.unroute('**/api/v1/auth/dropbox/connect');
  await page.goto(link.href);
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.waitForURL(/\/api\/v1\/auth\/callback\/dropbox\?/);
  assert.equal(await page.locator('h1').textContent(), 'Signed in to Dropbox');
  assert.deepEqual(await page.evaluate(() => (globalThis as any).__cspViolations), [], 'no CSP violation on the hub\'s pages');
  assert.equal((await ok(client, 'connect_provider', {})).body.status, 'connected');
  const root = (await ok(client, 'browse_folder', { provider: 'dropbox', thumbnails: false })).body;
  assert.ok(root.folders.some((f: any) => f.name === 'Photos'), JSON.stringify(root));
});

test('connect_provider in Chromium: Cancel on the confirm page ends the sign-in; the next call reports it', async () => {
  const started = (await ok(client, 'connect_provider', { provider: 'dropbox', reconnect: true })).body;
  const page = await contexts[0]!.newPage();
  await page.goto(started.signInUrl);
  await page.getByRole('button', { name: 'Cancel' }).click();
  await page.waitForURL(/\/api\/v1\/auth\/dropbox\/connect$/);
  assert.equal(await page.locator('h1').textContent(), 'Sign-in cancelled');
  // The earlier connection is kept: a cancelled re-sign-in does not end it.
  assert.equal((await ok(client, 'connect_provider', {})).body.status, 'connected');
});
