/**
 * The Dockerfile and deploy/build.sh, as far as they can be checked without building the image
 * (.ci/deploy-check builds and starts it in a Debian root file system, as root, in CI: minutes,
 * not part of npm test). Here: the Dockerfile says what the issue asks (multi-stage on the Node LTS
 * CI tests, a numeric non-root user, the data directory as a volume, a HEALTHCHECK on /readyz,
 * SIGTERM, node itself as the command), its build steps are deploy/build.sh, the build context
 * matches what the CI check copies, and build.sh refuses bad arguments before touching anything.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { REPO_ROOT } from '../helpers/process.js';

const read = (rel: string) => fs.readFileSync(path.join(REPO_ROOT, rel), 'utf8');
// Comments dropped (a comment does not continue, even ending in a backslash), then continuation
// lines joined: one instruction per line.
const instructions = read('Dockerfile').replace(/^\s*#.*\n/gm, '').replace(/\\\n\s*/g, ' ').split('\n').filter((l) => l.trim());
const stages = instructions.join('\n').split(/^(?=FROM )/m).filter((s) => s.startsWith('FROM '));
const final = stages.at(-1)!;
const line = (stage: string, k: string) => new RegExp(`^${k} (.*)$`, 'm').exec(stage)?.[1];

describe('Dockerfile', () => {
  test('two stages, both on the Node LTS that .ci/run tests, Debian bookworm', () => {
    const ciVersion = /^NODE_LTS_VERSION=(\S+)$/m.exec(read('.ci/run'))![1];
    assert.equal(/^ARG NODE_VERSION=(\S+)$/m.exec(instructions.join('\n'))![1], ciVersion);
    assert.equal(stages.length, 2);
    for (const s of stages) assert.match(s, /^FROM node:\$\{NODE_VERSION\}-bookworm-slim\b/);
  });

  test('the build stage runs deploy/build.sh app; the final stage copies only its output and adds the user', () => {
    assert.match(line(stages[0]!, 'RUN')!, /deploy\/build\.sh app \/src \/app$/);
    assert.deepEqual(final.match(/^COPY .*$/gm), ['COPY --from=build /app /app']);
    assert.equal(line(final, 'RUN'), '/app/deploy/build.sh user /var/lib/damhub');
  });

  test('a numeric non-root user, the one build.sh creates', () => {
    const uid = /^DAMHUB_UID=(\d+)$/m.exec(read('deploy/build.sh'))![1];
    assert.equal(line(final, 'USER'), `${uid}:${uid}`);
    assert.notEqual(uid, '0');
  });

  test('the data directory is the volume; the port is the one exposed', () => {
    const env = Object.fromEntries([...line(final, 'ENV')!.matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1], m[2]]));
    assert.deepEqual(JSON.parse(line(final, 'VOLUME')!), [env.DAMHUB_DATA_DIR]);
    assert.equal(line(final, 'EXPOSE'), env.DAMHUB_PORT);
    assert.equal(env.DAMHUB_HOST, '0.0.0.0');
  });

  test('HEALTHCHECK runs the readiness check; SIGTERM stops it; node itself is the command', () => {
    assert.match(line(final, 'HEALTHCHECK')!, /CMD \["node", "\/app\/deploy\/readyz\.mjs"\]$/);
    assert.equal(line(final, 'STOPSIGNAL'), 'SIGTERM');
    // Not npm: npm does not pass SIGTERM on to the hub.
    assert.deepEqual(JSON.parse(line(final, 'CMD')!), ['node', '/app/bin/damhub.js', 'serve']);
    assert.equal(line(final, 'ENTRYPOINT'), undefined);
  });

  test('.dockerignore leaves the build context .ci/deploy-check copies: .gitignore\'s entries and .git', () => {
    const norm = (s: string) => s.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#')).map((l) => l.replace(/^\*\*\//, '').replace(/\/$/, ''));
    assert.deepEqual(norm(read('.dockerignore')).sort(), [...norm(read('.gitignore')), '.git'].sort());
    assert.match(read('.ci/deploy-check'), /git ls-files --cached --others --exclude-standard/);
  });

  test('.ci/run runs the container check with the Node LTS', () => {
    assert.match(read('.ci/run'), /^\.ci\/deploy-check "\$lts_bin\/node"$/m);
  });
});

describe('deploy/build.sh refuses bad arguments before doing anything', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'damhub-buildsh-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const build = (...args: string[]) => spawnSync('/bin/sh', [path.join(REPO_ROOT, 'deploy', 'build.sh'), ...args], { encoding: 'utf8', cwd: dir });

  test('no command, an unknown one, a wrong count: usage, exit 2', () => {
    for (const args of [[], ['install'], ['app', REPO_ROOT], ['user', 'a', 'b']]) {
      const r = build(...args);
      assert.equal(r.status, 2, args.join(' '));
      assert.match(r.stderr, /^usage: deploy\/build\.sh app SRC OUT \| deploy\/build\.sh user \[DATA_DIR\]/);
    }
  });

  test('SRC not a checkout, OUT relative or not empty: exit 2 naming it, nothing written', () => {
    const full = path.join(dir, 'full');
    fs.mkdirSync(full);
    fs.writeFileSync(path.join(full, 'keep'), 'x');
    const cases: [string[], RegExp][] = [
      [['app', dir, path.join(dir, 'out')], /is not a damhub checkout \(no package\.json\)/],
      [['app', REPO_ROOT, 'relative/out'], /OUT must be an absolute path, not relative\/out/],
      [['app', REPO_ROOT, full], /is not empty; give an empty or new directory/],
    ];
    for (const [args, re] of cases) {
      const r = build(...args);
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, re);
    }
    assert.deepEqual(fs.readdirSync(dir).sort(), ['full']);
    assert.deepEqual(fs.readdirSync(full), ['keep']);
  });
});
