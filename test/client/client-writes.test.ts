/**
 * @damhub/client's write calls against the real hub and its embedded library over loopback HTTP
 * (test/helpers/client-harness.ts): upload in one POST with progress, the three conflict modes,
 * update with the remembered ETag and the typed 412 and 428, rename/move/remove, folders, locks
 * between two library accounts, a partner without writes, an invalid name, and the client's own
 * retries with one Idempotency-Key (an answer lost on the way writes nothing twice); and above the
 * threshold the resumable path (tus at /api/v1/uploads): a file streamed from disk, a new version,
 * a conflict, a connection cut half-way that resumes, and an abort.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import {
  AssetExistsError, AssetLockedError, AssetNameInvalidError, AssetVersionConflictError, DamhubError, FolderNotEmptyError,
  PreconditionRequiredError, WritesDisabledError, type DamhubClient,
} from '@damhub/client';
import { fileSource } from '@damhub/client/node';
import { addAccount } from '../../src/providers/library/accounts.js';
import { startClientHarness, type ClientHarness } from '../helpers/client-harness.js';
import { libraryOf, solidJpeg } from '../helpers/library.js';

const ACCOUNT = { name: 'writer', password: 'correct horse battery', writeFolders: ['/'] };
const SECOND = { name: 'second', password: 'second horse battery' };
let h: ClientHarness;

before(async () => {
  h = await startClientHarness({
    files: { 'Photos/boat.jpg': await solidJpeg(40, 30, [10, 20, 30]), 'Docs/readme.md': '# read me\n' },
    account: ACCOUNT,
    partner: { writes: true },
  });
  await addAccount(libraryOf(h.t.hub).index, SECOND.name, SECOND.password, [], h.t.clock.now(), { writeFolders: ['/'] });
});
after(async () => {
  await h?.close();
});

interface Sent {
  method: string;
  path: string;
  headers: Record<string, string>;
  status: number;
  replayed: boolean;
}

/** A fetch that records each request's method, path and headers and the answer's status. */
function recorder(drop?: (s: Sent, n: number) => boolean) {
  const sent: Sent[] = [];
  const f = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const u = new URL(String(input instanceof Request ? input.url : input));
    const headers = Object.fromEntries(Object.entries((init?.headers ?? {}) as Record<string, string>).map(([k, v]) => [k.toLowerCase(), v]));
    const res = await fetch(input, init);
    const s: Sent = { method: init?.method ?? 'GET', path: u.pathname.replace('/api/v1', ''), headers, status: res.status, replayed: res.headers.get('idempotent-replayed') === 'true' };
    sent.push(s);
    // The answer is lost on the way back (the write happened): what a dropped connection looks like to the client.
    if (drop?.(s, sent.length)) {
      await res.arrayBuffer();
      throw new TypeError('fetch failed: socket hang up');
    }
    return res;
  }) as typeof fetch;
  return { sent, fetch: f, writes: () => sent.filter((s) => s.method !== 'GET' && s.path.startsWith('/assets/')) };
}

async function signedIn(sub: string, account: { name: string; password: string } = ACCOUNT, fetchImpl?: typeof fetch): Promise<DamhubClient> {
  const c = h.client({ sub, fetch: fetchImpl, sleep: async () => undefined });
  await c.signInWithPassword({ username: account.name, password: account.password });
  return c;
}

async function folderId(c: DamhubClient, name: string, parent = 'root'): Promise<string> {
  const f = (await c.folder(parent)).folders.find((x) => x.name === name);
  assert.ok(f, `folder ${name} in ${parent}`);
  return f.id;
}

const onDisk = (...p: string[]) => fs.readFileSync(path.join(h.root!, ...p));

