/**
 * The S3 connector's writes against OpenStack Swift's S3 API (s3api), versioned bucket, started on
 * loopback: uploads (streamed PutObject, multipart in three parts, aborted when the body fails
 * half-way), conflicts, new versions, rename and move by copy+delete, folders, and a full
 * container quota. The write limits are lowered (and Swift's smallest part with them) so the
 * multipart bodies stay a few hundred KiB. The provider is called directly, as the hub's write
 * engine calls it once it has checked the request.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { after, before, test } from 'node:test';
import { CreateBucketCommand, GetObjectCommand, HeadObjectCommand, ListMultipartUploadsCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { KeyRing } from '../../../src/auth/keys.js';
import { ManualClock } from '../../../src/clock.js';
import { contentTagOf } from '../../../src/providers/asset-state.js';
import { capabilitiesOf } from '../../../src/providers/capabilities.js';
import type { ProviderSession, UploadBody } from '../../../src/providers/contract.js';
import type { DefinedConnector } from '../../../src/providers/kit/define.js';
import { s3ConnectorWith } from '../../../src/providers/s3/provider.js';
import { startSwiftS3, type RealS3 } from '../../helpers/real-servers.js';

const KIB = 1024;
const LIMITS = { putMaxBytes: 64 * KIB, partBytes: 40 * KIB };

let s3: RealS3;
let p: DefinedConnector;
let session: ProviderSession;

before(async () => {
  s3 = await startSwiftS3({
    'Docs/readme.txt': 'first readme',
    'Docs/notes.txt': 'notes',
    'Docs/Old/archive.txt': 'archive',
    'Photos/cover.txt': 'cover',
    'Team/a.txt': 'a',
    'Team/Sub/b.txt': 'b',
    'Trash/one.txt': '1',
    'Trash/Deep/two.txt': '2',
    'Lone/only.txt': 'only',
  }, { versioning: true, minPartBytes: 1024, meta: { 'Docs/readme.txt': { title: 'Read me' } } });
  p = s3ConnectorWith({ limits: LIMITS })({ clock: new ManualClock(Date.now()), keys: KeyRing.generate(0), publicUrl: 'http://hub.test', upstream: { allowHosts: ['127.0.0.1'], timeoutMs: 10_000 } });
  session = sessionFor(s3.bucket);
});
after(async () => {
  await p?.close();
  await s3?.close();
});

function sessionFor(bucket: string): ProviderSession {
  return { providerId: 's3', userId: 'u1', partnerId: 'p1', credentials: { endpoint: s3.endpoint, region: s3.region, bucket, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } };
}

/** A body as the hub hands it over: streamed in 16 KiB chunks, its length declared or not. */
function bodyOf(bytes: Buffer | string, declared = true, mimeType = 'text/plain'): UploadBody {
  const b = Buffer.from(bytes);
  const chunks: Buffer[] = [];
  for (let i = 0; i < b.length; i += 16 * KIB) chunks.push(b.subarray(i, i + 16 * KIB));
  return { stream: Readable.from(chunks), length: declared ? b.length : null, mimeType };
}

/** A body that fails after `good` bytes, as when the client goes away mid-upload. */
function failingBody(good: number, declared: number): UploadBody {
  let sent = 0;
  const stream = new Readable({
    read() {
      if (sent >= good) {
        this.destroy(new Error('client went away'));
        return;
      }
      const n = Math.min(8 * KIB, good - sent);
      sent += n;
      this.push(Buffer.alloc(n, 7));
    },
  });
  return { stream, length: declared, mimeType: 'application/octet-stream' };
}

const noCond = { ifMatch: null, upstreamTag: null };
const bytes = (n: number, seed: number) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + seed) % 251));

async function read(key: string, bucket = s3.bucket): Promise<Buffer> {
  const r = await s3.client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return Buffer.from(await r.Body!.transformToByteArray());
}

async function exists(key: string): Promise<boolean> {
  try {
    await s3.client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: key }));
    return true;
  } catch (e) {
    if ((e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return false;
    throw e;
  }
}

async function keysUnder(prefix: string): Promise<string[]> {
  const r = await s3.client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: prefix }));
  return (r.Contents ?? []).map((o) => o.Key!).sort();
}

