/**
 * Fault injection, part 2: the data directory fills up or becomes read-only. The data directory
 * lives on a small tmpfs mounted for the test (root is needed for mount; without it the tests are
 * reported as skipped, never as passed; see docs/reliability.md). A filesystem cannot be remounted
 * read-only while the hub holds its database open for writing (the kernel answers EBUSY), so the
 * read-only case is the restart onto a volume that came back read-only.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { assertError, bearer, startTestHub, tempDir } from '../helpers/hub.js';
import { recordFigure } from '../helpers/figures.js';
import { signPartnerJwt } from '../helpers/partner.js';
import { ManualClock } from '../../src/clock.js';

let faults = 0;
const mounts: string[] = [];

function mountTmpfs(sizeKb: number): string | null {
  if (process.getuid?.() !== 0) return null;
  const dir = tempDir('damhub-tmpfs-');
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeKb}k,mode=0700`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch {
    return null;
  }
  mounts.push(dir);
  return dir;
}

after(() => {
  for (const m of mounts) {
    try {
      execFileSync('umount', [m], { stdio: 'pipe' });
      fs.rmdirSync(m);
    } catch { /* already gone */ }
  }
  recordFigure('storage-faults', 'data-directory faults injected (requests answered during a full or read-only data dir)', faults);
});

/** Fills the filesystem of `dir` until ENOSPC; returns the filler's path. */
function fill(dir: string): string {
  const filler = path.join(dir, 'filler');
  const fd = fs.openSync(filler, 'w');
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) fs.writeSync(fd, chunk);
  } catch (e) {
    assert.equal((e as NodeJS.ErrnoException).code, 'ENOSPC');
  }
  try {
    for (;;) fs.writeSync(fd, chunk, 0, 512);
  } catch { /* the last bytes */ }
  fs.closeSync(fd);
  return filler;
}

test('a full data directory: writes answer 503 hub-unavailable, reads keep working, nothing committed is lost, it recovers by itself', async (t) => {
  const dir = mountTmpfs(8192);
  if (!dir) return t.skip('needs root to mount a tmpfs');
  const h = await startTestHub({ dataDir: path.join(dir, 'data'), partner: { rateLimitPerMin: 10_000 } });
  try {
    const before = await h.login({ sub: 'committed' });
    const filler = fill(dir);
    let unavailable = 0;
    for (let i = 0; i < 40; i++) {
      faults++;
      const res = await h.app.inject({ method: 'POST', url: '/api/v1/auth/exchangeToken', headers: { authorization: bearer(await h.jwt({ sub: `full-${i}`, extra: { name: 'x'.repeat(2000) } })) } });
      if (res.statusCode === 200) continue;
      assertError(res, 'hub-unavailable', 503);
      unavailable++;
    }
    assert.ok(unavailable > 0, 'the full disk must be felt by writes');
    faults++;
    assert.equal((await h.app.inject({ url: '/api/v1/auth/checkToken', headers: { authorization: bearer(before.access_token) } })).statusCode, 200);
    assert.equal((await h.app.inject({ url: '/healthz' })).statusCode, 200);

    fs.rmSync(filler);
    await h.login({ sub: 'after-full' });
    const ref = await h.app.inject({ url: '/api/v1/auth/refreshToken', headers: { authorization: bearer(before.access_token), 'provider-authorization': bearer(before.refresh_token) } });
    assert.equal(ref.statusCode, 200, ref.body);
  } finally {
    await h.close();
  }
});

test('a data directory that came back read-only: the start stops with an error naming it (no half-started hub); after a read-write remount every session is intact', async (t) => {
  const dir = mountTmpfs(8192);
  if (!dir) return t.skip('needs root to mount a tmpfs');
  const dataDir = path.join(dir, 'data');
  const clock = new ManualClock(Date.UTC(2026, 5, 1, 12));
  const first = await startTestHub({ dataDir, clock, partner: { rateLimitPerMin: 10_000 } });
  const pair = await first.login({ sub: 'before-ro' });
  await first.close();

  execFileSync('mount', ['-o', 'remount,ro', dir], { stdio: 'pipe' });
  faults++;
  const rejected = assert.rejects(startTestHub({ dataDir, clock }), (e: Error) => {
    assert.match(e.message, new RegExp(`cannot open the hub database in ${dataDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(is the data directory read-only or full\\?\\)`));
    return true;
  });
  // Back to read-write whatever the assertion said, so the mount can be taken down.
  await rejected.finally(() => execFileSync('mount', ['-o', 'remount,rw', dir], { stdio: 'pipe' }));
  const h = await startTestHub({ dataDir, clock });
  try {
    assert.equal((await h.app.inject({ url: '/api/v1/auth/checkToken', headers: { authorization: bearer(pair.access_token) } })).statusCode, 200);
    const ref = await h.app.inject({ url: '/api/v1/auth/refreshToken', headers: { authorization: bearer(pair.access_token), 'provider-authorization': bearer(pair.refresh_token) } });
    assert.equal(ref.statusCode, 200, ref.body);
    const jwt = await signPartnerJwt(clock.now(), { key: first.key, issuer: first.partner.issuer, sub: 'after-ro' });
    assert.equal((await h.app.inject({ method: 'POST', url: '/api/v1/auth/exchangeToken', headers: { authorization: bearer(jwt) } })).statusCode, 200);
  } finally {
    await h.close();
  }
});
