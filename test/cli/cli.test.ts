/**
 * The real `damhub` command line as a child process (SPEC.md section 7): exit codes 0/1/2, one
 * clear error line on stderr, `partners add|list|remove` and `keys rotate` against a data dir.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { makeKey, type TestKey } from '../helpers/partner.js';
import { runCli, startServer } from '../helpers/process.js';
import { REPO_ROOT } from '../helpers/process.js';

const ROOT = REPO_ROOT;
const BIN = path.join(ROOT, 'bin', 'damhub.js');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function damhub(...args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env };
    delete env.DAMHUB_DATA_DIR;
    delete env.DAMHUB_ADMIN_KEY;
    // As typed in a shell, not as run by the npm that may run the tests (its advice differs: src/cli/serve.ts).
    delete env.npm_lifecycle_event;
    const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    // A `serve` that should have been refused would run forever: end it, and the test sees exit null.
    const limit = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('exit', () => clearTimeout(limit));
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The first stderr line is the error: "damhub: <message>", one line. */
function errorLine(r: Run): string {
  const first = r.stderr.split('\n')[0]!;
  assert.match(first, /^damhub: \S.*$/, `stderr: ${r.stderr}`);
  return first;
}

const dirs: string[] = [];
function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'damhub-cli-'));
  dirs.push(d);
  return d;
}
after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

describe('usage errors exit 2', () => {
  test('no arguments → usage, exit 2', async () => {
    const r = await damhub();
    assert.equal(r.code, 2);
    assert.match(r.stdout + r.stderr, /usage:/);
    assert.match(r.stdout + r.stderr, /damhub partners add/);
  });

  test('help → usage, exit 0', async () => {
    const r = await damhub('help');
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^usage:/);
  });

  test('unknown command → exit 2 with a one-line error on stderr', async () => {
    const r = await damhub('frobnicate');
    assert.equal(r.code, 2);
    assert.equal(errorLine(r), 'damhub: unknown command "frobnicate"');
    assert.equal(r.stdout, '');
    assert.ok(!/\n\s+at /.test(r.stderr), 'no stack trace');
    // The error is on one line; what follows is the usage text.
    assert.equal(r.stderr.split('\n').filter((l) => l.startsWith('damhub:')).length, 1);
  });

  test('partners add without --issuer → exit 2 naming --issuer', async () => {
    const r = await damhub('partners', 'add', '--jwks-url', 'https://x.example/jwks', '--data', tmp());
    assert.equal(r.code, 2);
    assert.match(errorLine(r), /--issuer/);
  });

  test('partners add with neither or both of --jwks-url/--jwks-file → exit 2', async () => {
    const data = tmp();
    const neither = await damhub('partners', 'add', '--issuer', 'https://x.example/', '--data', data);
    assert.equal(neither.code, 2);
    assert.match(errorLine(neither), /--jwks-url or --jwks-file/);
    const both = await damhub('partners', 'add', '--issuer', 'https://x.example/', '--jwks-url', 'https://x.example/jwks', '--jwks-file', 'f.json', '--data', data);
    assert.equal(both.code, 2);
  });

  test('an unknown flag, a bad number or an unknown subcommand → exit 2', async () => {
    const data = tmp();
    const flag = await damhub('partners', 'list', '--colour', 'blue', '--data', data);
    assert.equal(flag.code, 2);
    errorLine(flag);
    const num = await damhub('partners', 'add', '--issuer', 'https://x.example/', '--jwks-url', 'https://x.example/jwks', '--rate-limit', 'many', '--data', data);
    assert.equal(num.code, 2);
    assert.match(errorLine(num), /--rate-limit/);
    const sub = await damhub('partners', 'frob');
    assert.equal(sub.code, 2);
    // The usage of the command that was run, not all of it.
    assert.match(sub.stderr, /damhub partners add/);
    assert.match(sub.stderr, /damhub partners remove ID/);
    assert.doesNotMatch(sub.stderr, /damhub serve|damhub users|damhub keys/);
    const keys = await damhub('keys', 'frob');
    assert.equal(keys.code, 2);
    const remove = await damhub('partners', 'remove', '--data', data);
    assert.equal(remove.code, 2, 'remove needs an id');
  });
});