const fails = (code: string) => (e: unknown) => {
  assert.equal((e as { code?: string }).code, code, String((e as Error).message) + ' ' + String((e as { details?: string }).details));
  return true;
};

test('capabilities: every write but lock (S3 has no locks), and any file type', async () => {
  const caps = capabilitiesOf(p);
  assert.deepEqual([caps.upload, caps.update, caps.rename, caps.move, caps.delete, caps.folders, caps.lock], [true, true, true, true, true, true, false]);
  assert.equal(p.lockAsset, undefined);
  assert.equal(await p.uploadExtensions!(session, 'Docs/'), null);
  // The bucket root: content may be added, but it cannot be renamed or deleted.
  const root = await p.browse!(session, 'root', { size: 1, more: null, filters: [], timeZone: null, dataLocale: null, uiLocale: 'en' });
  assert.deepEqual(root.capabilities, { canDeleteFolder: false, canRenameFolder: false });
  const docs = await p.browse!(session, 'Docs/', { size: 1, more: null, filters: [], timeZone: null, dataLocale: null, uiLocale: 'en' });
  assert.equal(docs.capabilities, undefined);
});

test('upload: a new object streamed in one PutObject; the asset carries its ETag as content tag', async () => {
  const r = await p.upload!(session, { parentId: 'Docs/', name: 'new file.txt', onConflict: 'fail' }, bodyOf('hello new file'));
  assert.equal(r.created, true);
  assert.equal(r.asset.id, 'Docs/new file.txt');
  assert.equal(r.asset.name, 'new file.txt');
  assert.equal(r.asset.fileSize, 14);
  assert.equal((await read('Docs/new file.txt')).toString(), 'hello new file');
  const head = await s3.client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: 'Docs/new file.txt' }));
  assert.equal(head.ContentType, 'text/plain');
  assert.equal(contentTagOf(r.asset), head.ETag);
  assert.equal(r.asset.downloadHashMd5, createHash('md5').update('hello new file').digest('hex'));
  // Listings carry the tag too, so an ETag read from a folder page is the asset's.
  const page = await p.browse!(session, 'Docs/', { size: 50, more: null, filters: [], timeZone: null, dataLocale: null, uiLocale: 'en' });
  assert.equal(contentTagOf(page.assets.find((a) => a.id === 'Docs/new file.txt')!), head.ETag);
  // Empty files, declared or not.
  for (const [name, declared] of [['empty.txt', true], ['empty undeclared.txt', false]] as const) {
    const e = await p.upload!(session, { parentId: 'Docs/', name, onConflict: 'fail' }, bodyOf('', declared));
    assert.equal(e.asset.fileSize, 0);
    assert.equal((await read(`Docs/${name}`)).length, 0);
  }
});

test('upload onto a taken name: fail → asset-exists (content untouched); rename → "name (2).ext", then (3)', async () => {
  await assert.rejects(p.upload!(session, { parentId: 'Docs/', name: 'notes.txt', onConflict: 'fail' }, bodyOf('other')), fails('asset-exists'));
  assert.equal((await read('Docs/notes.txt')).toString(), 'notes');
  const second = await p.upload!(session, { parentId: 'Docs/', name: 'notes.txt', onConflict: 'rename' }, bodyOf('second'));
  assert.deepEqual([second.created, second.asset.id], [true, 'Docs/notes (2).txt']);
  const third = await p.upload!(session, { parentId: 'Docs/', name: 'notes.txt', onConflict: 'rename' }, bodyOf('third'));
  assert.equal(third.asset.id, 'Docs/notes (3).txt');
  assert.equal((await read('Docs/notes (3).txt')).toString(), 'third');
  assert.equal((await read('Docs/notes.txt')).toString(), 'notes');
  // A sub-folder's name is taken too.
  await assert.rejects(p.upload!(session, { parentId: 'Docs/', name: 'Old', onConflict: 'fail' }, bodyOf('x')), fails('asset-exists'));
});

test('upload onConflict version: the same id one version later (bucket versioning keeps the old content)', async () => {
  const before = await p.asset!(session, 'Photos/cover.txt', { uiLocale: 'en', timeZone: null });
  const r = await p.upload!(session, { parentId: 'Photos/', name: 'cover.txt', onConflict: 'version' }, bodyOf('cover v2'));
  assert.equal(r.created, false);
  assert.equal(r.asset.id, 'Photos/cover.txt');
  assert.equal(r.asset.version, (before.version ?? 1) + 1);
  const v = await p.versions!(session, 'Photos/cover.txt', { withMaster: true, uiLocale: 'en' });
  assert.deepEqual(v.versions.map((x) => x.fileSize), [8, 5]);
  assert.equal(Buffer.from(await (await fetch(v.versions[1]!.downloadUrl!)).arrayBuffer()).toString(), 'cover');
});

