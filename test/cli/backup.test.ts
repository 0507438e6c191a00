/**
 * `damhub backup` and `damhub restore` (issue 29), with the real CLI and real hub processes: a
 * backup made while a hub serves exchanges and searches, restored onto another path, and a hub
 * started there that still honours the old session, the partner, the library account and the
 * library index (its kept versions included, which no re-index could bring back). Then every
 * refusal: a damaged, cut, foreign or newer archive, a non-empty target, a missing flag, cluster
 * mode; none leaves anything behind. Last, the procedure docs/operating.md gives for cluster mode
 * instead (pg_dump, pg_restore into a new database, an empty Redis), run as written.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { create as createTar, extract as extractTar } from 'tar';
import { tempDir } from '../helpers/hub.js';
import { TestBrowser } from '../helpers/browser.js';
import { solidJpeg, writeFiles } from '../helpers/library.js';
import { makeKey, signPartnerJwt, type TestKey } from '../helpers/partner.js';
import { runCli, startServer, type RunResult, type ServerProcess } from '../helpers/process.js';
import { addPartner, api, call, damSignIn, exchange as clusterExchange, LIBRARY_USER, makeLibrary, poll, startNodes } from '../helpers/cluster.js';
import { clusterEnv } from '../helpers/stores-env.js';
import { spawnSync } from 'node:child_process';

const ISSUER = 'https://partner.backup.example';
const PASSWORD = 'bob-backup-pw-1';
const work = tempDir('damhub-backup-');
/** A fresh folder under `work`, removed with it at the end. */
const scratch = (prefix: string) => fs.mkdtempSync(path.join(work, prefix));
const lib = path.join(work, 'media');
const dataA = path.join(work, 'machine-a', 'data');
let key: TestKey;
let v1Bytes: Buffer;
const servers: ServerProcess[] = [];

after(async () => {
  for (const s of servers) await s.stop();
  fs.rmSync(work, { recursive: true, force: true });
});

/** The CLI without the environment's cluster URLs (a developer's shell may set them); every call names --data. */
function damhub(args: string[], env: NodeJS.ProcessEnv = {}, input?: string): Promise<RunResult> {
  return runCli(args, { DATABASE_URL: '', REDIS_URL: '', ...env }, input);
}

function ok(r: RunResult, what: string): RunResult {
  assert.equal(r.code, 0, `${what}: ${r.stderr}${r.stdout}`);
  return r;
}

/** The first stderr line, which must be the one-line error. */
function errorLine(r: RunResult): string {
  const line = r.stderr.split('\n')[0]!;
  assert.match(line, /^damhub: \S/, r.stderr);
  assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
  return line;
}

async function json(res: Response): Promise<any> {
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`not JSON (${res.status}): ${text.slice(0, 300)}`);
  }
}

async function exchange(url: string, sub = 'bob-at-partner'): Promise<{ status: number; body: any }> {
  const jwt = await signPartnerJwt(Date.now(), { key, issuer: ISSUER, sub, email: `${sub}@example.com` });
  const res = await fetch(`${url}/api/v1/auth/exchangeToken`, { method: 'POST', headers: { authorization: `Bearer ${jwt}` } });
  return { status: res.status, body: await json(res) };
}

/** The library's sign-in form, submitted as a browser does; the DAM tokens, or the form's status. */
async function libraryLogin(url: string, access: string, password: string): Promise<{ status: number; tokens: any }> {
  const auth = { authorization: `Bearer ${access}` };
  const start = await json(await fetch(`${url}/api/v1/auth/login?provider=library&polling=true`, { method: 'POST', headers: auth }));
  const browser = new TestBrowser();
  const form = await browser.open(start.redirect_uri);
  assert.equal(form.status, 200, form.body);
  const action = new URL(/<form method="post" action="([^"]+)"/.exec(form.body)![1]!.replace(/&amp;/g, '&'), url).href;
  const submit = await browser.post(action, { state: start.state, username: 'bob', password });
  if (submit.status !== 200) return { status: submit.status, tokens: null };
  return { status: 200, tokens: await json(await fetch(`${url}/api/v1/auth/login?state=${encodeURIComponent(start.state)}&polling=true`)) };
}

function contentHeaders(access: string, dam: string): Record<string, string> {
  return { authorization: `Bearer ${access}`, 'provider-authorization': `Bearer ${dam}` };
}