describe('partners add | list | remove', () => {
  let data: string;
  let jwksFile: string;
  let key: TestKey;
  let added: Record<string, any>;
  const issuer = 'https://cli-partner.example/';

  before(async () => {
    data = tmp();
    key = await makeKey();
    jwksFile = path.join(tmp(), 'jwks.json');
    fs.writeFileSync(jwksFile, JSON.stringify({ keys: [key.publicJwk] }));
  });

  test('add → exit 0 and the partner as JSON on stdout', async () => {
    const r = await damhub('partners', 'add', '--issuer', issuer, '--jwks-file', jwksFile, '--data', data);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    added = JSON.parse(r.stdout);
    assert.equal(added.issuer, issuer);
    assert.equal(added.name, issuer);
    assert.equal(added.audience, 'urn:damhub');
    assert.equal(added.maxTokenAge, 3600);
    assert.equal(added.rateLimit, 60);
    assert.equal(added.enabled, true);
    assert.equal(added.writes, false);
    assert.equal(added.jwksUrl, null);
    assert.deepEqual(added.jwks, { keys: [key.publicJwk] });
    assert.equal(typeof added.id, 'string');
    assert.ok(fs.existsSync(path.join(data, 'hub.sqlite')));
  });

  test('list shows it', async () => {
    const r = await damhub('partners', 'list', '--data', data);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.equal(lines.length, 2);
    assert.deepEqual(lines[0]!.split('\t'), ['ID', 'STATE', 'ISSUER', 'AUDIENCE', 'JWKS', 'WRITES'], 'a header names the columns');
    assert.deepEqual(lines[1]!.split('\t'), [added.id, 'enabled', issuer, 'urn:damhub', 'inline JWKS', 'off']);
  });

  test('add with every option and a JWKS URL', async () => {
    const r = await damhub('partners', 'add', '--issuer', 'https://second.example', '--jwks-url', 'https://second.example/jwks.json',
      '--audience', 'urn:second', '--name', 'Second', '--id', 'second', '--max-token-age', '120', '--rate-limit', '5',
      '--origin', 'https://app.second.example', '--origin', 'http://localhost:5173', '--data', data);
    assert.equal(r.code, 0, r.stderr);
    const p = JSON.parse(r.stdout);
    assert.deepEqual({ ...p, createdAt: 0, updatedAt: 0 }, {
      id: 'second', name: 'Second', issuer: 'https://second.example', audience: 'urn:second', jwksUrl: 'https://second.example/jwks.json', jwks: null,
      maxTokenAge: 120, rateLimit: 5, allowedOrigins: ['https://app.second.example', 'http://localhost:5173'], enabled: true, writes: false, createdAt: 0, updatedAt: 0,
    });
    const list = await damhub('partners', 'list', '--data', data);
    assert.deepEqual(list.stdout.trim().split('\n').slice(1).map((l) => l.split('\t')[0]).sort(), [added.id, 'second'].sort());
    assert.match(list.stdout, /^second\tenabled\thttps:\/\/second\.example\turn:second\thttps:\/\/second\.example\/jwks\.json\toff$/m);
  });

  test('adding the same issuer again → exit 1 with one error line, nothing added', async () => {
    const r = await damhub('partners', 'add', '--issuer', issuer, '--jwks-url', 'https://other.example/jwks', '--data', data);
    assert.equal(r.code, 1);
    // Names the partner that has the issuer, and what to do.
    assert.equal(errorLine(r), `damhub: a partner with issuer ${issuer} already exists (id ${added.id}): remove it first with damhub partners remove ${added.id}, or give another --issuer`);
    assert.equal(r.stderr.trim().split('\n').length, 1);
    assert.equal(r.stdout, '');
    const list = await damhub('partners', 'list', '--data', data);
    assert.equal(list.stdout.trim().split('\n').length, 3, 'header and the two partners');
    const sameId = await damhub('partners', 'add', '--issuer', 'https://third.example/', '--jwks-url', 'https://third.example/jwks', '--id', 'second', '--data', data);
    assert.equal(sameId.code, 1);
    assert.match(errorLine(sameId), /a partner with id second already exists: give another --id/);
  });

  test('invalid values the registration rules reject → exit 1', async () => {
    const badUrl = await damhub('partners', 'add', '--issuer', 'https://bad.example/', '--jwks-url', 'ftp://bad.example/jwks', '--data', data);
    assert.equal(badUrl.code, 1);
    assert.match(errorLine(badUrl), /jwksUrl/);
    const badAge = await damhub('partners', 'add', '--issuer', 'https://bad.example/', '--jwks-url', 'https://bad.example/jwks', '--max-token-age', '0', '--data', data);
    assert.equal(badAge.code, 1);
    assert.match(errorLine(badAge), /maxTokenAge/);
  });

  test('--jwks-file pointing to a non-JSON file → exit 1', async () => {
    const notJson = path.join(tmp(), 'jwks.txt');
    fs.writeFileSync(notJson, 'this is not JSON');
    const r = await damhub('partners', 'add', '--issuer', 'https://nojson.example/', '--jwks-file', notJson, '--data', data);
    assert.equal(r.code, 1);
    assert.match(errorLine(r), /JWKS file/);
    assert.equal(r.stderr.trim().split('\n').length, 1);
    assert.ok(!/\n\s+at /.test(r.stderr), 'no stack trace');
  });

  test('--jwks-file that does not exist, or holds JSON that is not a JWKS → exit 1', async () => {
    const missing = await damhub('partners', 'add', '--issuer', 'https://nofile.example/', '--jwks-file', path.join(tmp(), 'absent.json'), '--data', data);
    assert.equal(missing.code, 1);
    errorLine(missing);
    const notJwks = path.join(tmp(), 'not-jwks.json');
    fs.writeFileSync(notJwks, JSON.stringify({ hello: 'world' }));
    const r = await damhub('partners', 'add', '--issuer', 'https://notjwks.example/', '--jwks-file', notJwks, '--data', data);
    assert.equal(r.code, 1);
    assert.match(errorLine(r), /jwks/i);
  });

  test('remove ID → exit 0; removing again → exit 1', async () => {
    const r = await damhub('partners', 'remove', added.id, '--data', data);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `removed partner ${added.id} (issuer ${issuer}); its tokens stop working at once\n`);
    const list = await damhub('partners', 'list', '--data', data);
    assert.ok(!list.stdout.includes(issuer));
    assert.match(list.stdout, /^second\t/m);

    const again = await damhub('partners', 'remove', added.id, '--data', data);
    assert.equal(again.code, 1);
    assert.match(errorLine(again), new RegExp(`no partner with id ${added.id}: damhub partners list shows the ids`));
  });

  test('list of an empty data dir prints nothing', async () => {
    const r = await damhub('partners', 'list', '--data', tmp());
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '');
  });
});