test('upload into a folder that does not exist: integration-not-found, nothing written', async () => {
  await assert.rejects(p.upload!(session, { parentId: 'Nowhere/', name: 'x.txt', onConflict: 'fail' }, bodyOf('x')), fails('integration-not-found'));
  assert.deepEqual(await keysUnder('Nowhere/'), []);
});

test('multipart: a body above the threshold goes in three parts read one at a time; the bytes are whole', async () => {
  const body = bytes(100 * KIB, 3); // parts of 40 + 40 + 20 KiB
  const r = await p.upload!(session, { parentId: 'root', name: 'big.bin', onConflict: 'fail' }, bodyOf(body, true, 'application/octet-stream'));
  assert.equal(r.asset.id, 'big.bin');
  assert.equal(r.asset.fileSize, body.length);
  assert.match(contentTagOf(r.asset)!, /-3"$/, 'a multipart ETag names its part count');
  assert.ok((await read('big.bin')).equals(body));
  // A multipart object (an SLO in Swift) renames and deletes as any other.
  const renamed = await p.renameAsset!(session, 'big.bin', 'big renamed.bin', noCond);
  assert.ok((await read('big renamed.bin')).equals(body));
  assert.equal(renamed.fileSize, body.length);
  await p.deleteAsset!(session, 'big renamed.bin', noCond);
  assert.equal(await exists('big renamed.bin'), false);
  // Undeclared length: parts too, and a small undeclared body is one PutObject of its only part.
  const undeclared = bytes(90 * KIB, 5);
  await p.upload!(session, { parentId: 'root', name: 'undeclared.bin', onConflict: 'fail' }, bodyOf(undeclared, false));
  assert.ok((await read('undeclared.bin')).equals(undeclared));
  assert.match((await s3.client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: 'undeclared.bin' }))).ETag!, /-3"$/);
  await p.upload!(session, { parentId: 'root', name: 'small.bin', onConflict: 'fail' }, bodyOf('tiny', false));
  assert.equal((await read('small.bin')).toString(), 'tiny');
  assert.doesNotMatch((await s3.client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: 'small.bin' }))).ETag!, /-/);
  const uploads = await s3.client.send(new ListMultipartUploadsCommand({ Bucket: s3.bucket }));
  assert.deepEqual(uploads.Uploads ?? [], []);
});

test('a body that fails half-way: the multipart upload is aborted (none left, no object); a streamed PUT leaves nothing', async () => {
  await assert.rejects(p.upload!(session, { parentId: 'root', name: 'cut.bin', onConflict: 'fail' }, failingBody(56 * KIB, 120 * KIB)), /client went away/);
  const uploads = await s3.client.send(new ListMultipartUploadsCommand({ Bucket: s3.bucket }));
  assert.deepEqual((uploads.Uploads ?? []).map((u) => u.Key), [], 'no unfinished upload left');
  assert.equal(await exists('cut.bin'), false);
  await assert.rejects(p.upload!(session, { parentId: 'root', name: 'cut small.bin', onConflict: 'fail' }, failingBody(20 * KIB, 50 * KIB)), /client went away/);
  assert.equal(await exists('cut small.bin'), false);
  // The connector is not left broken: the next upload goes through.
  await p.upload!(session, { parentId: 'root', name: 'after cut.bin', onConflict: 'fail' }, bodyOf(bytes(70 * KIB, 9)));
  assert.equal(await exists('after cut.bin'), true);
});

