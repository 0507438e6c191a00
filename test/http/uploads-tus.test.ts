/**
 * Resumable uploads (tus 1.0 at /api/v1/uploads) over real HTTP with tus-js-client, the client
 * partners use, against the hub's routes, data store and stores; the write engine is a small fake
 * here (what it received is what the test checks). uploads-engine.test.ts runs the protocol through
 * the real engine into a DAM in memory, uploads-library.test.ts into the embedded library.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import * as tus from 'tus-js-client';
import { buildApp } from '../../src/app.js';
import type { HubConfig } from '../../src/config.js';
import { hubError } from '../../src/errors.js';
import { Hub } from '../../src/hub.js';
import type { UploadTarget } from '../../src/content/asset-writes.js';
import type { UploadWrites } from '../../src/content/uploads/uploads.js';
import type { ProviderSession } from '../../src/providers/contract.js';
import { uploadsOf, uploadWritesOverride } from '../../src/routes/uploads.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { bytes, cuttingProxy, meta, sha256 } from '../helpers/tus.js';
import { testProvider } from '../helpers/test-provider.js';

const MAX = 8 * 1024 * 1024;

/** A write engine that keeps what it was given. */
class FakeWrites implements UploadWrites {
  received: { target: UploadTarget | string; sha256: string; bytes: number; requestId: string }[] = [];
  checks: unknown[] = [];
  writesOff = false;
  async checkUpload(_dam: ProviderSession, target: UploadTarget, length: number | null) {
    this.checks.push({ target, length });
    if (this.writesOff) throw hubError('writes-disabled', 'writes are off for this partner');
    if (target.name.includes('/')) throw hubError('asset-name-invalid', 'a name cannot contain "/"');
    return { onConflict: 'fail' as const, ...target };
  }
  async checkUpdate(_dam: ProviderSession, assetId: string, ifMatch: string | null, length: number | null) {
    this.checks.push({ assetId, ifMatch, length });
  }
  async #take(stream: Readable) {
    const h = createHash('sha256');
    let bytes = 0;
    for await (const c of stream) {
      h.update(c as Buffer);
      bytes += (c as Buffer).length;
    }
    return { sha256: h.digest('hex'), bytes };
  }
  async upload(_dam: ProviderSession, target: UploadTarget, body: { stream: Readable }, meta: { requestId: string }) {
    const got = await this.#take(body.stream);
    this.received.push({ target, ...got, requestId: meta.requestId });
    const id = `asset-${this.received.length}`;
    return { status: 201 as const, asset: { id, name: target.name, fileSize: got.bytes, downloadHashSha256: got.sha256 }, etag: `"${got.sha256.slice(0, 16)}"` };
  }
  async update(_dam: ProviderSession, assetId: string, body: { stream: Readable }, _ifMatch: string | null, meta: { requestId: string }) {
    const got = await this.#take(body.stream);
    this.received.push({ target: assetId, ...got, requestId: meta.requestId });
    return { status: 200 as const, asset: { id: assetId, name: 'x.bin', fileSize: got.bytes, downloadHashSha256: got.sha256 }, etag: `"${got.sha256.slice(0, 16)}"` };
  }
}

interface Session {
  access: string;
  dam: string;
  headers: Record<string, string>;
}