test('upload: a small file in one POST with progress; its ETag is remembered; the bytes are on disk', async () => {
  const rec = recorder();
  const c = await signedIn('up-user', ACCOUNT, rec.fetch);
  const photos = await folderId(c, 'Photos');
  const bytes = randomBytes(300_000);
  const progress: [number, number][] = [];
  const a = await c.upload(photos, bytes, { name: 'new.bin', onProgress: (s, t) => progress.push([s, t]) });
  assert.equal(a.name, 'new.bin');
  assert.deepEqual(onDisk('Photos', 'new.bin'), bytes);
  // Node's fetch pulls the body in 64 KiB steps: several reports, never going back, ending at the total.
  assert.ok(progress.length >= 4, JSON.stringify(progress));
  assert.deepEqual(progress.at(-1), [300_000, 300_000]);
  assert.ok(progress.every(([s], i) => i === 0 || s >= progress[i - 1]![0]));
  const posts = rec.writes();
  assert.equal(posts.length, 1);
  assert.equal(posts[0]!.path, '/assets/upload');
  assert.match(posts[0]!.headers['idempotency-key']!, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.equal(posts[0]!.headers['content-length'], '300000');
  const etag = await c.etagOf(a.id);
  assert.ok(etag, 'the upload answer carried an ETag');
  assert.equal(rec.sent.filter((s) => s.path.startsWith('/assets/asset/')).length, 0, 'etagOf used the remembered ETag');
  assert.equal(await c.etagOf(a.id, { refresh: true }), etag, 'GET /assets/asset answers the same ETag');

  // A Blob, and a File-like Blob whose own name is used.
  const blob = await c.upload(photos, new Blob(['blob bytes'], { type: 'text/plain' }), { name: 'blob.txt' });
  assert.equal(onDisk('Photos', blob.name).toString(), 'blob bytes');
  const file = await c.upload(photos, new File(['file bytes'], 'named by the file.txt', { type: 'text/plain' }));
  assert.equal(file.name, 'named by the file.txt');
  await assert.rejects(c.upload(photos, Buffer.from('x')), (e: DamhubError) => e.code === 'client-upload-name-missing');
});

test('upload conflicts: asset-exists is AssetExistsError; rename keeps both; version adds a version to the same asset', async () => {
  const c = await signedIn('conflict-user');
  const docs = await folderId(c, 'Docs');
  const first = await c.upload(docs, Buffer.from('one'), { name: 'plan.txt' });
  await assert.rejects(c.upload(docs, Buffer.from('two'), { name: 'plan.txt' }), (e: unknown) => {
    assert.ok(e instanceof AssetExistsError, String(e));
    assert.equal(e.status, 409);
    assert.equal(e.code, 'asset-exists');
    return true;
  });
  const both = await c.upload(docs, Buffer.from('two'), { name: 'plan.txt', onConflict: 'rename' });
  assert.notEqual(both.name, 'plan.txt');
  assert.notEqual(both.id, first.id);
  assert.equal(onDisk('Docs', both.name).toString(), 'two');
  const versioned = await c.upload(docs, Buffer.from('three'), { name: 'plan.txt', onConflict: 'version' });
  assert.equal(versioned.id, first.id);
  assert.equal(versioned.version, (first.version ?? 1) + 1);
  assert.equal(onDisk('Docs', 'plan.txt').toString(), 'three');
  assert.notEqual(await c.etagOf(first.id), undefined);
});

test('update: If-Match defaults to the ETag the client saw; someone saving in between is AssetVersionConflictError with the current ETag; none at all is 428', async () => {
  const me = await signedIn('editor-1');
  const other = await signedIn('editor-2', SECOND);
  const docs = await folderId(me, 'Docs');
  const a1 = await me.upload(docs, Buffer.from('v1'), { name: 'draft.txt' });
  const a2 = await me.update(a1.id, Buffer.from('v2'));
  assert.equal(a2.id, a1.id);
  assert.equal(a2.version, (a1.version ?? 1) + 1);
  assert.equal(onDisk('Docs', 'draft.txt').toString(), 'v2');

  // The other user reads the asset and saves a version: my remembered ETag is now stale.
  await other.update(a1.id, Buffer.from('v3 by the other'), { ifMatch: await other.etagOf(a1.id) });
  const current = await other.etagOf(a1.id);
  await assert.rejects(me.update(a1.id, Buffer.from('v3 by me')), (e: unknown) => {
    assert.ok(e instanceof AssetVersionConflictError, String(e));
    assert.equal(e.status, 412);
    assert.equal(e.currentEtag, current);
    return true;
  });
  assert.equal(onDisk('Docs', 'draft.txt').toString(), 'v3 by the other', 'the conflicting update wrote nothing');
  // With the current ETag, the update goes through.
  await me.update(a1.id, Buffer.from('v4 merged'), { ifMatch: current });
  assert.equal(onDisk('Docs', 'draft.txt').toString(), 'v4 merged');

  const fresh = await signedIn('editor-3');
  await assert.rejects(fresh.update(a1.id, Buffer.from('blind')), (e: unknown) => e instanceof PreconditionRequiredError && e.status === 428);
});

test('retries: an answer lost on the way is sent again with the same Idempotency-Key, and the hub replays it instead of writing twice', async () => {
  let dropped = 0;
  const rec = recorder((s) => s.method !== 'GET' && s.path.startsWith('/assets/') && dropped++ < 1);
  const c = await signedIn('retry-user', ACCOUNT, rec.fetch);
  const photos = await folderId(c, 'Photos');
  const a = await c.upload(photos, Buffer.from('exactly once'), { name: 'once.txt' });
  const posts = rec.writes();
  assert.equal(posts.length, 2, 'sent twice');
  assert.equal(posts[0]!.status, 201);
  assert.equal(posts[1]!.headers['idempotency-key'], posts[0]!.headers['idempotency-key']);
  assert.equal(posts[1]!.replayed, true, 'the second answer is the first one replayed');
  const names = (await c.collectFolder(photos)).assets.map((x) => x.name).filter((n) => n.startsWith('once'));
  assert.deepEqual(names, ['once.txt'], 'one asset, no "once (1).txt"');
  assert.equal(a.name, 'once.txt');

  // A JSON write too: one folder, not two.
  dropped = 0;
  rec.sent.length = 0;
  const f = await c.createFolder('root', 'Made once');
  assert.equal(rec.writes().length, 2);
  assert.equal((await c.folder('root')).folders.filter((x) => x.name.startsWith('Made once')).length, 1);
  assert.equal(f.name, 'Made once');

  // A new call gets a new key; a caller's own key is sent as given.
  rec.sent.length = 0;
  dropped = 1;
  // (A library asset's id is its path: a rename answers the new id.)
  const r1 = await c.rename(a.id, 'once renamed.txt', { idempotencyKey: 'my-key-1' });
  await c.rename(r1.id, 'once renamed again.txt');
  const [k1, k2] = rec.writes().map((s) => s.headers['idempotency-key']);
  assert.equal(k1, 'my-key-1');
  assert.notEqual(k2, k1);
});

test('rename, move, remove; folders: create, rename, move, remove (folder-not-empty without recursive)', async () => {
  const c = await signedIn('organiser');
  const docs = await folderId(c, 'Docs');
  const a = await c.upload(docs, Buffer.from('notes'), { name: 'notes.txt' });
  const renamed = await c.rename(a.id, 'notes 2026.txt', { ifMatch: await c.etagOf(a.id) });
  assert.equal(renamed.name, 'notes 2026.txt');
  // The ETag is remembered under the id the rename answered (a library asset's id is its path).
  const before = await c.etagOf(renamed.id);
  assert.ok(before);
  assert.equal(await c.etagOf(renamed.id, { refresh: true }), before);
  assert.equal(onDisk('Docs', 'notes 2026.txt').toString(), 'notes');

  const projects = await c.createFolder('root', 'Projects');
  assert.equal(projects.name, 'Projects');
  const sub = await c.createFolder(projects.id, 'Draft');
  const projects2 = await c.renameFolder(projects.id, 'Projects 2026');
  assert.equal(projects2.name, 'Projects 2026');
  const moved = await c.move(renamed.id, projects2.id);
  assert.equal(moved.name, 'notes 2026.txt');
  assert.equal(onDisk('Projects 2026', 'notes 2026.txt').toString(), 'notes');
  const archive = await c.createFolder('root', 'Archive');
  const subMoved = await c.moveFolder((await folderId(c, 'Draft', projects2.id)) ?? sub.id, archive.id);
  assert.equal(subMoved.name, 'Draft');
  assert.ok(fs.existsSync(path.join(h.root!, 'Archive', 'Draft')));

  await assert.rejects(c.removeFolder(projects2.id), (e: unknown) => e instanceof FolderNotEmptyError && e.status === 409);
  await c.removeFolder(projects2.id, { recursive: true });
  assert.equal(fs.existsSync(path.join(h.root!, 'Projects 2026')), false);

  const gone = await c.upload(docs, Buffer.from('bye'), { name: 'bye.txt' });
  await c.remove(gone.id);
  assert.equal(fs.existsSync(path.join(h.root!, 'Docs', 'bye.txt')), false);
  await assert.rejects(c.asset(gone.id), (e: DamhubError) => e.status === 404);
});

test('lock and unlock: while one account holds the lock, the other gets AssetLockedError naming it', async () => {
  const me = await signedIn('locker');
  const other = await signedIn('blocked', SECOND);
  const docs = await folderId(me, 'Docs');
  const a = await me.upload(docs, Buffer.from('locked content'), { name: 'locked.txt' });
  const locked = await me.lock(a.id);
  assert.ok(locked.lockedBy, 'the answer names who holds the lock');
  await assert.rejects(other.rename(a.id, 'stolen.txt'), (e: unknown) => {
    assert.ok(e instanceof AssetLockedError, String(e));
    assert.equal(e.status, 423);
    assert.ok(e.lockedBy, `lockedBy from ${JSON.stringify(e.details)}`);
    return true;
  });
  await assert.rejects(other.update(a.id, Buffer.from('over it'), { ifMatch: await other.etagOf(a.id) }), AssetLockedError);
  const unlocked = await me.unlock(a.id);
  assert.equal(unlocked.lockedBy, undefined);
  assert.equal((await other.rename(a.id, 'free.txt')).name, 'free.txt');
});

test('a partner without writes gets WritesDisabledError; an invalid name is AssetNameInvalidError', async () => {
  const c = await signedIn('checker');
  const docs = await folderId(c, 'Docs');
  await assert.rejects(c.upload(docs, Buffer.from('x'), { name: 'a/b.txt' }), (e: unknown) => e instanceof AssetNameInvalidError && e.status === 400);
  await h.t.hub.stores.partners.update(h.t.partner.id, { writes: false }, h.t.clock.now());
  try {
    await assert.rejects(c.createFolder('root', 'Nope'), (e: unknown) => e instanceof WritesDisabledError && e.status === 403);
  } finally {
    await h.t.hub.stores.partners.update(h.t.partner.id, { writes: true }, h.t.clock.now());
  }
});

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

function tempFile(bytes: Buffer, name: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'damhub-sdk-up-'));
  const p = path.join(dir, name);
  fs.writeFileSync(p, bytes);
  return p;
}

