/**
 * The hub's key ring (SPEC.md section 3, "Token keys"): generated on first start into the data
 * directory with owner-only permissions, and rotated so that tokens signed or encrypted with the
 * previous key keep working until they expire, while keys retired longer ago than the retirement
 * window are dropped (and their tokens stop working).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { decodeProtectedHeader } from 'jose';
import { keyFile, loadOrCreateKeyRing, rotateKeyRing } from '../../src/auth/keys.js';
import { ManualClock } from '../../src/clock.js';
import { ensurePrivateDir } from '../../src/stores/private-files.js';
import { assertError, bearer, startTestHub, tempDir, type TestHub } from '../helpers/hub.js';
import { signPartnerJwt, type TestKey } from '../helpers/partner.js';
import { testProvider } from '../helpers/test-provider.js';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const DAY = 24 * 3600 * SECOND;
/** The window `damhub keys rotate` uses: the longest token lifetime (30 days) plus a day. */
const CLI_RETIRE_MS = 31 * DAY;

const isPosix = process.platform !== 'win32';
const modeOf = (file: string) => fs.statSync(file).mode & 0o777;

function hubAt(dataDir: string | undefined, clock: ManualClock): Promise<TestHub> {
  return startTestHub({ dataDir, clock, providers: [testProvider()] });
}

/** Exchanges a JWT signed with the partner key registered when the data dir was first used. */
async function exchange(t: TestHub, key: TestKey, sub = 'user-1'): Promise<{ access_token: string; refresh_token: string }> {
  const jwt = await signPartnerJwt(t.clock.now(), { key, issuer: t.partner.issuer, sub });
  const res = await t.app.inject({ method: 'POST', url: '/api/v1/auth/exchangeToken', headers: { authorization: bearer(jwt) } });
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

async function damLogin(t: TestHub, access: string): Promise<{ access_token: string; refresh_token: string }> {
  const start = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login?provider=testdam&polling=true', headers: { authorization: bearer(access) } });
  assert.equal(start.statusCode, 200, start.body);
  const { redirect_uri, state } = start.json();
  const page = await t.app.inject({
    method: 'POST', url: new URL(redirect_uri).pathname, headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ state, user: 'alice', password: 'secret' }),
  });
  assert.deepEqual(page.json(), { ok: true });
  const tokens = (await t.app.inject({ method: 'GET', url: `/api/v1/auth/login?state=${encodeURIComponent(state)}&polling=true` })).json();
  assert.equal(typeof tokens.access_token, 'string', JSON.stringify(tokens));
  return tokens;
}

const checkToken = (t: TestHub, access: string) =>
  t.app.inject({ method: 'GET', url: '/api/v1/auth/checkToken', headers: { authorization: bearer(access) } });
const providerInfo = (t: TestHub, access: string, dam: string) =>
  t.app.inject({ method: 'GET', url: '/api/v1/system/providerInfo', headers: { authorization: bearer(access), 'provider-authorization': bearer(dam) } });
const refresh = (t: TestHub, access: string, token: string) =>
  t.app.inject({ method: 'GET', url: '/api/v1/auth/refreshToken', headers: { authorization: bearer(access), 'provider-authorization': bearer(token) } });

