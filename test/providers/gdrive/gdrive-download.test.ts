/**
 * Google Drive downloads through the hub's grant, end to end over the replay server: the asset's
 * downloadUrl is fetched by a plain HTTP client with no session and no Authorization header (a
 * partner's server), the bytes are those files.get?alt=media serves, Range is honoured, a
 * Google-native document downloads as its PDF export, and the link is refused once the partner is
 * disabled (the hub's MediaAccess), and it outlives the access token it was made with.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { googleDriveConnector } from '../../../src/providers/gdrive/provider.js';
import { startDriveReplay, type DriveReplay } from '../../helpers/gdrive-replay.js';
import { assertError, bearer, type TestHub } from '../../helpers/hub.js';
import { oauthSignIn, startConnectorHub } from '../../helpers/saas.js';

let r: DriveReplay;
let t: TestHub;
let access: string;
let dam: { access_token: string };
let origin: string;

before(async () => {
  r = await startDriveReplay(['Brand/hero.jpg', 'Brand/Plan.gdoc', 'Brand/Survey.gform', 'notes.txt'], { 'Brand/hero.jpg': 2, 'Brand/Plan.gdoc': 1 });
  ({ t } = await startConnectorHub(googleDriveConnector({
    clientId: 'drive-app', clientSecret: 'drive-secret', allowInsecureRequests: true,
    endpoints: { authorize: `${r.url}/o/oauth2/v2/auth`, token: `${r.url}/token`, api: r.url },
  }), { timeoutMs: 2000, retries: 1, retryBaseMs: 1 }));
  access = (await t.login()).access_token;
  dam = await oauthSignIn(t, 'gdrive', access);
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  origin = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
});
after(async () => {
  await t?.close();
  await r?.close();
});

const get = (url: string) =>
  t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: { authorization: bearer(access), 'provider-authorization': bearer(dam.access_token) } });

/** The asset's downloadUrl, pointed at the listening hub (its public URL is http://hub.test). */
async function linkOf(path: string): Promise<string> {
  const res = await get(`/assets/asset/${r.ids[path]}`);
  assert.equal(res.statusCode, 200, res.body);
  const u = new URL(res.json().downloadUrl);
  assert.equal(u.origin, 'http://hub.test', 'the link is on the hub, not on Google');
  return `${origin}${u.pathname}${u.search}`;
}

/** A partner's server: plain fetch, no cookie, no Authorization header. */
const fetchPlain = (url: string, headers: Record<string, string> = {}) => fetch(url, { headers });

test('the downloadUrl is fetched with no session: the bytes alt=media serves, the user\'s token sent upstream', async () => {
  const url = await linkOf('Brand/hero.jpg');
  const res = await fetchPlain(url);
  assert.equal(res.status, 200);
  const body = Buffer.from(await res.arrayBuffer());
  assert.ok(body.equals(r.content(r.ids['Brand/hero.jpg']!)), 'the bytes equal what the replay serves');
  assert.equal(res.headers.get('content-type'), 'image/jpeg');
  assert.match(String(res.headers.get('content-disposition')), /attachment; filename\*=UTF-8''hero\.jpg/);
  const up = r.contentRequests.at(-1)!;
  assert.equal(up.path, `/drive/v3/files/${r.ids['Brand/hero.jpg']}`);
  assert.match(up.query, /alt=media/);
  assert.match(String(up.headers.authorization), /^Bearer /, 'the hub fetched with the user\'s Drive token');
});

test('Range is honoured (206, Content-Range, the slice); If-None-Match is passed upstream', async () => {
  const url = await linkOf('notes.txt');
  const whole = r.content(r.ids['notes.txt']!);
  const res = await fetchPlain(url, { range: 'bytes=100-199', 'if-none-match': '"v1"' });
  assert.equal(res.status, 206);
  assert.equal(res.headers.get('content-range'), `bytes 100-199/${whole.length}`);
  assert.ok(Buffer.from(await res.arrayBuffer()).equals(whole.subarray(100, 200)));
  const up = r.contentRequests.at(-1)!;
  assert.equal(up.headers.range, 'bytes=100-199');
  assert.equal(up.headers['if-none-match'], '"v1"');
});

test('listings carry the same kind of link: browse and search assets download too', async () => {
  const page = (await get(`/assets/folder/${r.ids['Brand']}`)).json();
  const hero = page.assets.find((a: any) => a.name === 'hero.jpg');
  const u = new URL(hero.downloadUrl);
  const res = await fetchPlain(`${origin}${u.pathname}${u.search}`);
  assert.equal(res.status, 200);
  assert.ok(Buffer.from(await res.arrayBuffer()).equals(r.content(r.ids['Brand/hero.jpg']!)));
  const found = (await get('/assets/search?query=notes')).json();
  assert.match(found.assets[0].downloadUrl, /^http:\/\/hub\.test\/api\/v1\/connectors\/gdrive\/download\/notes\.txt\?g=/);
});