test('resumable (tus) above the threshold: a file streamed from disk, a new version, a conflict; the plain POST below it', async () => {
  const rec = recorder();
  const c = h.client({ sub: 'tus-user', fetch: rec.fetch, sleep: async () => undefined, uploadThreshold: 1024 * 1024, tusChunkSize: 512 * 1024 });
  await c.signInWithPassword({ username: ACCOUNT.name, password: ACCOUNT.password });
  const photos = await folderId(c, 'Photos');
  const big = randomBytes(3 * 1024 * 1024 + 123);
  const progress: [number, number][] = [];
  const a = await c.upload(photos, await fileSource(tempFile(big, 'big scan.bin')), { onProgress: (s, t) => progress.push([s, t]) });
  assert.equal(a.name, 'big scan.bin', 'the name of the file on disk');
  assert.equal(sha(onDisk('Photos', 'big scan.bin')), sha(big));
  assert.deepEqual(progress.at(-1), [big.length, big.length]);
  assert.ok(progress.length > 3);
  assert.equal(rec.writes().length, 0, 'no plain POST: tus-js-client sent it (over node:http, not the fetch option)');
  const etag = await c.etagOf(a.id);
  assert.ok(etag);
  assert.equal(await c.etagOf(a.id, { refresh: true }), etag, 'the final PATCH answered the same ETag as GET /assets/asset');

  // A new version through tus, with the remembered ETag as If-Match.
  const v2 = randomBytes(1024 * 1024 + 7);
  const updated = await c.update(a.id, v2);
  assert.equal(updated.version, (a.version ?? 1) + 1);
  assert.equal(sha(onDisk('Photos', 'big scan.bin')), sha(v2));
  // A stale If-Match is the same typed error as on the plain path.
  const afterUpdate = await c.etagOf(a.id);
  assert.notEqual(afterUpdate, etag, 'the update answered the new ETag');
  await assert.rejects(c.update(a.id, randomBytes(1024 * 1024 + 1), { ifMatch: etag }), (e: unknown) => e instanceof AssetVersionConflictError && e.currentEtag === afterUpdate);
  // The name is taken: AssetExistsError, and onConflict version goes through.
  await assert.rejects(c.upload(photos, randomBytes(1024 * 1024 + 1), { name: 'big scan.bin' }), AssetExistsError);
  const v3 = await c.upload(photos, new Blob([v2, v2]), { name: 'big scan.bin', onConflict: 'version' });
  assert.equal(v3.id, a.id);

  // Below the threshold the same call is one plain POST.
  await c.upload(photos, randomBytes(1000), { name: 'small.bin' });
  assert.deepEqual(rec.writes().map((w) => `${w.method} ${w.path}`), ['POST /assets/upload']);
});

