/**
 * `damhub users add NAME --write-folders "A,B/C"` through the real process: the account's write
 * folders are stored with it (the SQLite index of the data directory), listed by `users list`,
 * and give it exactly those rights in the library provider; a path that is not one is a usage error.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { LibraryIndex } from '../../src/providers/library/index/sqlite.js';
import { tempDir } from '../helpers/hub.js';
import { writeFiles } from '../helpers/library.js';
import { body, LIST, makeLibrary } from '../helpers/library-writes.js';
import { runCli } from '../helpers/process.js';

const dirs: string[] = [];
const tmp = (p: string) => {
  const d = tempDir(p);
  dirs.push(d);
  return d;
};
after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

test('users add --write-folders: stored, listed, and what the account may write in the library', async () => {
  const data = tmp('damhub-cli-wf-');
  const lib = tmp('damhub-cli-wf-lib-');
  writeFiles(lib, { 'Open/a.txt': 'a', 'Open/Sub/b.txt': 'b', 'Shut/c.txt': 'c' });
  assert.equal((await runCli(['index', '--library', lib, '--data', data])).code, 0);

  const add = await runCli(['users', 'add', 'wren', '--password-stdin', '--write-folders', 'Open/Sub, Missing', '--data', data], {}, 'wren-password\n');
  assert.equal(add.code, 0, add.stderr);
  assert.match(add.stdout, /^added wren, may write in Open\/Sub, Missing$/m);
  assert.match(add.stderr, /^damhub: warning: write folder Missing is not in the library \(its top folders: Open, Shut\): the account writes there once it exists/m);
  const plain = await runCli(['users', 'add', 'rhea', '--password-stdin', '--data', data], {}, 'rhea-password\n');
  assert.equal(plain.code, 0, plain.stderr);
  assert.equal(plain.stdout, 'added rhea\n', 'no write folders by default');
  const whole = await runCli(['users', 'add', 'root-writer', '--password-stdin', '--write-folders', '/', '--data', data], {}, 'root-password\n');
  assert.match(whole.stdout, /^added root-writer, may write in \/ \(whole library\)$/m);

  const list = await runCli(['users', 'list', '--data', data]);
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /^wren\t\(whole library\)\twrites: Open\/Sub, Missing$/m);
  assert.match(list.stdout, /^rhea\t\(whole library\)$/m, 'no third column without write folders');

  const index = new LibraryIndex(path.join(data, 'library', 'library.sqlite'));
  try {
    assert.deepEqual(index.accountByName('wren')!.writeFolders, ['Open/Sub', 'Missing']);
    assert.deepEqual(index.accountByName('rhea')!.writeFolders, []);
    assert.deepEqual(index.accountByName('root-writer')!.writeFolders, ['']);
  } finally {
    index.close();
  }

  // The provider over the same data directory: wren writes in Open/Sub and nowhere else.
  const provider = await makeLibrary(lib, path.join(data, 'library'));
  try {
    await provider.rescan();
    const acc = (await provider.index.accountByName('wren'))!;
    const s = { providerId: 'library', userId: 'u', partnerId: 'p', credentials: { acc: acc.id } };
    const up = await provider.upload(s, { parentId: '/Open/Sub', name: 'new.txt', onConflict: 'fail' }, body('new'));
    assert.equal(up.created, true);
    await assert.rejects(provider.upload(s, { parentId: '/Open', name: 'new.txt', onConflict: 'fail' }, body('new')), (e: { code?: string }) => e.code === 'integration-forbidden');
    assert.equal((await provider.browse(s, '/Open/Sub', LIST)).capabilities?.canAddAsset, true);
    assert.equal((await provider.browse(s, '/Shut', LIST)).capabilities?.canAddAsset, false);
  } finally {
    await provider.close();
  }
});

test('users add --write-folders with a path that is not one → exit 2, the error then the usage, no account', async () => {
  const data = tmp('damhub-cli-wf-bad-');
  const r = await runCli(['users', 'add', 'eve', '--password-stdin', '--write-folders', 'Open,../etc', '--data', data], {}, 'eve-password\n');
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr.split('\n')[0]!, /^damhub: --write-folders: folder "\.\.\/etc" must be a path relative to the library root.*\(or \/ for the whole library\)$/);
  assert.match(r.stderr, /--write-folders PATH,\.\.\.\|\//, 'the usage names the option');
  const list = await runCli(['users', 'list', '--data', data]);
  assert.doesNotMatch(list.stdout, /^eve\t/m);
});
