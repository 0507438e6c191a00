/**
 * The write engine through the HTTP contract (docs/writes.md), over a writable DAM in memory:
 * the opt-in, names, limits, If-Match and the write lock, locks of others, idempotency, the audit
 * and the capability fields. The backends' own behaviour is the write conformance suite's
 * (test/helpers/provider-conformance.ts), run over each real server.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertError, startTestHub, type TestHub } from '../helpers/hub.js';
import { memoryDam, type MemoryDam } from '../helpers/memory-dam.js';
import type { HubConfig } from '../../src/config.js';

const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a5f6b0a80000000049454e44ae426082', 'hex');

interface Session { hub: TestHub; dam: MemoryDam; headers: Record<string, string>; as(user: string): Promise<Record<string, string>> }

async function setup(o: { writes?: boolean; config?: Partial<HubConfig> } = {}): Promise<Session> {
  const dam = memoryDam();
  const hub = await startTestHub({ providers: [dam], partner: { writes: o.writes ?? true }, config: o.config });
  const as = async (user: string) => {
    const { access_token } = await hub.login({ sub: `sub-${user}` });
    const start = (await hub.app.inject({ method: 'POST', url: '/api/v1/auth/login?provider=memdam&polling=true', headers: { authorization: `Bearer ${access_token}` } })).json();
    await hub.app.inject({ method: 'POST', url: '/api/v1/auth/memdam/signin', payload: { state: start.state, user, password: 'secret' } });
    const token = (await hub.app.inject({ url: `/api/v1/auth/login?state=${start.state}&polling=true` })).json().access_token;
    assert.ok(token);
    return { authorization: `Bearer ${access_token}`, 'provider-authorization': `Bearer ${token}` };
  };
  return { hub, dam, headers: await as('alice'), as };
}

function upload(s: Session, name: string, body: Buffer | string, o: { parentId?: string; onConflict?: string; headers?: Record<string, string> } = {}) {
  const q = new URLSearchParams({ parentId: o.parentId ?? 'root', name, ...(o.onConflict ? { onConflict: o.onConflict } : {}) });
  return s.hub.app.inject({ method: 'POST', url: `/api/v1/assets/upload?${q}`, headers: { ...s.headers, 'content-type': 'application/octet-stream', ...o.headers }, payload: body });
}

const enc = encodeURIComponent;

test('writes are off until the operator allows them: 403 writes-disabled on every route, capability fields false', async (t) => {
  const s = await setup({ writes: false });
  t.after(() => s.hub.close());
  assertError(await upload(s, 'a.txt', 'hello'), 'writes-disabled', 403);
  assert.equal(s.dam.bodiesOpened, 0);
  s.dam.assets.set('x', { id: 'x', name: 'x.txt', parent: 'root', versions: [Buffer.from('1')], lock: null });
  const calls = [
    { method: 'POST' as const, url: '/api/v1/assets/update/x', headers: { 'if-match': '*' }, payload: 'v2' },
    { method: 'PATCH' as const, url: '/api/v1/assets/asset/x', payload: { name: 'y.txt' } },
    { method: 'DELETE' as const, url: '/api/v1/assets/asset/x' },
    { method: 'POST' as const, url: '/api/v1/assets/folder', payload: { parentId: 'root', name: 'F' } },
    { method: 'PATCH' as const, url: '/api/v1/assets/folder/f1', payload: { name: 'G' } },
    { method: 'DELETE' as const, url: '/api/v1/assets/folder/f1' },
    { method: 'POST' as const, url: '/api/v1/assets/lock/x' },
    { method: 'DELETE' as const, url: '/api/v1/assets/lock/x' },
  ];
  for (const c of calls) assertError(await s.hub.app.inject({ ...c, headers: { ...s.headers, ...c.headers } }), 'writes-disabled', 403);
  const asset = (await s.hub.app.inject({ url: '/api/v1/assets/asset/x', headers: s.headers })).json();
  assert.deepEqual(asset.capabilities, { canDeleteAsset: false, canUpdateAsset: false, canLockAsset: false, canUnlockAsset: false, canRenameAsset: false, uploadExtensions: [] });
  const folder = (await s.hub.app.inject({ url: '/api/v1/assets/folder/root', headers: s.headers })).json();
  assert.deepEqual(folder.capabilities, { canDeleteFolder: false, canAddFolder: false, canAddAsset: false, canRenameFolder: false });
  assert.equal(s.dam.assets.get('x')!.name, 'x.txt');
});

test('the providers listing derives the write capabilities from the operations', async (t) => {
  const s = await setup();
  t.after(() => s.hub.close());
  const list = (await s.hub.app.inject({ url: '/api/v1/auth/providers', headers: { authorization: s.headers.authorization! } })).json();
  const caps = list.find((p: { id: string }) => p.id === 'memdam').capabilities;
  for (const k of ['upload', 'update', 'rename', 'move', 'delete', 'folders', 'lock']) assert.equal(caps[k], true, k);
});

test('upload: 201 with the asset and its ETag; a taken name fails, keeps both or adds a version', async (t) => {
  const s = await setup();
  t.after(() => s.hub.close());
  const r = await upload(s, 'notes.txt', 'one');
  assert.equal(r.statusCode, 201, r.body);
  const a = r.json();
  assert.equal(a.name, 'notes.txt');
  assert.equal(a.version, 1);
  assert.match(String(r.headers.etag), /^"[\w-]+"$/);
  assert.equal(r.headers['damhub-asset-id'], enc(a.id));
  assert.equal(a.capabilities.canUpdateAsset, true);
  assert.deepEqual(a.capabilities.uploadExtensions, ['txt']);
  const got = await s.hub.app.inject({ url: `/api/v1/assets/asset/${enc(a.id)}`, headers: s.headers });
  assert.equal(got.headers.etag, r.headers.etag, 'the detail answers the same ETag');

  assertError(await upload(s, 'NOTES.txt', 'two'), 'asset-exists', 409);
  const both = await upload(s, 'notes.txt', 'two', { onConflict: 'rename' });
  assert.equal(both.statusCode, 201);
  assert.equal(both.json().name, 'notes (2).txt');
  const v = await upload(s, 'notes.txt', 'three', { onConflict: 'version' });
  assert.equal(v.statusCode, 200, v.body);
  assert.equal(v.json().id, a.id);
  assert.equal(v.json().version, 2);
  assert.notEqual(v.headers.etag, r.headers.etag);
  assert.equal(s.dam.assets.size, 2);
});

test('names are checked once for every backend: 400 asset-name-invalid naming the rule, nothing written', async (t) => {
  const s = await setup();
  t.after(() => s.hub.close());
  const cases: [string, string][] = [
    ['a/b.txt', 'separator'], ['a\\b.txt', 'separator'], ['a\u0000b', 'nul'], ['a\u0007b.txt', 'control'], ['..', 'dot'], ['.', 'dot'],
    [`${'é'.repeat(128)}.txt`, 'length'], ['what?.txt', 'character'], ['CON.txt', 'reserved'], ['name.', 'trailing'], ['.damhub-upload-1', 'hidden-temp'],
  ];
  for (const [name, rule] of cases) {
    const r = await upload(s, name, 'x');
    const body = assertError(r, 'asset-name-invalid', 400);
    assert.match(body.error.details, new RegExp(`rule: ${rule}`), name);
  }
  assert.equal(s.dam.bodiesOpened, 0);
  assert.equal(s.dam.assets.size, 0);
  // NFC: a decomposed é is stored composed.
  const r = await upload(s, 'cafe\u0301.txt', 'x');
  assert.equal(r.json().name, 'caf\u00e9.txt');
});

test('size and type: refused from the declared length before reading, and again from the bytes', async (t) => {
  const s = await setup({ config: { maxUploadBytes: 1000, uploadExtensions: ['png', 'txt'] } });
  t.after(() => s.hub.close());
  const big = await upload(s, 'big.txt', Buffer.alloc(2000, 'a'));
  assert.match(assertError(big, 'hub-payload-too-large', 413).error.details, /limit is 1000 bytes/);
  assert.equal(s.dam.bodiesOpened, 0, 'refused from Content-Length, before the provider saw a byte');
  assert.match(assertError(await upload(s, 'doc.pdf', 'x'), 'hub-unsupported-media-type', 415).error.details, /\.pdf files cannot be uploaded here/);
  // Bytes that are not what the name says.
  assert.match(assertError(await upload(s, 'image.png', 'plain text, not a PNG'), 'hub-unsupported-media-type', 415).error.details, /not image\/png/);
  assert.match(assertError(await upload(s, 'text.txt', PNG), 'hub-unsupported-media-type', 415).error.details, /image\/png/);
  assert.equal((await upload(s, 'image.png', PNG)).statusCode, 201);
  assert.equal(s.dam.assets.size, 1);
});

test('new version: 428 without If-Match, 412 with a stale one (current ETag in the answer), 200 with the current one', async (t) => {
  const s = await setup();
  t.after(() => s.hub.close());
  const first = await upload(s, 'doc.txt', 'v1');
  const id = enc(first.json().id);
  const put = (body: string, ifMatch?: string) => s.hub.app.inject({ method: 'POST', url: `/api/v1/assets/update/${id}`, headers: { ...s.headers, 'content-type': 'text/plain', ...(ifMatch ? { 'if-match': ifMatch } : {}) }, payload: body });
  assertError(await put('v2'), 'hub-precondition-required', 428);
  const ok = await put('v2', String(first.headers.etag));
  assert.equal(ok.statusCode, 200, ok.body);
  assert.equal(ok.json().version, 2);
  const stale = await put('v3', String(first.headers.etag));
  const body = assertError(stale, 'asset-version-conflict', 412);
  assert.equal(stale.headers.etag, ok.headers.etag, 'the conflict answer carries the current ETag');
  assert.ok(body.error.details.includes(String(ok.headers.etag)));
  assert.equal(s.dam.assets.get(first.json().id)!.versions.length, 2);
});

test('concurrent new versions with the same If-Match: exactly one wins, on a DAM without conditional writes', async (t) => {
  const s = await setup();
  t.after(() => s.hub.close());
  const first = await upload(s, 'race.txt', 'v1');
  const id = enc(first.json().id);
  const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => s.hub.app.inject({
    method: 'POST', url: `/api/v1/assets/update/${id}`, headers: { ...s.headers, 'content-type': 'text/plain', 'if-match': String(first.headers.etag) }, payload: `v2 by writer ${i}`,
  })));
  const statuses = answers.map((a) => a.statusCode).sort();
  assert.deepEqual(statuses, [200, 412, 412, 412, 412, 412, 412, 412]);
  assert.equal(s.dam.assets.get(first.json().id)!.versions.length, 2);
});

test('rename, move and delete; If-Match is optional and checked when given', async (t) => {
  const s = await setup();
  t.after(() => s.hub.close());
  const a = (await upload(s, 'a.txt', 'x')).json();
  const folder = await s.hub.app.inject({ method: 'POST', url: '/api/v1/assets/folder', headers: s.headers, payload: { parentId: 'root', name: 'Archive' } });
  assert.equal(folder.statusCode, 201, folder.body);
  const renamed = await s.hub.app.inject({ method: 'PATCH', url: `/api/v1/assets/asset/${enc(a.id)}`, headers: s.headers, payload: { name: 'b.txt' } });
  assert.equal(renamed.json().name, 'b.txt');
  assertError(await s.hub.app.inject({ method: 'PATCH', url: `/api/v1/assets/asset/${enc(a.id)}`, headers: s.headers, payload: {} }), 'hub-validation-error', 400);
  const moved = await s.hub.app.inject({ method: 'PATCH', url: `/api/v1/assets/asset/${enc(a.id)}`, headers: s.headers, payload: { parentId: folder.json().id, name: 'c.txt' } });
  assert.equal(moved.statusCode, 200, moved.body);
  assert.equal(s.dam.assets.get(a.id)!.parent, folder.json().id);
  assertError(await s.hub.app.inject({ method: 'DELETE', url: `/api/v1/assets/asset/${enc(a.id)}`, headers: { ...s.headers, 'if-match': '"stale"' } }), 'asset-version-conflict', 412);
  const del = await s.hub.app.inject({ method: 'DELETE', url: `/api/v1/assets/asset/${enc(a.id)}`, headers: { ...s.headers, 'if-match': String(moved.headers.etag) } });
  assert.equal(del.statusCode, 204);
  assert.equal(s.dam.assets.size, 0);
  assertError(await s.hub.app.inject({ method: 'DELETE', url: `/api/v1/assets/asset/${enc(a.id)}`, headers: s.headers }), 'integration-not-found', 404, 'integration');
});

test('folders: create, rename, refuse deleting a non-empty one unless recursive; the root stays', async (t) => {
  const s = await setup();
  t.after(() => s.hub.close());
  const f = (await s.hub.app.inject({ method: 'POST', url: '/api/v1/assets/folder', headers: s.headers, payload: { parentId: 'root', name: 'Work' } })).json();
  assertError(await s.hub.app.inject({ method: 'POST', url: '/api/v1/assets/folder', headers: s.headers, payload: { parentId: 'root', name: 'work' } }), 'asset-exists', 409);
  const r = await s.hub.app.inject({ method: 'PATCH', url: `/api/v1/assets/folder/${enc(f.id)}`, headers: s.headers, payload: { name: 'Done' } });
  assert.equal(r.json().name, 'Done');
  await upload(s, 'in.txt', 'x', { parentId: f.id });
  assertError(await s.hub.app.inject({ method: 'DELETE', url: `/api/v1/assets/folder/${enc(f.id)}`, headers: s.headers }), 'folder-not-empty', 409);
  assert.equal((await s.hub.app.inject({ method: 'DELETE', url: `/api/v1/assets/folder/${enc(f.id)}?recursive=true`, headers: s.headers })).statusCode, 204);
  assert.equal(s.dam.assets.size, 0);
  assertError(await s.hub.app.inject({ method: 'DELETE', url: '/api/v1/assets/folder/root?recursive=true', headers: s.headers }), 'hub-validation-error', 400);
  const browse = (await s.hub.app.inject({ url: '/api/v1/assets/folder/root', headers: s.headers })).json();
  assert.deepEqual(browse.capabilities, { canDeleteFolder: true, canAddFolder: true, canAddAsset: true, canRenameFolder: true });
});

test('locks: the holder writes, others get 423 asset-locked naming lockedBy, and their capability fields say so', async (t) => {
  const s = await setup();
  t.after(() => s.hub.close());
  const a = (await upload(s, 'locked.txt', 'x')).json();
  const locked = await s.hub.app.inject({ method: 'POST', url: `/api/v1/assets/lock/${enc(a.id)}`, headers: s.headers });
  assert.equal(locked.statusCode, 200, locked.body);
  assert.equal(locked.json().lockedBy, 'alice');
  assert.equal(locked.json().capabilities.canUnlockAsset, true);
  assert.equal(locked.json().capabilities.canLockAsset, false);
  const bob = await s.as('bob');
  const seen = (await s.hub.app.inject({ url: `/api/v1/assets/asset/${enc(a.id)}`, headers: bob })).json();
  assert.equal(seen.lockedBy, 'alice');
  assert.deepEqual([seen.capabilities.canUpdateAsset, seen.capabilities.canDeleteAsset, seen.capabilities.canRenameAsset, seen.capabilities.canUnlockAsset], [false, false, false, false]);
  const etag = String(locked.headers.etag);
  for (const c of [
    { method: 'POST' as const, url: `/api/v1/assets/update/${enc(a.id)}`, headers: { 'if-match': etag, 'content-type': 'text/plain' }, payload: 'bob' },
    { method: 'PATCH' as const, url: `/api/v1/assets/asset/${enc(a.id)}`, payload: { name: 'bob.txt' } },
    { method: 'DELETE' as const, url: `/api/v1/assets/asset/${enc(a.id)}` },
    { method: 'DELETE' as const, url: `/api/v1/assets/lock/${enc(a.id)}` },
  ]) {
    const r = await s.hub.app.inject({ ...c, headers: { ...bob, ...c.headers } });
    assert.match(assertError(r, 'asset-locked', 423).error.message, /alice/);
  }
  const own = await s.hub.app.inject({ method: 'POST', url: `/api/v1/assets/update/${enc(a.id)}`, headers: { ...s.headers, 'if-match': etag, 'content-type': 'text/plain' }, payload: 'alice v2' });
  assert.equal(own.statusCode, 200, own.body);
  const unlocked = await s.hub.app.inject({ method: 'DELETE', url: `/api/v1/assets/lock/${enc(a.id)}`, headers: s.headers });
  assert.equal(unlocked.json().lockedBy, undefined);
  assert.equal((await s.hub.app.inject({ method: 'PATCH', url: `/api/v1/assets/asset/${enc(a.id)}`, headers: bob, payload: { name: 'bob.txt' } })).statusCode, 200);
});

test('an account the DAM lets only read: capability fields false, writes refused by the DAM', async (t) => {
  const s = await setup();
  t.after(() => s.hub.close());
  const a = (await upload(s, 'r.txt', 'x')).json();
  const viewer = await s.as('viewer');
  const seen = (await s.hub.app.inject({ url: `/api/v1/assets/asset/${enc(a.id)}`, headers: viewer })).json();
  assert.equal(seen.capabilities.canUpdateAsset, false);
  assert.equal((await s.hub.app.inject({ url: '/api/v1/assets/folder/root', headers: viewer })).json().capabilities.canAddAsset, false);
  assertError(await s.hub.app.inject({ method: 'DELETE', url: `/api/v1/assets/asset/${enc(a.id)}`, headers: viewer }), 'integration-forbidden', 403, 'integration');
});

test('Idempotency-Key: a retry answers the first answer and writes nothing; another body is 422', async (t) => {
  const s = await setup();
  t.after(() => s.hub.close());
  const key = { 'idempotency-key': '"8e03978e-40d5-43e8-bc93-6894a57f9324"' };
  const first = await upload(s, 'once.txt', 'same bytes', { headers: key });
  assert.equal(first.statusCode, 201);
  const again = await upload(s, 'once.txt', 'same bytes', { headers: key });
  assert.equal(again.statusCode, 201, again.body);
  assert.equal(again.headers['idempotent-replayed'], 'true');
  assert.deepEqual(again.json(), first.json());
  assert.equal(again.headers.etag, first.headers.etag);
  assert.equal(s.dam.assets.size, 1, 'the retry wrote nothing');
  assertError(await upload(s, 'once.txt', 'other bytes', { headers: key }), 'hub-idempotency-key-reused', 422);
  assertError(await upload(s, 'twice.txt', 'same bytes', { headers: key }), 'hub-idempotency-key-reused', 422);
  // Keys are per user: bob's same key is his own.
  const bob = await s.as('bob');
  const theirs = await s.hub.app.inject({ method: 'POST', url: '/api/v1/assets/folder', headers: { ...bob, ...key }, payload: { parentId: 'root', name: 'Bob' } });
  assert.equal(theirs.statusCode, 201);
  // A JSON write replays too, a failure included (not a transient one).
  const k2 = { 'idempotency-key': 'k2' };
  const f1 = await s.hub.app.inject({ method: 'POST', url: '/api/v1/assets/folder', headers: { ...s.headers, ...k2 }, payload: { parentId: 'root', name: 'Bob' } });
  assertError(f1, 'asset-exists', 409);
  s.dam.folders.forEach((f, id) => { if (f.name === 'Bob') s.dam.folders.delete(id); });
  const f2 = await s.hub.app.inject({ method: 'POST', url: '/api/v1/assets/folder', headers: { ...s.headers, ...k2 }, payload: { parentId: 'root', name: 'Bob' } });
  assertError(f2, 'asset-exists', 409);
  assert.equal(f2.headers['idempotent-replayed'], 'true');
  assertError(await s.hub.app.inject({ method: 'POST', url: '/api/v1/assets/folder', headers: { ...s.headers, 'idempotency-key': 'x'.repeat(300) }, payload: { parentId: 'root', name: 'Z' } }), 'hub-validation-error', 400);
});

test('every write is audited with its request id, names before and after, bytes and result', async (t) => {
  const s = await setup();
  t.after(() => s.hub.close());
  const up = await upload(s, 'audit.txt', 'twelve bytes', { headers: { 'x-request-id': 'req-upload-1' } });
  await s.hub.app.inject({ method: 'PATCH', url: `/api/v1/assets/asset/${enc(up.json().id)}`, headers: { ...s.headers, 'x-request-id': 'req-rename-1' }, payload: { name: 'renamed.txt' } });
  await upload(s, 'renamed.txt', 'again', { headers: { 'x-request-id': 'req-upload-2' } });
  const entries = await s.hub.hub.stores.audit.list({ since: 0, limit: 10 });
  const byReq = Object.fromEntries(entries.map((e) => [e.requestId, e]));
  assert.deepEqual(
    { op: byReq['req-upload-1']!.operation, bytes: byReq['req-upload-1']!.bytes, result: byReq['req-upload-1']!.result, after: byReq['req-upload-1']!.nameAfter, id: byReq['req-upload-1']!.targetIdAfter, account: byReq['req-upload-1']!.accountId },
    { op: 'upload', bytes: 12, result: 'ok', after: 'audit.txt', id: up.json().id, account: 'alice' },
  );
  assert.deepEqual([byReq['req-rename-1']!.operation, byReq['req-rename-1']!.nameBefore, byReq['req-rename-1']!.nameAfter], ['rename', 'audit.txt', 'renamed.txt']);
  assert.equal(byReq['req-upload-2']!.result, 'asset-exists');
  assert.equal(byReq['req-upload-2']!.partnerId, s.hub.partner.id);
});

test('an upstream that dies mid-body: the error is answered and nothing is stored', async (t) => {
  const s = await setup();
  t.after(() => s.hub.close());
  s.dam.failNextBody = true;
  const r = await upload(s, 'broken.txt', Buffer.alloc(64 * 1024, 'a'));
  assertError(r, 'integration-unavailable', 502, 'integration');
  assert.equal(s.dam.assets.size, 0);
  const [entry] = await s.hub.hub.stores.audit.list({ since: 0, limit: 1 });
  assert.equal(entry!.result, 'integration-unavailable');
});
