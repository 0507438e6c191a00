/**
 * `npm test`'s runner (scripts/test.mjs with scripts/test-durations.mjs), run on a
 * copy of itself in a throwaway checkout with three tiny test files: what it selects, the order it
 * starts them in, its exit code, and the slowest-files table it prints at the end (which printed
 * nothing on Node 24 at first: that version names a file's own test by the path as given).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { tempDir } from '../helpers/hub.js';
import { REPO_ROOT } from '../helpers/process.js';

let root: string;

function run(args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    // Without NODE_TEST_CONTEXT, which this file's own runner sets: the copy runs as npm test runs it.
    const env = { ...process.env };
    delete env.NODE_TEST_CONTEXT;
    const child = spawn(process.execPath, [path.join(root, 'scripts/test.mjs'), ...args], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}

/** A test file that records when it started (the runner's start order) and passes or fails. */
function testFile(name: string, ok: boolean): string {
  return `import fs from 'node:fs';\nimport { test } from 'node:test';\nfs.appendFileSync(${JSON.stringify(path.join(root, 'started.txt'))}, ${JSON.stringify(`${name}\n`)});\n` +
    `test(${JSON.stringify(`${name} runs`)}, () => { if (!${ok}) throw new Error('failed on purpose'); });\n`;
}

before(() => {
  root = tempDir('damhub-runner-');
  fs.mkdirSync(path.join(root, 'scripts'));
  for (const f of ['test.mjs', 'test-durations.mjs']) fs.copyFileSync(path.join(REPO_ROOT, 'scripts', f), path.join(root, 'scripts', f));
  fs.mkdirSync(path.join(root, 'dist/test/a'), { recursive: true });
  fs.mkdirSync(path.join(root, 'dist/test/b'), { recursive: true });
  fs.mkdirSync(path.join(root, 'test'));
  fs.writeFileSync(path.join(root, 'dist/test/a/one.test.js'), testFile('one', true));
  fs.writeFileSync(path.join(root, 'dist/test/a/two.test.js'), testFile('two', true));
  fs.writeFileSync(path.join(root, 'dist/test/b/three.test.js'), testFile('three', true));
  // Recorded times: two is the slowest, three unknown (unknown files start before known ones).
  fs.writeFileSync(path.join(root, 'test/durations.json'), JSON.stringify({ 'dist/test/a/one.test.js': 10, 'dist/test/a/two.test.js': 900 }));
});
after(() => fs.rmSync(root, { recursive: true, force: true }));

test('every file under dist/test, unknown and slowest first, one at a time; the slowest files printed and recorded', async () => {
  const r = await run(['--concurrency', '1']);
  assert.equal(r.code, 0, r.out);
  assert.deepEqual(fs.readFileSync(path.join(root, 'started.txt'), 'utf8').trim().split('\n'), ['three', 'two', 'one']);
  assert.match(r.out, /slowest test files \(of 3; /);
  for (const f of ['dist/test/a/one.test.js', 'dist/test/a/two.test.js', 'dist/test/b/three.test.js']) assert.match(r.out, new RegExp(`\\d+\\.\\d s  ${f.replace(/\./g, '\\.')}\\n`));
  const recorded = JSON.parse(fs.readFileSync(path.join(root, 'test-artifacts/test-durations.json'), 'utf8')) as Record<string, number>;
  assert.deepEqual(Object.keys(recorded).sort(), ['dist/test/a/one.test.js', 'dist/test/a/two.test.js', 'dist/test/b/three.test.js']);
});

test('--list runs the files and folders it names; an entry that matches nothing is an error', async () => {
  fs.rmSync(path.join(root, 'started.txt'), { force: true });
  fs.writeFileSync(path.join(root, 'list'), '# a comment\ndist/test/b/\ndist/test/a/one.test.js  # and one file\n');
  const r = await run(['--list', 'list']);
  assert.equal(r.code, 0, r.out);
  assert.deepEqual(fs.readFileSync(path.join(root, 'started.txt'), 'utf8').trim().split('\n').sort(), ['one', 'three']);
  fs.writeFileSync(path.join(root, 'list'), 'dist/test/c/\n');
  const bad = await run(['--list', 'list']);
  assert.equal(bad.code, 2);
  assert.match(bad.out, /list names dist\/test\/c\/, which matches no test file/);
});

test('a failing file fails the run; a bad --concurrency is a usage error', async () => {
  fs.writeFileSync(path.join(root, 'dist/test/b/four.test.js'), testFile('four', false));
  try {
    const r = await run(['--concurrency', '2']);
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, /failed on purpose/);
  } finally {
    fs.rmSync(path.join(root, 'dist/test/b/four.test.js'));
  }
  const bad = await run(['--concurrency', '0']);
  assert.equal(bad.code, 2);
  assert.match(bad.out, /--concurrency \(DAMHUB_TEST_CONCURRENCY\) must be a whole number ≥ 1/);
});