async function search(url: string, h: Record<string, string>): Promise<{ status: number; ids: string[]; total: number; assets: { id: string; name: string }[] }> {
  const res = await fetch(`${url}/api/v1/assets/search?query=sunset&size=50`, { headers: h });
  const body = await json(res);
  const assets = body.assets ?? [];
  return { status: res.status, ids: assets.map((a: { id: string }) => a.id).sort(), total: body.totalAssetsCount, assets };
}

function indexedCount(server: ServerProcess): number {
  const m = /library: .* \((\d+) files indexed/.exec(server.output());
  assert.ok(m, `the start names the indexed files:\n${server.output()}`);
  return Number(m[1]);
}

/** Everything under `dir`, relative, with each file's mode. */
function tree(dir: string): Map<string, number> {
  const out = new Map<string, number>();
  const visit = (rel: string) => {
    for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      out.set(r, fs.statSync(path.join(dir, r)).mode & 0o777);
      if (e.isDirectory()) visit(r);
    }
  };
  visit('');
  return out;
}

before(async () => {
  key = await makeKey();
  const files: Record<string, Buffer | string> = { 'notes/sunset notes.md': '# Notes\n' };
  for (let i = 0; i < 5; i++) files[`Beach/sunset ${i}.jpg`] = await solidJpeg(60 + i, 40, [200, 100 + i * 20, 50]);
  v1Bytes = files['Beach/sunset 0.jpg'] as Buffer;
  writeFiles(lib, files);
  fs.mkdirSync(dataA, { recursive: true });
  const jwksFile = path.join(work, 'jwks.json');
  fs.writeFileSync(jwksFile, JSON.stringify({ keys: [key.publicJwk] }));
  ok(await damhub(['partners', 'add', '--issuer', ISSUER, '--jwks-file', jwksFile, '--rate-limit', '1000000', '--data', dataA]), 'partners add');
  ok(await damhub(['users', 'add', 'bob', '--password-stdin', '--data', dataA], {}, `${PASSWORD}\n`), 'users add');
  // Indexed by the CLI, then a file changes and is indexed again: version 2, with version 1 kept
  // in the data directory (library/blobs) and nowhere else once the file on disk has changed.
  ok(await damhub(['index', '--library', lib, '--data', dataA]), 'index');
  fs.writeFileSync(path.join(lib, 'Beach/sunset 0.jpg'), await solidJpeg(60, 40, [10, 20, 30]));
  assert.match(ok(await damhub(['index', '--library', lib, '--data', dataA]), 'index again').stdout, /1 updated/);
});

