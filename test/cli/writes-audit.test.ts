/**
 * The operator's controls of the write engine (docs/writes.md "Who may write", "Audit") through the
 * real `damhub` process: `partners add --writes`, `partners writes ID|ISSUER on|off`, the WRITES
 * column of `partners list`, and `damhub audit` as a table and as JSON lines, against a data dir
 * (SQLite) and against PostgreSQL + Redis (cluster mode).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ClusterStores } from '../../src/stores/index.js';
import { SqliteStores } from '../../src/stores/sqlite/index.js';
import type { AuditEntry, Stores } from '../../src/stores/types.js';
import { tempDir } from '../helpers/hub.js';
import { runCli, type RunResult } from '../helpers/process.js';
import { clusterEnv, type ClusterEnv } from '../helpers/stores-env.js';

const clean = { DATABASE_URL: '', REDIS_URL: '', DAMHUB_DATA_DIR: '', DAMHUB_ADMIN_KEY: '' };
const HOUR = 3600_000;
const JWKS = { keys: [{ kty: 'RSA', kid: 'k1', n: 'sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw', e: 'AQAB' }] };

function errorLine(r: RunResult): string {
  const first = r.stderr.split('\n')[0]!;
  assert.match(first, /^damhub: \S.*$/, `stderr: ${r.stderr}`);
  return first;
}

/** Writes of three partners spread over the last days, at times relative to the real clock (the command reads it). */
function seedEntries(now: number): AuditEntry[] {
  const e = (ago: number, requestId: string, partnerId: string, o: Partial<AuditEntry> = {}): AuditEntry => ({
    at: now - ago, requestId, partnerId, userId: 'u-1', providerId: 'library', accountId: 'alice', operation: 'upload',
    targetId: null, targetIdAfter: `/In/${requestId}.png`, nameBefore: null, nameAfter: `${requestId}.png`, bytes: 2048, result: 'ok', ...o,
  });
  return [
    e(10 * 24 * HOUR, 'ten-days', 'p1'),
    e(48 * HOUR, 'two-days', 'p2', { operation: 'delete', targetId: '/In/x.png', targetIdAfter: null, nameBefore: 'x.png', nameAfter: null, bytes: null }),
    e(5 * HOUR, 'five-hours', 'p1', { operation: 'rename', targetId: '/In/a.png', targetIdAfter: '/In/b\tc.png', nameBefore: 'a.png', nameAfter: 'b\tc.png', bytes: null, result: 'asset-exists' }),
    e(2 * HOUR, 'two-hours', 'p2'),
    e(60_000, 'a-minute', 'p1', { accountId: null }),
  ];
}

const requestIds = (stdout: string) => stdout.trim().split('\n').slice(1).map((l) => l.split('\t').at(-1));

