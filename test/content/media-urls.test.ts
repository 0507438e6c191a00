/**
 * Signed media URLs end with the access they came from (issue 17 item 8): each URL is bound to the
 * partner and the library account it was made for, under the signature; removing the account or
 * disabling/removing the partner ends its URLs within the liveness cache's 30 s (at once for
 * partner changes, which the store signals); a logout does not. Time is a ManualClock.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { addAccount } from '../../src/providers/library/accounts.js';
import { LIVE_TTL_MS, MediaAccess } from '../../src/content/media-access.js';
import { ManualClock } from '../../src/clock.js';
import { signInToLibrary, solidJpeg, startLibraryHub, type LibraryHarness, libraryOf } from '../helpers/library.js';
import { assetIdFor } from '../../src/providers/library/scanner.js';

const api = '/api/v1';
let lib: LibraryHarness;

before(async () => {
  lib = await startLibraryHub({ 'A/one.jpg': await solidJpeg(20, 20, [200, 10, 10]), 'A/two.jpg': await solidJpeg(20, 20, [10, 200, 10]) });
});
after(() => lib.t.close());

const fetchUrl = (u: string) => {
  const url = new URL(u);
  return lib.t.app.inject({ url: url.pathname + url.search });
};

/** A library session of a new hub user (of the default partner) signed in as `account`. */
async function session(sub: string, account: string, password: string) {
  const { access_token } = await lib.t.login({ sub, email: `${sub}@partner.example` });
  const dam = await signInToLibrary(lib.t, access_token, account, password);
  const headers = { authorization: `Bearer ${access_token}`, 'provider-authorization': `Bearer ${dam}` };
  return {
    access: access_token,
    async asset(path: string) {
      const r = await lib.t.app.inject({ url: `${api}/assets/asset/${assetIdFor(path)}`, headers });
      assert.equal(r.statusCode, 200, r.body);
      return r.json() as { downloadUrl: string; thumbnailUrl: string };
    },
  };
}

test('a media URL names its partner and account under the signature: altered, swapped or dropped, it is refused', async () => {
  await addAccount(libraryOf(lib.t.hub).index, 'bob', 'bob-password-1', [], lib.t.clock.now());
  const alice = await (await session('sig-a', 'alice', 'correct horse')).asset('A/one.jpg');
  const bob = await (await session('sig-b', 'bob', 'bob-password-1')).asset('A/one.jpg');
  assert.notEqual(alice.downloadUrl, bob.downloadUrl, 'each account gets its own URL for the same asset');
  const a = new URL(alice.downloadUrl);
  const b = new URL(bob.downloadUrl);
  assert.equal(a.searchParams.get('p'), lib.t.partner.id);
  assert.equal((await fetchUrl(a.href)).statusCode, 200);
  assert.equal((await fetchUrl(b.href)).statusCode, 200);
  const variants: [string, (u: URL) => void][] = [
    ["bob's account in alice's URL", (u) => u.searchParams.set('a', b.searchParams.get('a')!)],
    ["bob's signature on alice's URL", (u) => u.searchParams.set('sig', b.searchParams.get('sig')!)],
    ['another partner', (u) => u.searchParams.set('p', 'p2')],
    ['no account', (u) => u.searchParams.delete('a')],
    ['no partner', (u) => u.searchParams.delete('p')],
    ['an empty account', (u) => u.searchParams.set('a', '')],
  ];
  for (const [name, change] of variants) {
    const u = new URL(a.href);
    change(u);
    const r = await fetchUrl(u.href);
    assert.equal(r.statusCode, 403, name);
    assert.equal(r.json().error.code, 'hub-access-denied', name);
  }
  const twice = new URL(a.href);
  twice.searchParams.append('a', b.searchParams.get('a')!);
  assert.equal((await fetchUrl(twice.href)).statusCode, 400, 'a repeated parameter is a validation error, never served');
  // A URL as made before the binding (path, exp, k and a signature over path and exp only) is refused.
  const legacy = new URL(a.href);
  legacy.searchParams.delete('p');
  legacy.searchParams.delete('a');
  assert.match((await fetchUrl(legacy.href)).json().error.details, /not bound to a partner and account/);
});