describe('tus uploads (fake write engine)', () => {
  let t: TestHub;
  let writes: FakeWrites;
  let base: string;
  let proxy: Awaited<ReturnType<typeof cuttingProxy>>;
  let alice: Session;
  let uploadDir: string;

  async function session(sub: string): Promise<Session> {
    const { access_token } = await t.login({ sub });
    const start = (await t.app.inject({ method: 'POST', url: '/api/v1/auth/login?provider=testdam&polling=true', headers: { authorization: `Bearer ${access_token}` } })).json();
    await t.app.inject({ method: 'POST', url: '/api/v1/auth/testdam/signin', payload: { state: start.state, user: sub, password: 'secret' } });
    const dam = (await t.app.inject({ url: `/api/v1/auth/login?state=${start.state}&polling=true` })).json().access_token;
    return { access: access_token, dam, headers: { authorization: `Bearer ${access_token}`, 'provider-authorization': `Bearer ${dam}` } };
  }

  before(async () => {
    proxy = await cuttingProxy();
    t = await startTestHub({
      providers: [testProvider()],
      config: { publicUrl: `http://127.0.0.1:${proxy.port}`, userRateLimitPerMin: 0, uploadExpirySec: 600, maxUploadBytes: MAX } as Partial<HubConfig>,
    });
    writes = new FakeWrites();
    uploadWritesOverride.set(t.hub, writes);
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    proxy.to((t.app.server.address() as AddressInfo).port);
    base = `http://127.0.0.1:${proxy.port}/api/v1/uploads`;
    alice = await session('alice');
    uploadDir = path.join(t.dataDir, 'uploads');
  });
  after(async () => {
    await proxy.close();
    await t.close();
  });

  function upload(data: Buffer, s: Session, opts: Partial<tus.UploadOptions> = {}): Promise<{ upload: tus.Upload; response: tus.HttpResponse }> {
    return new Promise((resolve, reject) => {
      const up = new tus.Upload(data, {
        endpoint: base, headers: s.headers, retryDelays: null, metadata: { parentId: 'root', name: 'film.bin' },
        onSuccess: ({ lastResponse }) => resolve({ upload: up, response: lastResponse }), onError: reject, ...opts,
      });
      up.start();
    });
  }
  const call = (url: string, init: RequestInit & { s?: Session } = {}) =>
    fetch(url, { ...init, headers: { 'tus-resumable': '1.0.0', ...(init.s ?? alice).headers, ...(init.headers as Record<string, string>) } });
  const create = async (length: number, m = { parentId: 'root', name: 'a.bin' }, s = alice) => {
    const r = await call(base, { method: 'POST', s, headers: { 'upload-length': String(length), 'upload-metadata': meta(m) } });
    assert.equal(r.status, 201, await r.text());
    return r.headers.get('location')!;
  };
  const partFiles = () => (fs.existsSync(uploadDir) ? fs.readdirSync(uploadDir) : []);

  test('a full upload: the final PATCH answers 200 with the Asset, Damhub-Asset-Id and ETag; repeated, the same', async () => {
    const data = bytes(300_000);
    const before = writes.received.length;
    const { upload: up, response } = await upload(data, alice);
    assert.equal(response.getStatus(), 200);
    const asset = JSON.parse(response.getBody());
    assert.equal(asset.downloadHashSha256, sha256(data));
    assert.equal(response.getHeader('Damhub-Asset-Id'), encodeURIComponent(asset.id), 'URL-encoded, as on the REST routes');
    assert.match(response.getHeader('ETag') ?? '', /^"/);
    assert.equal(response.getHeader('Upload-Offset'), String(data.length));
    assert.equal(writes.received.length, before + 1);
    assert.deepEqual(writes.received.at(-1)!.target, { parentId: 'root', name: 'film.bin', onConflict: 'fail' });
    assert.equal(partFiles().length, 0, 'the part file is gone');
    // Repeated after completion (a client that lost the answer): the kept answer, no second write.
    const again = await call(up.url!, { method: 'PATCH', headers: { 'upload-offset': String(data.length), 'content-type': 'application/offset+octet-stream' } });
    assert.equal(again.status, 200);
    assert.equal(again.headers.get('damhub-asset-id'), encodeURIComponent(asset.id));
    assert.deepEqual(await again.json(), asset);
    const head = await call(up.url!, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('upload-offset'), String(data.length));
    assert.equal(head.headers.get('damhub-asset-id'), encodeURIComponent(asset.id));
    assert.equal(head.headers.get('cache-control'), 'no-store');
    assert.equal(writes.received.length, before + 1);
  });

  test('an upload cut at about half resumes from the offset HEAD reports and completes with the right bytes', async () => {
    const data = bytes(4 * 1024 * 1024, 3);
    const url = await create(data.length, { parentId: 'root', name: 'cut.bin' });
    const id = url.split('/').pop()!;
    proxy.cut(2 * 1024 * 1024);
    const cut = await call(url, { method: 'PATCH', headers: { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, body: data }).catch((e) => e);
    assert.ok(cut instanceof Error, 'the connection was cut');
    // HEAD waits for the cut request to let go of the upload, then says how far it got.
    const head = await call(url, { method: 'HEAD' });
    assert.equal(head.status, 200);
    const offset = Number(head.headers.get('upload-offset'));
    assert.ok(offset > 0 && offset <= 2 * 1024 * 1024, `resumes from ${offset}`);
    assert.ok(head.headers.get('upload-expires'), 'Upload-Expires while unfinished');
    assert.equal(fs.statSync(path.join(uploadDir, `${id}.part`)).size, offset, 'the part file holds what the offset says');
    const { response } = await upload(data, alice, { uploadUrl: url });
    assert.equal(response.getStatus(), 200);
    assert.equal(JSON.parse(response.getBody()).downloadHashSha256, sha256(data));
    assert.equal(writes.received.at(-1)!.sha256, sha256(data));
  });

  test('an upload begun on one hub resumes on another over the same stores and upload directory', async () => {
    // Two app instances over one SqliteStores object (two hubs on one SQLite data dir is not supported).
    const data = bytes(1_000_000, 5);
    const url = await create(data.length, { parentId: 'root', name: 'two-nodes.bin' });
    const first = await call(url, { method: 'PATCH', headers: { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, body: data.subarray(0, 400_000) });
    assert.equal(first.status, 204);
    const hub2 = new Hub(t.hub.config, { clock: t.clock, stores: t.hub.stores, providers: [testProvider()] });
    const app2 = await buildApp(hub2, { logger: false });
    uploadWritesOverride.set(hub2, writes);
    await app2.listen({ host: '127.0.0.1', port: 0 });
    const port2 = (app2.server.address() as AddressInfo).port;
    try {
      const url2 = `http://127.0.0.1:${port2}/api/v1/uploads/${url.split('/').pop()}`;
      const { response } = await upload(data, alice, { uploadUrl: url2 });
      assert.equal(response.getStatus(), 200);
      assert.equal(JSON.parse(response.getBody()).downloadHashSha256, sha256(data));
    } finally {
      await app2.close();
    }
  });

  test('creation-with-upload: part of the bytes with the POST (201 + Upload-Offset), or all of them (201 + the Asset)', async () => {
    const data = bytes(50_000, 7);
    const partial = await call(base, { method: 'POST', headers: { 'upload-length': String(data.length), 'upload-metadata': meta({ parentId: 'root', name: 'c.bin' }), 'content-type': 'application/offset+octet-stream' }, body: data.subarray(0, 20_000) });
    assert.equal(partial.status, 201);
    assert.equal(partial.headers.get('upload-offset'), '20000');
    assert.ok(partial.headers.get('upload-expires'));
    const done = await call(partial.headers.get('location')!, { method: 'PATCH', headers: { 'upload-offset': '20000', 'content-type': 'application/offset+octet-stream' }, body: data.subarray(20_000) });
    assert.equal(done.status, 200);
    assert.equal((await done.json()).downloadHashSha256, sha256(data));

    const { response } = await upload(data, alice, { uploadDataDuringCreation: true });
    assert.equal(response.getStatus(), 201);
    assert.equal(JSON.parse(response.getBody()).downloadHashSha256, sha256(data));
    assert.ok(response.getHeader('Damhub-Asset-Id'));
  });

  test('a new version: Upload-Metadata assetId and ifMatch go to the engine\'s check and update', async () => {
    const data = bytes(10_000, 9);
    const { response } = await upload(data, alice, { metadata: { assetId: 'asset-1', ifMatch: '"v1"' } });
    assert.equal(response.getStatus(), 200);
    assert.deepEqual(writes.checks.at(-1), { assetId: 'asset-1', ifMatch: '"v1"', length: data.length });
    assert.equal(writes.received.at(-1)!.target, 'asset-1');
  });

  test('Upload-Checksum: a mismatch is 460 and the chunk is discarded; sha1 and sha256 are accepted; others are 400', async () => {
    const data = bytes(30_000, 11);
    const url = await create(data.length);
    const chunk = data.subarray(0, 10_000);
    const patch = (offset: number, body: Buffer, checksum: string) => call(url, { method: 'PATCH', headers: { 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream', 'upload-checksum': checksum }, body: new Uint8Array(body) });
    const bad = await patch(0, chunk, `sha256 ${createHash('sha256').update('other').digest('base64')}`);
    assert.equal(bad.status, 460);
    const env = await bad.json();
    assert.equal(env.errorCode, 'hub-validation-error');
    assert.equal(env.error.status, 460);
    assert.equal((await call(url, { method: 'HEAD' })).headers.get('upload-offset'), '0', 'nothing was kept');
    assert.equal((await patch(0, chunk, `sha256 ${createHash('sha256').update(chunk).digest('base64')}`)).status, 204);
    assert.equal((await patch(10_000, data.subarray(10_000, 20_000), `sha1 ${createHash('sha1').update(data.subarray(10_000, 20_000)).digest('base64')}`)).status, 204);
    const md5 = await patch(20_000, data.subarray(20_000), `md5 ${createHash('md5').update(data.subarray(20_000)).digest('base64')}`);
    assert.equal(md5.status, 400);
    assert.match((await md5.json()).error.details, /md5 is not supported/);
    const done = await patch(20_000, data.subarray(20_000), `sha256 ${createHash('sha256').update(data.subarray(20_000)).digest('base64')}`);
    assert.equal(done.status, 200);
    assert.equal((await done.json()).downloadHashSha256, sha256(data));
    const opts = await fetch(base, { method: 'OPTIONS' });
    assert.equal(opts.status, 204);
    assert.equal(opts.headers.get('tus-version'), '1.0.0');
    assert.deepEqual(opts.headers.get('tus-extension')!.split(','), ['creation', 'creation-with-upload', 'termination', 'expiration', 'checksum']);
    assert.equal(opts.headers.get('tus-checksum-algorithm'), 'sha1,sha256');
    assert.equal(opts.headers.get('tus-max-size'), String(MAX));
  });

  test('tus\'s refusals in the hub\'s envelope: a wrong offset 409, another Content-Type 400, deferred length 400', async () => {
    const url = await create(100);
    const wrong = await call(url, { method: 'PATCH', headers: { 'upload-offset': '7', 'content-type': 'application/offset+octet-stream' }, body: new Uint8Array(bytes(10)) });
    assert.equal(wrong.status, 409);
    const env = await wrong.json();
    assert.equal(env.errorCode, 'hub-validation-error');
    assert.equal(env.error.status, 409);
    assert.equal(env.error.requestId, wrong.headers.get('x-request-id'));
    assert.equal(wrong.headers.get('tus-resumable'), '1.0.0');
    const type = await call(url, { method: 'PATCH', headers: { 'upload-offset': '0', 'content-type': 'application/octet-stream' }, body: new Uint8Array(bytes(10)) });
    assert.equal(type.status, 400);
    assert.equal((await type.json()).errorCode, 'hub-validation-error');
    const deferred = await call(base, { method: 'POST', headers: { 'upload-defer-length': '1', 'upload-metadata': meta({ parentId: 'root', name: 'd.bin' }) } });
    assert.equal(deferred.status, 400);
    assert.equal((await call(url, { method: 'HEAD' })).headers.get('upload-offset'), '0');
  });

  test('another user\'s HEAD, PATCH and DELETE of an upload are 404, as for an upload that does not exist', async () => {
    const url = await create(1000);
    const bob = await session('bob');
    for (const method of ['HEAD', 'PATCH', 'DELETE']) {
      const r = await call(url, { method, s: bob, headers: { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, ...(method === 'PATCH' ? { body: bytes(10) } : {}) });
      assert.equal(r.status, 404, method);
      if (method !== 'HEAD') assert.equal((await r.json()).errorCode, 'hub-not-found');
    }
    const none = await call(`${base}/${'0'.repeat(32)}`, { method: 'PATCH', headers: { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, body: bytes(10) });
    assert.equal(none.status, 404);
    assert.equal((await call(url, { method: 'HEAD' })).headers.get('upload-offset'), '0', 'the owner\'s upload is untouched');
  });

  test('an upload whose part file is gone (a restored data dir) answers 410 upload-expired and is removed', async () => {
    const url = await create(100);
    const id = url.split('/').pop()!;
    fs.rmSync(path.join(uploadDir, `${id}.part`));
    const r = await call(url, { method: 'PATCH', headers: { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, body: new Uint8Array(bytes(10)) });
    assert.equal(r.status, 410);
    assert.equal((await r.json()).errorCode, 'upload-expired');
    assert.equal(await t.hub.stores.uploads.get(id), null);
  });

  test('termination: DELETE removes the part file and the record', async () => {
    const url = await create(5000);
    const id = url.split('/').pop()!;
    assert.ok(partFiles().includes(`${id}.part`));
    const del = await call(url, { method: 'DELETE' });
    assert.equal(del.status, 204);
    assert.ok(!partFiles().includes(`${id}.part`));
    assert.equal(await t.hub.stores.uploads.get(id), null);
    assert.equal((await call(url, { method: 'HEAD' })).status, 404);
  });

  test('expiry on the hub\'s clock: 410 upload-expired, and the sweep removes the parts', async () => {
    const url = await create(5000);
    const id = url.split('/').pop()!;
    const expires = Date.parse((await call(url, { method: 'HEAD' })).headers.get('upload-expires')!);
    assert.equal(expires, Math.floor((t.clock.now() + 600_000) / 1000) * 1000);
    t.clock.advance(600_000);
    const r = await call(url, { method: 'PATCH', headers: { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, body: bytes(100) });
    assert.equal(r.status, 410);
    assert.equal((await r.json()).errorCode, 'upload-expired');
    assert.ok(partFiles().includes(`${id}.part`), 'still there until the sweep');
    assert.ok((await uploadsOf(t.hub).sweep()) >= 1);
    assert.ok(!partFiles().includes(`${id}.part`));
    assert.equal(await t.hub.stores.uploads.get(id), null);
    assert.equal((await call(url, { method: 'HEAD' })).status, 404);
  });

  test('creation refused before anything is stored: writes off 403, a bad name 400, over the limit 413, bad metadata 400', async () => {
    const before = partFiles().length;
    const post = (length: number, m: Record<string, string>) => call(base, { method: 'POST', headers: { 'upload-length': String(length), 'upload-metadata': meta(m) } });
    writes.writesOff = true;
    const off = await post(10, { parentId: 'root', name: 'a.bin' });
    writes.writesOff = false;
    assert.equal(off.status, 403);
    assert.equal((await off.json()).errorCode, 'writes-disabled');
    const bad = await post(10, { parentId: 'root', name: 'a/b.bin' });
    assert.equal(bad.status, 400);
    assert.equal((await bad.json()).errorCode, 'asset-name-invalid');
    const big = await post(MAX + 1, { parentId: 'root', name: 'big.bin' });
    assert.equal(big.status, 413);
    const env = await big.json();
    assert.equal(env.errorCode, 'hub-payload-too-large');
    assert.match(env.error.details, new RegExp(`${MAX} bytes`));
    const none = await post(10, { name: 'a.bin' });
    assert.equal(none.status, 400);
    assert.equal((await none.json()).errorCode, 'hub-validation-error');
    const noTus = await fetch(base, { method: 'POST', headers: { ...alice.headers, 'upload-length': '10' } });
    assert.equal(noTus.status, 412);
    assert.equal((await noTus.json()).errorCode, 'hub-validation-error');
    assert.equal(partFiles().length, before, 'no part file was made');
    const anon = await fetch(base, { method: 'POST', headers: { 'tus-resumable': '1.0.0', 'upload-length': '10' } });
    assert.equal(anon.status, 401);
  });
});