describe('keys rotate', () => {
  interface StoredKey { kid: string; use: string; k: string; createdAt: number }
  const read = (data: string) => JSON.parse(fs.readFileSync(path.join(data, 'keys.json'), 'utf8')) as StoredKey[];

  test('twice → keys.json holds the new keys first and keeps the old ones', async () => {
    const data = tmp();
    const first = await damhub('keys', 'rotate', '--data', data);
    assert.equal(first.code, 0, first.stderr);
    const ring1 = read(data);
    assert.deepEqual(ring1.map((k) => k.use), ['sig', 'enc']);
    assert.equal(first.stdout.trim(), `new keys: ${ring1[0]!.kid}, ${ring1[1]!.kid}; restart the hub to use them`);

    const second = await damhub('keys', 'rotate', '--data', data);
    assert.equal(second.code, 0, second.stderr);
    const ring2 = read(data);
    assert.equal(ring2.length, 4);
    assert.deepEqual(ring2.map((k) => k.use), ['sig', 'enc', 'sig', 'enc']);
    assert.deepEqual(ring2.slice(2), ring1, 'the old keys are kept, unchanged, after the new ones');
    assert.ok(!ring1.some((k) => k.kid === ring2[0]!.kid || k.kid === ring2[1]!.kid), 'new kids');
    assert.notEqual(ring2[0]!.k, ring1[0]!.k);
    assert.match(second.stdout, new RegExp(`new keys: ${ring2[0]!.kid}, ${ring2[1]!.kid}`));
    if (process.platform !== 'win32') assert.equal(fs.statSync(path.join(data, 'keys.json')).mode & 0o777, 0o600);
    assert.deepEqual(fs.readdirSync(data).filter((f) => f.endsWith('.tmp')), [], 'no temp files left behind');
  });
});

