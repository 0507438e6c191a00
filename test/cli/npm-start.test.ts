/**
 * Issue 29, the first start as a new user sees it: `npm start` rebuilt on every start and said
 * nothing for about 50 s; the start lines had raw JSON log lines among them and printed URLs with
 * port 0 under `--port 0`; a port in use advised `--port`, which npm takes as its own option.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, test } from 'node:test';
import { tempDir } from '../helpers/hub.js';
import { CLI, REPO_ROOT, type RunResult } from '../helpers/process.js';

/** Runs `cmd args` to its end (killed after 120 s: a start that was not refused would run on). */
function run(cmd: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv }): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
    const limit = setTimeout(() => child.kill('SIGKILL'), 120_000);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(limit);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The environment of a person's shell: none of the test's own DAMHUB_* settings, nor those of the npm that may run the tests. */
function shellEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DAMHUB_') && !k.startsWith('npm_')));
  return { ...env, ...extra };
}

describe('npm start builds only when the sources changed', () => {
  /**
   * A project with the repository's bin/start.js (and the modules it imports) whose `npm run build`
   * counts its runs, fails when told to, and writes a CLI whose main says what it was asked.
   */
  function project(): string {
    const root = tempDir('damhub-start-');
    fs.mkdirSync(path.join(root, 'bin'));
    for (const f of fs.readdirSync(path.join(REPO_ROOT, 'bin'))) fs.copyFileSync(path.join(REPO_ROOT, 'bin', f), path.join(root, 'bin', f));
    fs.writeFileSync(path.join(root, 'package.json'), JSON.stringify({ name: 'start-probe', private: true, type: 'module', scripts: { build: 'node build.mjs' } }));
    fs.writeFileSync(path.join(root, 'tsconfig.json'), '{}\n');
    fs.mkdirSync(path.join(root, 'src'));
    fs.writeFileSync(path.join(root, 'src', 'a.ts'), 'export const a = 1;\n');
    fs.writeFileSync(path.join(root, 'build.mjs'), [
      "import fs from 'node:fs';",
      "fs.appendFileSync('builds.txt', 'b');",
      "if (fs.existsSync('fail-build')) process.exit(3);",
      "fs.mkdirSync('dist/src/cli', { recursive: true });",
      "fs.writeFileSync('dist/src/cli/main.js', 'export async function main(argv) { process.stdout.write(`main ${argv.join(\" \")}\\\\n`); return 0; }\\n');",
    ].join('\n'));
    return root;
  }

  const start = (root: string) => run(process.execPath, [path.join(root, 'bin', 'start.js'), '--port', '9999'], { cwd: root, env: shellEnv() });
  const builds = (root: string) => fs.readFileSync(path.join(root, 'builds.txt'), 'utf8').length;
  /** A save of `file`: a new modification time, as an editor leaves. */
  const touch = (file: string, secondsAhead: number) => {
    const t = new Date(Date.now() + secondsAhead * 1000);
    fs.utimesSync(file, t, t);
  };

  test('the first start says "building…" and builds; the next builds only after a change, a new file or a removed one', async () => {
    const root = project();
    const first = await start(root);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stderr, /^damhub: building… /m, 'said before the build starts');
    assert.equal(first.stdout, 'main serve --demo --port 9999\n');
    assert.equal(builds(root), 1);

    const again = await start(root);
    assert.equal(again.code, 0, again.stderr);
    assert.doesNotMatch(again.stderr, /building/);
    assert.equal(again.stdout, 'main serve --demo --port 9999\n');
    assert.equal(builds(root), 1, 'no build: nothing changed');

    touch(path.join(root, 'src', 'a.ts'), 5);
    assert.match((await start(root)).stderr, /building…/);
    assert.equal(builds(root), 2, 'a saved source');

    fs.writeFileSync(path.join(root, 'src', 'b.ts'), 'export const b = 2;\n');
    await start(root);
    assert.equal(builds(root), 3, 'a new source');
    fs.rmSync(path.join(root, 'src', 'b.ts'));
    await start(root);
    assert.equal(builds(root), 4, 'a removed source');
    touch(path.join(root, 'tsconfig.json'), 10);
    await start(root);
    assert.equal(builds(root), 5, 'the compiler settings');

    await start(root);
    assert.equal(builds(root), 5, 'and none again');
  });

  test('a failed build stops the start, and the next start builds again; so does a dist/ that lost the CLI', async () => {
    const root = project();
    await start(root);
    fs.writeFileSync(path.join(root, 'fail-build'), '');
    touch(path.join(root, 'src', 'a.ts'), 5);
    const failed = await start(root);
    assert.equal(failed.code, 3);
    assert.match(failed.stderr, /the build failed; fix it and run npm start again/);
    assert.equal(failed.stdout, '', 'nothing served from a stale build');
    fs.rmSync(path.join(root, 'fail-build'));
    const fixed = await start(root);
    assert.equal(fixed.code, 0, fixed.stderr);
    assert.equal(builds(root), 3, 'rebuilt after the failure');

    fs.rmSync(path.join(root, 'dist', 'src', 'cli', 'main.js'));
    const rebuilt = await start(root);
    assert.equal(rebuilt.code, 0, rebuilt.stderr);
    assert.equal(builds(root), 4);
  });
});

