/**
 * S3 end to end through the hub against OpenStack Swift's S3 API (s3api + tempauth, started on
 * loopback by the test; it checks V4 signatures, unlike s3rver): sign-in through the form (a
 * wrong secret first), browse, page, search, asset with header and image metadata, presigned
 * downloads whose bytes equal the object, and a versioned key: every version's presigned
 * download equals what was written, and the asset's version number is the one its versions
 * list gives the current content. A server without the versioning API (405) stays on s3rver:
 * Swift implements it.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import sharp from 'sharp';
import { assertError } from '../../helpers/hub.js';
import { solidJpeg } from '../../helpers/library.js';
import { startSwiftS3, type RealS3 } from '../../helpers/real-servers.js';
import { signInS3, startS3Hub, startS3Server, type S3Hub } from '../../helpers/s3.js';

let s3: RealS3;
let h: S3Hub;
const objects: Record<string, Buffer | string> = {};
/** What was written to the versioned key, oldest first. */
const generations = ['first draft of the poster', 'second, final poster text'];

before(async () => {
  for (let i = 0; i < 9; i++) objects[`shoot/frame ${i}.jpg`] = await solidJpeg(16 + i, 16, [i * 25, 0, 0]);
  objects['shoot/cover.jpg'] = await sharp({ create: { width: 120, height: 80, channels: 3, background: { r: 9, g: 99, b: 199 } } })
    .withExif({ IFD0: { Model: 'Damhub TestCam', Copyright: 'Test Studio' } }).jpeg().toBuffer();
  objects['shoot/raw/frame 0.cr2'] = 'not really raw';
  // A listing carries no Content-Type: these take their names' types (issue 29).
  objects['shoot/raw/brief.md'] = '# Brief';
  objects['shoot/raw/still.heic'] = 'not really HEIC';
  objects['shoot/raw/layout.psd'] = 'not really Photoshop';
  objects['shoot/raw/cover.ai'] = 'not really Illustrator';
  objects['readme.txt'] = 'bucket readme';
  s3 = await startSwiftS3(objects, { versioning: true, meta: { 'shoot/cover.jpg': { title: 'Cover shot', photographer: 'Ada' } } });
  for (const body of generations) await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: 'posters/poster.txt', Body: body }));
  h = await startS3Hub(s3);
});
after(async () => {
  await h?.t.close();
  await s3?.close();
});

async function bytesOf(url: string): Promise<Buffer> {
  const res = await fetch(url);
  const body = Buffer.from(await res.arrayBuffer());
  assert.equal(res.status, 200, `presigned GET answered ${res.status}: ${body.toString().slice(0, 300)}`);
  return body;
}

test('a wrong secret is refused on the form (Swift checks the signature), secret never echoed', async () => {
  const { access_token } = await h.t.login({ sub: 'user-2', email: 'two@partner.example' });
  const wrong = await signInS3(h.t, access_token, { endpoint: s3.endpoint, region: s3.region, bucket: s3.bucket, accessKeyId: s3.accessKeyId, secretAccessKey: 'wrong-secret' });
  assert.notEqual(wrong.status, 200);
  assert.match(wrong.page, /did not accept these credentials/);
  assert.doesNotMatch(wrong.page, /wrong-secret/);
  assert.equal(wrong.token, null);
});

