#!/usr/bin/env node
// The CLI is compiled TypeScript; `npm start` and `npm test` build it first.
import { startedByNpm, stopWhenOrphaned } from './orphan-watch.js';

// `npx damhub serve`: npm's shell dies of SIGTERM without passing it on (bin/orphan-watch.js).
if (startedByNpm()) stopWhenOrphaned();

let finished = false;
// A command whose work was dropped (a promise nobody settles, the last timer unref'd) used to end
// here with exit 0 and nothing printed, as if it had succeeded: now it fails, saying so.
process.once('beforeExit', () => {
  if (finished) return;
  process.stderr.write('damhub: the command stopped before it finished (nothing was left to wait for); this is a bug, please report it\n');
  process.exitCode = 1;
});
import('../dist/src/cli/main.js').then((m) => m.main(process.argv.slice(2))).then(
  (code) => { finished = true; if (typeof code === 'number') process.exitCode = code; },
  (err) => { finished = true; process.stderr.write(`damhub: ${err?.message ?? err}\n`); process.exitCode = 1; },
);
