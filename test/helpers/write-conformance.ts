/**
 * The write half of the provider conformance suite (docs/writes.md): runs any writable provider,
 * through the hub's HTTP contract, against the write rules — upload and its conflict modes, new
 * versions under If-Match (concurrent ones: exactly one wins), rename and move (onto a taken name:
 * 409, both intact), delete, folders, locks where offered, capability honesty, and the faults a
 * client and an upstream cause (a body cut mid-way leaves nothing; a folder deleted meanwhile is
 * a 404 with nothing left). A backend passes it by calling runWriteConformance with a harness
 * over its real server; its own fault rows (a full disk or quota) stay in its own tests.
 */
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import { capabilitiesOf } from '../../src/providers/capabilities.js';
import type { Provider } from '../../src/providers/contract.js';

export interface WriteCall {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  headers?: Record<string, string>;
  /** JSON (an object), bytes, or a stream (a client that may fail mid-body). */
  payload?: unknown;
}

export interface WriteResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON when the answer is JSON, else the text. */
  body: any;
}

export interface WriteConformanceHarness {
  provider: Provider;
  /** A request relative to /api/v1 with this account's credentials (the partner has writes on). */
  call(c: WriteCall): Promise<WriteResponse>;
  /** The same as another account of the same DAM, when the backend has accounts (locks). */
  callAsOther?(c: WriteCall): Promise<WriteResponse>;
  /** The bytes behind a downloadUrl the hub issued. */
  download(url: string): Promise<Buffer>;
  /** A folder this account may write into; the suite works in folders it creates inside. */
  scratchFolderId: string;
  /** Two different files of one type the backend takes, and their name's extension (e.g. "jpg"). */
  sample: { ext: string; one: Buffer; two: Buffer };
}

const enc = encodeURIComponent;

/** A harness's `call` over a test hub (light-my-request), with the session's headers. */
export function injectCaller(app: { inject: (o: any) => Promise<any> }, headers: Record<string, string>): (c: WriteCall) => Promise<WriteResponse> {
  return async (c) => {
    const raw = c.payload instanceof Readable || Buffer.isBuffer(c.payload) || c.payload === undefined;
    const r = await app.inject({
      method: c.method, url: `/api/v1${c.path}`,
      headers: { ...headers, ...(raw ? {} : { 'content-type': 'application/json' }), ...c.headers },
      payload: raw ? c.payload : JSON.stringify(c.payload),
    });
    let body: unknown = r.body;
    try {
      body = r.json();
    } catch { /* not JSON */ }
    return { status: r.statusCode, headers: r.headers, body };
  };
}

/** A downloadUrl's bytes: the hub's own through the app (its public URL is not listening), others fetched. */
export function hubDownloader(app: { inject: (o: any) => Promise<any> }, publicUrl: string): (url: string) => Promise<Buffer> {
  return async (url) => {
    if (url.startsWith(publicUrl)) {
      const r = await app.inject({ method: 'GET', url: url.slice(publicUrl.length) });
      assert.equal(r.statusCode, 200, `download ${url}: ${r.statusCode} ${r.body}`);
      return r.rawPayload;
    }
    const r = await fetch(url);
    assert.equal(r.status, 200, `download ${url}: ${r.status}`);
    return Buffer.from(await r.arrayBuffer());
  };
}

