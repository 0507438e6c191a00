/**
 * Thumbnails of S3 images, end to end through the hub against OpenStack Swift's S3 API: every
 * image asset of a listing and of a search has a thumbnailUrl that loads as a JPEG of the library's
 * thumbnail size (made by the hub from GetObject, decoded in the image pool), the second load
 * comes from the disk cache, the asset detail has its pixel size and EXIF from a ranged read of
 * the object's head, and an overwritten key gets a thumbnail of its new content.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import sharp from 'sharp';
import { solidJpeg } from '../../helpers/library.js';
import { startSwiftS3, type RealS3 } from '../../helpers/real-servers.js';
import { startS3Hub, type S3Hub } from '../../helpers/s3.js';

let s3: RealS3;
let h: S3Hub;

before(async () => {
  s3 = await startSwiftS3({
    'shoot/wide.jpg': await sharp({ create: { width: 600, height: 400, channels: 3, background: { r: 9, g: 99, b: 199 } } })
      .withExif({ IFD0: { Model: 'Damhub TestCam' } }).jpeg().toBuffer(),
    'shoot/square.webp': await sharp({ create: { width: 300, height: 300, channels: 3, background: { r: 200, g: 9, b: 9 } } }).webp().toBuffer(),
    'shoot/readme.txt': 'not an image',
  });
  h = await startS3Hub(s3);
});
after(async () => {
  await h?.t.close();
  await s3?.close();
});

async function load(url: string) {
  const u = new URL(url);
  const r = await h.t.app.inject({ method: 'GET', url: u.pathname + u.search });
  return { status: r.statusCode, type: String(r.headers['content-type']), source: String(r.headers['x-damhub-thumbnail']), bytes: r.rawPayload };
}

test('every image asset of a listing and a search has a thumbnailUrl that loads as a JPEG; the second load is cached', async () => {
  const list = await h.get('/api/v1/assets/folder/shoot%2F');
  assert.equal(list.status, 200, JSON.stringify(list.body));
  const search = await h.get('/api/v1/assets/search?query=wide');
  assert.equal(search.body.assets.length, 1);
  const images = [...list.body.assets, ...search.body.assets].filter((a: any) => a.mimeType.startsWith('image/'));
  assert.equal(images.length, 3);
  assert.equal(list.body.assets.find((a: any) => a.name === 'readme.txt').thumbnailUrl, undefined);
  const sizes: Record<string, [number, number]> = { 'wide.jpg': [256, 171], 'square.webp': [256, 256] };
  for (const a of images) {
    assert.match(a.thumbnailUrl, /\/api\/v1\/connectors\/s3\/thumbnail\//);
    assert.equal(a.conversions.find((c: any) => c.id === 'thumbnail').url, a.thumbnailUrl);
    const t = await load(a.thumbnailUrl);
    assert.equal(t.status, 200, t.bytes.toString());
    assert.equal(t.type, 'image/jpeg');
    const m = await sharp(t.bytes).metadata();
    assert.equal(m.format, 'jpeg');
    assert.equal(m.width, sizes[a.name]![0]);
    assert.ok(Math.abs(m.height! - sizes[a.name]![1]) <= 1, `${a.name}: ${m.height}`);
  }
  // The search's link for wide.jpg names the same object and ETag as the listing's: one cache entry.
  assert.equal((await load(search.body.assets[0].thumbnailUrl)).source, 'cached');
  const conn = h.t.hub.providers.get('s3') as unknown as { thumbnailCache: { size: number } };
  assert.equal(conn.thumbnailCache.size, 2);
});

test('the asset detail has pixel size and EXIF from the head of the object', async () => {
  const a = await h.get(`/api/v1/assets/asset/${encodeURIComponent('shoot/wide.jpg')}`);
  assert.equal(a.status, 200, JSON.stringify(a.body));
  assert.equal(a.body.xSizePx, 600);
  assert.equal(a.body.ySizePx, 400);
  assert.equal(a.body.exif.cameraModel, 'Damhub TestCam');
  assert.ok(a.body.thumbnailUrl);
});

test('an overwritten key gets a thumbnail of its new content, not the cached old one', async () => {
  const before = (await h.get('/api/v1/assets/folder/shoot%2F')).body.assets.find((a: any) => a.name === 'wide.jpg');
  assert.equal((await load(before.thumbnailUrl)).source, 'cached');
  await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: 'shoot/wide.jpg', Body: await solidJpeg(100, 400, [0, 200, 0]) }));
  const after = (await h.get('/api/v1/assets/folder/shoot%2F')).body.assets.find((a: any) => a.name === 'wide.jpg');
  const t = await load(after.thumbnailUrl);
  assert.equal(t.source, 'made');
  const m = await sharp(t.bytes).metadata();
  assert.deepEqual([m.width, m.height], [64, 256]);
});
