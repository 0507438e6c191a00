/**
 * Issue 28, item 2, for a form connector (the library's form; WebDAV, S3 and Cloudinary use the
 * same kit form): the form is the login's start page. It says which application and which hub
 * user will get access to which system, and its GET sets the cookie that binds the login to the
 * browser. A POST of the form (sign-in or Cancel) from a browser without that cookie is refused
 * before anything is counted, checked or settled.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { formOf, pollDamLogin, startDamLogin, TestBrowser } from '../helpers/browser.js';
import { startLibraryHub, type LibraryHarness } from '../helpers/library.js';

let lib: LibraryHarness;
before(async () => {
  lib = await startLibraryHub({ 'a.txt': 'x' });
});
after(() => lib.t.close());

test('library form: a POST from a browser that did not open the form is refused, counts no attempt and settles nothing; the login then completes in its own browser', async () => {
  const attacker = (await lib.t.login({ sub: 'mallory', email: 'mallory@evil.example' })).access_token;
  const { state, redirect_uri } = await startDamLogin({ t: lib.t }, attacker, 'library');
  const victim = new TestBrowser(lib.t);
  // The victim got the state (a forwarded link, a cross-site form) but never opened the page: the
  // right password, then wrong ones past the state's budget of five, then Cancel.
  for (const password of ['correct horse', ...Array.from({ length: 6 }, (_, i) => `guess-${i}`)]) {
    const r = await victim.post('/api/v1/auth/library/signin', { state, username: 'alice', password });
    assert.equal(r.status, 403, r.body.slice(0, 300));
    assert.match(r.body, /did not open this sign-in, so nothing was done/);
  }
  assert.equal((await victim.post('/api/v1/auth/library/signin', { state, cancel: '1' })).status, 403);
  assert.deepEqual(await pollDamLogin({ t: lib.t }, state), {}, 'no tokens, and the login is still pending');

  // The browser that opens the form has the state's whole budget: four wrong passwords, then the right one.
  const owner = new TestBrowser(lib.t);
  const page = await owner.open(redirect_uri);
  assert.equal(page.status, 200);
  const form = formOf(page);
  for (let i = 0; i < 4; i++) assert.equal((await owner.post(form.action, { state, username: 'alice', password: `typo-${i}` })).status, 401);
  const ok = await owner.post(form.action, { state, username: 'alice', password: 'correct horse' });
  assert.equal(ok.status, 200, ok.body.slice(0, 300));
  assert.equal(typeof (await pollDamLogin({ t: lib.t }, state)).access_token, 'string');
});

test('library form: the page states the application, the hub user and the system above the fields, escaped; Cancel in its browser ends the login', async () => {
  await lib.t.hub.stores.partners.update(lib.t.partner.id, { name: 'Shop <img src=x onerror=alert(1)>' }, lib.t.clock.now());
  try {
    const access = (await lib.t.login({ sub: 'bob', email: 'bob<script>@example.com' })).access_token;
    const { state, redirect_uri } = await startDamLogin({ t: lib.t }, access, 'library');
    const browser = new TestBrowser(lib.t);
    const page = await browser.open(redirect_uri);
    assert.equal(page.status, 200);
    assert.doesNotMatch(page.body, /<script|<img/i);
    assert.match(page.body, /<dt>Application<\/dt><dd>Shop &lt;img src=x onerror=alert\(1\)&gt;<\/dd>/);
    assert.match(page.body, /<dt>Hub user<\/dt><dd>bob&lt;script&gt;@example\.com<\/dd>/);
    assert.match(page.body, /<dt>System<\/dt><dd>Library<\/dd>/);
    assert.ok(page.body.indexOf('Who will get access') < page.body.indexOf('<form'), 'the statement comes before the fields');
    assert.match(page.body, /Sign in only if you started this sign-in yourself/);
    assert.match(String(page.headers['set-cookie']), /^damhub-login-[^=]+=[^;]+; Path=\/api\/v1\/auth; Max-Age=\d+; HttpOnly; SameSite=Lax$/);
    const cancelled = await browser.post(formOf(page).action, { state, cancel: '1' });
    assert.equal(cancelled.status, 200);
    assert.deepEqual(await pollDamLogin({ t: lib.t }, state), { error: 'the sign-in was cancelled' });
  } finally {
    await lib.t.hub.stores.partners.update(lib.t.partner.id, { name: 'Partner One' }, lib.t.clock.now());
  }
});
