/**
 * The library's writes in cluster mode: two providers (two nodes) over one library folder and one
 * PostgreSQL index (a fresh `cindex_` database; test/helpers/cindex-env.ts), each with its own
 * pool. A lock taken on one node holds on the other; a write on either is found by the other's
 * next search and browse; write folders and the migration are the PostgreSQL store's.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type pg from 'pg';
import { ManualClock } from '../../../src/clock.js';
import { lockedByOther } from '../../../src/providers/asset-state.js';
import type { ProviderSession } from '../../../src/providers/contract.js';
import { PgLibraryIndex } from '../../../src/providers/library/index/postgres.js';
import { IndexerLease } from '../../../src/providers/library/indexer-lease.js';
import type { LibraryProvider } from '../../../src/providers/library/provider.js';
import { assetIdFor } from '../../../src/providers/library/scanner.js';
import { createPgPool } from '../../../src/stores/postgres/index.js';
import { cindexEnv, type CindexEnv } from '../../helpers/cindex-env.js';
import { writeFiles } from '../../helpers/library.js';
import { body, LIST, libraryDirs, makeLibrary } from '../../helpers/library-writes.js';
import { addAccount } from '../../../src/providers/library/accounts.js';

let env: CindexEnv | null = null;
const pools: pg.Pool[] = [];
let a: LibraryProvider;
let b: LibraryProvider;
let dirs: { root: string; data: string };

function node(name: string): Promise<LibraryProvider> {
  const pool = createPgPool(env!.databaseUrl);
  pools.push(pool);
  const clock = new ManualClock(Date.UTC(2026, 10, 28, 6));
  return makeLibrary(dirs.root, dirs.data, { clock, sharedIndex: { index: new PgLibraryIndex(pool), lease: new IndexerLease(pool, name, clock) } });
}

before(async () => {
  env = await cindexEnv();
  if (!env) return;
  dirs = libraryDirs();
  writeFiles(dirs.root, { 'Team/plan.txt': 'plan v1', 'Archive/old.txt': 'old' });
  a = await node('node-a');
  b = await node('node-b');
  await a.rescan(); // node a is the indexer; b only reads the shared index
});
after(async () => {
  await a?.close();
  await b?.close();
  for (const p of pools) await p.end();
  await env?.cleanup();
});

async function sessions(name: string, writeFolders: string[]): Promise<[ProviderSession, ProviderSession]> {
  const acc = await addAccount(a.index, name, `${name}-password`, [], Date.now(), { writeFolders });
  const s = { providerId: 'library', userId: `u-${name}`, partnerId: 'p', credentials: { acc: acc.id } };
  return [s, { ...s }];
}

test('a lock taken on one node holds on the other: lockedBy, someone else\'s, asset-locked, released', async (t) => {
  if (!env) return t.skip('PostgreSQL or Redis unreachable (reason printed above)');
  const [annA] = await sessions('ann', ['Team']);
  const [, bobB] = await sessions('bob', ['Team']);
  const id = assetIdFor('Team/plan.txt');
  const viewB = await b.viewVersion(bobB);
  assert.equal((await a.lockAsset(annA, id)).lockedBy, 'ann');
  assert.notEqual(await b.viewVersion(bobB), viewB, 'the other node\'s cached pages drop');
  const seen = await b.asset(bobB, id, { uiLocale: 'en', timeZone: null });
  assert.equal(seen.lockedBy, 'ann');
  assert.equal(lockedByOther(seen), true);
  assert.equal((await b.browse(bobB, '/Team', LIST)).assets[0]!.lockedBy, 'ann');
  await assert.rejects(b.lockAsset(bobB, id), (e: { code?: string; details?: string }) => e.code === 'asset-locked' && /ann/.test(e.details ?? ''));
  await assert.rejects(b.update(bobB, id, body('bob was here'), { ifMatch: null, upstreamTag: null }), (e: { code?: string }) => e.code === 'asset-locked');
  assert.equal(fs.readFileSync(path.join(dirs.root, 'Team/plan.txt'), 'utf8'), 'plan v1');
  // Both nodes asking at once: one lock, the same holder on both answers.
  await a.unlockAsset(annA, id);
  const [x, y] = await Promise.allSettled([a.lockAsset(annA, id), b.lockAsset(bobB, id)]);
  const won = [x, y].filter((r) => r.status === 'fulfilled');
  assert.equal(won.length, 1, 'exactly one node takes the lock');
  const holder = (won[0] as PromiseFulfilledResult<{ lockedBy?: string }>).value.lockedBy!;
  assert.equal((await a.asset(annA, id, { uiLocale: 'en', timeZone: null })).lockedBy, holder);
  await (holder === 'ann' ? a.unlockAsset(annA, id) : b.unlockAsset(bobB, id));
  assert.equal((await b.asset(bobB, id, { uiLocale: 'en', timeZone: null })).lockedBy, undefined);
});

test('a write on one node is found by the other\'s next search and browse, with its version history', async (t) => {
  if (!env) return t.skip('PostgreSQL or Redis unreachable (reason printed above)');
  const [carolA, carolB] = await sessions('carol', ['Team']);
  const up = await b.upload(carolB, { parentId: '/Team', name: 'narwhal.txt', onConflict: 'fail' }, body('n1'));
  assert.deepEqual((await a.search(carolA, { query: 'narwhal', parentId: null }, LIST)).assets.map((x) => x.id), [up.asset.id]);
  const v2 = await a.update(carolA, up.asset.id, body('n2'), { ifMatch: null, upstreamTag: null });
  assert.equal(v2.version, 2);
  assert.equal((await b.asset(carolB, up.asset.id, { uiLocale: 'en', timeZone: null })).version, 2);
  const moved = await b.renameAsset(carolB, up.asset.id, 'walrus.txt', { ifMatch: null, upstreamTag: null });
  assert.deepEqual((await a.search(carolA, { query: 'walrus', parentId: null }, LIST)).assets.map((x) => x.id), [moved.id]);
  assert.deepEqual((await a.search(carolA, { query: 'narwhal', parentId: null }, LIST)).assets, []);
  assert.equal((await a.versions(carolA, moved.id, { withMaster: false, uiLocale: 'en' })).versions.length, 1);
  await a.createFolder(carolA, '/Team', 'Drafts');
  assert.ok((await b.browse(carolB, '/Team', LIST)).folders.some((f) => f.id === '/Team/Drafts'));
  await b.deleteFolder(carolB, '/Team/Drafts', { recursive: false });
  assert.ok(!(await a.browse(carolA, '/Team', LIST)).folders.some((f) => f.id === '/Team/Drafts'));
  await a.deleteAsset(carolA, moved.id, { ifMatch: null, upstreamTag: null });
  assert.deepEqual((await b.search(carolB, { query: 'walrus', parentId: null }, LIST)).assets, []);
});

test('write folders are kept by the PostgreSQL index and enforced on every node', async (t) => {
  if (!env) return t.skip('PostgreSQL or Redis unreachable (reason printed above)');
  const [daveA, daveB] = await sessions('dave', ['Archive']);
  assert.deepEqual((await b.index.accountByName('dave'))!.writeFolders, ['Archive']);
  await assert.rejects(b.upload(daveB, { parentId: '/Team', name: 'x.txt', onConflict: 'fail' }, body('x')), (e: { code?: string; details?: string }) => e.code === 'integration-forbidden' && /\/Team/.test(e.details ?? ''));
  assert.deepEqual((await a.browse(daveA, '/Archive', LIST)).capabilities, { canAddAsset: true, canAddFolder: true, canRenameFolder: false, canDeleteFolder: false });
});
