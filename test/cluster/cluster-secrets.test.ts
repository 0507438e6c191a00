/**
 * The key ring and secrets shared through PostgreSQL: nodes starting together agree on one value,
 * a rotation keeps the old keys verifying, and a node's ring follows the shared one in place.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { KeyRing } from '../../src/auth/keys.js';
import { createPgPool, migratePg } from '../../src/stores/postgres/index.js';
import { loadSharedSecrets, readSharedKeys, rotateSharedKeys, SharedKeyFollower } from '../../src/auth/cluster-secrets.js';
import { clusterEnv, type ClusterEnv } from '../helpers/stores-env.js';
import { defaultConfig } from '../../src/config.js';
import { openHub } from '../../src/hub.js';

describe('secrets shared in PostgreSQL', () => {
  let env: ClusterEnv | null = null;
  before(async () => {
    env = await clusterEnv();
  });
  after(async () => {
    await env?.cleanup();
  });

  test('five nodes starting at once read back one key ring, one admin key, one user-hash key', async (t) => {
    if (!env) return t.skip('backing services unavailable');
    const pools = Array.from({ length: 5 }, () => createPgPool(env!.databaseUrl));
    try {
      await migratePg(pools[0]!);
      const all = await Promise.all(pools.map((p) => loadSharedSecrets(p, Date.now())));
      for (const s of all) assert.deepEqual(s, all[0]);
      assert.equal(all[0]!.keys.length, 2);
      assert.notEqual(all[0]!.adminKey, all[0]!.userHashKey);
      assert.match(all[0]!.adminKey, /^[A-Za-z0-9_-]{43}$/);
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
  });

  test('a rotation puts new keys first and keeps the old ones; a follower swaps its ring in place', async (t) => {
    if (!env) return t.skip('backing services unavailable');
    const pool = createPgPool(env.databaseUrl);
    try {
      await migratePg(pool);
      const ring = new KeyRing((await loadSharedSecrets(pool, Date.now())).keys);
      const oldSig = ring.active('sig').kid;
      const follower = new SharedKeyFollower(pool, ring, 3_600_000);
      const rotated = await rotateSharedKeys(pool, Date.now(), 86_400_000);
      assert.notEqual(rotated.active('sig').kid, oldSig);
      assert.ok(rotated.find(oldSig, 'sig'), 'the old signing key still verifies');
      assert.equal(ring.active('sig').kid, oldSig, 'nothing changes before the reload');
      await follower.reload();
      follower.close();
      assert.equal(ring.active('sig').kid, rotated.active('sig').kid);
      assert.equal(ring.active('enc').kid, rotated.active('enc').kid);
      assert.ok(ring.find(oldSig, 'sig'));
      assert.deepEqual(await readSharedKeys(pool), ring.toJSON());
    } finally {
      await pool.end();
    }
  });

  test('a ring version without a key of each use is refused and the ring stays as it was', () => {
    const ring = KeyRing.generate(Date.now());
    const before = ring.toJSON();
    assert.throws(() => ring.replace(before.filter((k) => k.use === 'sig')), /no enc key/);
    assert.deepEqual(ring.toJSON(), before);
    assert.ok(ring.find(ring.active('enc').kid, 'enc'));
  });
});

describe('every cluster process opens the hub with the shared keys', () => {
  let env: ClusterEnv | null = null;
  before(async () => {
    env = await clusterEnv();
  });
  after(async () => {
    await env?.cleanup();
  });

  // `damhub mcp` (stdio) used to build its hub on the data dir's own key ring: in cluster mode the
  // DAM connections MCP users made over HTTP on any node did not open there. Both it and `damhub
  // serve` now open the hub through openHub().
  test('openHub in cluster mode: the shared ring, admin key and user-hash key; nothing written to the data dir', async (t) => {
    if (!env) return t.skip('backing services unavailable');
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'damhub-openhub-'));
    const config = defaultConfig({ dataDir, databaseUrl: env.databaseUrl, redisUrl: env.redisUrl, redisKeyPrefix: env.keyPrefix });
    const { hub, follower } = await openHub(config, { watchLibrary: false });
    try {
      assert.ok(follower, 'the ring follows the shared one');
      const pool = createPgPool(env.databaseUrl);
      try {
        const shared = await loadSharedSecrets(pool, Date.now());
        assert.deepEqual(hub.keys.toJSON(), new KeyRing(shared.keys).toJSON());
        assert.equal(hub.adminKey, shared.adminKey);
      } finally {
        await pool.end();
      }
      for (const f of ['keys.json', 'admin.key', 'user-hash.key']) assert.equal(fs.existsSync(path.join(dataDir, f)), false, `${f} is not created in the data dir`);
    } finally {
      follower?.close();
      await hub.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
