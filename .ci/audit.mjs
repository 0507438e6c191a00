#!/usr/bin/env node
/**
 * `npm audit` of the production dependencies for CI: high and critical findings fail the build
 * unless .ci/audit-allowlist.json lists the advisory with the reason it is not exploitable here.
 * When the advisory service cannot be asked (offline, a mirror without the audit endpoint: it
 * answers 405), nothing was checked: say so loudly, and fail when DAMHUB_AUDIT_REQUIRED=1.
 *
 *   node .ci/audit.mjs                 run npm audit --omit=dev --json
 *   node .ci/audit.mjs --from F.json   judge a saved report (tests)
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const fromIdx = args.indexOf('--from');
const allowFile = process.env.DAMHUB_AUDIT_ALLOWLIST ?? path.join(here, 'audit-allowlist.json');
const FAILING = new Set(['high', 'critical']);

function loud(lines) {
  const bar = '!'.repeat(78);
  process.stderr.write(`${bar}\n${lines.map((l) => `!! ${l}`).join('\n')}\n${bar}\n`);
}

let text;
if (fromIdx >= 0) text = fs.readFileSync(args[fromIdx + 1], 'utf8');
else {
  const r = spawnSync('npm', ['audit', '--omit=dev', '--json'], { cwd: path.join(here, '..'), encoding: 'utf8', timeout: 120_000 });
  text = r.stdout || '';
}

let report;
try {
  report = JSON.parse(text);
} catch {
  report = null;
}

if (!report || typeof report.vulnerabilities !== 'object' || report.vulnerabilities === null) {
  const why = report?.message ?? report?.error?.summary ?? (text.trim().split('\n')[0] || 'no answer');
  loud([
    'npm audit: the advisory service could not be asked; NO dependency was checked.',
    `reason: ${String(why).slice(0, 200)}`,
    'Run `node .ci/audit.mjs` where the registry answers audits before releasing.',
    'Set DAMHUB_AUDIT_REQUIRED=1 to make this fatal.',
  ]);
  process.exit(process.env.DAMHUB_AUDIT_REQUIRED === '1' ? 2 : 0);
}

const allow = fs.existsSync(allowFile) ? JSON.parse(fs.readFileSync(allowFile, 'utf8')) : [];
for (const a of allow) {
  if (!a.advisory || !a.package || typeof a.why !== 'string' || a.why.trim().length < 20) {
    loud([`audit allowlist entry without package, advisory or a real justification: ${JSON.stringify(a)}`]);
    process.exit(1);
  }
}

/** Advisories (with their URLs) behind a package's finding; `via` strings point at other packages. */
function advisories(v) {
  return (v.via ?? []).filter((x) => typeof x === 'object').map((x) => ({ id: String(x.url ?? x.source), title: x.title, severity: x.severity }));
}

const failures = [];
const excused = [];
for (const [name, v] of Object.entries(report.vulnerabilities)) {
  if (!FAILING.has(v.severity)) continue;
  const own = advisories(v).filter((a) => FAILING.has(a.severity));
  // Transitive findings (only `via` strings) are judged at the package that carries the advisory.
  if (!own.length) continue;
  for (const a of own) {
    const ok = allow.find((e) => e.package === name && (a.id === e.advisory || a.id.endsWith(`/${e.advisory}`)));
    (ok ? excused : failures).push(`${v.severity} ${name}: ${a.title} (${a.id})${ok ? ` — allowed: ${ok.why}` : ''}`);
  }
}

const m = report.metadata?.vulnerabilities ?? {};
process.stdout.write(`npm audit (production dependencies): ${m.critical ?? 0} critical, ${m.high ?? 0} high, ${m.moderate ?? 0} moderate, ${m.low ?? 0} low\n`);
for (const e of excused) process.stdout.write(`  excused: ${e}\n`);
if (failures.length) {
  loud(['npm audit: high or critical findings not documented as unexploitable:', ...failures, `document one in ${path.relative(process.cwd(), allowFile)} only with the reason it cannot be exploited here`]);
  process.exit(1);
}
process.stdout.write('npm audit: no undocumented high or critical finding\n');