test('update: a new version over the content read (metadata kept); a stale tag is asset-version-conflict', async () => {
  const read1 = await p.asset!(session, 'Docs/readme.txt', { uiLocale: 'en', timeZone: null });
  assert.equal(read1.title, 'Read me');
  const tag = contentTagOf(read1);
  const updated = await p.update!(session, 'Docs/readme.txt', bodyOf('second readme'), { ifMatch: '"hub etag"', upstreamTag: tag });
  assert.equal(updated.id, 'Docs/readme.txt');
  assert.equal(updated.version, (read1.version ?? 1) + 1);
  assert.equal(updated.title, 'Read me', 'x-amz-meta-* survive a new version');
  assert.notEqual(contentTagOf(updated), tag);
  assert.equal((await read('Docs/readme.txt')).toString(), 'second readme');
  // The versions hook lists the new version as current and the old one as downloadable.
  const v = await p.versions!(session, 'Docs/readme.txt', { withMaster: true, uiLocale: 'en' });
  assert.deepEqual(v.versions.map((x) => x.version), [2, 1]);
  assert.equal(contentTagOf(v.versions[0]!), contentTagOf(updated));
  assert.equal(Buffer.from(await (await fetch(v.versions[1]!.downloadUrl!)).arrayBuffer()).toString(), 'first readme');
  // Someone wrote outside the hub since `tag` was read.
  await assert.rejects(p.update!(session, 'Docs/readme.txt', bodyOf('third'), { ifMatch: '"x"', upstreamTag: tag }), fails('asset-version-conflict'));
  assert.equal((await read('Docs/readme.txt')).toString(), 'second readme');
  // A multipart new version.
  const big = bytes(130 * KIB, 11);
  const u2 = await p.update!(session, 'Docs/readme.txt', bodyOf(big), { ifMatch: null, upstreamTag: contentTagOf(updated) });
  assert.equal(u2.version, 3);
  assert.ok((await read('Docs/readme.txt')).equals(big));
  await assert.rejects(p.update!(session, 'Docs/missing.txt', bodyOf('x'), noCond), fails('integration-not-found'));
});

test('rename and move: copy then delete, the answer under its new id; taken names, stale tags and missing folders refused', async () => {
  const a = await p.renameAsset!(session, 'Team/a.txt', 'renamed.txt', noCond);
  assert.equal(a.id, 'Team/renamed.txt');
  assert.equal(await exists('Team/a.txt'), false);
  assert.equal((await read('Team/renamed.txt')).toString(), 'a');
  await assert.rejects(p.renameAsset!(session, 'Team/renamed.txt', 'Sub', noCond), fails('asset-exists'));
  await assert.rejects(p.renameAsset!(session, 'Team/renamed.txt', 'x.txt', { ifMatch: null, upstreamTag: '"0123456789abcdef0123456789abcdef"' }), fails('asset-version-conflict'));
  await assert.rejects(p.renameAsset!(session, 'Team/gone.txt', 'x.txt', noCond), fails('integration-not-found'));
  const moved = await p.moveAsset!(session, 'Team/renamed.txt', { parentId: 'Photos/', name: null }, { ifMatch: null, upstreamTag: contentTagOf(a) });
  assert.equal(moved.id, 'Photos/renamed.txt');
  const movedRenamed = await p.moveAsset!(session, 'Photos/renamed.txt', { parentId: 'root', name: 'top.txt' }, noCond);
  assert.equal(movedRenamed.id, 'top.txt');
  assert.equal((await read('top.txt')).toString(), 'a');
  await assert.rejects(p.moveAsset!(session, 'top.txt', { parentId: 'Nowhere/', name: null }, noCond), fails('integration-not-found'));
  assert.equal(await exists('top.txt'), true);
});

