/**
 * Resumable uploads end to end through the hub's write engine (src/content/asset-writes.ts):
 * tus-js-client over real HTTP, the engine's opt-in, name, size and If-Match checks at creation,
 * the finished bytes stored as an asset or a new version in a writable DAM, and the audit.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as tus from 'tus-js-client';
import type { HubConfig } from '../../src/config.js';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { memoryDam, type MemoryDam } from '../helpers/memory-dam.js';
import { bytes, cuttingProxy, meta, sha256 } from '../helpers/tus.js';

const MAX = 16 * 1024 * 1024;

describe('tus uploads into a DAM through the write engine', () => {
  let t: TestHub;
  let dam: MemoryDam;
  let proxy: Awaited<ReturnType<typeof cuttingProxy>>;
  let base: string;
  let headers: Record<string, string>;

  before(async () => {
    proxy = await cuttingProxy();
    dam = memoryDam();
    t = await startTestHub({
      providers: [dam], partner: { writes: true },
      config: { publicUrl: `http://127.0.0.1:${proxy.port}`, userRateLimitPerMin: 0, maxUploadBytes: MAX } as Partial<HubConfig>,
    });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    proxy.to((t.app.server.address() as AddressInfo).port);
    base = `http://127.0.0.1:${proxy.port}/api/v1/uploads`;
    const { access_token } = await t.login({ sub: 'sub-alice' });
    const start = (await t.app.inject({ method: 'POST', url: '/api/v1/auth/login?provider=memdam&polling=true', headers: { authorization: `Bearer ${access_token}` } })).json();
    await t.app.inject({ method: 'POST', url: '/api/v1/auth/memdam/signin', payload: { state: start.state, user: 'alice', password: 'secret' } });
    const token = (await t.app.inject({ url: `/api/v1/auth/login?state=${start.state}&polling=true` })).json().access_token;
    headers = { authorization: `Bearer ${access_token}`, 'provider-authorization': `Bearer ${token}` };
  });
  after(async () => {
    await proxy.close();
    await t.close();
  });

  const send = (data: Buffer, opts: Partial<tus.UploadOptions> = {}) => new Promise<tus.HttpResponse>((resolve, reject) => {
    new tus.Upload(data, {
      endpoint: base, headers, retryDelays: null, metadata: { parentId: 'root', name: 'film.bin' },
      onSuccess: ({ lastResponse }) => resolve(lastResponse), onError: reject, ...opts,
    }).start();
  });
  const call = (url: string, init: RequestInit = {}) => fetch(url, { ...init, headers: { 'tus-resumable': '1.0.0', ...headers, ...(init.headers as Record<string, string>) } });
  const stored = (id: string) => dam.assets.get(id)!.versions.at(-1)!;
  const partFiles = () => {
    const dir = path.join(t.dataDir, 'uploads');
    return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
  };

  test('a full upload becomes an asset; the answer is the Asset, its id and the ETag the asset route gives', async () => {
    const data = bytes(500_000);
    const res = await send(data, { headers: { ...headers, 'x-request-id': 'tus-final-1' } });
    assert.equal(res.getStatus(), 200);
    const asset = JSON.parse(res.getBody());
    assert.equal(asset.name, 'film.bin');
    assert.equal(res.getHeader('Damhub-Asset-Id'), encodeURIComponent(asset.id));
    assert.equal(sha256(stored(asset.id)), sha256(data));
    const detail = await t.app.inject({ url: `/api/v1/assets/asset/${encodeURIComponent(asset.id)}`, headers });
    assert.equal(detail.headers.etag, res.getHeader('ETag'));
    const audit = await t.hub.stores.audit.list({ since: 0, limit: 50 });
    const entry = audit.find((e) => e.requestId === 'tus-final-1');
    assert.ok(entry, 'the final PATCH is audited under its request id');
    assert.equal(entry.operation, 'upload');
    assert.equal(entry.bytes, data.length);
    assert.equal(partFiles().length, 0);
  });

  test('cut at about half, resumed from the HEAD offset: the stored asset has the SHA-256 of the whole file', async () => {
    const data = bytes(6 * 1024 * 1024, 2);
    const created = await call(base, { method: 'POST', headers: { 'upload-length': String(data.length), 'upload-metadata': meta({ parentId: 'root', name: 'cut.bin' }) } });
    assert.equal(created.status, 201);
    const url = created.headers.get('location')!;
    proxy.cut(3 * 1024 * 1024);
    await assert.rejects(call(url, { method: 'PATCH', headers: { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, body: new Uint8Array(data) }));
    const offset = Number((await call(url, { method: 'HEAD' })).headers.get('upload-offset'));
    assert.ok(offset > 0 && offset < data.length, `resumes from ${offset}`);
    const bodies = dam.bodiesOpened;
    const res = await send(data, { uploadUrl: url });
    assert.equal(res.getStatus(), 200);
    const asset = JSON.parse(res.getBody());
    assert.equal(sha256(stored(asset.id)), sha256(data));
    assert.equal(dam.bodiesOpened, bodies + 1, 'the DAM got the bytes once, whole');
  });

  test('a new version with assetId and ifMatch; without ifMatch 428 at creation; a stale one 412 on the final PATCH, the bytes kept for no one', async () => {
    const first = JSON.parse((await send(bytes(1000, 4), { metadata: { parentId: 'root', name: 'doc.bin' } })).getBody());
    const etag = (await t.app.inject({ url: `/api/v1/assets/asset/${encodeURIComponent(first.id)}`, headers })).headers.etag as string;
    const v2 = bytes(2000, 5);
    const res = await send(v2, { metadata: { assetId: first.id, ifMatch: etag } });
    assert.equal(res.getStatus(), 200);
    assert.equal(dam.assets.get(first.id)!.versions.length, 2);
    assert.equal(sha256(stored(first.id)), sha256(v2));
    assert.notEqual(res.getHeader('ETag'), etag);
    const none = await call(base, { method: 'POST', headers: { 'upload-length': '10', 'upload-metadata': meta({ assetId: first.id }) } });
    assert.equal(none.status, 428);
    assert.equal((await none.json()).errorCode, 'hub-precondition-required');
    // If-Match is compared under the asset's write lock when the bytes are written, as for a plain update.
    const stale = await call(base, { method: 'POST', headers: { 'upload-length': '10', 'upload-metadata': meta({ assetId: first.id, ifMatch: etag }) } });
    assert.equal(stale.status, 201);
    const url = stale.headers.get('location')!;
    const done = await call(url, { method: 'PATCH', headers: { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, body: new Uint8Array(bytes(10)) });
    assert.equal(done.status, 412);
    assert.equal((await done.json()).errorCode, 'asset-version-conflict');
    assert.equal(dam.assets.get(first.id)!.versions.length, 2, 'no version was added');
    assert.equal((await call(url, { method: 'DELETE' })).status, 204);
  });

  test('onConflict: fail is 409 asset-exists on the final PATCH; rename keeps both', async () => {
    await send(bytes(100, 6), { metadata: { parentId: 'root', name: 'same.bin' } });
    // The name is found taken when the bytes are written (the engine checks it under the folder's lock).
    const taken = await call(base, { method: 'POST', headers: { 'upload-length': '10', 'upload-metadata': meta({ parentId: 'root', name: 'same.bin' }) } });
    assert.equal(taken.status, 201);
    const done = await call(taken.headers.get('location')!, { method: 'PATCH', headers: { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, body: new Uint8Array(bytes(10)) });
    assert.equal(done.status, 409);
    assert.equal((await done.json()).errorCode, 'asset-exists');
    const renamed = JSON.parse((await send(bytes(100, 7), { metadata: { parentId: 'root', name: 'same.bin', onConflict: 'rename' } })).getBody());
    assert.notEqual(renamed.name, 'same.bin');
  });

  test('bytes that are not what the name says are refused at the chunk that brings the head, not after the last', async () => {
    const pdf = Buffer.concat([Buffer.from('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n'), bytes(200_000, 8)]);
    const created = await call(base, { method: 'POST', headers: { 'upload-length': String(pdf.length), 'upload-metadata': meta({ parentId: 'root', name: 'photo.png' }) } });
    assert.equal(created.status, 201);
    const url = created.headers.get('location')!;
    const bodies = dam.bodiesOpened;
    const r = await call(url, { method: 'PATCH', headers: { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, body: new Uint8Array(pdf.subarray(0, 100_000)) });
    assert.equal(r.status, 415);
    const env = await r.json();
    assert.equal(env.errorCode, 'hub-unsupported-media-type');
    assert.match(env.error.details, /application\/pdf.*photo\.png/);
    assert.equal((await call(url, { method: 'HEAD' })).headers.get('upload-offset'), '0', 'the chunk was discarded');
    assert.equal(dam.bodiesOpened, bodies, 'the DAM saw nothing');
    assert.equal((await call(url, { method: 'DELETE' })).status, 204);
  });

  test('refused at creation with nothing stored: writes off 403, a bad name 400, too large 413', async () => {
    const parts = partFiles().length;
    const bodies = dam.bodiesOpened;
    const post = (length: number, m: Record<string, string>) => call(base, { method: 'POST', headers: { 'upload-length': String(length), 'upload-metadata': meta(m) } });
    const bad = await post(10, { parentId: 'root', name: '..' });
    assert.equal(bad.status, 400);
    assert.equal((await bad.json()).errorCode, 'asset-name-invalid');
    const big = await post(MAX + 1, { parentId: 'root', name: 'big.bin' });
    assert.equal(big.status, 413);
    assert.equal((await big.json()).errorCode, 'hub-payload-too-large');
    await t.hub.stores.partners.update(t.partner.id, { writes: false }, t.clock.now());
    try {
      const off = await post(10, { parentId: 'root', name: 'a.bin' });
      assert.equal(off.status, 403);
      assert.equal((await off.json()).errorCode, 'writes-disabled');
    } finally {
      await t.hub.stores.partners.update(t.partner.id, { writes: true }, t.clock.now());
    }
    assert.equal(partFiles().length, parts);
    assert.equal(dam.bodiesOpened, bodies);
  });
});
