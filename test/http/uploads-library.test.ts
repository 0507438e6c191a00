/**
 * Resumable uploads into the embedded library, end to end: tus-js-client over real HTTP, the
 * write engine, the library's writes (temp file, atomic rename, index). What lands in the
 * library folder is checked byte for byte, and the asset the contract then answers.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as tus from 'tus-js-client';
import type { HubConfig } from '../../src/config.js';
import { startLibraryHub, type LibraryHarness } from '../helpers/library.js';
import { bytes, cuttingProxy, meta, sha256 } from '../helpers/tus.js';

describe('tus uploads into the embedded library', () => {
  let h: LibraryHarness;
  let proxy: Awaited<ReturnType<typeof cuttingProxy>>;
  let base: string;

  before(async () => {
    proxy = await cuttingProxy();
    h = await startLibraryHub({ 'inbox/readme.txt': 'drop files here', 'archive/old.txt': 'read only' }, {
      writeFolders: ['inbox'], config: { publicUrl: `http://127.0.0.1:${proxy.port}` } as Partial<HubConfig>,
    });
    await h.t.hub.stores.partners.update(h.t.partner.id, { writes: true }, h.t.clock.now());
    await h.t.app.listen({ host: '127.0.0.1', port: 0 });
    proxy.to((h.t.app.server.address() as AddressInfo).port);
    base = `http://127.0.0.1:${proxy.port}/api/v1/uploads`;
  });
  after(async () => {
    await proxy.close();
    await h.t.close();
  });

  const folderId = async (name: string) => {
    const root = await h.get('/api/v1/assets/folder/root');
    return (root.body.folders as { id: string; name: string }[]).find((f) => f.name === name)!.id;
  };
  const send = (data: Buffer, metadata: Record<string, string>, opts: Partial<tus.UploadOptions> = {}) => new Promise<tus.HttpResponse>((resolve, reject) => {
    new tus.Upload(data, {
      endpoint: base, headers: h.headers, retryDelays: null, metadata, chunkSize: 1024 * 1024,
      onSuccess: ({ lastResponse }) => resolve(lastResponse), onError: reject, ...opts,
    }).start();
  });
  const call = (url: string, init: RequestInit = {}) => fetch(url, { ...init, headers: { 'tus-resumable': '1.0.0', ...h.headers, ...(init.headers as Record<string, string>) } });

  test('a chunked upload lands in the library folder whole, and the asset answers its SHA-256 and ETag', async () => {
    const data = bytes(3 * 1024 * 1024 + 123, 21);
    const res = await send(data, { parentId: await folderId('inbox'), name: 'clip.bin' });
    assert.equal(res.getStatus(), 200);
    const asset = JSON.parse(res.getBody());
    assert.equal(asset.name, 'clip.bin');
    assert.equal(sha256(fs.readFileSync(path.join(h.root, 'inbox', 'clip.bin'))), sha256(data));
    const detail = await h.get(`/api/v1/assets/asset/${encodeURIComponent(asset.id)}`);
    assert.equal(detail.status, 200);
    assert.equal(detail.headers.etag, res.getHeader('ETag'));
    assert.equal(detail.body.downloadHashSha256, sha256(data));
    assert.equal(fs.readdirSync(path.join(h.t.dataDir, 'uploads')).length, 0, 'no part file left');
  });

  test('cut at about half, resumed from the HEAD offset: the library file has the SHA-256 of the whole', async () => {
    const data = bytes(6 * 1024 * 1024, 22);
    const created = await call(base, { method: 'POST', headers: { 'upload-length': String(data.length), 'upload-metadata': meta({ parentId: await folderId('inbox'), name: 'cut.bin' }) } });
    assert.equal(created.status, 201);
    const url = created.headers.get('location')!;
    proxy.cut(3 * 1024 * 1024);
    await assert.rejects(call(url, { method: 'PATCH', headers: { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, body: new Uint8Array(data) }));
    const offset = Number((await call(url, { method: 'HEAD' })).headers.get('upload-offset'));
    assert.ok(offset > 0 && offset < data.length, `resumes from ${offset}`);
    assert.ok(!fs.existsSync(path.join(h.root, 'inbox', 'cut.bin')), 'nothing in the library before the last byte');
    const res = await send(data, {}, { uploadUrl: url });
    assert.equal(res.getStatus(), 200);
    assert.equal(sha256(fs.readFileSync(path.join(h.root, 'inbox', 'cut.bin'))), sha256(data));
  });

  test('a new version through tus (assetId + ifMatch): the library keeps the old one', async () => {
    const first = JSON.parse((await send(bytes(5000, 23), { parentId: await folderId('inbox'), name: 'notes.bin' })).getBody());
    const etag = (await h.get(`/api/v1/assets/asset/${encodeURIComponent(first.id)}`)).headers.etag as string;
    const v2 = bytes(7000, 24);
    const res = await send(v2, { assetId: first.id, ifMatch: etag });
    assert.equal(res.getStatus(), 200);
    assert.equal(sha256(fs.readFileSync(path.join(h.root, 'inbox', 'notes.bin'))), sha256(v2));
    const versions = await h.get(`/api/v1/assets/assetversions/${encodeURIComponent(first.id)}?withMaster=true`);
    assert.equal(versions.status, 200);
    assert.equal(versions.body.versions.length, 2);
  });

  test('a folder the account may not write to: the final PATCH is refused (403), nothing lands there, the upload can be terminated', async () => {
    // The library's write rights are checked when the bytes are written (the engine's creation
    // checks are the opt-in, name, type and size), so the refusal comes with the last byte.
    const data = bytes(2000, 25);
    const created = await call(base, { method: 'POST', headers: { 'upload-length': String(data.length), 'upload-metadata': meta({ parentId: await folderId('archive'), name: 'nope.bin' }) } });
    assert.equal(created.status, 201);
    const url = created.headers.get('location')!;
    const done = await call(url, { method: 'PATCH', headers: { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, body: new Uint8Array(data) });
    assert.equal(done.status, 403);
    assert.equal((await done.json()).errorCode, 'integration-forbidden');
    assert.ok(!fs.existsSync(path.join(h.root, 'archive', 'nope.bin')));
    assert.equal((await call(url, { method: 'DELETE' })).status, 204);
  });
});
