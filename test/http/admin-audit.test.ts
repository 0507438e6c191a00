/**
 * GET /api/v1/admin/audit (docs/writes.md "Audit"): the admin key, newest first, since/until (a
 * duration, a date, epoch ms), partnerId, limit, paging with the opaque `before` cursor (never
 * splitting the entries one request wrote in one millisecond), and validation naming the field.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import type { AuditEntry } from '../../src/stores/types.js';
import { assertError, bearer, startTestHub, type TestHub } from '../helpers/hub.js';

const AUDIT = '/api/v1/admin/audit';
const HOUR = 3600_000;

let t: TestHub;
let now: number;

function get(query = '', authorization: string | null = bearer(t.hub.adminKey)): Promise<LightMyRequestResponse> {
  return t.app.inject({ method: 'GET', url: `${AUDIT}${query}`, headers: authorization === null ? {} : { authorization } });
}

const entry = (at: number, requestId: string, partnerId = 'p1', o: Partial<AuditEntry> = {}): AuditEntry => ({
  at, requestId, partnerId, userId: 'u1', providerId: 'library', accountId: 'alice', operation: 'upload',
  targetId: null, targetIdAfter: `/In/${requestId}.png`, nameBefore: null, nameAfter: `${requestId}.png`, bytes: 100, result: 'ok', ...o,
});

before(async () => {
  t = await startTestHub();
  now = t.clock.now();
  for (const e of [
    entry(now - 72 * HOUR, 'old'),
    entry(now - 3 * HOUR, 'r1'),
    entry(now - 2 * HOUR, 'r2', 'p2', { operation: 'delete', targetId: '/In/x.png', targetIdAfter: null, nameBefore: 'x.png', nameAfter: null, bytes: null, result: 'integration-forbidden' }),
    // An MCP batch: three writes of one request in one millisecond.
    entry(now - HOUR, 'batch', 'p1', { operation: 'create-folder' }),
    entry(now - HOUR, 'batch', 'p1', { operation: 'move' }),
    entry(now - HOUR, 'batch', 'p1', { operation: 'rename' }),
    entry(now - 1000, 'r3'),
  ]) await t.hub.stores.audit.append(e);
});
after(() => t.close());

const ids = (res: LightMyRequestResponse) => {
  assert.equal(res.statusCode, 200, res.body);
  return (res.json().entries as AuditEntry[]).map((e) => e.requestId);
};

test('without the admin key → 401; with another key → 403', async () => {
  assertError(await get('', null), 'hub-access-token-missing', 401);
  assertError(await get('', bearer('wrong-key')), 'hub-access-denied', 403);
  const { access_token } = await t.login();
  assertError(await get('', bearer(access_token)), 'hub-access-denied', 403);
});

test('every entry kept, newest first, with every field; no `more` on the last page', async () => {
  const res = await get();
  assert.deepEqual(ids(res), ['r3', 'batch', 'batch', 'batch', 'r2', 'r1', 'old']);
  assert.equal(res.json().more, undefined);
  assert.deepEqual(res.json().entries[4], entry(now - 2 * HOUR, 'r2', 'p2', { operation: 'delete', targetId: '/In/x.png', targetIdAfter: null, nameBefore: 'x.png', nameAfter: null, bytes: null, result: 'integration-forbidden' }));
});

test('since and until: a duration back from now, an ISO date-time, epoch milliseconds', async () => {
  assert.deepEqual(ids(await get('?since=24h')), ['r3', 'batch', 'batch', 'batch', 'r2', 'r1']);
  assert.deepEqual(ids(await get('?since=150m&until=30m')), ['batch', 'batch', 'batch', 'r2']);
  assert.deepEqual(ids(await get(`?since=${encodeURIComponent(new Date(now - 3 * HOUR).toISOString())}&until=${now - 2 * HOUR}`)), ['r1'], 'since inclusive, until exclusive');
  // A date alone is UTC midnight; a date-time without a zone is UTC too.
  const day = new Date(now).toISOString().slice(0, 10);
  assert.deepEqual(ids(await get(`?since=${day}`)), ids(await get(`?since=${Date.parse(`${day}T00:00:00Z`)}`)));
  assert.deepEqual(ids(await get(`?until=${new Date(now - 2 * HOUR).toISOString().slice(0, 19)}`)), ['r1', 'old']);
});

test('partnerId narrows to one partner', async () => {
  assert.deepEqual(ids(await get('?partnerId=p2')), ['r2']);
  assert.deepEqual(ids(await get('?partnerId=nobody')), []);
});

test('paging with limit and before: every entry once, and a request\'s entries of one millisecond never split', async () => {
  const seen: string[] = [];
  const ops: string[] = [];
  let query = '?limit=2';
  const sizes: number[] = [];
  for (let i = 0; i < 10; i++) {
    const res = await get(query);
    const page = res.json() as { entries: AuditEntry[]; more?: string };
    sizes.push(page.entries.length);
    seen.push(...ids(res));
    ops.push(...page.entries.filter((e) => e.requestId === 'batch').map((e) => e.operation));
    if (!page.more) break;
    assert.match(page.more, /^[A-Za-z0-9_-]+$/, 'opaque and URL-safe');
    query = `?limit=2&before=${page.more}`;
  }
  assert.deepEqual(seen, ['r3', 'batch', 'batch', 'batch', 'r2', 'r1', 'old']);
  assert.deepEqual(ops.sort(), ['create-folder', 'move', 'rename']);
  assert.deepEqual(sizes, [4, 2, 1], 'the first page completes the batch');
  // With the other filters.
  const first = (await get('?since=24h&partnerId=p1&limit=1')).json();
  assert.deepEqual(first.entries.map((e: AuditEntry) => e.requestId), ['r3']);
  assert.deepEqual(ids(await get(`?since=24h&partnerId=p1&limit=10&before=${first.more}`)), ['batch', 'batch', 'batch', 'r1']);
});

test('invalid values → hub-validation-error naming the field', async () => {
  for (const [query, field] of [
    ['?since=yesterday', 'since'], ['?until=2026-13-45', 'until'], ['?since=24x', 'since'],
    ['?before=not-a-cursor', 'before'], [`?before=${Buffer.from('{"at":1}').toString('base64url')}`, 'before'],
    ['?limit=0', 'limit'], ['?limit=1001', 'limit'], ['?limit=many', 'limit'], ['?colour=blue', 'colour'],
  ] as const) {
    const body = assertError(await get(query), 'hub-validation-error', 400);
    assert.match(body.error.details, new RegExp(field), `${query}: ${body.error.details}`);
  }
});
