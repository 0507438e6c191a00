/**
 * Issue 28, item 2: a sign-in link that someone else can complete. The attack, replayed end to end
 * against each of the seven OAuth connectors through its vendor replay: an attacker with a hub
 * account starts a DAM login, passes the hub's first page in his own browser and hands the vendor's
 * consent link (or the callback URL it leads to) to a victim. The victim's browser never opened the
 * login's start page, so it lacks the cookie binding the login to a browser: the hub refuses its
 * callback, redeems nothing, and the attacker's poll never gets tokens. And a forged or failed
 * callback does not end a legitimate pending login, which then completes normally.
 *
 * The browsers are test/helpers/browser.ts cookie jars: one per person.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ConnectorDeps, DefinedConnector } from '../../../src/providers/kit/define.js';
import { boxConnector } from '../../../src/providers/box/provider.js';
import { bynderConnector } from '../../../src/providers/bynder/provider.js';
import { dropboxConnector } from '../../../src/providers/dropbox/provider.js';
import { frontifyConnector } from '../../../src/providers/frontify/provider.js';
import { googleDriveConnector } from '../../../src/providers/gdrive/provider.js';
import { microsoft365Connector } from '../../../src/providers/microsoft365/provider.js';
import { BOX_CLIENT, startBoxReplay } from '../../helpers/box-replay.js';
import { BYNDER_CLIENT, startBynderReplay } from '../../helpers/bynder-replay.js';
import { startCantoReplay } from '../../helpers/canto-replay.js';
import { startDropboxReplay } from '../../helpers/dropbox-replay.js';
import { startFrontifyReplay } from '../../helpers/frontify-replay.js';
import { startDriveReplay } from '../../helpers/gdrive-replay.js';
import { startMicrosoft365Replay } from '../../helpers/microsoft365-replay.js';
import { formOf, pollDamLogin, startDamLogin, TestBrowser, vendorConsent, type Visit } from '../../helpers/browser.js';
import type { TestHub } from '../../helpers/hub.js';
import { startConnectorHub } from '../../helpers/saas.js';
import { connectorFor as cantoConnectorFor } from '../canto/harness.js';

interface Case {
  id: string;
  replay(): Promise<{ url: string; close(): Promise<void> }>;
  connector(replayUrl: string): (deps: ConnectorDeps) => DefinedConnector;
  /** The tenant, for multi-tenant systems. */
  serverUrl?(replayUrl: string): string;
}

const TREE = ['Photos/a.jpg'];

const CASES: Case[] = [
  {
    id: 'dropbox', replay: () => startDropboxReplay(TREE),
    connector: (u) => dropboxConnector({ clientId: 'dbx-app', clientSecret: 'dbx-secret', allowInsecureRequests: true, endpoints: { authorize: `${u}/oauth2/authorize`, token: `${u}/oauth2/token`, api: u } }),
  },
  {
    id: 'gdrive', replay: () => startDriveReplay(TREE),
    connector: (u) => googleDriveConnector({ clientId: 'drive-app', clientSecret: 'drive-secret', allowInsecureRequests: true, endpoints: { authorize: `${u}/o/oauth2/v2/auth`, token: `${u}/token`, api: u } }),
  },
  {
    id: 'microsoft365', replay: () => startMicrosoft365Replay(TREE),
    connector: (u) => microsoft365Connector({ clientId: 'm365-app', clientSecret: 'm365-secret', allowInsecureRequests: true, endpoints: { authorize: `${u}/common/oauth2/v2.0/authorize`, token: `${u}/common/oauth2/v2.0/token`, graph: `${u}/v1.0` } }),
  },
  {
    id: 'box', replay: () => startBoxReplay(TREE),
    connector: (u) => boxConnector({ clientId: BOX_CLIENT.id, clientSecret: BOX_CLIENT.secret, allowInsecureRequests: true, endpoints: { authorize: `${u}/api/oauth2/authorize`, token: `${u}/oauth2/token`, api: `${u}/2.0`, app: u } }),
  },
  {
    id: 'bynder', replay: () => startBynderReplay(TREE),
    connector: () => bynderConnector({ clientId: BYNDER_CLIENT.id, clientSecret: BYNDER_CLIENT.secret, allowInsecureRequests: true }),
    serverUrl: (u) => u,
  },
  {
    id: 'frontify', replay: () => startFrontifyReplay(TREE),
    connector: () => frontifyConnector({ clientId: 'fy-app', clientSecret: 'fy-secret', allowInsecureRequests: true }),
    serverUrl: (u) => u,
  },
  { id: 'canto', replay: () => startCantoReplay(TREE), connector: (u) => cantoConnectorFor(u), serverUrl: (u) => u },
];

/**
 * The attacker's own browser, from POST /auth/login's redirect_uri to the vendor's authorization
 * URL: through the hub's confirm page and its Continue when there is one (a hub without the fix
 * sent the browser to the vendor straight away: then redirect_uri is that URL).
 */
