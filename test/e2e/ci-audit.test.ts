/**
 * .ci/audit.mjs judges `npm audit --omit=dev --json` reports (format: npm's audit report v2):
 * an undocumented high/critical advisory fails, a documented one passes with its reason shown,
 * moderate ones pass, and an unanswered audit is a loud warning (fatal with DAMHUB_AUDIT_REQUIRED=1).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { tempDir } from '../helpers/hub.js';
import { REPO_ROOT } from '../helpers/process.js';

const dir = tempDir('damhub-audit-');
function judge(report: unknown, allow: unknown[] = [], env: NodeJS.ProcessEnv = {}) {
  const file = path.join(dir, `r-${Math.random()}.json`);
  fs.writeFileSync(file, typeof report === 'string' ? report : JSON.stringify(report));
  const allowFile = path.join(dir, `a-${Math.random()}.json`);
  fs.writeFileSync(allowFile, JSON.stringify(allow));
  const r = spawnSync(process.execPath, [path.join(REPO_ROOT, '.ci/audit.mjs'), '--from', file], { encoding: 'utf8', env: { ...process.env, DAMHUB_AUDIT_ALLOWLIST: allowFile, ...env } });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

const advisory = { source: 1096727, name: 'somelib', title: 'Prototype pollution in somelib', url: 'https://github.com/advisories/GHSA-aaaa-bbbb-cccc', severity: 'high', range: '<2.0.0' };
const report = (severity: string) => ({
  auditReportVersion: 2,
  vulnerabilities: {
    somelib: { name: 'somelib', severity, isDirect: false, via: [{ ...advisory, severity }], effects: ['parent'], range: '<2.0.0', nodes: ['node_modules/somelib'], fixAvailable: true },
    parent: { name: 'parent', severity, isDirect: true, via: ['somelib'], effects: [], range: '*', nodes: ['node_modules/parent'], fixAvailable: true },
  },
  metadata: { vulnerabilities: { info: 0, low: 0, moderate: 0, high: severity === 'high' ? 2 : 0, critical: 0, total: 2 } },
});

test('an undocumented high finding fails, naming the package and advisory', () => {
  const r = judge(report('high'));
  assert.equal(r.code, 1);
  assert.match(r.err, /high somelib: Prototype pollution in somelib \(https:\/\/github.com\/advisories\/GHSA-aaaa-bbbb-cccc\)/);
});

test('a documented one passes and its reason is printed; a justification too short is refused', () => {
  const ok = judge(report('critical'), [{ package: 'somelib', advisory: 'GHSA-aaaa-bbbb-cccc', why: 'only reached from the CLI with trusted input, never from requests' }]);
  assert.equal(ok.code, 0, ok.err);
  assert.match(ok.out, /excused: critical somelib: .* allowed: only reached from the CLI/);
  assert.equal(judge(report('high'), [{ package: 'somelib', advisory: 'GHSA-aaaa-bbbb-cccc', why: 'fine' }]).code, 1);
});

test('moderate findings do not fail; no findings pass', () => {
  assert.equal(judge(report('moderate')).code, 0);
  assert.equal(judge({ auditReportVersion: 2, vulnerabilities: {}, metadata: { vulnerabilities: {} } }).code, 0);
});

test('an unanswered audit is a loud warning, never a silent pass; fatal when required', () => {
  const down = { error: { code: 'E405', summary: '405 Method Not Allowed' } };
  const r = judge(down);
  assert.equal(r.code, 0);
  assert.match(r.err, /NO dependency was checked/);
  assert.match(r.err, /405 Method Not Allowed/);
  assert.equal(judge(down, [], { DAMHUB_AUDIT_REQUIRED: '1' }).code, 2);
  assert.equal(judge('not json at all', [], { DAMHUB_AUDIT_REQUIRED: '1' }).code, 2);
});