describe('a private data directory (0700, every file 0600), whichever command creates it', () => {
  /** Every directory and file under `dir` whose mode lets group or others in, with its mode. */
  function loose(dir: string): string[] {
    const out: string[] = [];
    const walk = (p: string) => {
      const st = fs.lstatSync(p);
      if (st.isSymbolicLink()) return;
      if (st.mode & 0o077) out.push(`${path.relative(dir, p) || '.'} ${(st.mode & 0o777).toString(8)}`);
      if (st.isDirectory()) for (const e of fs.readdirSync(p)) walk(path.join(p, e));
    };
    walk(dir);
    return out;
  }
  // The CLI is spawned with the usual umask 022, under which it used to leave 0755 and 0644 behind.
  let umask: number;
  before(() => { umask = process.umask(0o022); });
  after(() => { process.umask(umask); });
  const skip = process.platform === 'win32';

  test('serve --demo on a new data directory: the directory, the demo library, SQLite with its WAL and SHM, keys and secrets', { skip }, async () => {
    const data = path.join(tmp(), 'fresh');
    const server = await startServer(['--demo', '--data', data]);
    try {
      // The server has written its store (a request makes the WAL grow) before we look.
      assert.equal((await fetch(`${server.url}/api/v1/auth/providers`)).status, 401);
      for (const f of ['keys.json', 'admin.key', 'user-hash.key', 'hub.sqlite', 'hub.sqlite-wal', 'hub.sqlite-shm']) assert.ok(fs.existsSync(path.join(data, f)), `${f} exists`);
      assert.ok(fs.existsSync(path.join(data, 'demo-library')), 'the demo library was generated');
      assert.deepEqual(loose(data), []);
    } finally {
      await server.stop();
    }
  });

  test('partners add, users add, index and keys rotate on a new data directory', { skip }, async () => {
    const key = await makeKey();
    const jwks = path.join(tmp(), 'jwks.json');
    fs.writeFileSync(jwks, JSON.stringify({ keys: [key.publicJwk] }));
    const lib = tmp();
    fs.writeFileSync(path.join(lib, 'a.txt'), 'hello');
    for (const [args, input] of [
      [['partners', 'add', '--issuer', 'https://modes.example', '--jwks-file', jwks], undefined],
      [['users', 'add', 'ann', '--password-stdin'], 'ann-password-1\n'],
      [['index', '--library', lib], undefined],
      [['keys', 'rotate'], undefined],
    ] as const) {
      const data = path.join(tmp(), 'fresh');
      const r = await runCli([...args, '--data', data], {}, input);
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      assert.deepEqual(loose(data), [], args.join(' '));
    }
  });

  test('a looser existing data directory and its files are tightened at start, and the start says so', { skip }, async () => {
    const data = path.join(tmp(), 'old');
    fs.mkdirSync(data, { mode: 0o755 });
    fs.chmodSync(data, 0o755);
    const first = await runCli(['partners', 'list', '--data', data]);
    assert.equal(first.code, 0, first.stderr);
    // As an older version left it: everything readable by all.
    for (const f of fs.readdirSync(data)) fs.chmodSync(path.join(data, f), 0o644);
    fs.writeFileSync(path.join(data, 'admin.key'), 'an-old-admin-key-1234567890', { mode: 0o644 });
    fs.chmodSync(data, 0o755);
    const server = await startServer(['--data', data]);
    try {
      assert.match(server.output(), /tightened the data directory .* from 0755 to 0700/);
      assert.match(server.output(), /made \d+ files in it owner-only \(0600\)/);
      assert.deepEqual(loose(data), []);
    } finally {
      await server.stop();
    }
  });
});