async function reachVendor(browser: TestBrowser, hubOrigin: string, redirectUri: string): Promise<string> {
  if (!redirectUri.startsWith(`${hubOrigin}/`)) return redirectUri;
  const page = await browser.open(redirectUri);
  assert.equal(page.status, 200, page.body);
  const form = formOf(page);
  const next = await browser.post(form.action, { state: form.state, continue: '1' });
  assert.equal(next.status, 303, next.body);
  return next.location!;
}

function assertRefusedAsWrongBrowser(v: Visit) {
  assert.equal(v.status, 403, v.body.slice(0, 400));
  assert.match(v.body, /did not open this sign-in, so nothing was done/);
  assert.match(v.body, /device and in the browser where you started/);
}

for (const c of CASES) {
  describe(`${c.id}: a sign-in link handed to someone else`, () => {
    let replay: { url: string; close(): Promise<void> };
    let t: TestHub;
    let attacker: string;
    let honest: string;
    const serverUrl = () => c.serverUrl?.(replay.url);
    before(async () => {
      replay = await c.replay();
      ({ t } = await startConnectorHub(c.connector(replay.url)));
      attacker = (await t.login({ sub: 'mallory', email: 'mallory@evil.example' })).access_token;
      honest = (await t.login({ sub: 'alice', email: 'alice@example.com' })).access_token;
    });
    after(async () => {
      await t?.close();
      await replay?.close();
    });

    test('the victim\'s browser completes neither the vendor link nor its callback: refused, nothing redeemed, the attacker\'s poll gets no tokens, the login stays pending', async () => {
      const { state, redirect_uri } = await startDamLogin({ t }, attacker, c.id, serverUrl());
      const mallory = new TestBrowser(t);
      const authorize = await reachVendor(mallory, 'http://hub.test', redirect_uri);
      // The victim opens the vendor link in their own browser and consents (the replay consents at once).
      const victim = new TestBrowser(t);
      const back = await vendorConsent(victim, authorize);
      assert.equal(new URL(back).pathname, `/api/v1/auth/callback/${c.id}`);
      assertRefusedAsWrongBrowser(await victim.open(back));
      assert.deepEqual(await pollDamLogin({ t }, state), {}, 'no tokens, no error: the login is untouched');
      // Handed the callback URL itself (a second victim, or the same one again): refused the same.
      assertRefusedAsWrongBrowser(await new TestBrowser(t).open(back));
      assert.deepEqual(await pollDamLogin({ t }, state), {});
      // The victim cannot pass the hub's Continue in the attacker's name either.
      const cont = await victim.post(`/api/v1/auth/${c.id}/connect`, { state, continue: '1' });
      assertRefusedAsWrongBrowser(cont);
      assert.deepEqual(await pollDamLogin({ t }, state), {});
    });

    test('an injected callback (no cookie) and a refused code (the right browser) do not end a legitimate login, which then completes', async () => {
      const { state, redirect_uri } = await startDamLogin({ t }, honest, c.id, serverUrl());
      const alice = new TestBrowser(t);
      const authorize = await reachVendor(alice, 'http://hub.test', redirect_uri);
      // The attacker consents at the vendor with his own account and injects the callback into
      // Alice's login (he learnt its state): his browser has no cookie of it.
      const mallory = new TestBrowser(t);
      const injected = await vendorConsent(mallory, authorize);
      assertRefusedAsWrongBrowser(await mallory.open(injected));
      assert.deepEqual(await pollDamLogin({ t }, state), {});
      // A code the vendor refuses reaches Alice's browser: the page says so, the login stays pending.
      const wrong = new URL(`http://hub.test/api/v1/auth/callback/${c.id}`);
      wrong.searchParams.set('state', state);
      wrong.searchParams.set('code', 'not-a-code-the-vendor-issued');
      const failed = await alice.open(wrong.href);
      assert.equal(failed.status, 400, failed.body.slice(0, 400));
      assert.match(failed.body, /Try again/);
      assert.deepEqual(await pollDamLogin({ t }, state), {}, 'still pending after a failed callback');
      // Alice goes on from the start page: Continue, the vendor, the callback.
      const again = await reachVendor(alice, 'http://hub.test', redirect_uri);
      const back = await vendorConsent(alice, again);
      const done = await alice.open(back);
      assert.equal(done.status, 200, done.body.slice(0, 400));
      const tokens = await pollDamLogin({ t }, state);
      assert.equal(typeof tokens.access_token, 'string', JSON.stringify(tokens));
    });
  });
}