function ok(res: LightMyRequestResponse): Record<string, any> {
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

const kid = (token: string) => decodeProtectedHeader(token).kid;

describe('key generation', () => {
  test('loadOrCreateKeyRing creates keys.json (mode 0600) once and loads it afterwards', () => {
    const dir = tempDir();
    const file = keyFile(dir);
    assert.equal(fs.existsSync(file), false);
    const ring = loadOrCreateKeyRing(dir, 1_000);
    assert.equal(fs.existsSync(file), true);
    if (isPosix) assert.equal(modeOf(file), 0o600);
    const stored = JSON.parse(fs.readFileSync(file, 'utf8')) as { kid: string; use: string; k: string; createdAt: number }[];
    assert.deepEqual(stored.map((k) => k.use), ['sig', 'enc']);
    for (const k of stored) {
      assert.equal(Buffer.from(k.k, 'base64url').length, 32);
      assert.equal(k.createdAt, 1_000);
    }
    assert.equal(ring.active('sig').kid, stored[0]!.kid);
    assert.equal(ring.active('enc').kid, stored[1]!.kid);
    assert.notEqual(stored[0]!.k, stored[1]!.k);
    assert.deepEqual(fs.readdirSync(dir).filter((f) => f.endsWith('.tmp')), [], 'no temp file left behind');

    const again = loadOrCreateKeyRing(dir, 2_000);
    assert.equal(again.active('sig').kid, ring.active('sig').kid);
    assert.equal(again.active('enc').kid, ring.active('enc').kid);
    assert.equal(fs.readFileSync(file, 'utf8'), JSON.stringify(stored, null, 2));
    // A key is found only for its own use.
    assert.ok(ring.find(ring.active('sig').kid, 'sig'));
    assert.equal(ring.find(ring.active('sig').kid, 'enc'), undefined);
    assert.equal(ring.find('sig-unknown', 'sig'), undefined);
  });

  test('a new hub writes its key ring and secrets owner-only into a 0700 data dir', async () => {
    const dataDir = path.join(tempDir(), 'data');
    const t = await startTestHub({ dataDir });
    try {
      assert.ok(fs.existsSync(keyFile(dataDir)));
      if (isPosix) {
        assert.equal(modeOf(dataDir), 0o700);
        for (const f of ['keys.json', 'admin.key', 'user-hash.key']) assert.equal(modeOf(path.join(dataDir, f)), 0o600, f);
      }
      const { access_token, refresh_token } = await t.login();
      assert.equal(kid(access_token), t.hub.keys.active('sig').kid);
      assert.equal(kid(refresh_token), t.hub.keys.active('sig').kid);
    } finally {
      await t.close();
    }
  });
});

describe('key rotation', () => {
  test('tokens made before a rotation keep working on a hub restarted with the new ring; new tokens use the new kids', async () => {
    const clock = new ManualClock(Date.UTC(2026, 5, 1, 12));
    const t1 = await hubAt(undefined, clock);
    const { dataDir, key } = t1;
    const hub = await exchange(t1, key);
    const dam = await damLogin(t1, hub.access_token);
    const oldSig = t1.hub.keys.active('sig').kid;
    const oldEnc = t1.hub.keys.active('enc').kid;
    assert.equal(kid(hub.access_token), oldSig);
    assert.equal(kid(dam.access_token), oldEnc);
    await t1.close();

    clock.advance(MINUTE);
    const ring = rotateKeyRing(dataDir, clock.now(), CLI_RETIRE_MS);
    const newSig = ring.active('sig').kid;
    const newEnc = ring.active('enc').kid;
    assert.notEqual(newSig, oldSig);
    assert.notEqual(newEnc, oldEnc);
    if (isPosix) assert.equal(modeOf(keyFile(dataDir)), 0o600);

    const t2 = await hubAt(dataDir, clock);
    try {
      assert.equal(t2.hub.keys.active('sig').kid, newSig);
      // Old tokens: the access token (checkToken) and the DAM token (a content call).
      ok(await checkToken(t2, hub.access_token));
      assert.equal(ok(await providerInfo(t2, hub.access_token, dam.access_token)).remoteSystemPrefix, 'test:alice');
      // The old refresh tokens renew, and what they yield carries the new kids.
      const pair = ok(await refresh(t2, hub.access_token, hub.refresh_token));
      assert.equal(kid(pair.access_token), newSig);
      assert.equal(kid(pair.refresh_token), newSig);
      ok(await checkToken(t2, pair.access_token));
      const renewed = ok(await refresh(t2, pair.access_token, dam.refresh_token));
      assert.equal(kid(renewed.access_token), newEnc);
      assert.equal(kid(renewed.refresh_token), newEnc);
      ok(await providerInfo(t2, pair.access_token, renewed.access_token));
      // Fresh tokens from an exchange and a DAM login use the new kids too.
      const fresh = await exchange(t2, key, 'someone-new');
      assert.equal(kid(fresh.access_token), newSig);
      const freshDam = await damLogin(t2, fresh.access_token);
      assert.equal(kid(freshDam.access_token), newEnc);
      assert.equal(kid(freshDam.refresh_token), newEnc);
    } finally {
      await t2.close();
    }
  });

  test('a key that served longer than the retirement window still verifies its tokens after the rotation', async () => {
    // Keys are typically rotated after months of service: the window counts from the rotation
    // that retired the key, not from the key's creation.
    const clock = new ManualClock(Date.UTC(2026, 5, 1, 12));
    const t1 = await hubAt(undefined, clock);
    const { dataDir, key } = t1;
    clock.advance(40 * DAY);
    const hub = await exchange(t1, key);
    const dam = await damLogin(t1, hub.access_token);
    await t1.close();

    clock.advance(MINUTE);
    rotateKeyRing(dataDir, clock.now(), CLI_RETIRE_MS);
    const t2 = await hubAt(dataDir, clock);
    try {
      ok(await checkToken(t2, hub.access_token));
      ok(await providerInfo(t2, hub.access_token, dam.access_token));
      ok(await refresh(t2, hub.access_token, hub.refresh_token));
      ok(await refresh(t2, hub.access_token, dam.refresh_token));
    } finally {
      await t2.close();
    }
  });

  test('a key retired longer ago than the window is dropped at the next rotation and its tokens fail', async () => {
    const RETIRE = 10 * MINUTE;
    const clock = new ManualClock(Date.UTC(2026, 5, 1, 12));
    const t1 = await hubAt(undefined, clock);
    const { dataDir, key } = t1;
    const first = await exchange(t1, key, 'first-key');
    const firstDam = await damLogin(t1, first.access_token);
    const firstKids = [t1.hub.keys.active('sig').kid, t1.hub.keys.active('enc').kid];
    await t1.close();

    // First rotation: the first keys are retired now and kept.
    clock.advance(MINUTE);
    const ring2 = rotateKeyRing(dataDir, clock.now(), RETIRE);
    const secondKids = [ring2.active('sig').kid, ring2.active('enc').kid];
    const t2 = await hubAt(dataDir, clock);
    let second: { access_token: string; refresh_token: string };
    let secondDam: { access_token: string; refresh_token: string };
    try {
      ok(await checkToken(t2, first.access_token));
      ok(await providerInfo(t2, first.access_token, firstDam.access_token));
      second = await exchange(t2, key, 'second-key');
      secondDam = await damLogin(t2, second.access_token);
      assert.equal(kid(second.access_token), secondKids[0]);
      assert.equal(kid(secondDam.access_token), secondKids[1]);
    } finally {
      await t2.close();
    }

    // Second rotation, more than the window after the first: the first keys go, the second stay.
    clock.advance(RETIRE + MINUTE);
    rotateKeyRing(dataDir, clock.now(), RETIRE);
    const kids = (JSON.parse(fs.readFileSync(keyFile(dataDir), 'utf8')) as { kid: string }[]).map((k) => k.kid);
    assert.equal(kids.length, 4);
    for (const k of firstKids) assert.ok(!kids.includes(k!), `${k} was dropped`);
    for (const k of secondKids) assert.ok(kids.includes(k), `${k} is kept`);

    const t3 = await hubAt(dataDir, clock);
    try {
      // The first tokens have not expired (access 1 h, DAM 24 h, refresh 30 d) but their key is gone.
      const body = assertError(await checkToken(t3, first.access_token), 'hub-access-token-invalid', 401);
      assert.match(body.error.details, /signature/);
      assertError(await refresh(t3, first.access_token, first.refresh_token), 'hub-access-token-invalid', 401);
      const fresh = await exchange(t3, key, 'first-key');
      const damBody = assertError(await providerInfo(t3, fresh.access_token, firstDam.access_token), 'provider-access-token-invalid', 403);
      assert.match(damBody.error.details, /retired/);
      assertError(await refresh(t3, fresh.access_token, firstDam.refresh_token), 'provider-access-token-invalid', 403);
      assertError(await refresh(t3, fresh.access_token, first.refresh_token), 'provider-access-token-invalid', 403);
      // Tokens of the key retired by this rotation keep working.
      ok(await checkToken(t3, second!.access_token));
      ok(await providerInfo(t3, second!.access_token, secondDam!.access_token));
      ok(await refresh(t3, second!.access_token, second!.refresh_token));
    } finally {
      await t3.close();
    }
  });
});

describe('ensurePrivateDir', () => {
  test('a data directory that cannot be tightened (another owner): the start is told why, and nothing is claimed', { skip: !isPosix }, () => {
    const dir = tempDir('damhub-loose-');
    fs.chmodSync(dir, 0o755);
    // This suite runs as the directory's owner (often root), for whom chmod never fails: play the other owner.
    const chmod = fs.chmodSync;
    fs.chmodSync = () => { throw Object.assign(new Error('operation not permitted'), { code: 'EPERM' }); };
    try {
      const note = ensurePrivateDir(dir);
      assert.match(note ?? '', /^the data directory .* is 0755 and could not be tightened to 0700 \(EPERM[^)]*\); other local users may read its keys and stores: chmod 700 it as its owner$/);
    } finally {
      fs.chmodSync = chmod;
    }
    assert.equal(modeOf(dir), 0o755);
    assert.match(ensurePrivateDir(dir) ?? '', /tightened the data directory .* from 0755 to 0700/);
    assert.equal(modeOf(dir), 0o700);
    assert.equal(ensurePrivateDir(dir), null, 'nothing to say once private');
  });
});