describe('one data directory holds one library', () => {
  function library(): string {
    const lib = tmp();
    fs.writeFileSync(path.join(lib, 'a.txt'), 'hello');
    return lib;
  }

  test('index or serve with another --library on a data directory that holds one → exit 1, one line naming both folders and --data', async () => {
    const data = tmp();
    const [a, b] = [library(), library()];
    const first = await damhub('index', '--library', a, '--data', data);
    assert.equal(first.code, 0, first.stderr);
    const expected = `damhub: the data directory ${data} holds the library ${fs.realpathSync(a)}, not ${fs.realpathSync(b)}: serve ${fs.realpathSync(a)} with it, or give ${fs.realpathSync(b)} its own data directory with --data DIR`;
    const index = await damhub('index', '--library', b, '--data', data);
    assert.equal(index.code, 1);
    assert.equal(errorLine(index), expected);
    assert.equal(index.stderr.trim().split('\n').length, 1);
    assert.doesNotMatch(index.stdout, /indexed/, 'nothing was re-indexed');
    const serve = await damhub('serve', '--port', '0', '--library', b, '--data', data);
    assert.equal(serve.code, 1);
    assert.equal(errorLine(serve), expected);
    // The same folder again, spelt differently, is fine.
    const again = await damhub('index', '--library', `${a}/./`, '--data', data);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /1 unchanged/);
  });

  test('the demo library counts: serve --library on an npm start data directory is refused', async () => {
    const data = tmp();
    const demo = await startServer(['--demo', '--data', data]);
    await demo.stop();
    const lib = library();
    const r = await damhub('serve', '--port', '0', '--library', lib, '--data', data);
    assert.equal(r.code, 1);
    assert.match(errorLine(r), new RegExp(`holds the library ${fs.realpathSync(path.join(data, 'demo-library'))}, not`));
  });

  test('a --library that is not a folder, or does not exist → exit 1 with what to give', async () => {
    const file = path.join(tmp(), 'file.jpg');
    fs.writeFileSync(file, 'x');
    for (const cmd of [['index'], ['serve', '--port', '0']]) {
      const notDir = await damhub(...cmd, '--library', file, '--data', tmp());
      assert.equal(notDir.code, 1, notDir.stderr);
      assert.equal(errorLine(notDir), `damhub: ${file} is not a folder: give --library the folder of media to serve, not a file`);
      const missing = path.join(tmp(), 'absent');
      const gone = await damhub(...cmd, '--library', missing, '--data', tmp());
      assert.equal(gone.code, 1, gone.stderr);
      assert.equal(errorLine(gone), `damhub: the library folder ${missing} does not exist: give --library an existing folder of media`);
      assert.equal(gone.stderr.trim().split('\n').length, 1);
    }
  });
});

describe('serve: a port in use', () => {
  test('→ exit 1 with one line naming the port and --port', async () => {
    const { default: net } = await import('node:net');
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as import('node:net').AddressInfo).port;
    try {
      const r = await damhub('serve', '--port', String(port), '--data', tmp());
      assert.equal(r.code, 1);
      assert.equal(errorLine(r), `damhub: port ${port} on 127.0.0.1 is in use (another damhub?): stop what listens on 127.0.0.1:${port} or choose another port with --port ${port + 1}`);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    } finally {
      blocker.close();
    }
  });
});

describe('users passwd', () => {
  test('changes a library account\'s password; an unknown user → exit 1', async () => {
    const data = tmp();
    const add = await runCli(['users', 'add', 'ann', '--password-stdin', '--data', data], {}, 'first-password\n');
    assert.equal(add.code, 0, add.stderr);
    const r = await runCli(['users', 'passwd', 'ann', '--password-stdin', '--data', data], {}, 'second-password\n');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^changed the password of ann/);
    const { LibraryIndex } = await import('../../src/providers/library/index/sqlite.js');
    const { verifyPassword } = await import('../../src/providers/library/accounts.js');
    const index = new LibraryIndex(path.join(data, 'library', 'library.sqlite'));
    try {
      const acc = index.accountByName('ann')!;
      assert.equal(await verifyPassword('second-password', acc.passwordHash), true);
      assert.equal(await verifyPassword('first-password', acc.passwordHash), false);
    } finally {
      index.close();
    }
    const unknown = await runCli(['users', 'passwd', 'bob', '--password-stdin', '--data', data], {}, 'some-password\n');
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /^damhub: no user bob: damhub users list shows the names\n$/);
    const short = await runCli(['users', 'passwd', 'ann', '--password-stdin', '--data', data], {}, 'short\n');
    assert.equal(short.code, 1);
    const usage = await runCli(['users', 'passwd', '--data', data]);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /damhub users passwd NAME/);
  });

  test('users remove says what it removed', async () => {
    const data = tmp();
    await runCli(['users', 'add', 'cyd', '--password-stdin', '--data', data], {}, 'cyd-password-1\n');
    const r = await runCli(['users', 'remove', 'cyd', '--data', data]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'removed user cyd\n');
  });
});