describe('confirm page: Cancel, the statement, escaping, the cookie', () => {
  let replay: { url: string; close(): Promise<void> };
  let t: TestHub;
  before(async () => {
    replay = await startDropboxReplay(TREE);
    ({ t } = await startConnectorHub(CASES[0]!.connector(replay.url)));
  });
  after(async () => {
    await t?.close();
    await replay?.close();
  });

  test('Cancel on the confirm page ends the login: the poll answers the cancellation error', async () => {
    const access = (await t.login({ sub: 'canceller' })).access_token;
    const { state, redirect_uri } = await startDamLogin({ t }, access, 'dropbox');
    const browser = new TestBrowser(t);
    const page = await browser.open(redirect_uri);
    assert.equal(page.status, 200, page.body.slice(0, 300));
    const form = formOf(page);
    const cancelled = await browser.post(form.action, { state: form.state, cancel: '1' });
    assert.equal(cancelled.status, 200);
    assert.match(cancelled.body, /Sign-in cancelled/);
    assert.deepEqual(await pollDamLogin({ t }, state), { error: 'the sign-in was cancelled' });
  });

  test('the confirm page names the partner, the hub user and the system; every name is escaped', async () => {
    await t.hub.stores.partners.update(t.partner.id, { name: 'Evil <script>alert(1)</script> & Co' }, t.clock.now());
    try {
      const access = (await t.login({ sub: 'xss', email: '"><script>alert(2)</script>@evil.example' })).access_token;
      const { redirect_uri } = await startDamLogin({ t }, access, 'dropbox');
      const page = await new TestBrowser(t).open(redirect_uri);
      assert.equal(page.status, 200);
      assert.doesNotMatch(page.body, /<script/i, 'no markup from a name');
      assert.match(page.body, /Evil &lt;script&gt;alert\(1\)&lt;\/script&gt; &amp; Co/);
      assert.match(page.body, /&quot;&gt;&lt;script&gt;alert\(2\)&lt;\/script&gt;@evil\.example/);
      assert.match(page.body, /<dt>System<\/dt><dd>Dropbox<\/dd>/);
      assert.match(page.body, /<html lang="en">/);
      assert.match(page.body, /<h1>Connect Dropbox<\/h1>/);
      // CSP: no inline script or style; the form may end at the vendor's origin only.
      const csp = String(page.headers['content-security-policy']);
      assert.match(csp, /script-src 'self'/);
      assert.match(csp, /style-src 'self'/);
      assert.match(csp, new RegExp(`form-action 'self' ${new URL(replay.url).origin.replace(/[.]/g, '\\.')};`));
      assert.doesNotMatch(page.body, /style=|<style|onclick=/i);
    } finally {
      await t.hub.stores.partners.update(t.partner.id, { name: 'Partner One' }, t.clock.now());
    }
  });

  test('the start page\'s cookie: HttpOnly, SameSite=Lax, one per login state; __Host- prefixed, Secure and Path=/ over https', async () => {
    const access = (await t.login({ sub: 'cookies' })).access_token;
    const a = await startDamLogin({ t }, access, 'dropbox');
    const b = await startDamLogin({ t }, access, 'dropbox');
    const browser = new TestBrowser(t);
    const pa = await browser.open(a.redirect_uri);
    const pb = await browser.open(b.redirect_uri);
    const ca = String(pa.headers['set-cookie']);
    assert.match(ca, /^damhub-login-[A-Za-z0-9_-]{16}=[A-Za-z0-9_-]{43}; Path=\/api\/v1\/auth; Max-Age=360; HttpOnly; SameSite=Lax$/);
    assert.notEqual(ca.split('=')[0], String(pb.headers['set-cookie']).split('=')[0], 'two logins, two cookies');
    assert.equal(browser.cookies.size, 2);
    // Both logins go on in the one browser.
    for (const s of [a, b]) {
      const back = await vendorConsent(browser, await reachVendor(browser, 'http://hub.test', s.redirect_uri));
      assert.equal((await browser.open(back)).status, 200);
      assert.equal(typeof (await pollDamLogin({ t }, s.state)).access_token, 'string');
    }
    assert.equal(browser.cookies.size, 0, 'a finished login clears its cookie');
    // One login's cookie does not open another's.
    const c = await startDamLogin({ t }, access, 'dropbox');
    const d = await startDamLogin({ t }, access, 'dropbox');
    const other = new TestBrowser(t);
    await other.open(c.redirect_uri);
    assertRefusedAsWrongBrowser(await other.post('/api/v1/auth/dropbox/connect', { state: d.state, continue: '1' }));

    const secure = t.hub.damLogin.browser;
    assert.equal(secure.holds(c.state, `${[...other.cookies][0]![0]}=${[...other.cookies][0]![1]}`), true);
    const { LoginBrowser } = await import('../../../src/auth/login-browser.js');
    const https = new LoginBrowser('k', 'https://hub.example/base', 360);
    assert.match(https.setCookie('s1'), /^__Host-damhub-login-[A-Za-z0-9_-]{16}=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=360; HttpOnly; SameSite=Lax; Secure$/);
    const plain = new LoginBrowser('k', 'http://hub.example/base/', 360);
    assert.match(plain.setCookie('s1'), /; Path=\/base\/api\/v1\/auth;/);
  });
});
