/**
 * deploy/systemd/damhub.service, checked by systemd itself: `systemd-analyze verify` (any output
 * at all is a failure: systemd reports an unknown key or a bad value as a warning and still exits
 * 0) and `systemd-analyze security --offline=yes`, whose overall exposure must be the figure
 * docs/operating.md gives. systemd does not run as PID 1 here, so the unit is verified, not
 * started; docs/operating.md says so.
 *
 * verify insists that ExecStart's program exists. The unit names /usr/bin/node and /opt/damhub;
 * the copy verified here names this Node and this checkout instead (nothing else changes).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { REPO_ROOT } from '../helpers/process.js';

const UNIT = path.join(REPO_ROOT, 'deploy', 'systemd', 'damhub.service');
const unitText = fs.readFileSync(UNIT, 'utf8');
const analyze = ['/usr/bin/systemd-analyze', '/bin/systemd-analyze'].find((p) => fs.existsSync(p));
// Like the cluster tests: missing here is a skip with the reason, in CI (CI=true) a failure.
const missing = analyze ? false : 'systemd-analyze is not installed (Debian: apt-get install systemd)';
if (missing && process.env.CI === 'true') throw new Error(`CI=true: ${missing}`);

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'damhub-unit-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The unit (or `text`) as `damhub.service` in a directory of its own, with this machine's paths. */
function localCopy(text = unitText, name = 'damhub.service'): string {
  const sub = fs.mkdtempSync(path.join(dir, 'u-'));
  const file = path.join(sub, name);
  fs.writeFileSync(file, text.replaceAll('/usr/bin/node', process.execPath).replaceAll('/opt/damhub', REPO_ROOT.replace(/\/$/, '')));
  return file;
}

function run(args: string[]): { code: number | null; out: string } {
  const r = spawnSync(analyze!, args, { encoding: 'utf8', env: { ...process.env, SYSTEMD_COLORS: '0', SYSTEMD_PAGER: '' } });
  return { code: r.status, out: `${r.stdout}${r.stderr}`.trim() };
}

describe('deploy/systemd/damhub.service', { skip: missing }, () => {
  test('systemd-analyze verify: exit 0 and not one line of output', () => {
    const r = run(['verify', localCopy()]);
    assert.equal(r.code, 0, r.out);
    assert.equal(r.out, '', 'systemd had something to say about the unit');
  });

  test('the same check catches what it is there for: an unknown key, a bad value, a missing program', () => {
    const broken = localCopy(unitText.replace('[Service]\n', '[Service]\nProtectSystm=strict\nKillMode=gently\n'));
    const r = run(['verify', broken]);
    assert.match(r.out, /Unknown key 'ProtectSystm'/);
    assert.match(r.out, /kill mode specification, ignoring: gently/);
    const r2 = run(['verify', localCopy(unitText.replaceAll('/usr/bin/node', '/nonexistent/node'))]);
    assert.notEqual(r2.code, 0);
    assert.match(r2.out, /\/nonexistent\/node is not executable/);
  });

  test('systemd-analyze security: the overall exposure is the one docs/operating.md gives', () => {
    const r = run(['security', '--offline=yes', '--no-pager', localCopy()]);
    assert.equal(r.code, 0, r.out);
    const level = /Overall exposure level for damhub\.service: (\d+\.\d) (\w+)/.exec(r.out);
    assert.ok(level, r.out);
    const documented = /`systemd-analyze security` rates it \*\*(\d+\.\d) \((\w+)\)\*\*/.exec(fs.readFileSync(path.join(REPO_ROOT, 'docs', 'operating.md'), 'utf8'));
    assert.ok(documented, 'docs/operating.md gives the exposure level');
    assert.deepEqual([level[1], level[2]], [documented[1], documented[2]], `systemd says ${level[1]} ${level[2]}:\n${r.out.split('\n').filter((l) => l.includes('✗')).join('\n')}`);
  });
});

describe('what the unit must and must not say', () => {
  const lines = unitText.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  const value = (key: string) => lines.filter((l) => l.startsWith(`${key}=`)).map((l) => l.slice(key.length + 1));

  test('no MemoryDenyWriteExecute: V8 writes the machine code it compiles', () => {
    assert.deepEqual(value('MemoryDenyWriteExecute'), []);
  });

  test('SIGTERM to the hub alone, with longer to stop than the hub takes to drain', () => {
    assert.deepEqual(value('KillSignal'), ['SIGTERM']);
    assert.deepEqual(value('KillMode'), ['mixed']);
    // serve.ts gives in-flight requests 10 s (config.shutdownGraceMs) before it exits anyway.
    assert.ok(Number(value('TimeoutStopSec')[0]) > 10);
  });

  test('the programs it runs are the ones deploy/build.sh installs', () => {
    const build = fs.readFileSync(path.join(REPO_ROOT, 'deploy', 'build.sh'), 'utf8');
    for (const cmd of [...value('ExecStart'), ...value('ExecStartPost')]) {
      const [node, script] = cmd.split(' ');
      assert.equal(node, '/usr/bin/node');
      const rel = script!.replace('/opt/damhub/', '');
      assert.ok(fs.existsSync(path.join(REPO_ROOT, rel)), `${rel} exists in the checkout`);
      assert.ok(build.includes(rel), `deploy/build.sh copies ${rel}`);
    }
  });

  test('the data directory is the StateDirectory, private to the service', () => {
    assert.deepEqual(value('StateDirectory'), ['damhub']);
    assert.deepEqual(value('StateDirectoryMode'), ['0700']);
    assert.match(value('Environment').join(' '), /DAMHUB_DATA_DIR=\/var\/lib\/damhub\b/);
  });
});
