/**
 * Resumable uploads in cluster mode: two hub nodes, each on its own connections to one PostgreSQL
 * (the upload records) and one Redis (the upload's lock), sharing DAMHUB_UPLOAD_DIR. An upload
 * begun on one node and cut resumes on the other with tus-js-client and lands whole; requests of
 * one upload on both nodes at once never both write. The nodes are in one process so that they
 * can share the in-memory DAM (the embedded library's cluster mode is library-cluster.test.ts's).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import * as tus from 'tus-js-client';
import type { HubConfig } from '../../src/config.js';
import { ClusterStores } from '../../src/stores/index.js';
import { startTestHub, tempDir, type TestHub } from '../helpers/hub.js';
import { memoryDam, type MemoryDam } from '../helpers/memory-dam.js';
import { clusterEnv, type ClusterEnv } from '../helpers/stores-env.js';
import { bytes, cuttingProxy, meta, sha256 } from '../helpers/tus.js';

describe('tus uploads across two cluster nodes (PostgreSQL + Redis, one upload directory)', () => {
  let env: ClusterEnv | null = null;
  let a: TestHub;
  let b: TestHub;
  let dam: MemoryDam;
  let proxy: Awaited<ReturnType<typeof cuttingProxy>>;
  let urlA: string;
  let urlB: string;
  let headers: Record<string, string>;
  const uploadDir = tempDir('damhub-shared-uploads-');

  before(async () => {
    env = await clusterEnv({ what: 'cluster upload tests' });
    if (!env) return;
    const open = () => ClusterStores.open({ databaseUrl: env!.databaseUrl, redisUrl: env!.redisUrl, keyPrefix: env!.keyPrefix });
    dam = memoryDam();
    proxy = await cuttingProxy();
    const config = (publicUrl: string) => ({ publicUrl, uploadDir, userRateLimitPerMin: 0 }) as Partial<HubConfig>;
    a = await startTestHub({ providers: [dam], partner: { writes: true }, stores: await open(), config: config(`http://127.0.0.1:${proxy.port}`) });
    // The second node: the first one's data dir (keys and secrets, as cluster nodes share them), its own store connections.
    b = await startTestHub({ providers: [dam], stores: await open(), dataDir: a.dataDir, clock: a.clock, config: config('http://node-b.invalid') });
    await a.app.listen({ host: '127.0.0.1', port: 0 });
    await b.app.listen({ host: '127.0.0.1', port: 0 });
    proxy.to((a.app.server.address() as AddressInfo).port);
    const portB = (b.app.server.address() as AddressInfo).port;
    urlA = `http://127.0.0.1:${proxy.port}/api/v1/uploads`;
    urlB = `http://127.0.0.1:${portB}/api/v1/uploads`;
    const { access_token } = await a.login({ sub: 'sub-alice' });
    const start = (await a.app.inject({ method: 'POST', url: '/api/v1/auth/login?provider=memdam&polling=true', headers: { authorization: `Bearer ${access_token}` } })).json();
    await a.app.inject({ method: 'POST', url: '/api/v1/auth/memdam/signin', payload: { state: start.state, user: 'alice', password: 'secret' } });
    const token = (await a.app.inject({ url: `/api/v1/auth/login?state=${start.state}&polling=true` })).json().access_token;
    headers = { authorization: `Bearer ${access_token}`, 'provider-authorization': `Bearer ${token}`, 'tus-resumable': '1.0.0' };
  });
  after(async () => {
    await proxy?.close();
    await b?.close();
    await a?.close();
    await env?.cleanup();
  });

  const call = (url: string, init: RequestInit = {}) => fetch(url, { ...init, headers: { ...headers, ...(init.headers as Record<string, string>) } });
  const patch = (url: string, offset: number, body: Buffer) => call(url, { method: 'PATCH', headers: { 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream' }, body: new Uint8Array(body) });

  test('begun on node A, cut at about half, resumed on node B: the asset has the SHA-256 of the whole file', async (t) => {
    if (!env) return t.skip('backing services unavailable');
    const data = bytes(4 * 1024 * 1024, 12);
    const created = await call(urlA, { method: 'POST', headers: { 'upload-length': String(data.length), 'upload-metadata': meta({ parentId: 'root', name: 'across.bin' }) } });
    assert.equal(created.status, 201, await created.text());
    const id = created.headers.get('location')!.split('/').pop()!;
    proxy.cut(2 * 1024 * 1024);
    await assert.rejects(patch(`${urlA}/${id}`, 0, data));
    // Node B reads the offset node A recorded (after A let go of the upload's lock, held in Redis).
    const head = await call(`${urlB}/${id}`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    const offset = Number(head.headers.get('upload-offset'));
    assert.ok(offset > 0 && offset < data.length, `resumes from ${offset}`);
    const res = await new Promise<tus.HttpResponse>((resolve, reject) => {
      new tus.Upload(data, { uploadUrl: `${urlB}/${id}`, headers, retryDelays: null, onSuccess: ({ lastResponse }) => resolve(lastResponse), onError: reject }).start();
    });
    assert.equal(res.getStatus(), 200);
    const asset = JSON.parse(res.getBody());
    assert.equal(sha256(dam.assets.get(asset.id)!.versions.at(-1)!), sha256(data));
    assert.ok(!fs.readdirSync(uploadDir).includes(`${id}.part`), 'the shared part file is gone');
    // The answer is kept in PostgreSQL: node A answers the repeated final request the same.
    const again = await patch(`${urlA}/${id}`, data.length, Buffer.alloc(0));
    assert.equal(again.status, 200);
    assert.equal(again.headers.get('damhub-asset-id'), encodeURIComponent(asset.id));
  });

  test('the same chunk sent to both nodes at once is written once: one 204, the other 409, the offset moved once', async (t) => {
    if (!env) return t.skip('backing services unavailable');
    const data = bytes(3 * 1024 * 1024, 13);
    const created = await call(urlB, { method: 'POST', headers: { 'upload-length': String(data.length * 2), 'upload-metadata': meta({ parentId: 'root', name: 'race.bin' }) } });
    const id = created.headers.get('location')!.split('/').pop()!;
    const answers = await Promise.all([patch(`${urlA}/${id}`, 0, data), patch(`${urlB}/${id}`, 0, data)]);
    assert.deepEqual(answers.map((r) => r.status).sort(), [204, 409]);
    const head = await call(`${urlA}/${id}`, { method: 'HEAD' });
    assert.equal(head.headers.get('upload-offset'), String(data.length));
    assert.equal(fs.statSync(`${uploadDir}/${id}.part`).size, data.length);
    assert.equal((await call(`${urlB}/${id}`, { method: 'DELETE' })).status, 204);
  });
});
