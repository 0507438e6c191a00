/**
 * Thumbnails of WebDAV images, end to end through the hub against the two real WebDAV servers
 * (Apache mod_dav, rclone serve webdav): every image asset of a listing has a thumbnailUrl that
 * loads as a JPEG of the library's thumbnail size; the second load comes from the disk cache; the
 * detail carries the pixel size read from the file's head; a file replaced after listing gets a new
 * thumbnail link whose image is the new file's, never the old one's.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { solidJpeg } from '../../helpers/library.js';
import { startApacheDav, startRcloneDav, type RealDav } from '../../helpers/real-servers.js';
import { startWebdavHub, type WebdavHub } from '../../helpers/webdav.js';

async function loadThumb(h: WebdavHub, url: string) {
  const u = new URL(url);
  // No hub headers: a thumbnail link works in an <img> tag, on its sealed grant alone.
  const r = await h.t.app.inject({ method: 'GET', url: u.pathname + u.search });
  return { status: r.statusCode, type: String(r.headers['content-type']), source: String(r.headers['x-damhub-thumbnail']), bytes: r.rawPayload };
}

for (const [server, startDav] of [['Apache mod_dav', startApacheDav], ['rclone serve webdav', startRcloneDav]] as const) describe(`thumbnails: ${server}`, () => {
  let dav: RealDav;
  let h: WebdavHub;

  before(async () => {
    dav = await startDav({
      'Shoot/wide.jpg': await solidJpeg(640, 480, [200, 40, 40]),
      'Shoot/tall.png': await sharp({ create: { width: 120, height: 360, channels: 3, background: { r: 10, g: 120, b: 10 } } }).png().toBuffer(),
      'Shoot/notes.txt': 'not an image',
    });
    h = await startWebdavHub(dav);
  });
  after(async () => {
    await h?.t.close();
    await dav?.close();
  });

  test('every image asset of a listing has a thumbnailUrl that loads as a 256 px JPEG; the second load is cached', async () => {
    const r = await h.get(`/api/v1/assets/folder/${encodeURIComponent('/Shoot')}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const byName = Object.fromEntries(r.body.assets.map((a: any) => [a.name, a]));
    assert.equal(byName['notes.txt'].thumbnailUrl, undefined, 'no thumbnail for a text file');
    for (const [name, w, hgt] of [['wide.jpg', 256, 192], ['tall.png', 85, 256]] as const) {
      const a = byName[name];
      assert.match(a.thumbnailUrl, /\/api\/v1\/connectors\/webdav\/thumbnail\/.+\?g=/);
      assert.deepEqual(a.conversions.map((c: any) => c.id), ['thumbnail', 'original']);
      assert.equal(a.conversions[0].url, a.thumbnailUrl);
      const first = await loadThumb(h, a.thumbnailUrl);
      assert.equal(first.status, 200, first.bytes.toString());
      assert.equal(first.type, 'image/jpeg');
      assert.equal(first.source, 'made');
      const m = await sharp(first.bytes).metadata();
      assert.equal(m.format, 'jpeg');
      assert.deepEqual([m.width, m.height], [w, hgt]);
      const again = await loadThumb(h, a.thumbnailUrl);
      assert.equal(again.source, 'cached');
      assert.ok(again.bytes.equals(first.bytes));
    }
    const files = fs.readdirSync(path.join(h.t.hub.config.dataDir, 'thumbnails', 'webdav')).filter((f) => f.endsWith('.jpg'));
    assert.equal(files.length, 2, 'one cached file per image');
  });

  test('the asset detail carries the pixel size read from the head of the file', async () => {
    const r = await h.get(`/api/v1/assets/asset/${encodeURIComponent('/Shoot/wide.jpg')}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.xSizePx, 640);
    assert.equal(r.body.ySizePx, 480);
    assert.ok(r.body.values.some((v: any) => v.id === 'dimensions' && v.value === '640 × 480'));
    assert.ok(r.body.thumbnailUrl);
  });

  // Only against Apache: rclone serve webdav keeps its directory listing for --dir-cache-time (5
  // minutes), so it goes on announcing the old ETag; the loopback server of webdav-thumb-faults
  // covers a listing and a GET that disagree.
  if (server === 'Apache mod_dav') test('a file replaced after listing gets a new thumbnail link with the new image, never the old one', async () => {
    const list = async () => (await h.get(`/api/v1/assets/folder/${encodeURIComponent('/Shoot')}`)).body.assets.find((a: any) => a.name === 'wide.jpg');
    const before = await list();
    const old = await loadThumb(h, before.thumbnailUrl);
    assert.equal(old.status, 200);
    // Replaced in place with a different picture (and size): the server gives it a new ETag.
    const file = path.join(dav.root, 'Shoot/wide.jpg');
    fs.writeFileSync(file, await solidJpeg(900, 300, [20, 20, 220]));
    // Servers that derive the ETag from size and time (rclone) see a new time whatever the size.
    const later = new Date(Date.now() + 120_000);
    fs.utimesSync(file, later, later);
    const afterChange = await list();
    assert.notEqual(afterChange.values.find((v: any) => v.id === 'etag')?.value ?? afterChange.modified, before.values.find((v: any) => v.id === 'etag')?.value ?? before.modified, 'the server names a new version');
    const fresh = await loadThumb(h, afterChange.thumbnailUrl);
    assert.equal(fresh.source, 'made', 'not the old thumbnail from the cache');
    const m = await sharp(fresh.bytes).metadata();
    assert.equal(m.width, 256);
    assert.ok(m.height === 85 || m.height === 86, `a 3:1 image, got ${m.height}`);
    // The old link names the old ETag: it still answers (from the cache) with the old version's image.
    const stale = await loadThumb(h, before.thumbnailUrl);
    assert.equal(stale.source, 'cached');
    assert.ok(stale.bytes.equals(old.bytes));
  });
});
