/**
 * `client.signInWithPassword` (issue 29): a script or a test signs in to a form provider without a
 * person, against a real hub process (`damhub serve --demo` over a small library, WebDAV enabled,
 * a Dropbox app configured) and a real WebDAV server (rclone). The helper goes the browser's way
 * through the sign-in binding of issue 28 (form page, its cookie, the POST with it, the poll);
 * where a runtime cannot read the cookie it stops with a clear error, and the hub accepts nothing.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { DamhubClient, DamhubError, type PasswordSignInOptions } from '@damhub/client';
import { tempDir } from '../helpers/hub.js';
import { writeFiles } from '../helpers/library.js';
import { runCli, startServer, type ServerProcess } from '../helpers/process.js';
import { startRcloneDav, type RealDav } from '../helpers/real-servers.js';

let server: ServerProcess;
let dav: RealDav;

before(async () => {
  const data = tempDir('damhub-client-signin-data-');
  const lib = tempDir('damhub-client-signin-lib-');
  writeFiles(lib, { 'Notes/harbor.md': '# Harbor\n', 'readme.txt': 'hello\n' });
  const indexed = await runCli(['index', '--library', lib, '--data', data]);
  assert.equal(indexed.code, 0, indexed.stderr);
  dav = await startRcloneDav({ 'Shared/tide.txt': 'tides\n' }, { alice: 'alice-pw' });
  server = await startServer(['--data', data, '--library', lib, '--demo'], {
    DAMHUB_CONNECTORS: 'webdav', DAMHUB_CONNECTOR_ALLOW_HOSTS: '127.0.0.1', DAMHUB_DROPBOX_CLIENT_ID: 'dropbox-app', DAMHUB_USER_RATE_LIMIT: '0',
  });
});

after(async () => {
  await server?.stop();
  await dav?.close();
});

/** A client of the demo partner (its "backend" signs the JWT), with the given fetch. */
function demoClient(f: typeof fetch = fetch): DamhubClient {
  return new DamhubClient({
    baseUrl: server.url,
    fetch: f,
    getPartnerJwt: async () => ((await (await fetch(`${server.url}/demo/partner-token`, { method: 'POST' })).json()) as { jwt: string }).jwt,
  });
}

/** The error a call throws (it must throw). */
async function refusal(p: Promise<unknown>): Promise<DamhubError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof DamhubError, String(e));
    return e;
  }
  assert.fail('expected the sign-in to be refused');
}

/** The login states the client started (from POST /auth/login's answers), to poll them afterwards. */
function recordingFetch(): { fetch: typeof fetch; states: string[] } {
  const states: string[] = [];
  const f = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const res = await fetch(input, init);
    const u = new URL(String(input instanceof Request ? input.url : input));
    if (u.pathname === '/api/v1/auth/login' && init?.method === 'POST' && res.ok) states.push((await res.clone().json()).state);
    return res;
  }) as typeof fetch;
  return { fetch: f, states };
}

async function poll(state: string): Promise<Record<string, unknown>> {
  return (await fetch(`${server.url}/api/v1/auth/login?state=${encodeURIComponent(state)}&polling=true`)).json() as Promise<Record<string, unknown>>;
}

test('the library: signed in with a user name and password, the connection stored and used', async () => {
  const c = demoClient();
  const conn = await c.signInWithPassword({ username: 'demo', password: 'demo-password' });
  assert.equal(conn.providerId, 'library');
  assert.equal(typeof conn.accessToken, 'string');
  assert.equal(typeof conn.userHash, 'string');
  assert.equal(c.provider, 'library', 'the provider becomes the current one, as after loginToDam');
  assert.deepEqual(c.damConnection('library'), conn);
  const root = await c.folder('root');
  assert.deepEqual(root.folders.map((f) => f.name), ['Notes']);
  assert.deepEqual(root.assets.map((a) => a.name), ['readme.txt']);
});

test('a wrong password: client-login-failed with the form\'s own message, in the uiLocale asked for; the login it started is cancelled', async () => {
  const rec = recordingFetch();
  const c = demoClient(rec.fetch);
  const wrong: PasswordSignInOptions = { username: 'demo', password: 'not-it' };
  const en = await refusal(c.signInWithPassword(wrong));
  assert.equal(en.code, 'client-login-failed');
  assert.equal(en.message, 'Wrong user name or password.');
  assert.equal(en.status, 401);
  const de = await refusal(c.signInWithPassword({ ...wrong, uiLocale: 'de' }));
  assert.equal(de.message, 'Benutzername oder Passwort ist falsch.');
  assert.equal(rec.states.length, 2);
  // Not left pending for its five minutes (a person could have typed again; a script will not).
  for (const state of rec.states) assert.deepEqual(await poll(state), { error: 'the sign-in was cancelled' });
  assert.equal(c.damConnection('library'), undefined);
});

test('the sign-in binding holds: a runtime that cannot read Set-Cookie gets a clear error, and the hub accepted no POST without the cookie', async () => {
  const rec = recordingFetch();
  const posts: number[] = [];
  // A browser page's fetch: the response's Set-Cookie is hidden from the script.
  const noCookies = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const res = await rec.fetch(input, init);
    const u = new URL(String(input instanceof Request ? input.url : input));
    if (u.pathname.endsWith('/signin') && init?.method === 'POST') posts.push(res.status);
    const headers = new Headers(res.headers);
    headers.delete('set-cookie');
    return new Response(res.body, { status: res.status, headers });
  }) as typeof fetch;
  const e = await refusal(demoClient(noCookies).signInWithPassword({ username: 'demo', password: 'demo-password' }));
  assert.equal(e.code, 'client-login-failed');
  assert.match(e.message, /set no cookie this runtime can read/);
  assert.deepEqual(posts, [], 'the form was never posted without its cookie');
  assert.deepEqual(await poll(rec.states[0]!), {}, 'the login is still pending: nothing was settled');
});

test('WebDAV: the server URL the login starts with is the form\'s server field, sent as a browser sends it', async () => {
  const c = demoClient();
  const bad = await refusal(c.signInWithPassword({ provider: 'webdav', serverUrl: dav.url, username: 'alice', password: 'wrong' }));
  assert.equal(bad.message, 'The server did not accept these credentials.');
  const conn = await c.signInWithPassword({ provider: 'webdav', serverUrl: dav.url, username: 'alice', password: 'alice-pw' });
  assert.equal(conn.providerId, 'webdav');
  const root = await c.folder('root', { provider: 'webdav' });
  assert.deepEqual(root.folders.map((f) => f.name), ['Shared']);
});

test('an OAuth provider (Dropbox) has no form to post a password to: refused before anything is sent', async () => {
  const e = await refusal(demoClient().signInWithPassword({ provider: 'dropbox', username: 'someone', password: 'secret' }));
  assert.equal(e.code, 'client-login-failed');
  assert.match(e.message, /dropbox does not sign in with the hub's form .*use loginToDam/);
});
