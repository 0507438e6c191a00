/** DAMHUB_UPLOAD_EXPIRY and DAMHUB_UPLOAD_DIR as configFrom reads them (their effect: test/cli/env-vars.test.ts rows), and backups without parts. */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { configFrom } from '../../src/cli/main.js';
import { listDataDir } from '../../src/cli/backup/data-dir.js';
import { parseDurationSec, uploadDirOf } from '../../src/config.js';

test('DAMHUB_UPLOAD_EXPIRY takes seconds or a unit; anything else stops the start naming it', () => {
  assert.deepEqual(['90', '90s', '15m', '24h', '7d', ' 2h '].map(parseDurationSec), [90, 90, 900, 86_400, 604_800, 7200]);
  assert.deepEqual(['', 'h', '1.5h', '-1', '1w', '10 hours'].map(parseDurationSec), [null, null, null, null, null, null]);
  assert.equal(configFrom({}, {}).uploadExpirySec, 86_400, 'default 24 h');
  assert.equal(configFrom({}, { DAMHUB_UPLOAD_EXPIRY: '30m' }).uploadExpirySec, 1800);
  for (const bad of ['soon', '0', '1.5h']) assert.throws(() => configFrom({}, { DAMHUB_UPLOAD_EXPIRY: bad }), /DAMHUB_UPLOAD_EXPIRY/);
});

test('DAMHUB_UPLOAD_DIR: absolute, default <data dir>/uploads', () => {
  const def = configFrom({ data: '/srv/hub' }, {});
  assert.equal(uploadDirOf(def), path.join(def.dataDir, 'uploads'));
  assert.equal(uploadDirOf(configFrom({}, { DAMHUB_UPLOAD_DIR: 'shared/parts' })), path.resolve('shared/parts'));
});

test('a backup leaves the parts of unfinished uploads out (uploads/ under the data dir), as it does thumbnails', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'damhub-backup-uploads-'));
  fs.writeFileSync(path.join(dir, 'keys.json'), '{}');
  fs.mkdirSync(path.join(dir, 'uploads'));
  fs.writeFileSync(path.join(dir, 'uploads', `${'a'.repeat(32)}.part`), 'half a film');
  fs.mkdirSync(path.join(dir, 'thumbnails'));
  fs.writeFileSync(path.join(dir, 'thumbnails', 'x.jpg'), 'jpeg');
  assert.deepEqual(listDataDir(dir).files, ['keys.json']);
});