describe('inputs that used to be taken in silence (issue 29)', () => {
  test('--public-url or DAMHUB_PUBLIC_URL that is not an absolute http(s) URL → exit 2, naming where it came from', async () => {
    for (const bad of ['notaurl', 'ftp://hub.example.com', 'https://user:pw@hub.example.com', 'https://hub.example.com/?x=1']) {
      const r = await damhub('serve', '--public-url', bad, '--port', '0', '--data', tmp());
      assert.equal(r.code, 2, `${bad}: ${r.stderr}`);
      assert.match(errorLine(r), /^damhub: --public-url must be /, bad);
      assert.ok(r.stderr.includes(JSON.stringify(bad)), `names the value given: ${r.stderr}`);
    }
    const env = await runCli(['serve', '--port', '0', '--data', tmp()], { DAMHUB_PUBLIC_URL: 'hub.example.com' });
    assert.equal(env.code, 2, env.stderr);
    assert.match(env.stderr, /^damhub: DAMHUB_PUBLIC_URL must be an absolute http\(s\) URL such as https:\/\/hub\.example\.com, got "hub\.example\.com"$/m);
  });

  test('users add --folders with a folder the library does not have → added, with a warning naming it and the library\'s folders', async () => {
    const data = tmp();
    const lib = tmp();
    for (const f of ['projects/alpha/a.txt', 'press/p.txt']) {
      fs.mkdirSync(path.dirname(path.join(lib, f)), { recursive: true });
      fs.writeFileSync(path.join(lib, f), 'text');
    }
    const unindexed = await runCli(['users', 'add', 'early', '--password-stdin', '--folders', 'projects', '--data', data], {}, 'early-password\n');
    assert.equal(unindexed.code, 0, unindexed.stderr);
    assert.match(unindexed.stderr, /^damhub: warning: the library of this data directory has not been indexed yet, so projects could not be checked/m);
    assert.equal((await damhub('index', '--library', lib, '--data', data)).code, 0);
    const r = await runCli(['users', 'add', 'ann', '--password-stdin', '--folders', 'DoesNotExist,projects/alpha', '--data', data], {}, 'ann-password-1\n');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^added ann \(limited to DoesNotExist, projects\/alpha\)$/m);
    const warnings = r.stderr.trim().split('\n');
    assert.equal(warnings.length, 1, r.stderr);
    assert.match(warnings[0]!, /^damhub: warning: folder DoesNotExist is not in the library \(its top folders: press, projects\): the account sees nothing there/);
    const fine = await runCli(['users', 'add', 'bob', '--password-stdin', '--folders', 'press', '--data', data], {}, 'bob-password-1\n');
    assert.equal(fine.code, 0, fine.stderr);
    assert.equal(fine.stderr, '', 'a folder the library has: no warning');
  });

  test('partners add --jwks-url over plain http → added, with a warning; https and loopback http are not warned about', async () => {
    const data = tmp();
    const plain = await damhub('partners', 'add', '--issuer', 'https://plain.example', '--jwks-url', 'http://keys.plain.example/jwks.json', '--data', data);
    assert.equal(plain.code, 0, plain.stderr);
    assert.equal(JSON.parse(plain.stdout).jwksUrl, 'http://keys.plain.example/jwks.json');
    assert.match(plain.stderr, /^damhub: warning: the JWKS URL http:\/\/keys\.plain\.example is not https: anyone on the network path .* can replace the partner's keys/m);
    for (const [issuer, url] of [['https://tls.example', 'https://keys.tls.example/jwks.json'], ['https://dev.example', 'http://127.0.0.1:9000/jwks.json'], ['https://dev2.example', 'http://localhost:9000/jwks.json']]) {
      const r = await damhub('partners', 'add', '--issuer', issuer!, '--jwks-url', url!, '--data', data);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stderr, '', `${url}: no warning`);
    }
  });

  test('every command and subcommand answers --help and -h with its usage on stdout, exit 0', async () => {
    const commands = [['serve'], ['partners', 'add'], ['partners', 'list'], ['partners', 'remove'], ['users', 'add'], ['users', 'passwd'], ['users', 'list'],
      ['users', 'remove'], ['index'], ['keys', 'rotate'], ['migrate'], ['demo', 'clean'], ['mcp'], ['connectors', 'check'], ['connectors', 'check', 'webdav']];
    for (const cmd of commands) {
      for (const flag of ['--help', '-h']) {
        const r = await damhub(...cmd, flag);
        assert.equal(r.code, 0, `${cmd.join(' ')} ${flag}: ${r.stderr}`);
        assert.equal(r.stderr, '', `${cmd.join(' ')} ${flag}`);
        assert.match(r.stdout, new RegExp(`^usage:\n {2}damhub ${cmd[0]} `), `${cmd.join(' ')} ${flag}: ${r.stdout}`);
        assert.ok(r.stdout.includes(`damhub ${cmd.slice(0, 2).join(' ')} `), `${cmd.join(' ')} ${flag}: ${r.stdout}`);
      }
    }
  });
});