export function runWriteConformance(name: string, setup: () => Promise<WriteConformanceHarness>): void {
  let h: WriteConformanceHarness;
  let seq = 0;
  /** A fresh folder for one test, so that tests share nothing. */
  const folder = async (label: string): Promise<string> => {
    const r = await h.call({ method: 'POST', path: '/assets/folder', payload: { parentId: h.scratchFolderId, name: `${label} ${process.pid}-${++seq}` } });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return r.body.id;
  };
  const upload = (parentId: string, fileName: string, bytes: Buffer | Readable, o: { onConflict?: string; headers?: Record<string, string> } = {}) =>
    h.call({ method: 'POST', path: `/assets/upload?${new URLSearchParams({ parentId, name: fileName, ...(o.onConflict ? { onConflict: o.onConflict } : {}) })}`, headers: { 'content-type': 'application/octet-stream', ...o.headers }, payload: bytes });
  const browse = async (id: string) => {
    const r = await h.call({ method: 'GET', path: `/assets/folder/${enc(id)}?size=200` });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body;
  };
  const file = (stem: string) => `${stem}.${h.sample.ext}`;

  test(`${name} write conformance: setup, and the capabilities listed are the operations offered`, async () => {
    h = await setup();
    const caps = capabilitiesOf(h.provider);
    for (const k of ['upload', 'update', 'rename', 'move', 'delete', 'folders'] as const) assert.equal(caps[k], true, `${name} offers ${k}`);
    const page = await browse(h.scratchFolderId);
    assert.deepEqual([page.capabilities.canAddAsset, page.capabilities.canAddFolder], [true, true], 'the scratch folder says it takes uploads and folders');
  });

  test(`${name} write conformance: upload answers 201 with the asset, its ETag and its bytes`, async () => {
    const dir = await folder('upload');
    const r = await upload(dir, file('first'), h.sample.one);
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(r.body.name, file('first'));
    assert.match(String(r.headers.etag), /^"[^"]+"$/);
    assert.equal(r.headers['damhub-asset-id'], enc(r.body.id));
    assert.equal(r.body.capabilities.canUpdateAsset, true);
    const detail = await h.call({ method: 'GET', path: `/assets/asset/${enc(r.body.id)}` });
    assert.equal(detail.status, 200);
    assert.equal(detail.headers.etag, r.headers.etag, 'GET /assets/asset answers the same ETag');
    assert.deepEqual(await h.download(detail.body.downloadUrl), h.sample.one, 'the stored bytes are the uploaded bytes');
    const listed = await browse(dir);
    assert.deepEqual(listed.assets.map((a: any) => a.id), [r.body.id], 'the folder lists it, and only it');
  });

  test(`${name} write conformance: a taken name fails (409), keeps both, or becomes a new version`, async () => {
    const dir = await folder('conflict');
    const first = await upload(dir, file('same'), h.sample.one);
    assert.equal(first.status, 201);
    const refused = await upload(dir, file('same'), h.sample.two);
    assert.equal(refused.status, 409, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, 'asset-exists');
    const both = await upload(dir, file('same'), h.sample.two, { onConflict: 'rename' });
    assert.equal(both.status, 201, JSON.stringify(both.body));
    assert.equal(both.body.name, file('same (2)'));
    assert.notEqual(both.body.id, first.body.id);
    const version = await upload(dir, file('same'), h.sample.two, { onConflict: 'version' });
    assert.equal(version.status, 200, JSON.stringify(version.body));
    assert.equal(version.body.id, first.body.id);
    assert.notEqual(version.headers.etag, first.headers.etag);
    assert.deepEqual(await h.download(version.body.downloadUrl), h.sample.two);
    assert.equal((await browse(dir)).assets.length, 2);
  });

  test(`${name} write conformance: a new version needs If-Match; a stale one is 412 and changes nothing`, async () => {
    const dir = await folder('version');
    const first = await upload(dir, file('doc'), h.sample.one);
    const update = (ifMatch: string | null, bytes: Buffer) => h.call({ method: 'POST', path: `/assets/update/${enc(first.body.id)}`, headers: { 'content-type': 'application/octet-stream', ...(ifMatch ? { 'if-match': ifMatch } : {}) }, payload: bytes });
    assert.equal((await update(null, h.sample.two)).status, 428);
    const ok = await update(String(first.headers.etag), h.sample.two);
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.id, first.body.id);
    assert.notEqual(ok.headers.etag, first.headers.etag, 'new content, new ETag');
    const stale = await update(String(first.headers.etag), h.sample.one);
    assert.equal(stale.status, 412, JSON.stringify(stale.body));
    assert.equal(stale.body.error.code, 'asset-version-conflict');
    assert.equal(stale.headers.etag, ok.headers.etag);
    const now = await h.call({ method: 'GET', path: `/assets/asset/${enc(first.body.id)}` });
    assert.deepEqual(await h.download(now.body.downloadUrl), h.sample.two, 'the refused version was not stored');
    if (capabilitiesOf(h.provider).versions) {
      const v = await h.call({ method: 'GET', path: `/assets/assetversions/${enc(first.body.id)}?withMaster=true` });
      assert.equal(v.status, 200);
      assert.ok(v.body.versions.length >= 2, `the history holds both versions: ${JSON.stringify(v.body.versions.map((x: any) => x.version))}`);
    }
  });

  test(`${name} write conformance: concurrent new versions with the same If-Match: exactly one wins`, async () => {
    const dir = await folder('race');
    const first = await upload(dir, file('race'), h.sample.one);
    const answers = await Promise.all([h.sample.two, h.sample.one, h.sample.two, h.sample.one].map((bytes) =>
      h.call({ method: 'POST', path: `/assets/update/${enc(first.body.id)}`, headers: { 'content-type': 'application/octet-stream', 'if-match': String(first.headers.etag) }, payload: bytes })));
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 412, 412, 412], JSON.stringify(answers.map((a) => a.body?.error?.code ?? 'ok')));
  });

  test(`${name} write conformance: rename, move, and a rename onto a taken name leaves both intact`, async () => {
    const dir = await folder('rename');
    const target = await folder('target');
    const a = await upload(dir, file('alpha'), h.sample.one);
    const b = await upload(dir, file('beta'), h.sample.two);
    const clash = await h.call({ method: 'PATCH', path: `/assets/asset/${enc(a.body.id)}`, payload: { name: file('beta') } });
    assert.equal(clash.status, 409, JSON.stringify(clash.body));
    assert.equal(clash.body.error.code, 'asset-exists');
    assert.deepEqual(await h.download((await h.call({ method: 'GET', path: `/assets/asset/${enc(b.body.id)}` })).body.downloadUrl), h.sample.two, 'the existing file was not overwritten');
    const renamed = await h.call({ method: 'PATCH', path: `/assets/asset/${enc(a.body.id)}`, payload: { name: file('gamma') } });
    assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
    assert.equal(renamed.body.name, file('gamma'));
    const moved = await h.call({ method: 'PATCH', path: `/assets/asset/${enc(renamed.body.id)}`, payload: { parentId: target } });
    assert.equal(moved.status, 200, JSON.stringify(moved.body));
    assert.deepEqual((await browse(target)).assets.map((x: any) => x.name), [file('gamma')]);
    assert.deepEqual((await browse(dir)).assets.map((x: any) => x.name), [file('beta')]);
    assert.deepEqual(await h.download(moved.body.downloadUrl), h.sample.one, 'the content moved with it');
  });

  test(`${name} write conformance: delete answers 204 and the asset is gone`, async () => {
    const dir = await folder('delete');
    const a = await upload(dir, file('gone'), h.sample.one);
    const del = await h.call({ method: 'DELETE', path: `/assets/asset/${enc(a.body.id)}`, headers: { 'if-match': String(a.headers.etag) } });
    assert.equal(del.status, 204, JSON.stringify(del.body));
    assert.equal((await h.call({ method: 'GET', path: `/assets/asset/${enc(a.body.id)}` })).status, 404);
    assert.deepEqual((await browse(dir)).assets, []);
  });

  test(`${name} write conformance: folders are created, renamed, and deleted only when empty unless recursive`, async () => {
    const dir = await folder('folders');
    const f = await h.call({ method: 'POST', path: '/assets/folder', payload: { parentId: dir, name: 'Inner' } });
    assert.equal(f.status, 201, JSON.stringify(f.body));
    const dup = await h.call({ method: 'POST', path: '/assets/folder', payload: { parentId: dir, name: 'Inner' } });
    assert.equal(dup.status, 409, JSON.stringify(dup.body));
    const renamed = await h.call({ method: 'PATCH', path: `/assets/folder/${enc(f.body.id)}`, payload: { name: 'Renamed' } });
    assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
    assert.equal(renamed.body.name, 'Renamed');
    assert.equal((await upload(renamed.body.id, file('inside'), h.sample.one)).status, 201);
    const refused = await h.call({ method: 'DELETE', path: `/assets/folder/${enc(renamed.body.id)}` });
    assert.equal(refused.status, 409, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, 'folder-not-empty');
    assert.equal((await h.call({ method: 'DELETE', path: `/assets/folder/${enc(renamed.body.id)}?recursive=true` })).status, 204);
    assert.deepEqual((await browse(dir)).folders, []);
  });

  test(`${name} write conformance: locks, where offered, stop other accounts with 423`, async () => {
    const caps = capabilitiesOf(h.provider);
    const dir = await folder('lock');
    const a = await upload(dir, file('locked'), h.sample.one);
    const lock = await h.call({ method: 'POST', path: `/assets/lock/${enc(a.body.id)}` });
    if (!caps.lock) assert.equal(a.body.capabilities.canLockAsset, false, 'no lock operation, no canLockAsset');
    if (!a.body.capabilities.canLockAsset) {
      // Not offered here (the provider has no locks, or this server cannot give them back): refused, never half-done.
      assert.ok([501, 403].includes(lock.status), JSON.stringify(lock.body));
      assert.equal((await h.call({ method: 'GET', path: `/assets/asset/${enc(a.body.id)}` })).body.lockedBy, undefined);
      return;
    }
    assert.equal(lock.status, 200, JSON.stringify(lock.body));
    assert.ok(lock.body.lockedBy, 'lockedBy names the holder');
    if (h.callAsOther) {
      const other = await h.callAsOther({ method: 'POST', path: `/assets/update/${enc(a.body.id)}`, headers: { 'content-type': 'application/octet-stream', 'if-match': String(lock.headers.etag) }, payload: h.sample.two });
      assert.equal(other.status, 423, JSON.stringify(other.body));
      assert.equal(other.body.error.code, 'asset-locked');
    }
    const mine = await h.call({ method: 'POST', path: `/assets/update/${enc(a.body.id)}`, headers: { 'content-type': 'application/octet-stream', 'if-match': String(lock.headers.etag) }, payload: h.sample.two });
    assert.equal(mine.status, 200, `the holder writes: ${JSON.stringify(mine.body)}`);
    const unlock = await h.call({ method: 'DELETE', path: `/assets/lock/${enc(a.body.id)}` });
    assert.equal(unlock.status, 200, JSON.stringify(unlock.body));
    assert.equal(unlock.body.lockedBy, undefined);
  });

  test(`${name} write conformance: a body cut mid-way and an upload into a deleted folder leave nothing behind`, async () => {
    const dir = await folder('faults');
    let sent = 0;
    const cut = new Readable({
      read() {
        if (sent >= 2) return this.destroy(new Error('the client went away'));
        sent++;
        this.push(sent === 1 ? h.sample.one : Buffer.alloc(64 * 1024, 1));
      },
    });
    const r = await upload(dir, file('cut'), cut).catch((e: unknown) => ({ status: 0, headers: {}, body: String(e) }));
    assert.notEqual(r.status, 201, 'a cut body is not an asset');
    assert.deepEqual((await browse(dir)).assets, [], 'nothing of the cut upload is listed');
    const doomed = await folder('doomed');
    assert.equal((await h.call({ method: 'DELETE', path: `/assets/folder/${enc(doomed)}?recursive=true` })).status, 204);
    const late = await upload(doomed, file('late'), h.sample.one);
    assert.equal(late.status, 404, JSON.stringify(late.body));
    const after = await h.call({ method: 'GET', path: `/assets/folder/${enc(doomed)}` });
    assert.equal(after.status, 404, 'the deleted folder did not come back');
  });
}