describe('backup while the hub runs, restore onto another path', () => {
  test('the restored hub keeps the session, partner, account and library index', async (t) => {
    // Budgets that the request loop below cannot exhaust: it runs as fast as the hub answers.
    const a = await startServer(['--data', dataA, '--library', lib], { DAMHUB_USER_RATE_LIMIT: '1000000' });
    servers.push(a);
    const countA = indexedCount(a);
    assert.equal(countA, 6);

    const pair = await exchange(a.url);
    assert.equal(pair.status, 200, JSON.stringify(pair.body));
    const login = await libraryLogin(a.url, pair.body.access_token, PASSWORD);
    assert.equal(login.status, 200);
    const dam = login.tokens;
    assert.ok(dam.access_token, JSON.stringify(dam));
    const h = contentHeaders(pair.body.access_token, dam.access_token);
    const before = await search(a.url, h);
    assert.equal(before.status, 200);
    assert.equal(before.total, 6);
    const checkA = await json(await fetch(`${a.url}/api/v1/auth/checkToken`, { headers: { authorization: `Bearer ${pair.body.access_token}` } }));
    const sunset0 = before.assets.find((x) => x.name === 'sunset 0.jpg');
    assert.ok(sunset0, 'sunset 0.jpg is found');

    // Requests keep coming while the backup runs: exchanges (writes: users, sessions, replay keys) and searches.
    let stop = false;
    const statuses: number[] = [];
    const load = (async () => {
      for (let i = 0; !stop; i++) {
        statuses.push((await exchange(a.url, `load-${i}`)).status);
        statuses.push((await search(a.url, h)).status);
      }
    })();
    const archive = path.join(work, 'backups', 'damhub.tar');
    fs.mkdirSync(path.dirname(archive));
    let backup: RunResult;
    try {
      backup = await damhub(['backup', '--data', dataA, '--out', archive]);
    } finally {
      stop = true;
      await load;
    }
    ok(backup, 'backup');
    assert.ok(statuses.length >= 2, 'requests were made during the backup');
    t.diagnostic(`${statuses.length} requests answered while the backup ran`);
    assert.deepEqual([...new Set(statuses)], [200], 'every request during the backup answered 200');
    assert.match(backup.stdout, /^wrote .*damhub\.tar: \d+ files/);
    assert.match(backup.stdout, /hub\.sqlite \(schema \d+\), library\/library\.sqlite \(schema \d+\)/);
    assert.match(backup.stdout, /signing keys, secrets.*mode 0600/);
    assert.equal(fs.statSync(archive).mode & 0o777, 0o600, 'the archive is owner-only');
    assert.deepEqual(fs.readdirSync(path.dirname(archive)), ['damhub.tar'], 'no temporary file left beside it');
    assert.ok(!fs.readdirSync(dataA).some((n) => n.startsWith('.backup-')), 'no staging folder left in the data directory');
    // The archive checks out without writing anything.
    assert.match(ok(await damhub(['restore', '--in', archive, '--check']), 'check').stdout, /is intact: \d+ files/);

    await a.stop();

    // Another machine's path: a directory that does not exist yet.
    const dataB = path.join(work, 'machine-b', 'srv', 'damhub');
    const restore = ok(await damhub(['restore', '--in', archive, '--data', dataB]), 'restore');
    assert.match(restore.stdout, new RegExp(`^restored \\d+ files into ${dataB.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} from the backup of `));
    assert.match(restore.stdout, new RegExp(`library: ${lib.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    const restored = tree(dataB);
    for (const f of ['hub.sqlite', 'keys.json', 'admin.key', 'user-hash.key', 'library/library.sqlite', 'library/root.json']) assert.ok(restored.has(f), `${f} restored`);
    assert.ok([...restored.keys()].some((f) => f.startsWith('library/blobs/')), 'kept versions restored');
    assert.ok([...restored.keys()].some((f) => f.startsWith('library/renditions/')), 'renditions restored');
    for (const [f, mode] of restored) assert.equal(mode, fs.statSync(path.join(dataB, f)).isDirectory() ? 0o700 : 0o600, `${f} is owner-only`);
    assert.equal(fs.statSync(dataB).mode & 0o777, 0o700);
    assert.deepEqual(fs.readdirSync(path.dirname(dataB)), ['damhub'], 'no temporary folder left beside it');
    for (const f of ['keys.json', 'admin.key', 'user-hash.key']) assert.deepEqual(fs.readFileSync(path.join(dataB, f)), fs.readFileSync(path.join(dataA, f)), `${f} is the same`);

    const b = await startServer(['--data', dataB, '--library', lib]);
    servers.push(b);
    assert.equal(indexedCount(b), countA, 'the restored index holds every file');

    // Sessions: the tokens issued by the first hub work on the restored one, refresh included.
    const check = await fetch(`${b.url}/api/v1/auth/checkToken`, { headers: { authorization: `Bearer ${pair.body.access_token}` } });
    assert.equal(check.status, 200);
    assert.equal((await json(check)).userHash, checkA.userHash, 'the same user hash (user-hash key restored)');
    const afterSearch = await search(b.url, h);
    assert.equal(afterSearch.status, 200, 'the old hub and library tokens still open the library');
    assert.deepEqual(afterSearch.ids, before.ids, 'the same assets, the same ids');
    const refreshed = await fetch(`${b.url}/api/v1/auth/refreshToken`, { headers: { authorization: `Bearer ${pair.body.access_token}`, 'provider-authorization': `Bearer ${pair.body.refresh_token}` } });
    assert.equal(refreshed.status, 200, 'the session refreshes on the restored hub');
    assert.ok((await json(refreshed)).access_token);

    // Partner: a new exchange with the same key.
    const again = await exchange(b.url);
    assert.equal(again.status, 200, JSON.stringify(again.body));
    // Account: the library sign-in with the password, and not with another.
    const relogin = await libraryLogin(b.url, again.body.access_token, PASSWORD);
    assert.equal(relogin.status, 200);
    assert.equal((await libraryLogin(b.url, again.body.access_token, 'not-the-password')).status, 401);

    // The index was restored, not rebuilt: version 1 of the changed file, whose bytes exist only
    // in the backed-up data directory, is still listed and downloadable.
    const h2 = contentHeaders(again.body.access_token, relogin.tokens.access_token);
    const versions = await json(await fetch(`${b.url}/api/v1/assets/assetversions/${encodeURIComponent(sunset0.id)}?withMaster=true`, { headers: h2 }));
    assert.deepEqual(versions.versions.map((v: { version: number }) => v.version), [2, 1]);
    const old = await fetch(versions.versions[1].downloadUrl);
    assert.equal(old.status, 200);
    assert.deepEqual(Buffer.from(await old.arrayBuffer()), v1Bytes);
    await b.stop();
  });
});

describe('refusals leave nothing behind', () => {
  let archive: string;
  before(async () => {
    // A backup of the stopped hub's directory (the first test's hub, or none if it was skipped).
    archive = path.join(work, 'refusals.tar');
    ok(await damhub(['backup', '--data', dataA, '--out', archive]), 'backup');
  });

  /** Restores `file` into a fresh path and expects exit 1 with `message`; the path and the folders made for it must stay absent. */
  async function refused(file: string, message: RegExp): Promise<void> {
    const parent = scratch('damhub-restore-');
    const target = path.join(parent, 'srv', 'data');
    const r = await damhub(['restore', '--in', file, '--data', target]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(errorLine(r), message);
    assert.deepEqual(fs.readdirSync(parent), [], 'nothing was written');
    const check = await damhub(['restore', '--in', file, '--check']);
    assert.equal(check.code, 1, 'the check refuses it too');
    assert.match(errorLine(check), message);
    fs.rmSync(parent, { recursive: true });
  }

  test('a damaged archive: one byte of a key file changed', async () => {
    const bytes = fs.readFileSync(archive);
    const secret = fs.readFileSync(path.join(dataA, 'admin.key'));
    const at = bytes.indexOf(secret);
    assert.ok(at > 0, 'the admin key is stored as it is');
    bytes[at + 3] = bytes[at + 3] === 0x41 ? 0x42 : 0x41;
    const damaged = path.join(work, 'damaged.tar');
    fs.writeFileSync(damaged, bytes);
    await refused(damaged, /is damaged: admin\.key does not match its SHA-256/);
  });

  test('a cut archive', async () => {
    const bytes = fs.readFileSync(archive);
    const cut = path.join(work, 'cut.tar');
    fs.writeFileSync(cut, bytes.subarray(0, Math.floor(bytes.length / 2)));
    await refused(cut, /is (damaged|incomplete)/);
  });

  test('a file that is no archive, and a tar that is not a damhub backup', async () => {
    const text = path.join(work, 'notes.txt');
    fs.writeFileSync(text, 'just some notes\n'.repeat(100));
    await refused(text, /is not a damhub backup \(not a tar archive\)/);
    const foreignDir = path.join(work, 'foreign');
    writeFiles(foreignDir, { 'hub.sqlite': 'not really', 'keys.json': '[]' });
    const foreign = path.join(work, 'foreign.tar');
    await createTar({ cwd: foreignDir, file: foreign }, ['hub.sqlite', 'keys.json']);
    await refused(foreign, /is not a damhub backup: it does not begin with damhub-backup\.json \(its first entry is "hub\.sqlite"\)/);
  });

  test('an archive from a newer damhub (a store schema this one does not know)', async () => {
    const unpacked = scratch('damhub-unpacked-');
    await extractTar({ file: archive, cwd: unpacked });
    const manifestFile = path.join(unpacked, 'damhub-backup.json');
    const manifest = JSON.parse(fs.readFileSync(manifestFile, 'utf8'));
    manifest.schemas['hub.sqlite'] = 999;
    manifest.damhubVersion = '9.0.0';
    fs.writeFileSync(manifestFile, JSON.stringify(manifest));
    const newer = path.join(work, 'newer.tar');
    await createTar({ cwd: unpacked, file: newer }, ['damhub-backup.json', ...manifest.files.map((f: { path: string }) => f.path)]);
    fs.rmSync(unpacked, { recursive: true });
    await refused(newer, /holds hub\.sqlite at schema 999 \(made by damhub 9\.0\.0\); this damhub \(\S+\) knows schema \d+: restore it with damhub 9\.0\.0 or newer/);
  });

  test('a non-empty data directory is refused and left as it was; an empty one (a fresh volume) is used', async () => {
    const before = tree(dataA);
    const beforeKeys = fs.readFileSync(path.join(dataA, 'keys.json'));
    const r = await damhub(['restore', '--in', archive, '--data', dataA]);
    assert.equal(r.code, 1);
    assert.match(errorLine(r), /the data directory .* is not empty \(.*\): restore never overwrites one/);
    assert.deepEqual(tree(dataA), before);
    assert.deepEqual(fs.readFileSync(path.join(dataA, 'keys.json')), beforeKeys);

    const volume = scratch('damhub-volume-');
    fs.mkdirSync(path.join(volume, 'lost+found'));
    ok(await damhub(['restore', '--in', archive, '--data', volume]), 'restore into an empty volume');
    assert.ok(fs.existsSync(path.join(volume, 'hub.sqlite')));
    assert.ok(!fs.readdirSync(volume).some((n) => n.startsWith('.restore-')), 'no temporary folder left inside');
    fs.rmSync(volume, { recursive: true });
  });

  test('a missing --out or --in is a usage error', async () => {
    const out = await damhub(['backup', '--data', dataA]);
    assert.equal(out.code, 2);
    assert.match(errorLine(out), /backup needs --out FILE/);
    assert.match(out.stderr, /usage:\n {2}damhub backup --out FILE/);
    const inp = await damhub(['restore', '--data', path.join(work, 'nowhere')]);
    assert.equal(inp.code, 2);
    assert.match(errorLine(inp), /restore needs --in FILE/);
    assert.ok(!fs.existsSync(path.join(work, 'nowhere')));
  });

  test('cluster mode is refused with the tool to use, by flags or by environment', async () => {
    const out = path.join(work, 'cluster.tar');
    const flags = await damhub(['backup', '--data', dataA, '--out', out, '--database-url', 'postgres://127.0.0.1:5432/damhub', '--redis-url', 'redis://127.0.0.1:6379']);
    assert.equal(flags.code, 2);
    assert.match(errorLine(flags), /in cluster mode the hub's state is in PostgreSQL: back it up with pg_dump \(docs\/operating\.md, "Backup and restore"\)/);
    const env = await damhub(['backup', '--data', dataA, '--out', out], { DATABASE_URL: 'postgres://127.0.0.1:5432/damhub', REDIS_URL: 'redis://127.0.0.1:6379' });
    assert.equal(env.code, 2);
    assert.match(errorLine(env), /pg_dump/);
    const restore = await damhub(['restore', '--in', archive, '--data', path.join(work, 'cluster-restore')], { DATABASE_URL: 'postgres://127.0.0.1:5432/damhub', REDIS_URL: 'redis://127.0.0.1:6379' });
    assert.equal(restore.code, 2);
    assert.match(errorLine(restore), /restore it with pg_restore/);
    assert.ok(!fs.existsSync(out) && !fs.existsSync(path.join(work, 'cluster-restore')), 'nothing written');
  });

  test('a directory that is no data directory, and an archive inside the data directory, are refused', async () => {
    const empty = scratch('damhub-notdata-');
    const r = await damhub(['backup', '--data', empty, '--out', path.join(work, 'x.tar')]);
    assert.equal(r.code, 1);
    assert.match(errorLine(r), /is not a damhub data directory \(no hub\.sqlite, keys\.json or library\/library\.sqlite in it\)/);
    assert.deepEqual(fs.readdirSync(empty), []);
    const missing = await damhub(['backup', '--data', path.join(work, 'no-such-dir'), '--out', path.join(work, 'x.tar')]);
    assert.equal(missing.code, 1);
    assert.match(errorLine(missing), /does not exist/);
    assert.ok(!fs.existsSync(path.join(work, 'no-such-dir')), 'not created');
    const inside = await damhub(['backup', '--data', dataA, '--out', path.join(dataA, 'library', 'b.tar')]);
    assert.equal(inside.code, 1);
    assert.match(errorLine(inside), /is inside the data directory/);
    assert.ok(!fs.existsSync(path.join(work, 'x.tar')));
    fs.rmSync(empty, { recursive: true });
  });
});

test('a library inside the data directory (the demo\'s) moves with it on restore', async () => {
  const data = path.join(scratch('damhub-demo-data-'), 'data');
  // A stray file named like the manifest is neither overwritten nor archived.
  writeFiles(data, { 'keys.json': '[]\n', 'demo-library/Photos/a.txt': 'a\n', 'damhub-backup.json': 'operator notes\n' });
  writeFiles(data, { 'library/root.json': `${JSON.stringify({ root: path.join(fs.realpathSync(path.dirname(data)), 'data', 'demo-library') })}\n` });
  const archive = path.join(work, 'demo.tar');
  ok(await damhub(['backup', '--data', data, '--out', archive]), 'backup');
  const target = path.join(scratch('damhub-demo-restore-'), 'moved');
  const r = ok(await damhub(['restore', '--in', archive, '--data', target]), 'restore');
  const root = path.join(fs.realpathSync(path.dirname(target)), 'moved', 'demo-library');
  assert.deepEqual(JSON.parse(fs.readFileSync(path.join(target, 'library', 'root.json'), 'utf8')), { root });
  assert.match(r.stdout, /inside the data directory; moved with it/);
  assert.equal(fs.readFileSync(path.join(target, 'demo-library', 'Photos', 'a.txt'), 'utf8'), 'a\n');
  assert.equal(fs.readFileSync(path.join(data, 'damhub-backup.json'), 'utf8'), 'operator notes\n');
  assert.ok(!fs.existsSync(path.join(target, 'damhub-backup.json')));
});

describe('cluster mode: the pg_dump procedure docs/operating.md gives', () => {
  test('a dump taken while a node serves restores into a new database; with an empty Redis the session, partner, account and index hold', async () => {
    const from = await clusterEnv({ what: 'the pg_dump procedure', prefix: 'damhub_backup' });
    const to = await clusterEnv({ what: 'the pg_dump procedure', prefix: 'damhub_backup' });
    const nodes: ServerProcess[] = [];
    try {
      assert.ok(from && to, 'PostgreSQL and Redis answer');
      const library = makeLibrary();
      const partner = await addPartner(from, 'backup-partner', 100_000);
      ok(await damhub(['index', '--library', library, '--data', scratch('damhub-node-'), '--database-url', from.databaseUrl]), 'index into PostgreSQL');
      nodes.push(...(await startNodes(from, library, 1)));
      const a = nodes[0]!;
      const pair = await clusterExchange(a, await partner.jwt('carol'));
      assert.equal(pair.status, 200, JSON.stringify(pair.body));
      const state = await damSignIn(a, a, pair.body.access_token);
      const dam = (await poll(a, state)).body;
      assert.ok(dam.access_token, JSON.stringify(dam));
      const searchIds = async (node: ServerProcess, access: string, damToken: string) => {
        const r = await call(api(node, '/assets/search?query=notes&size=50'), { token: access, dam: damToken });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        return r.body.assets.map((x: { id: string }) => x.id).sort();
      };
      const ids = await searchIds(a, pair.body.access_token, dam.access_token);
      assert.equal(ids.length, 1, 'projects/beta/notes.txt');

      // The commands of docs/operating.md, while the node runs.
      const dump = path.join(work, 'cluster.dump');
      const pgDump = spawnSync('pg_dump', ['--format=custom', `--file=${dump}`, from.databaseUrl], { encoding: 'utf8' });
      assert.equal(pgDump.status, 0, pgDump.stderr);
      await a.stop();
      const pgRestore = spawnSync('pg_restore', ['--no-owner', `--dbname=${to.databaseUrl}`, dump], { encoding: 'utf8' });
      assert.equal(pgRestore.status, 0, pgRestore.stderr);

      // A node on the new database, with its own (empty) Redis key space: what a lost Redis looks like.
      const b = await startServer(['--data', scratch('damhub-node-'), '--library', library], { DATABASE_URL: to.databaseUrl, REDIS_URL: to.redisUrl, DAMHUB_REDIS_PREFIX: to.keyPrefix });
      nodes.push(b);
      const check = await call(api(b, '/auth/checkToken'), { token: pair.body.access_token });
      assert.equal(check.status, 200, 'the session and the shared keys came with the dump');
      assert.deepEqual(await searchIds(b, pair.body.access_token, dam.access_token), ids, 'the old tokens open the same index');
      const refreshed = await call(api(b, '/auth/refreshToken'), { token: pair.body.access_token, dam: pair.body.refresh_token });
      assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
      assert.equal((await clusterExchange(b, await partner.jwt('carol'))).status, 200, 'the partner came with the dump');
      const users = await damhub(['users', 'list', '--data', scratch('damhub-node-')], { DATABASE_URL: to.databaseUrl });
      assert.match(ok(users, 'users list').stdout, new RegExp(`^${LIBRARY_USER.name}\t`, 'm'), 'the library account came with the dump');
    } finally {
      for (const n of nodes) await n.stop();
      await from?.cleanup();
      await to?.cleanup();
    }
  });
});
