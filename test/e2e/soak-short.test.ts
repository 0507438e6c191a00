/**
 * The short soak (the long one is `npm run soak`): the same mixed workload against the real
 * server process, bounded to a few hundred requests or 25 s, whichever comes first. Zero
 * unexpected answers and no 5xx.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runSoak } from '../../bench/soak.js';
import { recordFigure } from '../helpers/figures.js';

test('short soak: exchange, refresh, browse, search, search by image and downloads mixed; no unexpected answer, no 5xx', async () => {
  const r = await runSoak({ seconds: 25, maxRequests: 1500, workers: 4, sampleMs: 5000, images: 40 });
  assert.equal(r.unexpected, 0, r.firstErrors.join('\n'));
  assert.equal(r.fiveXx, 0);
  assert.ok(r.requests >= 100, `only ${r.requests} requests in the run`);
  for (const op of ['exchange', 'refresh', 'browse', 'search', 'imageSearch', 'download'] as const) assert.ok(r.byOp[op] > 0, `${op} never ran`);
  recordFigure('soak-short', `requests in the short soak (${r.seconds} s, p99 ${r.p99Ms} ms, RSS ${r.rssStartMiB}→${r.rssEndMiB} MiB)`, r.requests);
});
