/**
 * deploy/readyz.mjs, the readiness check of the container image (HEALTHCHECK) and of the systemd
 * unit (ExecStartPost --wait), run as those run it: a child process with the hub's DAMHUB_HOST and
 * DAMHUB_PORT, against a real `damhub serve`.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { CLI, freePort, REPO_ROOT, startServer } from '../helpers/process.js';

const SCRIPT = path.join(REPO_ROOT, 'deploy', 'readyz.mjs');
const dirs: string[] = [];
function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'damhub-readyz-'));
  dirs.push(d);
  return d;
}
after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

function readyz(env: Record<string, string>, args: string[] = []): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SCRIPT, ...args], { env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

test('a ready hub: exit 0, on its own address and through the wildcard it may listen on', async () => {
  const hub = await startServer(['--data', path.join(tmp(), 'data')]);
  const port = new URL(hub.url).port;
  try {
    assert.deepEqual(await readyz({ DAMHUB_HOST: '127.0.0.1', DAMHUB_PORT: port }), { code: 0, stderr: '' });
    // The image sets DAMHUB_HOST=0.0.0.0: the check goes to loopback.
    assert.deepEqual(await readyz({ DAMHUB_HOST: '0.0.0.0', DAMHUB_PORT: port }), { code: 0, stderr: '' });
  } finally {
    assert.equal(await hub.stop(), 0);
  }
  const down = await readyz({ DAMHUB_HOST: '127.0.0.1', DAMHUB_PORT: port });
  assert.equal(down.code, 1);
  assert.match(down.stderr, new RegExp(`^readyz: not ready: http://127\\.0\\.0\\.1:${port}/readyz: ECONNREFUSED\\n$`));
});

test('a hub answering 503 (a store down) is not ready, and what it answered is said', async () => {
  const srv = http.createServer((_req, res) => {
    res.writeHead(503, { 'content-type': 'application/json' }).end('{"status":"not ready","checks":{"redis":"down: redis is unavailable"}}');
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  try {
    const r = await readyz({ DAMHUB_HOST: '127.0.0.1', DAMHUB_PORT: String((srv.address() as { port: number }).port) });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /answered 503: \{"status":"not ready","checks":\{"redis":"down: redis is unavailable"\}\}/);
  } finally {
    srv.close();
  }
});

test('--wait: started before the hub (as ExecStartPost is), it exits 0 once the hub is ready', async () => {
  const port = String(await freePort());
  const waiting = readyz({ DAMHUB_HOST: '127.0.0.1', DAMHUB_PORT: port }, ['--wait', '120']);
  const hub = spawn(process.execPath, [CLI, 'serve', '--data', path.join(tmp(), 'data')], {
    cwd: REPO_ROOT,
    env: { ...process.env, DAMHUB_HOST: '127.0.0.1', DAMHUB_PORT: port, DAMHUB_LOG_LEVEL: 'warn' },
    stdio: 'ignore',
  });
  const exited = new Promise<number | null>((r) => hub.on('exit', (code) => r(code)));
  try {
    assert.deepEqual(await waiting, { code: 0, stderr: '' });
    // It passed because the hub answered, not by luck of timing: the hub is up now.
    assert.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200);
  } finally {
    hub.kill('SIGTERM');
    assert.equal(await exited, 0);
  }
});

test('--wait gives up after its time, with the last cause', async () => {
  const port = String(await freePort());
  const r = await readyz({ DAMHUB_PORT: port }, ['--wait', '1']);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /^readyz: not ready after 1 s: .*ECONNREFUSED/);
});

test('a wrong argument is a usage error (exit 2)', async () => {
  const r = await readyz({}, ['--wait', 'soon']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /usage: readyz\.mjs \[--wait SECONDS\]/);
});
