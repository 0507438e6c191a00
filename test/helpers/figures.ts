/**
 * Figures the reliability and security suites report (requests fuzzed, faults injected, ...):
 * printed on the test output and, when DAMHUB_FIGURES names a file, appended to it as JSON lines
 * (docs/reliability.md quotes them).
 */
import fs from 'node:fs';

export function recordFigure(name: string, label: string, value: number | string): void {
  process.stdout.write(`FIGURE ${name} = ${value} (${label})\n`);
  const file = process.env.DAMHUB_FIGURES;
  if (file) fs.appendFileSync(file, `${JSON.stringify({ name, label, value, at: new Date().toISOString() })}\n`);
}
