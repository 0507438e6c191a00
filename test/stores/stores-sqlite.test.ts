/** The shared store suite (test/helpers/stores-suite.ts) against the embedded SQLite store: two connections to one file. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SqliteStores } from '../../src/stores/sqlite/index.js';
import { storeSuite } from '../helpers/stores-suite.js';

storeSuite('sqlite', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'damhub-stores-'));
  const file = path.join(dir, 'hub.sqlite');
  const a = SqliteStores.open(file);
  const b = SqliteStores.open(file);
  return {
    a,
    b,
    // Two SQLite connections share data but not events: invalidation is per process here.
    crossInstanceInvalidation: false,
    async cleanup() {
      await a.close();
      await b.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
});