/**
 * A loopback TCP proxy in front of the hub that cuts the first connection carrying a tus PATCH once
 * `cutAfter` bytes of it went through: a connection dropped mid-upload, as a train's Wi-Fi drops it.
 */
async function cuttingProxy(target: URL, cutAfter: number): Promise<{ url: string; patches: number; heads: number; cuts: number; close(): Promise<void> }> {
  const state = { patches: 0, heads: 0, cuts: 0 };
  let port = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    let seen = 0;
    let patching = false;
    client.on('data', (chunk: Buffer) => {
      const text = chunk.toString('latin1');
      const patchesHere = (text.match(/^PATCH \/api\/v1\/uploads\//gm) ?? []).length;
      state.patches += patchesHere;
      state.heads += (text.match(/^HEAD \/api\/v1\/uploads\//gm) ?? []).length;
      if (patchesHere) patching = true;
      if (patching) seen += chunk.length;
      if (patching && state.cuts === 0 && seen > cutAfter) {
        state.cuts++;
        client.destroy();
        upstream.destroy();
        return;
      }
      upstream.write(chunk);
    });
    // The hub's Location names its public URL: point it at the proxy, so the PATCH goes through it too.
    upstream.on('data', (c: Buffer) => {
      const head = c.toString('latin1');
      client.write(/^HTTP\/1\.1 201/.test(head) ? Buffer.from(head.replace(/^(location:\s*)http:\/\/[^/\r\n]+/im, `$1http://127.0.0.1:${port}`), 'latin1') : c);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/api/v1`,
    get patches() { return state.patches; },
    get heads() { return state.heads; },
    get cuts() { return state.cuts; },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

test('resumable: a connection cut half-way through the upload resumes from the hub\'s offset and completes with the right bytes', async () => {
  const proxy = await cuttingProxy(new URL(h.origin), 1024 * 1024);
  try {
    const c = h.client({ sub: 'train-user', baseUrl: proxy.url, sleep: async () => undefined, uploadThreshold: 0, tusRetryDelays: [0, 50, 100] });
    await c.signInWithPassword({ username: ACCOUNT.name, password: ACCOUNT.password });
    const docs = await folderId(c, 'Docs');
    const bytes = randomBytes(3 * 1024 * 1024);
    const a = await c.upload(docs, bytes, { name: 'resumed.bin' });
    assert.equal(proxy.cuts, 1, 'the connection was cut once');
    assert.ok(proxy.patches >= 2, `the rest was sent again (${proxy.patches} PATCH requests)`);
    assert.ok(proxy.heads >= 1, 'tus asked the hub for its offset');
    assert.equal(sha(onDisk('Docs', 'resumed.bin')), sha(bytes));
    assert.equal(a.name, 'resumed.bin');
  } finally {
    await proxy.close();
  }
});

test('resumable: an abort stops the upload, removes it at the hub, and leaves no asset', async () => {
  const c = h.client({ sub: 'abort-user', sleep: async () => undefined, uploadThreshold: 0, tusChunkSize: 256 * 1024 });
  await c.signInWithPassword({ username: ACCOUNT.name, password: ACCOUNT.password });
  const docs = await folderId(c, 'Docs');
  const ac = new AbortController();
  const p = c.upload(docs, randomBytes(4 * 1024 * 1024), {
    name: 'aborted.bin', signal: ac.signal,
    onProgress: (sent) => {
      if (sent >= 1024 * 1024) ac.abort();
    },
  });
  await assert.rejects(p, (e: Error) => e.name === 'AbortError');
  assert.equal(fs.existsSync(path.join(h.root!, 'Docs', 'aborted.bin')), false);
  assert.equal((await c.collectFolder(docs)).assets.some((x) => x.name === 'aborted.bin'), false);
});

test('a stream shorter than its declared size is refused by the client, on both paths, and nothing is written', async () => {
  const c = h.client({ sub: 'short-user', sleep: async () => undefined, uploadThreshold: 64 * 1024 });
  await c.signInWithPassword({ username: ACCOUNT.name, password: ACCOUNT.password });
  const docs = await folderId(c, 'Docs');
  async function* short(n: number) {
    yield new Uint8Array(n);
  }
  await assert.rejects(c.upload(docs, { stream: short(1000), size: 2000, name: 'short-plain.bin' }), (e: Error) => e instanceof RangeError && /ended after 1000 of its declared 2000/.test(e.message));
  await assert.rejects(c.upload(docs, { stream: short(100_000), size: 200_000, name: 'short-tus.bin' }), (e: Error) => e instanceof RangeError && /ended after 100000 of its declared 200000/.test(e.message));
  const names = (await c.collectFolder(docs)).assets.map((a) => a.name);
  assert.ok(!names.includes('short-plain.bin') && !names.includes('short-tus.bin'));
});