test('every revision of a binary file downloads with no session: its own bytes (revisions.get?alt=media), Range too; a native document\'s revisions have no link', async () => {
  const res = await get(`/assets/assetversions/${r.ids['Brand/hero.jpg']}?withMaster=true`);
  assert.equal(res.statusCode, 200, res.body);
  const versions = res.json().versions as { version: number; downloadUrl?: string }[];
  assert.deepEqual(versions.map((v) => v.version), [3, 2, 1]);
  const seen = new Set<string>();
  for (const v of versions) {
    const u = new URL(v.downloadUrl!);
    assert.equal(u.origin, 'http://hub.test', 'the link is on the hub, not on Google');
    const got = await fetchPlain(`${origin}${u.pathname}${u.search}`);
    assert.equal(got.status, 200);
    const body = Buffer.from(await got.arrayBuffer());
    assert.ok(body.equals(r.revisionContent(`${r.ids['Brand/hero.jpg']}-r${v.version}`)), `version ${v.version}: the revision's own bytes`);
    seen.add(body.toString('hex'));
  }
  assert.equal(seen.size, 3, 'three different contents');
  // The current revision's bytes are the file's own.
  assert.ok(r.revisionContent(`${r.ids['Brand/hero.jpg']}-r3`).equals(r.content(r.ids['Brand/hero.jpg']!)));
  const oldest = new URL(versions[2]!.downloadUrl!);
  const part = await fetchPlain(`${origin}${oldest.pathname}${oldest.search}`, { range: 'bytes=10-19' });
  assert.equal(part.status, 206);
  assert.ok(Buffer.from(await part.arrayBuffer()).equals(r.revisionContent(`${r.ids['Brand/hero.jpg']}-r1`).subarray(10, 20)));
  assert.ok(r.contentRequests.some((q) => q.path.endsWith(`/revisions/${r.ids['Brand/hero.jpg']}-r1`) && q.query.includes('alt=media')));
  const doc = await get(`/assets/assetversions/${r.ids['Brand/Plan.gdoc']}?withMaster=true`);
  assert.equal(doc.statusCode, 200, doc.body);
  assert.equal(doc.json().versions.length, 2);
  assert.ok(doc.json().versions.every((v: { downloadUrl?: string }) => v.downloadUrl === undefined));
});

test('a Google Doc downloads as its PDF export; a Google Form has no downloadUrl', async () => {
  const url = await linkOf('Brand/Plan.gdoc');
  assert.match(url, /\/download\/Plan\.pdf\?g=/, 'the file name says what the bytes are');
  const res = await fetchPlain(url);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'application/pdf');
  const body = Buffer.from(await res.arrayBuffer());
  assert.ok(body.equals(r.content(r.ids['Brand/Plan.gdoc']!)));
  assert.equal(body.subarray(0, 5).toString(), '%PDF-');
  const up = r.contentRequests.at(-1)!;
  assert.equal(up.path, `/drive/v3/files/${r.ids['Brand/Plan.gdoc']}/export`);
  assert.match(up.query, /mimeType=application%2Fpdf/);

  const form = await get(`/assets/asset/${r.ids['Brand/Survey.gform']}`);
  assert.equal(form.statusCode, 200, form.body);
  assert.equal(form.json().name, 'Survey');
  assert.equal(form.json().downloadUrl, undefined, 'a form exports to nothing a partner can use');
});

test('an altered link or one without a grant is a clear hub-access-denied', async () => {
  const u = new URL(await linkOf('notes.txt'));
  const g = u.searchParams.get('g')!;
  const altered = g.slice(0, -3) + (g.endsWith('AAA') ? 'BBB' : 'AAA');
  assertError(await t.app.inject({ method: 'GET', url: `${u.pathname}?g=${altered}` }), 'hub-access-denied', 403);
  assertError(await t.app.inject({ method: 'GET', url: u.pathname }), 'hub-access-denied', 403);
});

test('the link is refused once the partner is disabled, and works again when re-enabled', async () => {
  const url = await linkOf('notes.txt');
  assert.equal((await fetchPlain(url)).status, 200);
  const before = r.contentRequests.length;
  const partner = t.partner.id;
  await t.hub.stores.partners.update(partner, { enabled: false }, t.clock.now());
  try {
    const res = await fetchPlain(url);
    assert.equal(res.status, 403);
    const body = await res.json() as { error: { code: string; details: string } };
    assert.equal(body.error.code, 'hub-access-denied');
    assert.match(body.error.details, /the partner it was made for is disabled or removed/);
    assert.equal(r.contentRequests.length, before, 'Drive was not asked');
  } finally {
    await t.hub.stores.partners.update(partner, { enabled: true }, t.clock.now());
  }
  assert.equal((await fetchPlain(url)).status, 200);
});

test('a link outlives the Google access token it was made with: past its expiry the hub renews it', async () => {
  const url = await linkOf('notes.txt');
  // Two hours on: the link (4 h) is valid, the access token (expires_in 3920 s) is not.
  t.clock.advance(2 * 3600_000);
  r.revokeTokens();
  const res = await fetchPlain(url);
  assert.equal(res.status, 200, await res.clone().text());
  assert.ok(Buffer.from(await res.arrayBuffer()).equals(r.content(r.ids['notes.txt']!)));
});
