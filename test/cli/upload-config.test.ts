/** DAMHUB_UPLOAD_EXPIRY and DAMHUB_UPLOAD_DIR as configFrom reads them (their effect: test/cli/env-vars.test.ts rows). */
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { configFrom } from '../../src/cli/main.js';
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