test('an object above the single-copy limit is renamed by UploadPartCopy ranges, type and metadata kept; names of any script', async () => {
  const big = bytes(70 * KIB, 13);
  await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: 'Photos/large.bin', Body: big, ContentType: 'image/x-test', Metadata: { title: 'Large one' } }));
  // Copies above 50 KiB go in parts of 20 KiB (S3's single-copy limit is 5 GiB).
  const pc = s3ConnectorWith({ limits: { ...LIMITS, copyMaxBytes: 50 * KIB, copyPartBytes: 20 * KIB } })({ clock: new ManualClock(Date.now()), keys: KeyRing.generate(0), publicUrl: 'http://hub.test', upstream: { allowHosts: ['127.0.0.1'], timeoutMs: 10_000 } });
  try {
    const a = await pc.renameAsset!(session, 'Photos/large.bin', 'Été 2024 – 写真.bin', noCond);
    assert.equal(a.id, 'Photos/Été 2024 – 写真.bin');
    assert.ok((await read('Photos/Été 2024 – 写真.bin')).equals(big));
    assert.equal(await exists('Photos/large.bin'), false);
    const head = await s3.client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: 'Photos/Été 2024 – 写真.bin' }));
    assert.equal(head.ContentType, 'image/x-test');
    assert.equal(head.Metadata?.title, 'Large one');
    assert.match(head.ETag!, /-4"$/, 'four ranges of at most 20 KiB');
    assert.equal(a.title, 'Large one');
    // A multipart source (an SLO in Swift, whose copy conditions compare another ETag), copied
    // part by part under the condition of the ETag read.
    const up = await pc.upload!(session, { parentId: 'Photos/', name: 'parts.bin', onConflict: 'fail' }, bodyOf(big, true, 'application/octet-stream'));
    assert.match(contentTagOf(up.asset)!, /-2"$/);
    const moved = await pc.moveAsset!(session, 'Photos/parts.bin', { parentId: 'Docs/', name: null }, { ifMatch: null, upstreamTag: contentTagOf(up.asset) });
    assert.equal(moved.id, 'Docs/parts.bin');
    assert.ok((await read('Docs/parts.bin')).equals(big));
    await assert.rejects(pc.moveAsset!(session, 'Docs/parts.bin', { parentId: 'root', name: null }, { ifMatch: null, upstreamTag: contentTagOf(up.asset) }), fails('asset-version-conflict'), 'the moved copy has another ETag');
    const uploads = await s3.client.send(new ListMultipartUploadsCommand({ Bucket: s3.bucket }));
    assert.deepEqual(uploads.Uploads ?? [], []);
  } finally {
    await pc.close();
  }
});

test('delete: the object goes; its emptied folder stays (a marker); a missing key is integration-not-found', async () => {
  await p.deleteAsset!(session, 'Lone/only.txt', noCond);
  assert.equal(await exists('Lone/only.txt'), false);
  const page = await p.browse!(session, 'Lone/', { size: 50, more: null, filters: [], timeZone: null, dataLocale: null, uiLocale: 'en' });
  assert.deepEqual([page.assets.length, page.folders.length, page.totalAssetsCount], [0, 0, 0]);
  await assert.rejects(p.deleteAsset!(session, 'Lone/only.txt', noCond), fails('integration-not-found'));
  await assert.rejects(p.deleteAsset!(session, 'Docs/notes.txt', { ifMatch: null, upstreamTag: '"0123456789abcdef0123456789abcdef"' }), fails('asset-version-conflict'));
  assert.equal(await exists('Docs/notes.txt'), true);
});

test('folders: create (a marker, browsable while empty), taken names, rename with its content, no move into itself', async () => {
  const f = await p.createFolder!(session, 'Docs/', 'Fresh');
  assert.deepEqual(f, { id: 'Docs/Fresh/', name: 'Fresh' });
  assert.deepEqual(await keysUnder('Docs/Fresh/'), ['Docs/Fresh/']);
  const empty = await p.browse!(session, 'Docs/Fresh/', { size: 50, more: null, filters: [], timeZone: null, dataLocale: null, uiLocale: 'en' });
  assert.deepEqual([empty.assets.length, empty.totalAssetsCount], [0, 0]);
  const parent = await p.browse!(session, 'Docs/', { size: 50, more: null, filters: [], timeZone: null, dataLocale: null, uiLocale: 'en' });
  assert.ok(parent.folders.some((x) => x.id === 'Docs/Fresh/'));
  await assert.rejects(p.createFolder!(session, 'Docs/', 'Fresh'), fails('asset-exists'));
  await assert.rejects(p.createFolder!(session, 'Docs/', 'notes.txt'), fails('asset-exists'));
  await assert.rejects(p.createFolder!(session, 'Nowhere/', 'X'), fails('integration-not-found'));
  await p.upload!(session, { parentId: 'Docs/Fresh/', name: 'in fresh.txt', onConflict: 'fail' }, bodyOf('fresh'));
  await p.upload!(session, { parentId: 'Docs/Fresh/', name: 'second.txt', onConflict: 'fail' }, bodyOf('second'));
  // The marker takes no place on a page: two pages of one asset each.
  const first = await p.browse!(session, 'Docs/Fresh/', { size: 1, more: null, filters: [], timeZone: null, dataLocale: null, uiLocale: 'en' });
  assert.deepEqual(first.assets.map((a) => a.name), ['in fresh.txt']);
  assert.equal(first.totalAssetsCount, 2);
  const next = await p.browse!(session, 'Docs/Fresh/', { size: 1, more: String(first.more), filters: [], timeZone: null, dataLocale: null, uiLocale: 'en' });
  assert.deepEqual(next.assets.map((a) => a.name), ['second.txt']);

  const renamed = await p.updateFolder!(session, 'Team/', { parentId: null, name: 'Crew' });
  assert.deepEqual(renamed, { id: 'Crew/', name: 'Crew' });
  assert.deepEqual(await keysUnder('Team/'), []);
  assert.deepEqual(await keysUnder('Crew/'), ['Crew/Sub/b.txt']);
  const moved = await p.updateFolder!(session, 'Crew/Sub/', { parentId: 'Docs/', name: null });
  assert.equal(moved.id, 'Docs/Sub/');
  assert.equal((await read('Docs/Sub/b.txt')).toString(), 'b');
  // Crew lost its only content: it stays, as a marker.
  assert.deepEqual(await keysUnder('Crew/'), ['Crew/']);
  await assert.rejects(p.updateFolder!(session, 'Docs/', { parentId: 'Docs/Sub/', name: null }), fails('integration-operation-failed'));
  await assert.rejects(p.updateFolder!(session, 'Docs/Sub/', { parentId: null, name: 'Old' }), fails('asset-exists'));
  await assert.rejects(p.updateFolder!(session, 'Ghost/', { parentId: null, name: 'Other' }), fails('integration-not-found'));
});

