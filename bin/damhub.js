#!/usr/bin/env node
// The CLI is compiled TypeScript; `npm start` and `npm test` build it first.
import('../dist/src/cli/main.js').then((m) => m.main(process.argv.slice(2))).then(
  (code) => { if (typeof code === 'number') process.exitCode = code; },
  (err) => { process.stderr.write(`damhub: ${err?.message ?? err}\n`); process.exitCode = 1; },
);