test('browse, page, search, asset and presigned download: bytes equal', async () => {
  const root = await h.get('/api/v1/assets/folder/root');
  assert.equal(root.status, 200, JSON.stringify(root.body));
  assert.deepEqual(root.body.folders, [{ id: 'posters/', name: 'posters' }, { id: 'shoot/', name: 'shoot' }]);
  assert.deepEqual(root.body.assets.map((a: any) => a.id), ['readme.txt']);

  const ids: string[] = [];
  let more: string | undefined;
  let pages = 0;
  do {
    const r = await h.get(`/api/v1/assets/folder/shoot%2F?size=4${more ? `&more=${encodeURIComponent(more)}` : ''}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    if (pages === 0) assert.deepEqual(r.body.folders.map((f: any) => f.id), ['shoot/raw/']);
    else assert.deepEqual(r.body.folders, []);
    assert.equal(r.body.totalAssetsCount, 10);
    ids.push(...r.body.assets.map((a: any) => a.id));
    more = r.body.more;
    pages++;
  } while (more);
  assert.equal(pages, 3);
  assert.equal(new Set(ids).size, 10);

  const s = await h.get('/api/v1/assets/search?query=frame%200');
  assert.deepEqual(s.body.assets.map((a: any) => a.id).sort(), ['shoot/frame 0.jpg', 'shoot/raw/frame 0.cr2']);

  const a = await h.get(`/api/v1/assets/asset/${encodeURIComponent('shoot/cover.jpg')}`);
  assert.equal(a.status, 200, JSON.stringify(a.body));
  assert.equal(a.body.mimeType, 'image/jpeg');
  assert.equal(a.body.xSizePx, 120);
  assert.equal(a.body.ySizePx, 80);
  assert.equal(a.body.exif.cameraModel, 'Damhub TestCam');
  assert.equal(a.body.copyright, 'Test Studio');
  assert.equal(a.body.title, 'Cover shot');
  assert.deepEqual(a.body.values.find((v: any) => v.name === 'photographer')?.value, 'Ada');
  assert.match(a.body.downloadHashMd5, /^[0-9a-f]{32}$/);
  assert.ok((await bytesOf(a.body.downloadUrl)).equals(objects['shoot/cover.jpg'] as Buffer), 'downloaded bytes equal the object');
  // Every listed asset's presigned URL is accepted too, not only the one asset's.
  for (const x of root.body.assets) assert.equal((await bytesOf(x.downloadUrl)).toString(), objects[x.id]);
  for (const x of s.body.assets) assert.ok((await bytesOf(x.downloadUrl)).equals(Buffer.from(objects[x.id]!)));
});

test('a listing has no Content-Type: each key takes the type its name has in mime-db (issue 29)', async () => {
  const r = await h.get('/api/v1/assets/folder/shoot%2Fraw%2F');
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.deepEqual(Object.fromEntries(r.body.assets.map((a: any) => [a.name, a.mimeType])), {
    'brief.md': 'text/markdown',
    'cover.ai': 'application/postscript',
    'frame 0.cr2': 'application/octet-stream', // no registered type: mime-db has none
    'layout.psd': 'image/vnd.adobe.photoshop',
    'still.heic': 'image/heic',
  });
});

test('a versioned key: every version downloads what was written, and the asset carries the current number', async () => {
  const id = encodeURIComponent('posters/poster.txt');
  const all = await h.get(`/api/v1/assets/assetversions/${id}?withMaster=true`);
  assert.equal(all.status, 200, JSON.stringify(all.body));
  assert.deepEqual(all.body.versions.map((v: any) => v.version), [2, 1], 'newest first, numbered from the oldest');
  const a = await h.get(`/api/v1/assets/asset/${id}`);
  assert.equal(a.status, 200, JSON.stringify(a.body));
  assert.equal(a.body.version, 2, 'the asset is the version assetversions lists as current');
  const listed = (await h.get(`/api/v1/assets/folder/${encodeURIComponent('posters/')}`)).body.assets[0];
  assert.ok(listed.version === undefined || listed.version === 2, `a listing claims no other version than the current (${listed.version})`);
  // Both versions were written within the same second: the numbers follow the listing's order, not a tie of LastModified.
  for (const v of all.body.versions) assert.equal((await bytesOf(v.downloadUrl)).toString(), generations[v.version - 1]);
  const older = await h.get(`/api/v1/assets/assetversions/${id}`);
  assert.deepEqual(older.body.versions.map((v: any) => v.version), [1]);
  assert.equal((await bytesOf(a.body.downloadUrl)).toString(), generations[1]);
});

// Swift implements ListObjectVersions, so a server without it is s3rver's case (it answers 405).
test('without versioning at the server (s3rver answers 405), the object is its only version, numbered 1 everywhere', async (t) => {
  const fake = await startS3Server({ 'readme.txt': 'bucket readme' });
  const hf = await startS3Hub(fake);
  t.after(async () => {
    await hf.t.close();
    await fake.close();
  });
  const r = await hf.get(`/api/v1/assets/assetversions/${encodeURIComponent('readme.txt')}?withMaster=true`);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.deepEqual(r.body.versions.map((v: any) => [v.id, v.version, v.fileSize]), [['readme.txt', 1, 13]]);
  assert.deepEqual((await hf.get(`/api/v1/assets/assetversions/${encodeURIComponent('readme.txt')}`)).body.versions, []);
  assert.equal((await hf.get('/api/v1/assets/asset/readme.txt')).body.version, 1);
});

test('unknown keys and folders are integration-not-found', async () => {
  assertError(await h.t.app.inject({ method: 'GET', url: '/api/v1/assets/asset/shoot%2Fnope.jpg', headers: h.headers }), 'integration-not-found', 404, 'integration');
  assertError(await h.t.app.inject({ method: 'GET', url: '/api/v1/assets/folder/nope%2F', headers: h.headers }), 'integration-not-found', 404, 'integration');
});
