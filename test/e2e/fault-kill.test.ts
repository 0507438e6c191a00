/**
 * Fault injection, part 3: SIGKILL (no shutdown code runs) of the real process in the middle of
 * token refreshes and in the middle of indexing. After a restart on the same data directory
 * nothing the process had answered is lost and the interrupted work completes.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { tempDir } from '../helpers/hub.js';
import { solidJpeg, writeFiles } from '../helpers/library.js';
import { makeKey, signPartnerJwt } from '../helpers/partner.js';
import { CLI, REPO_ROOT, runCli, startServer } from '../helpers/process.js';
import { recordFigure } from '../helpers/figures.js';

test('SIGKILL during token refreshes: after a restart every session refreshes with the last token its client received', async () => {
  const data = tempDir();
  const key = await makeKey();
  const issuer = 'https://partner.kill.example/';
  const jwksFile = path.join(data, '..', `jwks-${path.basename(data)}.json`);
  fs.writeFileSync(jwksFile, JSON.stringify({ keys: [key.publicJwk] }));
  const add = await runCli(['partners', 'add', '--issuer', issuer, '--jwks-file', jwksFile, '--data', data, '--rate-limit', '1000']);
  assert.equal(add.code, 0, add.stderr);

  let server = await startServer(['--data', data]);
  const sessions: { access: string; refresh: string; refreshed: number }[] = [];
  for (let i = 0; i < 5; i++) {
    const jwt = await signPartnerJwt(Date.now(), { key, issuer, sub: `kill-${i}` });
    const res = await fetch(`${server.url}/api/v1/auth/exchangeToken`, { method: 'POST', headers: { authorization: `Bearer ${jwt}` } });
    assert.equal(res.status, 200);
    const pair = (await res.json()) as { access_token: string; refresh_token: string };
    sessions.push({ access: pair.access_token, refresh: pair.refresh_token, refreshed: 0 });
  }

  let total = 0;
  let killed = false;
  const statuses = new Map<number, number>();
  const loop = async (s: (typeof sessions)[number]) => {
    const url = server.url;
    while (!killed) {
      try {
        const res = await fetch(`${url}/api/v1/auth/refreshToken`, { headers: { authorization: `Bearer ${s.access}`, 'provider-authorization': `Bearer ${s.refresh}` } });
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status !== 200) continue;
        const pair = (await res.json()) as { access_token: string; refresh_token: string };
        s.access = pair.access_token;
        s.refresh = pair.refresh_token;
        s.refreshed++;
        if (++total === 60) {
          killed = true;
          server.child.kill('SIGKILL');
        }
      } catch {
        return; // the connection died with the process
      }
    }
  };
  await Promise.all(sessions.map(loop));
  await server.stop();
  assert.deepEqual([...statuses.keys()], [200], `only 200s before the kill: ${JSON.stringify([...statuses])}`);

  server = await startServer(['--data', data]);
  try {
    for (const s of sessions) {
      const res = await fetch(`${server.url}/api/v1/auth/refreshToken`, { headers: { authorization: `Bearer ${s.access}`, 'provider-authorization': `Bearer ${s.refresh}` } });
      assert.equal(res.status, 200, await res.clone().text());
      const pair = (await res.json()) as { access_token: string };
      const check = await fetch(`${server.url}/api/v1/auth/checkToken`, { headers: { authorization: `Bearer ${pair.access_token}` } });
      assert.equal(check.status, 200);
    }
  } finally {
    await server.stop();
  }
  recordFigure('kill-refresh', 'refreshes answered before the SIGKILL (all sessions intact after restart)', total);
});

test('SIGKILL during indexing: the next index run completes, every file is indexed once, a third run finds nothing to do', async () => {
  const root = tempDir('damhub-killlib-');
  const data = tempDir();
  const files: Record<string, Buffer> = {};
  const N = 120;
  for (let i = 0; i < N; i++) files[`f${i % 6}/img-${i}.jpg`] = await solidJpeg(64, 48, [i * 2 % 256, (i * 7) % 256, (i * 13) % 256]);
  writeFiles(root, files);

  const child = spawn(process.execPath, [CLI, 'index', '--library', root, '--data', data, '--concurrency', '1'], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  let killedAt = -1;
  const exited = new Promise<NodeJS.Signals | null>((r) => child.on('exit', (_code, signal) => r(signal)));
  child.stderr.on('data', (d) => {
    err += d;
    const m = /(\d+)\/(\d+) files/.exec(String(d));
    if (m && killedAt < 0 && Number(m[1]) >= 10 && Number(m[1]) < Number(m[2])) {
      killedAt = Number(m[1]);
      child.kill('SIGKILL');
    }
  });
  const signal = await exited;
  assert.equal(signal, 'SIGKILL', `the index run ended before it could be killed mid-way:\n${err}`);
  assert.ok(killedAt > 0 && killedAt < N);

  const second = await runCli(['index', '--library', root, '--data', data]);
  assert.equal(second.code, 0, second.stderr);
  const m = /indexed (\d+) files: (\d+) added, (\d+) updated, (\d+) unchanged, (\d+) removed, (\d+) failed/.exec(second.stdout);
  assert.ok(m, second.stdout);
  assert.equal(Number(m[1]), N);
  assert.equal(Number(m[6]), 0);
  assert.equal(Number(m[2]) + Number(m[3]) + Number(m[4]), N);

  const third = await runCli(['index', '--library', root, '--data', data]);
  assert.equal(third.code, 0, third.stderr);
  assert.match(third.stdout, new RegExp(`indexed ${N} files: 0 added, 0 updated, ${N} unchanged, 0 removed, 0 failed`));
  recordFigure('kill-index', `files indexed when the index run was SIGKILLed (of ${N}; all ${N} indexed after the rerun)`, killedAt);
});