test("removing a library account ends its media URLs within 30 s (another process: no signal), and only that account's", async () => {
  const index = libraryOf(lib.t.hub).index;
  await addAccount(index, 'carol', 'carol-password-1', [], lib.t.clock.now());
  await addAccount(index, 'dave', 'dave-password-1', [], lib.t.clock.now());
  const carol = await (await session('rm-c', 'carol', 'carol-password-1')).asset('A/two.jpg');
  const dave = await (await session('rm-d', 'dave', 'dave-password-1')).asset('A/two.jpg');
  for (const u of [carol.downloadUrl, carol.thumbnailUrl, dave.downloadUrl]) assert.equal((await fetchUrl(u)).statusCode, 200);
  // As `damhub users remove carol` in another process does: a write to the index, no signal here.
  assert.equal(await index.removeAccount('carol'), true);
  lib.t.clock.advance(LIVE_TTL_MS + 1);
  for (const u of [carol.downloadUrl, carol.thumbnailUrl]) {
    const r = await fetchUrl(u);
    assert.equal(r.statusCode, 403);
    assert.match(r.json().error.details, /the account it was made for no longer exists/);
  }
  assert.equal((await fetchUrl(dave.downloadUrl)).statusCode, 200, "another account's URL for the same asset still works");
  assert.ok(LIVE_TTL_MS <= 60_000, 'within a minute');
});

test('disabling the partner ends its media URLs at once (the store signals); re-enabling restores them; a logout does not end them', async () => {
  const s = await session('pt-e', 'alice', 'correct horse');
  const url = (await s.asset('A/one.jpg')).downloadUrl;
  assert.equal((await fetchUrl(url)).statusCode, 200);
  // Logout: the picker closed; the partner still fetches the picked asset.
  assert.equal((await lib.t.app.inject({ url: `${api}/auth/logout`, headers: { authorization: `Bearer ${s.access}` } })).statusCode, 200);
  assert.equal((await fetchUrl(url)).statusCode, 200, 'a logout does not end media URLs');
  const admin = { authorization: `Bearer ${lib.t.hub.adminKey}`, 'content-type': 'application/json' };
  const patch = (enabled: boolean) => lib.t.app.inject({ method: 'PATCH', url: `${api}/admin/partners/${lib.t.partner.id}`, headers: admin, payload: JSON.stringify({ enabled }) });
  assert.equal((await patch(false)).statusCode, 200);
  const r = await fetchUrl(url);
  assert.equal(r.statusCode, 403, 'no clock advance needed: the partner change cleared the cache');
  assert.match(r.json().error.details, /the partner it was made for is disabled or removed/);
  assert.equal((await patch(true)).statusCode, 200);
  assert.equal((await fetchUrl(url)).statusCode, 200);
});

test('search by image with the hub\'s own downloadUrl checks the binding too', async () => {
  const s = await session('img-e', 'alice', 'correct horse');
  const url = (await s.asset('A/one.jpg')).downloadUrl;
  const { access_token } = await lib.t.login({ sub: 'img-e', email: 'img-e@partner.example' });
  const dam = await signInToLibrary(lib.t, access_token, 'alice', 'correct horse');
  const headers = { authorization: `Bearer ${access_token}`, 'provider-authorization': `Bearer ${dam}` };
  const search = () => lib.t.app.inject({ method: 'POST', url: `${api}/assets/search`, headers, payload: { dataBase64: url } });
  assert.equal((await search()).statusCode, 200);
  const tampered = new URL(url);
  tampered.searchParams.set('a', 'someone-else');
  const r = await lib.t.app.inject({ method: 'POST', url: `${api}/assets/search`, headers, payload: { dataBase64: tampered.href } });
  assert.equal(r.statusCode, 403);
});

test('MediaAccess: remembered answers are synchronous, concurrent checks share one read, a failing store is not remembered', async () => {
  const clock = new ManualClock();
  let reads = 0;
  let down = false;
  const live = new Set(['p1', 'u1']);
  const access = new MediaAccess({
    partnerLive: async (id) => { reads++; if (down) throw new Error('store down'); return live.has(id); },
    userLive: async (id) => { reads++; return live.has(id); },
    accountLive: async () => null,
  }, clock);
  const b = { partnerId: 'p1', userId: 'u1', account: { providerId: 'x', id: 'acc' } };
  await Promise.all([access.check(b), access.check(b), access.check(b)]);
  assert.equal(reads, 2, 'one read per part for three concurrent checks');
  assert.equal(access.check(b), undefined, 'a remembered answer needs no promise');
  assert.equal(reads, 2);
  live.delete('p1');
  assert.equal(access.check(b), undefined, 'still remembered within the TTL');
  clock.advance(LIVE_TTL_MS);
  const partnerGone = (e: unknown) => /partner it was made for is disabled or removed/.test((e as { details?: string }).details ?? '');
  await assert.rejects(async () => access.check(b), partnerGone);
  assert.throws(() => access.check(b), partnerGone, 'a remembered refusal is synchronous');
  access.invalidate();
  down = true;
  await assert.rejects(async () => access.check(b), /store down/);
  down = false;
  live.add('p1');
  await access.check(b);
});
