/**
 * Issue 28, item 6: a hub-issued DAM refresh token could be used again and again (three uses, three
 * new pairs). Over real HTTP against a hub with a manual clock: a refresh rotates the token; the
 * previous one is answered again only within the grace window (a client's concurrent refreshes);
 * used after it, the whole family is revoked, the newest token included, as hub sessions do.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { addAccount } from '../../src/providers/library/accounts.js';
import { formBrowserSignIn, TestBrowser } from '../helpers/browser.js';
import { startTestHub, tempDir, type TestHub } from '../helpers/hub.js';
import { libraryOf, writeFiles } from '../helpers/library.js';

const GRACE_SEC = 30;
let t: TestHub;
let base: string;
let hubAccess: string;

before(async () => {
  const root = tempDir('damhub-lib-');
  writeFiles(root, { 'a/readme.txt': 'harbour cranes' });
  t = await startTestHub({ config: { libraryDir: root, userRateLimitPerMin: 0, refreshGraceSec: GRACE_SEC } });
  await t.hub.start();
  await addAccount(libraryOf(t.hub).index, 'alice', 'correct horse', [], t.clock.now());
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = t.app.server.address() as import('node:net').AddressInfo;
  base = `http://127.0.0.1:${port}/api/v1`;
  hubAccess = (await t.login()).access_token;
});
after(() => t.close());

async function call(path: string, init: RequestInit & { dam?: string } = {}) {
  const headers = new Headers(init.headers);
  headers.set('authorization', `Bearer ${hubAccess}`);
  if (init.dam) headers.set('provider-authorization', `Bearer ${init.dam}`);
  const res = await fetch(`${base}${path}`, { ...init, headers });
  const text = await res.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch { /* not JSON */ }
  return { status: res.status, body };
}

/** A DAM login to the library through the sign-in form: the first access and refresh tokens. */
async function damLogin(): Promise<{ access_token: string; refresh_token: string }> {
  const start = await call('/auth/login?provider=library&polling=true', { method: 'POST' });
  assert.equal(start.status, 200, JSON.stringify(start.body));
  // As a browser does it: the form page sets the cookie binding the login to this browser (issue 28).
  const { submit } = await formBrowserSignIn(new TestBrowser(t), start.body.redirect_uri, { username: 'alice', password: 'correct horse' });
  assert.equal(submit.status, 200, submit.body);
  const poll = await call(`/auth/login?state=${encodeURIComponent(start.body.state)}&polling=true`);
  assert.equal(typeof poll.body.refresh_token, 'string', JSON.stringify(poll.body));
  return poll.body;
}

const refresh = (token: string) => call('/auth/refreshToken', { dam: token });
const browse = (access: string) => call('/assets/folder/root', { dam: access });

test('a DAM refresh token rotates: reused within the grace window it answers a usable pair, after it the family is revoked with its newest token', async () => {
  const first = await damLogin();
  const r1 = await refresh(first.refresh_token);
  assert.equal(r1.status, 200, JSON.stringify(r1.body));
  assert.notEqual(r1.body.refresh_token, first.refresh_token, 'a new refresh token');

  // A client's second, concurrent refresh with the same token, within the grace window.
  t.clock.advance((GRACE_SEC - 1) * 1000);
  const r2 = await refresh(first.refresh_token);
  assert.equal(r2.status, 200, `within the grace window: ${JSON.stringify(r2.body)}`);
  assert.equal((await browse(r2.body.access_token)).status, 200, 'the pair answered within the grace window is usable');
  const r2b = await refresh(r2.body.refresh_token);
  assert.equal(r2b.status, 200, `its refresh token is the family's current one: ${JSON.stringify(r2b.body)}`);

  // The first token again, long after: a reuse. The family is revoked, the newest token with it.
  t.clock.advance((GRACE_SEC + 1) * 1000);
  const reuse = await refresh(first.refresh_token);
  assert.equal(reuse.status, 403, `a reuse after the grace window: ${JSON.stringify(reuse.body)}`);
  assert.equal(reuse.body.errorCode, 'provider-access-token-invalid');
  assert.match(reuse.body.error.details, /already used|ended/);
  const newest = await refresh(r2b.body.refresh_token);
  assert.equal(newest.status, 403, `the newest token of the revoked family: ${JSON.stringify(newest.body)}`);
  assert.equal(newest.body.errorCode, 'provider-access-token-invalid');

  // Another DAM login is another family, untouched by the revocation.
  const other = await damLogin();
  assert.equal((await refresh(other.refresh_token)).status, 200);
});

test('the attack of the review: the same DAM refresh token used three times, a minute apart, is refused from the second use on', async () => {
  const first = await damLogin();
  const answers: number[] = [];
  for (let i = 0; i < 3; i++) {
    answers.push((await refresh(first.refresh_token)).status);
    t.clock.advance(60_000);
  }
  assert.deepEqual(answers, [200, 403, 403]);
});