describe('the start lines', () => {
  test('--port 0: every URL names the bound port, the connectors are listed, and no JSON log line comes among them', async () => {
    const child = spawn(process.execPath, [CLI, 'serve', '--demo', '--port', '0', '--data', tempDir()], {
      cwd: REPO_ROOT, env: shellEnv({ DAMHUB_LOG_LEVEL: 'info', DAMHUB_CONNECTORS: 'webdav,s3' }), stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      const until = async (what: RegExp, label: string) => {
        const deadline = Date.now() + 60_000;
        while (!what.test(out)) {
          assert.ok(Date.now() < deadline && child.exitCode === null, `${label}:\n${out}`);
          await new Promise((r) => setTimeout(r, 100));
        }
      };
      await until(/^ {2}admin key: .*\n/m, 'no start lines');
      const base = /^damhub listening on (http:\/\/127\.0\.0\.1:(\d+))$/m.exec(out);
      assert.ok(base && Number(base[2]) > 0, out);
      const urls = out.match(/https?:\/\/[^\s)]+/g)!;
      assert.ok(urls.length >= 6, out);
      for (const u of urls) assert.equal(new URL(u).origin, base[1], `${u} names the bound port`);
      assert.match(out, /^ {2}connectors: {5}library, webdav, s3$/m);
      // The hub's own URLs follow the bound port too: the demo page and the API's server.
      assert.equal((await fetch(`${base[1]}/demo`)).status, 200);
      const doc = await (await fetch(`${base[1]}/api/v1/openapi.json`)).json() as { servers: { url: string }[] };
      assert.equal(doc.servers[0]!.url, base[1]);
      // The first JSON log line is the first request's: nothing was logged among the start lines.
      await until(/"msg":"request completed"/, 'no request log line');
      const lines = out.split('\n');
      const firstJson = lines.findIndex((l) => l.startsWith('{'));
      assert.match(lines[firstJson]!, /"path":"\/demo"/, `the first JSON line:\n${out}`);
      assert.match(lines[firstJson - 1]!, /^ {2}admin key: /, 'right after the start lines');
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });
});

describe('a port in use', () => {
  async function blocked<T>(fn: (port: number) => Promise<T>): Promise<T> {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    try {
      return await fn((blocker.address() as net.AddressInfo).port);
    } finally {
      blocker.close();
    }
  }

  test('under npm start, the advice is npm start -- --port or DAMHUB_PORT (a bare --port is npm\'s own option)', { skip: process.platform === 'win32' }, async () => {
    await blocked(async (port) => {
      const npmCli = process.env.npm_execpath;
      const [cmd, args] = npmCli ? [process.execPath, [npmCli, 'start']] : ['npm', ['start']];
      const r = await run(cmd, args, { cwd: REPO_ROOT, env: shellEnv({ DAMHUB_PORT: String(port), DAMHUB_DATA_DIR: tempDir(), DAMHUB_START_SKIP_BUILD: '1' }) });
      assert.notEqual(r.code, 0);
      assert.ok(r.stderr.includes(`damhub: port ${port} on 127.0.0.1 is in use (another damhub?): stop what listens on 127.0.0.1:${port} or choose another port with npm start -- --port ${port + 1} (or DAMHUB_PORT=${port + 1} npm start)\n`), r.stderr);
    });
  });

  test('under npx, --port is right: npx passes it on', { skip: process.platform === 'win32' }, async () => {
    await blocked(async (port) => {
      const npmCli = process.env.npm_execpath;
      const npxArgs = ['--no', 'damhub', 'serve', '--port', String(port), '--data', tempDir()];
      const [cmd, args] = npmCli && fs.existsSync(path.join(path.dirname(npmCli), 'npx-cli.js'))
        ? [process.execPath, [path.join(path.dirname(npmCli), 'npx-cli.js'), ...npxArgs]] : ['npx', npxArgs];
      const r = await run(cmd, args, { cwd: REPO_ROOT, env: shellEnv() });
      assert.equal(r.code, 1);
      assert.match(r.stderr, new RegExp(`or choose another port with --port ${port + 1}\\n`));
    });
  });
});