test('delete a folder: folder-not-empty unless recursive; recursive removes every key; an empty one goes', async () => {
  await assert.rejects(p.deleteFolder!(session, 'Trash/', { recursive: false }), fails('folder-not-empty'));
  assert.deepEqual(await keysUnder('Trash/'), ['Trash/Deep/two.txt', 'Trash/one.txt']);
  await p.deleteFolder!(session, 'Trash/', { recursive: true });
  assert.deepEqual(await keysUnder('Trash/'), []);
  await p.createFolder!(session, 'root', 'Empty');
  await p.deleteFolder!(session, 'Empty/', { recursive: false });
  assert.deepEqual(await keysUnder('Empty/'), []);
  await assert.rejects(p.deleteFolder!(session, 'Empty/', { recursive: true }), fails('integration-not-found'));
  await assert.rejects(p.deleteFolder!(session, 'root', { recursive: true }), fails('integration-operation-failed'));
});

test('Swift s3api has no conditional PUT (501): the probe finds it without leaving an object, and the HEAD check stands in', async () => {
  // The conditional PUT itself, as the AWS SDK sends it: refused, not ignored.
  await assert.rejects(s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: 'Docs/notes.txt', Body: 'x', IfNoneMatch: '*' })), (e: any) => e.$metadata?.httpStatusCode === 501 && /Conditional object PUTs are not supported/.test(e.message));
  const all = await s3.client.send(new ListObjectsV2Command({ Bucket: s3.bucket }));
  assert.deepEqual((all.Contents ?? []).filter((o) => /damhub-conditional-probe/.test(o.Key!)), [], 'the probe stored nothing');
});

test('a full container quota is integration-storage-full', async () => {
  await s3.client.send(new CreateBucketCommand({ Bucket: 'small' }));
  const auth = await fetch(`${s3.endpoint}/auth/v1.0`, { headers: { 'x-auth-user': s3.accessKeyId, 'x-auth-key': s3.secretAccessKey } });
  const set = await fetch(`${auth.headers.get('x-storage-url')}/small`, { method: 'POST', headers: { 'x-auth-token': auth.headers.get('x-auth-token')!, 'x-container-meta-quota-bytes': String(10 * KIB) } });
  assert.equal(set.status, 204);
  const small = sessionFor('small');
  await p.upload!(small, { parentId: 'root', name: 'fits.bin', onConflict: 'fail' }, bodyOf(bytes(4 * KIB, 1)));
  await assert.rejects(p.upload!(small, { parentId: 'root', name: 'too much.bin', onConflict: 'fail' }, bodyOf(bytes(20 * KIB, 2))), fails('integration-storage-full'));
  assert.equal((await read('fits.bin', 'small')).length, 4 * KIB);
});