/** The checks of both modes: `flags` point the command at the store `store` also reaches. */
async function checkControls(flags: string[], env: NodeJS.ProcessEnv, store: Stores): Promise<void> {
  const jwksFile = path.join(tempDir(), 'jwks.json');
  fs.writeFileSync(jwksFile, JSON.stringify(JWKS));
  const add = (id: string, ...more: string[]) => runCli(['partners', 'add', '--id', id, '--issuer', `https://${id}.example/`, '--jwks-file', jwksFile, ...more, ...flags], env);

  // partners add: off unless --writes.
  const off = await add('w-off');
  assert.equal(off.code, 0, off.stderr);
  assert.equal(JSON.parse(off.stdout).writes, false);
  const on = await add('w-on', '--writes');
  assert.equal(on.code, 0, on.stderr);
  assert.equal(JSON.parse(on.stdout).writes, true);
  assert.equal((await store.partners.get('w-on'))!.writes, true);

  // partners list: WRITES is the last column.
  const list = await runCli(['partners', 'list', ...flags], env);
  assert.equal(list.code, 0, list.stderr);
  const rows = list.stdout.trim().split('\n').map((l) => l.split('\t'));
  assert.deepEqual(rows[0], ['ID', 'STATE', 'ISSUER', 'AUDIENCE', 'JWKS', 'WRITES']);
  assert.deepEqual(rows.find((r) => r[0] === 'w-on'), ['w-on', 'enabled', 'https://w-on.example/', 'urn:damhub', 'inline JWKS', 'on']);
  assert.equal(rows.find((r) => r[0] === 'w-off')!.at(-1), 'off');

  // partners writes: by id or by issuer; prints the new state.
  const turnOn = await runCli(['partners', 'writes', 'w-off', 'on', ...flags], env);
  assert.equal(turnOn.code, 0, turnOn.stderr);
  assert.equal(turnOn.stdout, 'partner w-off (issuer https://w-off.example/): writes on\n');
  assert.equal((await store.partners.get('w-off'))!.writes, true);
  const again = await runCli(['partners', 'writes', 'w-off', 'on', ...flags], env);
  assert.equal(again.code, 0, 'turning on what is on is fine');
  const byIssuer = await runCli(['partners', 'writes', 'https://w-on.example/', 'off', ...flags], env);
  assert.equal(byIssuer.code, 0, byIssuer.stderr);
  assert.equal(byIssuer.stdout, 'partner w-on (issuer https://w-on.example/): writes off\n');
  assert.equal((await store.partners.get('w-on'))!.writes, false);

  // Unknown partner: exit 1, one line; bad usage: exit 2 with the partners usage; nothing changed.
  const unknown = await runCli(['partners', 'writes', 'nobody', 'on', ...flags], env);
  assert.equal(unknown.code, 1);
  assert.equal(errorLine(unknown), 'damhub: no partner with id or issuer nobody: damhub partners list shows them');
  assert.equal(unknown.stderr.trim().split('\n').length, 1);
  for (const args of [['w-off'], ['w-off', 'yes'], ['w-off', 'ON'], [], ['w-off', 'on', 'extra'], ['w-off', 'on', '--colour', 'blue']]) {
    const bad = await runCli(['partners', 'writes', ...args, ...flags], env);
    assert.equal(bad.code, 2, `${args.join(' ')}: ${bad.stderr}`);
    errorLine(bad);
    assert.match(bad.stderr, /damhub partners writes ID\|ISSUER on\|off/, 'the usage names the command');
  }
  assert.equal((await store.partners.get('w-off'))!.writes, true);

  // damhub audit: nothing written yet prints nothing.
  const empty = await runCli(['audit', ...flags], env);
  assert.equal(empty.code, 0, empty.stderr);
  assert.equal(empty.stdout, '');

  const now = Date.now();
  for (const e of seedEntries(now)) await store.audit.append(e);

  // Default: the last 24 hours, newest first, a header and one tab-separated line an entry.
  const table = await runCli(['audit', ...flags], env);
  assert.equal(table.code, 0, table.stderr);
  assert.equal(table.stderr, '');
  const lines = table.stdout.trim().split('\n');
  assert.deepEqual(lines[0]!.split('\t'), ['TIME', 'PARTNER', 'USER', 'PROVIDER', 'ACCOUNT', 'OPERATION', 'TARGET', 'NAME', 'BYTES', 'RESULT', 'REQUEST']);
  assert.deepEqual(requestIds(table.stdout), ['a-minute', 'two-hours', 'five-hours']);
  assert.deepEqual(lines[1]!.split('\t'), [new Date(now - 60_000).toISOString(), 'p1', 'u-1', 'library', '-', 'upload', '/In/a-minute.png', 'a-minute.png', '2048', 'ok', 'a-minute']);
  // A rename shows before -> after; a tab in a name is quoted, so the row stays one row of cells.
  assert.deepEqual(lines[3]!.split('\t').slice(4), ['alice', 'rename', '/In/a.png -> "/In/b\\tc.png"', 'a.png -> "b\\tc.png"', '-', 'asset-exists', 'five-hours']);

  assert.deepEqual(requestIds((await runCli(['audit', '--since', '7d', ...flags], env)).stdout), ['a-minute', 'two-hours', 'five-hours', 'two-days']);
  assert.deepEqual(requestIds((await runCli(['audit', '--since', '30d', '--until', '3h', ...flags], env)).stdout), ['five-hours', 'two-days', 'ten-days']);
  const isoSince = new Date(now - 49 * HOUR).toISOString();
  assert.deepEqual(requestIds((await runCli(['audit', '--since', isoSince, '--partner', 'p2', ...flags], env)).stdout), ['two-hours', 'two-days']);
  assert.deepEqual(requestIds((await runCli(['audit', '--since', new Date(now - 11 * 24 * HOUR).toISOString().slice(0, 10), '--partner', 'p1', ...flags], env)).stdout),
    ['a-minute', 'five-hours', 'ten-days'], 'a date alone');

  // --limit: the newest N, and a note on stderr that there are more.
  const limited = await runCli(['audit', '--since', '30d', '--limit', '2', ...flags], env);
  assert.equal(limited.code, 0, limited.stderr);
  assert.deepEqual(requestIds(limited.stdout), ['a-minute', 'two-hours']);
  assert.match(limited.stderr, /^damhub: showing the newest 2 entries; there are more/);
  const exact = await runCli(['audit', '--since', '30d', '--limit', '5', ...flags], env);
  assert.equal(exact.stderr, '', 'no note when nothing more is left');

  // --json: one object a line, as the API answers them.
  const json = await runCli(['audit', '--since', '30d', '--json', ...flags], env);
  assert.equal(json.code, 0, json.stderr);
  const objects = json.stdout.trim().split('\n').map((l) => JSON.parse(l) as AuditEntry);
  assert.deepEqual(objects, seedEntries(now).reverse());

  // Bad values: exit 2 naming the flag, with the audit usage.
  for (const [args, flag] of [[['--since', 'yesterday'], '--since'], [['--until', '2026-02-30x'], '--until'], [['--limit', '0'], '--limit'], [['--limit', 'ten'], '--limit'], [['extra'], 'extra']] as const) {
    const bad = await runCli(['audit', ...args, ...flags], env);
    assert.equal(bad.code, 2, `${args.join(' ')}: ${bad.stderr}`);
    assert.match(errorLine(bad), new RegExp(flag));
    assert.match(bad.stderr, /damhub audit \[--since/);
  }
}

describe('writes and the audit from the command line', () => {
  let env: ClusterEnv | null = null;
  before(async () => {
    env = await clusterEnv();
  });
  after(async () => {
    await env?.cleanup();
  });

  test('a data dir (SQLite)', async () => {
    const data = tempDir();
    const store = SqliteStores.open(path.join(data, 'hub.sqlite'));
    try {
      await checkControls(['--data', data], clean, store);
    } finally {
      await store.close();
      fs.rmSync(data, { recursive: true, force: true });
    }
  });

  test('cluster mode (PostgreSQL + Redis)', async (t) => {
    if (!env) return t.skip('backing services unavailable');
    const store = await ClusterStores.open({ databaseUrl: env.databaseUrl, redisUrl: env.redisUrl, keyPrefix: env.keyPrefix });
    try {
      // The running node hears the command's change of a partner (its caches drop).
      let invalidated = 0;
      store.onInvalidate(() => invalidated++);
      await checkControls(['--database-url', env.databaseUrl, '--redis-url', env.redisUrl], { ...clean, DAMHUB_REDIS_PREFIX: env.keyPrefix }, store);
      assert.ok(invalidated > 0, 'partners writes told the running nodes');
    } finally {
      await store.close();
    }
  });
});
