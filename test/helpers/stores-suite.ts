/**
 * One behavioural suite for every Stores implementation (SQLite, PostgreSQL + Redis). Each
 * implementation provides two instances over the same backing state — two "nodes" — so the
 * checks that matter in a cluster (rotation CAS, single consumption, replay, shared rate limits)
 * run across instances, concurrently. Time is always the `now` argument; nothing sleeps except
 * the wait for a cross-node invalidation message, which polls with a generous bound.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test, before, after } from 'node:test';
import { gcra, gcraRefund } from '../../src/stores/gcra.js';
import { importLegacyMcpConnections, LEGACY_MCP_FILE } from '../../src/stores/legacy-mcp-file.js';
import { sweepStores } from '../../src/stores/sweep.js';
import { StoreConflictError, type AuditEntry, type AuditQuery, type LoginState, type McpConnection, type PartnerInput, type Stores, type UploadRecord } from '../../src/stores/types.js';
import { writeLegacyMcpFile } from './legacy-mcp.js';

export interface StorePair {
  a: Stores;
  b: Stores;
  /** Whether b's writes reach a's invalidation listeners (cluster: through Redis pub/sub). */
  crossInstanceInvalidation: boolean;
  cleanup(): Promise<void>;
}

export type PairFactory = () => Promise<StorePair | null>;

const T0 = Date.UTC(2026, 5, 1, 12);
const DAY = 24 * 3600_000;

export function partnerInput(o: Partial<PartnerInput> = {}): PartnerInput {
  const id = o.id ?? `p-${randomUUID()}`;
  return {
    id,
    name: 'Partner',
    issuer: `https://${id}.example/`,
    audience: 'urn:damhub',
    jwksUrl: null,
    jwks: { keys: [{ kty: 'RSA', kid: 'k1', n: 'abc', e: 'AQAB' }] },
    maxTokenAgeSec: 3600,
    rateLimitPerMin: 60,
    allowedOrigins: ['https://app.example'],
    enabled: true,
    ...o,
  };
}

async function waitFor(cond: () => boolean, ms = 5000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (cond()) return true;
    await new Promise((r) => setTimeout(r, 10));
  }
  return cond();
}

export function storeSuite(name: string, factory: PairFactory): void {
  describe(`stores: ${name}`, () => {
    let pair: StorePair | null = null;
    let a: Stores;
    let b: Stores;

    before(async () => {
      pair = await factory();
      if (pair) ({ a, b } = pair);
    });
    after(async () => {
      await pair?.cleanup();
    });

    /** Skips (with the factory's printed reason) when the implementation is not available here. */
    const it = (title: string, fn: () => Promise<void>) =>
      test(title, async (t) => {
        if (!pair) return t.skip('backing services unavailable');
        await fn();
      });

    async function seedUser(partnerId?: string) {
      const p = await a.partners.create(partnerInput(partnerId ? { id: partnerId } : {}), T0);
      const u = await a.users.upsert(p.id, `sub-${randomUUID()}`, { email: 'u@example.com', name: 'U', givenName: null, familyName: null }, T0);
      return { p, u };
    }

    async function seedSession(userId: string, partnerId: string, jti: string = randomUUID()) {
      const s = { id: randomUUID(), userId, partnerId, currentJti: jti, previousJti: null, rotatedAt: T0, createdAt: T0, expiresAt: T0 + 30 * DAY, revokedAt: null };
      await a.sessions.create(s);
      return s;
    }

    it('ping answers', async () => {
      await a.ping();
      await b.ping();
    });

    it('partners: create, read on the other node, list, update, conflicts, remove', async () => {
      const input = partnerInput({ allowedOrigins: ['https://x.example', 'https://y.example'] });
      const p = await a.partners.create(input, T0);
      assert.equal(p.id, input.id);
      assert.deepEqual(p.jwks, input.jwks);
      assert.deepEqual(p.allowedOrigins, ['https://x.example', 'https://y.example']);
      assert.equal(p.enabled, true);
      assert.equal(p.createdAt, T0);
      assert.equal(p.updatedAt, T0);
      assert.deepEqual(await b.partners.get(p.id), p);
      assert.deepEqual(await b.partners.getByIssuer(p.issuer), p);
      assert.equal(await b.partners.get('nope'), null);
      assert.equal(await b.partners.getByIssuer('https://nope/'), null);
      assert.ok((await b.partners.list()).some((x) => x.id === p.id));

      await assert.rejects(a.partners.create(partnerInput({ issuer: p.issuer }), T0), StoreConflictError);
      await assert.rejects(b.partners.create(partnerInput({ id: p.id }), T0), StoreConflictError);

      const inline = await a.partners.create(partnerInput({ jwks: null, jwksUrl: 'https://j.example/jwks.json', enabled: false, allowedOrigins: [] }), T0);
      assert.equal(inline.jwks, null);
      assert.equal(inline.jwksUrl, 'https://j.example/jwks.json');
      assert.equal(inline.enabled, false);
      assert.deepEqual(inline.allowedOrigins, []);

      const u = await b.partners.update(p.id, { enabled: false, rateLimitPerMin: 5 }, T0 + 1000);
      assert.equal(u!.enabled, false);
      assert.equal(u!.rateLimitPerMin, 5);
      assert.equal(u!.name, p.name);
      assert.equal(u!.updatedAt, T0 + 1000);
      assert.equal(u!.createdAt, T0);
      assert.deepEqual(await a.partners.get(p.id), u);
      assert.equal(await a.partners.update('nope', { enabled: true }, T0), null);
      await assert.rejects(a.partners.update(inline.id, { issuer: p.issuer }, T0), StoreConflictError);

      assert.equal(await b.partners.remove(p.id), true);
      assert.equal(await a.partners.get(p.id), null);
      assert.equal(await a.partners.remove(p.id), false);
    });

    it('users: upsert creates once per (partner, sub) and refreshes the profile', async () => {
      const p = await a.partners.create(partnerInput(), T0);
      const u1 = await a.users.upsert(p.id, 'sub-1', { email: 'a@example.com', name: 'A', givenName: 'Al', familyName: null }, T0);
      assert.equal(u1.partnerId, p.id);
      assert.equal(u1.sub, 'sub-1');
      assert.equal(u1.givenName, 'Al');
      assert.equal(u1.familyName, null);
      assert.equal(u1.createdAt, T0);
      const u2 = await b.users.upsert(p.id, 'sub-1', { email: 'b@example.com', name: null, givenName: null, familyName: 'Bee' }, T0 + 5000);
      assert.equal(u2.id, u1.id);
      assert.equal(u2.email, 'b@example.com');
      assert.equal(u2.name, null);
      assert.equal(u2.familyName, 'Bee');
      assert.equal(u2.createdAt, T0);
      assert.equal(u2.lastSeenAt, T0 + 5000);
      assert.deepEqual(await a.users.get(u1.id), u2);
      const other = await b.users.upsert(p.id, 'sub-2', { email: 'c@example.com', name: null, givenName: null, familyName: null }, T0);
      assert.notEqual(other.id, u1.id);
      assert.equal(await a.users.remove(u1.id), true);
      assert.equal(await b.users.get(u1.id), null);
      assert.equal(await b.users.remove(u1.id), false);
    });

    it('sessions: create, rotate (compare-and-set), revoke; removing the user removes them', async () => {
      const { p, u } = await seedUser();
      const s = await seedSession(u.id, p.id, 'j0');
      assert.deepEqual(await b.sessions.get(s.id), s);
      assert.equal(await b.sessions.rotate(s.id, 'wrong', 'j1', T0 + 1, T0 + 31 * DAY), false);
      assert.equal(await b.sessions.rotate(s.id, 'j0', 'j1', T0 + 1000, T0 + 31 * DAY), true);
      const r = (await a.sessions.get(s.id))!;
      assert.equal(r.currentJti, 'j1');
      assert.equal(r.previousJti, 'j0');
      assert.equal(r.rotatedAt, T0 + 1000);
      assert.equal(r.expiresAt, T0 + 31 * DAY);
      assert.equal(await a.sessions.rotate(s.id, 'j0', 'j2', T0 + 2000, T0 + 31 * DAY), false);

      await b.sessions.revoke(s.id, T0 + 3000);
      await a.sessions.revoke(s.id, T0 + 4000);
      assert.equal((await a.sessions.get(s.id))!.revokedAt, T0 + 3000, 'the first revocation time is kept');
      assert.equal(await a.sessions.rotate(s.id, 'j1', 'j2', T0 + 5000, T0 + 31 * DAY), false, 'a revoked family never rotates');

      const s2 = await seedSession(u.id, p.id);
      await b.users.remove(u.id);
      assert.equal(await a.sessions.get(s2.id), null);
      assert.equal(await a.sessions.get('nope'), null);
    });

    it('sessions: of concurrent rotations with the same expected jti on two nodes, exactly one wins', async () => {
      const { p, u } = await seedUser();
      for (let i = 0; i < 10; i++) {
        const s = await seedSession(u.id, p.id, 'start');
        const results = await Promise.all([
          a.sessions.rotate(s.id, 'start', 'from-a', T0 + 1, T0 + DAY),
          b.sessions.rotate(s.id, 'start', 'from-b', T0 + 1, T0 + DAY),
          a.sessions.rotate(s.id, 'start', 'from-a2', T0 + 1, T0 + DAY),
          b.sessions.rotate(s.id, 'start', 'from-b2', T0 + 1, T0 + DAY),
        ]);
        assert.equal(results.filter(Boolean).length, 1, `round ${i}: ${results}`);
        const after = (await a.sessions.get(s.id))!;
        assert.equal(after.previousJti, 'start');
        assert.equal(after.currentJti, ['from-a', 'from-b', 'from-a2', 'from-b2'][results.indexOf(true)]);
      }
    });

    it('partners: removing a partner removes its users and sessions', async () => {
      const { p, u } = await seedUser();
      const s = await seedSession(u.id, p.id);
      assert.equal(await b.partners.remove(p.id), true);
      assert.equal(await a.users.get(u.id), null);
      assert.equal(await a.sessions.get(s.id), null);
    });

    it('sweep drops expired and long-revoked sessions and keeps live ones', async () => {
      const { p, u } = await seedUser();
      const live = await seedSession(u.id, p.id);
      const expired = { ...(await seedSession(u.id, p.id)) };
      await a.sessions.rotate(expired.id, expired.currentJti, 'x', T0, T0 + 1000);
      await a.sweep(T0 + 2000);
      assert.ok(await b.sessions.get(live.id));
      assert.equal(await b.sessions.get(expired.id), null);
    });

    it('replay: a key is remembered once across nodes until it expires', async () => {
      const key = `jti-${randomUUID()}`;
      assert.equal(await a.replay.remember(key, T0 + 60_000, T0), true);
      assert.equal(await b.replay.remember(key, T0 + 60_000, T0 + 1), false);
      assert.equal(await a.replay.remember(key, T0 + 60_000, T0 + 59_999), false);
      assert.equal(await b.replay.remember(key, T0 + 120_000, T0 + 60_000), true, 'an expired key counts as new');
      assert.equal(await a.replay.remember(key, T0 + 120_000, T0 + 60_001), false);

      for (let i = 0; i < 10; i++) {
        const k = `race-${randomUUID()}`;
        const r = await Promise.all([a, b, a, b].map((s) => s.replay.remember(k, T0 + 60_000, T0)));
        assert.equal(r.filter(Boolean).length, 1, `round ${i}: ${r}`);
      }
    });

    it('login states: create, read on the other node, settle once, consume once', async () => {
      const { p, u } = await seedUser();
      const mk = (o: Partial<LoginState> = {}): LoginState => ({
        state: `st-${randomUUID()}`, userId: u.id, partnerId: p.id, providerId: 'library', serverUrl: null, uiLocale: null,
        status: 'pending', result: null, error: null, createdAt: T0, expiresAt: T0 + 300_000, ...o,
      });
      // The language of its pages travels with the state, to every node (issue 29).
      const s = mk({ serverUrl: 'https://dam.example', uiLocale: 'ja' });
      await a.logins.create(s);
      assert.deepEqual(await b.logins.get(s.state), s);
      assert.equal(await b.logins.consume(s.state), null, 'a pending login hands out nothing');
      const result = { access_token: 'at', refresh_token: 'rt', userHash: 'h', nested: { n: 1, list: [1, 'two'] } };
      assert.equal(await b.logins.settle(s.state, 'completed', result, null), true);
      assert.equal(await a.logins.settle(s.state, 'failed', null, 'late'), false);
      const got = await a.logins.get(s.state);
      assert.equal(got!.status, 'completed');
      assert.deepEqual(got!.result, result);
      assert.deepEqual(await a.logins.consume(s.state), result);
      assert.equal(await b.logins.consume(s.state), null);
      const consumed = (await b.logins.get(s.state))!;
      assert.equal(consumed.status, 'consumed');
      assert.equal(consumed.result, null);

      const f = mk();
      await b.logins.create(f);
      assert.equal(await a.logins.settle(f.state, 'failed', null, 'access_denied'), true);
      const failed = (await b.logins.get(f.state))!;
      assert.equal(failed.status, 'failed');
      assert.equal(failed.error, 'access_denied');
      assert.equal(await b.logins.consume(f.state), null);

      const c = mk();
      await a.logins.create(c);
      assert.equal(await b.logins.settle(c.state, 'cancelled', null, null), true);
      assert.equal((await a.logins.get(c.state))!.status, 'cancelled');

      const empty = mk();
      await a.logins.create(empty);
      assert.equal(await a.logins.settle(empty.state, 'completed', null, null), true);
      assert.deepEqual(await b.logins.consume(empty.state), {});

      assert.equal(await a.logins.get('nope'), null);
      assert.equal(await a.logins.settle('nope', 'completed', {}, null), false);
      assert.equal(await a.logins.consume('nope'), null);
    });

    it('login states: of concurrent polls on two nodes, exactly one gets the result', async () => {
      const { p, u } = await seedUser();
      for (let i = 0; i < 10; i++) {
        const s: LoginState = { state: `race-${randomUUID()}`, userId: u.id, partnerId: p.id, providerId: 'library', serverUrl: null, status: 'pending', result: null, error: null, createdAt: T0, expiresAt: T0 + 300_000 };
        await a.logins.create(s);
        await b.logins.settle(s.state, 'completed', { access_token: `t${i}` }, null);
        const r = await Promise.all([a, b, a, b].map((x) => x.logins.consume(s.state)));
        assert.equal(r.filter((x) => x !== null).length, 1, `round ${i}`);
        assert.deepEqual(r.find((x) => x !== null), { access_token: `t${i}` });
      }
    });

    it('rate limits: one budget shared by the nodes, GCRA decisions identical to the reference', async () => {
      const key = `rl-${randomUUID()}`;
      const seen = [];
      for (let i = 0; i < 6; i++) seen.push(await (i % 2 ? b : a).rateLimits.hit(key, 5, 60_000, T0));
      assert.deepEqual(seen.map((d) => d.allowed), [true, true, true, true, true, false]);
      assert.deepEqual(seen.map((d) => d.remaining), [4, 3, 2, 1, 0, 0]);
      assert.equal(seen[5]!.retryAfterSec, 12);
      assert.equal(seen[5]!.limit, 5);
      assert.equal((await b.rateLimits.hit(key, 5, 60_000, T0 + 12_000)).allowed, true, 'one interval later, one more');

      // Concurrent hits from both nodes at one instant: exactly `limit` succeed.
      const k2 = `rl-${randomUUID()}`;
      const r = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).rateLimits.hit(k2, 7, 60_000, T0)));
      assert.equal(r.filter((d) => d.allowed).length, 7);

      // A random walk of hits compared decision by decision with src/stores/gcra.ts.
      for (const [limit, period] of [[7, 60_000], [60, 60_000], [3, 1000], [1200, 60_000]] as const) {
        const k = `rl-${randomUUID()}`;
        let tat: number | null = null;
        let now = T0 + 0.5;
        let rnd = limit * 7919;
        for (let i = 0; i < 200; i++) {
          rnd = (rnd * 1103515245 + 12345) % 2147483648;
          now += (rnd % 5 === 0) ? (rnd % (period / limit * 3)) : (rnd % 7) / 3;
          const ref = gcra(tat, limit, period, now);
          if (ref.decision.allowed) tat = ref.tat;
          const got = await (i % 2 ? a : b).rateLimits.hit(k, limit, period, now);
          assert.deepEqual(got, ref.decision, `limit ${limit}/${period} step ${i} at +${now - T0}`);
        }
      }
    });

    it('rate limits: a refund gives back exactly one unit, on either node, never more than a full budget', async () => {
      const key = `rl-${randomUUID()}`;
      for (let i = 0; i < 5; i++) assert.equal((await a.rateLimits.hit(key, 5, 60_000, T0)).allowed, true);
      assert.equal((await b.rateLimits.hit(key, 5, 60_000, T0)).allowed, false);
      await b.rateLimits.refund(key, 5, 60_000, T0);
      const again = await a.rateLimits.hit(key, 5, 60_000, T0);
      assert.equal(again.allowed, true, 'the refunded unit is usable at once, on the other node');
      assert.equal(again.remaining, 0);
      assert.equal((await a.rateLimits.hit(key, 5, 60_000, T0)).allowed, false, 'and only that one');
      // Refunds past a full budget (or of a key never hit) do not bank extra units.
      const fresh = `rl-${randomUUID()}`;
      await a.rateLimits.refund(fresh, 5, 60_000, T0);
      await a.rateLimits.hit(fresh, 5, 60_000, T0);
      for (let i = 0; i < 3; i++) await b.rateLimits.refund(fresh, 5, 60_000, T0);
      const burst = [];
      for (let i = 0; i < 6; i++) burst.push((await (i % 2 ? a : b).rateLimits.hit(fresh, 5, 60_000, T0)).allowed);
      assert.deepEqual(burst, [true, true, true, true, true, false]);
      // Same arithmetic as the reference.
      const k = `rl-${randomUUID()}`;
      let tat: number | null = null;
      for (const [op, dt] of [['hit', 0], ['hit', 0.3], ['hit', 100], ['refund', 7], ['hit', 0], ['refund', 20_000], ['hit', 1]] as const) {
        const now = T0 + 0.5 + dt;
        if (op === 'hit') {
          const ref = gcra(tat, 7, 60_000, now);
          if (ref.decision.allowed) tat = ref.tat;
          assert.deepEqual(await a.rateLimits.hit(k, 7, 60_000, now), ref.decision);
        } else {
          tat = gcraRefund(tat, 7, 60_000, now);
          await b.rateLimits.refund(k, 7, 60_000, now);
        }
      }
    });

    it('login states: pending states are capped per user and in total, atomically across nodes; settled and expired ones free their slot', async () => {
      const { p, u } = await seedUser();
      const { u: other } = await seedUser(p.id + '-2');
      const mk = (userId: string, at = T0): LoginState => ({
        state: `cap-${randomUUID()}`, userId, partnerId: p.id, providerId: 'library', serverUrl: null,
        status: 'pending', result: null, error: null, createdAt: at, expiresAt: at + 300_000,
      });
      const caps = { perUser: 3, total: 1_000_000 };
      // Ten concurrent starts of one user on two nodes: exactly three are created.
      const many = Array.from({ length: 10 }, () => mk(u.id));
      const r = await Promise.all(many.map((s, i) => (i % 2 ? a : b).logins.create(s, caps)));
      assert.equal(r.filter((x) => x.created).length, 3, JSON.stringify(r));
      const refused = r.find((x) => !x.created)!;
      assert.deepEqual(refused, { created: false, limit: 'user', retryAt: T0 + 300_000 });
      assert.equal((await a.logins.create(mk(other.id), caps)).created, true, 'another user is not affected');
      // Settling one (completed, failed or cancelled) frees its slot at once.
      const held = many.filter((_, i) => r[i]!.created);
      assert.equal(await b.logins.settle(held[0]!.state, 'cancelled', null, null), true);
      assert.equal((await a.logins.create(mk(u.id), caps)).created, true);
      assert.equal((await b.logins.create(mk(u.id), caps)).created, false);
      // Expired states no longer count, swept or not.
      assert.equal((await a.logins.create(mk(u.id, T0 + 300_000), caps)).created, true);
      // The hub-wide cap: counted over every user's pending states.
      const { u: third } = await seedUser(p.id + '-3');
      const late = T0 + DAY; // every state above has expired by then
      const total = { perUser: 100, total: 2 };
      assert.equal((await a.logins.create(mk(third.id, late), total)).created, true, '1 of 2');
      assert.equal((await b.logins.create(mk(other.id, late), total)).created, true, '2 of 2');
      const full = await a.logins.create(mk(third.id, late + 1), total);
      assert.deepEqual(full, { created: false, limit: 'total', retryAt: late + 300_000 });
      // Without caps (existing callers), create still just inserts.
      assert.equal((await a.logins.create(mk(third.id, late))).created, true);
    });

    it('mcp connections: a sign-in started on one node is collected on the other; renewal is a compare-and-set', async () => {
      const { u } = await seedUser();
      assert.equal(await a.mcpConnections.get(u.id, 'library'), null);
      await a.mcpConnections.startSignIn(u.id, 'library', 's1', 'https://hub.example/signin?state=s1', T0);
      const pending: McpConnection = { userId: u.id, providerId: 'library', accessToken: null, refreshToken: null, pendingState: 's1', pendingUrl: 'https://hub.example/signin?state=s1', updatedAt: T0 };
      assert.deepEqual(await b.mcpConnections.get(u.id, 'library'), pending);
      assert.equal(await b.mcpConnections.get(u.id, 'other'), null, 'keyed by (user, provider)');

      assert.equal(await b.mcpConnections.completeSignIn(u.id, 'library', 's1', 'at1', 'rt1', T0 + 1000), true);
      const connected = { ...pending, accessToken: 'at1', refreshToken: 'rt1', pendingState: null, pendingUrl: null, updatedAt: T0 + 1000 };
      assert.deepEqual(await a.mcpConnections.get(u.id, 'library'), connected);

      // A new sign-in keeps the held connection usable until it completes.
      await a.mcpConnections.startSignIn(u.id, 'library', 's2', 'https://hub.example/signin?state=s2', T0 + 2000);
      assert.deepEqual(await b.mcpConnections.get(u.id, 'library'), { ...connected, pendingState: 's2', pendingUrl: 'https://hub.example/signin?state=s2', updatedAt: T0 + 2000 });
      assert.equal(await b.mcpConnections.dropSignIn(u.id, 'library', 's1'), false, 'only the pending sign-in itself is dropped');
      assert.equal(await b.mcpConnections.dropSignIn(u.id, 'library', 's2'), true);
      assert.deepEqual(await a.mcpConnections.get(u.id, 'library'), { ...connected, updatedAt: T0 + 2000 });
      assert.equal(await a.mcpConnections.dropSignIn(u.id, 'library', 's2'), false);

      // Renewal: only while the row still holds the expected access token; a pending sign-in is left alone.
      await b.mcpConnections.startSignIn(u.id, 'library', 's3', 'https://hub.example/signin?state=s3', T0 + 3000);
      assert.equal(await a.mcpConnections.renew(u.id, 'library', 'stale', 'at2', 'rt2', T0 + 4000), false);
      assert.equal(await a.mcpConnections.renew(u.id, 'library', 'at1', 'at2', null, T0 + 4000), true);
      assert.deepEqual(await b.mcpConnections.get(u.id, 'library'), { ...connected, accessToken: 'at2', refreshToken: null, pendingState: 's3', pendingUrl: 'https://hub.example/signin?state=s3', updatedAt: T0 + 4000 });
      assert.equal(await b.mcpConnections.renew(u.id, 'library', 'at1', 'at3', 'rt3', T0 + 5000), false, 'a renewal of the old token loses');

      assert.equal(await b.mcpConnections.remove(u.id, 'library'), true);
      assert.equal(await a.mcpConnections.get(u.id, 'library'), null);
      assert.equal(await a.mcpConnections.remove(u.id, 'library'), false);
      // No conditional write brings a removed connection back.
      assert.equal(await a.mcpConnections.renew(u.id, 'library', 'at2', 'at4', 'rt4', T0 + 6000), false);
      assert.equal(await b.mcpConnections.completeSignIn(u.id, 'library', 's3', 'at5', 'rt5', T0 + 6000), false);
      assert.equal(await a.mcpConnections.dropSignIn(u.id, 'library', 's3'), false);
      assert.equal(await b.mcpConnections.get(u.id, 'library'), null);
    });

    it('mcp connections: collecting an older sign-in sets the tokens and leaves a newer sign-in pending', async () => {
      const { u } = await seedUser();
      await a.mcpConnections.startSignIn(u.id, 'library', 'old', 'https://hub.example/old', T0);
      await b.mcpConnections.startSignIn(u.id, 'library', 'new', 'https://hub.example/new', T0 + 1);
      assert.equal(await a.mcpConnections.completeSignIn(u.id, 'library', 'old', 'at', null, T0 + 2), true);
      const row = (await b.mcpConnections.get(u.id, 'library'))!;
      assert.deepEqual([row.accessToken, row.refreshToken, row.pendingState, row.pendingUrl], ['at', null, 'new', 'https://hub.example/new']);
    });

    it('mcp connections: of concurrent renewals of the same token on two nodes, exactly one wins', async () => {
      const { u } = await seedUser();
      for (let i = 0; i < 10; i++) {
        const pid = `dam-${i}`;
        await a.mcpConnections.startSignIn(u.id, pid, 's', 'https://hub.example/s', T0);
        await b.mcpConnections.completeSignIn(u.id, pid, 's', 'expired', 'rt', T0);
        const renewals = ['a1', 'b1', 'a2', 'b2'];
        const results = await Promise.all(renewals.map((at, j) => (j % 2 ? b : a).mcpConnections.renew(u.id, pid, 'expired', at, `rt-${at}`, T0 + 1)));
        assert.equal(results.filter(Boolean).length, 1, `round ${i}: ${results}`);
        const winner = renewals[results.indexOf(true)]!;
        const row = (await a.mcpConnections.get(u.id, pid))!;
        assert.deepEqual([row.accessToken, row.refreshToken], [winner, `rt-${winner}`]);
      }
    });

    it('mcp connections: removing the user or the partner removes the connections held for the user', async () => {
      const { p, u } = await seedUser();
      const { u: other } = await seedUser(`${p.id}-other`);
      for (const user of [u, other]) {
        await a.mcpConnections.startSignIn(user.id, 'library', 's', 'https://hub.example/s', T0);
        await a.mcpConnections.completeSignIn(user.id, 'library', 's', 'at', 'rt', T0);
      }
      await b.users.remove(u.id);
      assert.equal(await a.mcpConnections.get(u.id, 'library'), null);
      assert.ok(await a.mcpConnections.get(other.id, 'library'));
      await b.partners.remove(`${p.id}-other`);
      assert.equal(await a.mcpConnections.get(other.id, 'library'), null);
    });

    it('mcp connections: the per-node file of earlier versions is taken over once; of two rows the newer is kept', async () => {
      const { u } = await seedUser();
      const { u: v } = await seedUser();
      const row = (o: Partial<McpConnection>): McpConnection => ({ userId: u.id, providerId: 'library', accessToken: 'at', refreshToken: 'rt', pendingState: null, pendingUrl: null, updatedAt: T0, ...o });
      // The store already holds a connection for (u, library), renewed after the file's copy was written.
      await a.mcpConnections.startSignIn(u.id, 'library', 's', 'https://hub.example/s', T0);
      await a.mcpConnections.completeSignIn(u.id, 'library', 's', 'held', 'held-rt', T0 + 5000);
      const dirA = fs.mkdtempSync(path.join(os.tmpdir(), 'damhub-legacy-mcp-'));
      const dirB = fs.mkdtempSync(path.join(os.tmpdir(), 'damhub-legacy-mcp-'));
      try {
        // Node A's file: an older copy of the held row, a pending sign-in, a row of a user that is gone.
        writeLegacyMcpFile(dirA, [
          row({ accessToken: 'older', updatedAt: T0 + 1000 }),
          row({ providerId: 'dropbox', accessToken: null, refreshToken: null, pendingState: 'st', pendingUrl: 'https://hub.example/st', updatedAt: T0 }),
          row({ userId: 'no-such-user', providerId: 'library' }),
        ]);
        // Node B's file: v's connection, made through B and never through A.
        writeLegacyMcpFile(dirB, [row({ userId: v.id, accessToken: 'v-at', refreshToken: null, updatedAt: T0 + 2000 })]);

        const fromA = await importLegacyMcpConnections(dirA, a.mcpConnections);
        assert.deepEqual(fromA, { file: path.join(dirA, LEGACY_MCP_FILE), read: 3, imported: 1 });
        assert.deepEqual(fs.readdirSync(dirA), [], 'the file (and its WAL and SHM) is removed');
        assert.equal(await importLegacyMcpConnections(dirA, a.mcpConnections), null, 'once');
        const fromB = await importLegacyMcpConnections(dirB, b.mcpConnections);
        assert.equal(fromB!.imported, 1);

        assert.deepEqual(await b.mcpConnections.get(u.id, 'library'), row({ accessToken: 'held', refreshToken: 'held-rt', updatedAt: T0 + 5000 }), 'the newer row is kept');
        assert.deepEqual(await b.mcpConnections.get(u.id, 'dropbox'), row({ providerId: 'dropbox', accessToken: null, refreshToken: null, pendingState: 'st', pendingUrl: 'https://hub.example/st' }));
        assert.deepEqual(await a.mcpConnections.get(v.id, 'library'), row({ userId: v.id, accessToken: 'v-at', refreshToken: null, updatedAt: T0 + 2000 }));
        assert.equal(await a.mcpConnections.get('no-such-user', 'library'), null);

        // A newer copy replaces an older one; importing the same rows again changes nothing.
        const newer = row({ accessToken: 'newest', updatedAt: T0 + 9000 });
        assert.equal(await a.mcpConnections.importRows([newer, row({ accessToken: 'in-between', updatedAt: T0 + 8000 })]), 1);
        assert.deepEqual(await b.mcpConnections.get(u.id, 'library'), newer);
        assert.equal(await b.mcpConnections.importRows([newer]), 0);
        assert.equal(await b.mcpConnections.importRows([]), 0);
      } finally {
        fs.rmSync(dirA, { recursive: true, force: true });
        fs.rmSync(dirB, { recursive: true, force: true });
      }
    });

    it('partners: writes are off unless given, round-trip on both nodes and change with update', async () => {
      const off = await a.partners.create(partnerInput(), T0);
      assert.equal(off.writes, false, 'off by default');
      assert.equal((await b.partners.get(off.id))!.writes, false);
      const on = await b.partners.create(partnerInput({ writes: true }), T0);
      assert.equal(on.writes, true);
      assert.equal((await a.partners.get(on.id))!.writes, true);
      assert.equal((await a.partners.getByIssuer(on.issuer))!.writes, true);
      assert.equal((await a.partners.list()).find((p) => p.id === on.id)!.writes, true);
      const turned = await a.partners.update(off.id, { writes: true }, T0 + 1);
      assert.equal(turned!.writes, true);
      assert.equal(turned!.updatedAt, T0 + 1);
      assert.equal((await b.partners.get(off.id))!.writes, true);
      // A patch of other fields keeps it; an explicit false turns it off.
      assert.equal((await b.partners.update(off.id, { rateLimitPerMin: 7 }, T0 + 2))!.writes, true);
      assert.equal((await b.partners.update(on.id, { writes: false }, T0 + 2))!.writes, false);
      assert.equal((await a.partners.list()).find((p) => p.id === on.id)!.writes, false);
    });

    it('write locks: exclusive across nodes; expiry then takeover; renew and release only with the token', async () => {
      const key = `asset:${randomUUID()}`;
      const t1 = await a.writeLocks.acquire(key, 30_000, T0);
      assert.equal(typeof t1, 'string');
      assert.equal(await b.writeLocks.acquire(key, 30_000, T0 + 1), null, 'held: the other node waits');
      assert.equal(await a.writeLocks.acquire(key, 30_000, T0 + 29_999), null, 'held by this node too: a lock is not re-entrant');
      assert.ok(await b.writeLocks.acquire(`asset:${randomUUID()}`, 30_000, T0), 'another key is independent');

      assert.equal(await b.writeLocks.renew(key, 'not-the-token', 30_000, T0 + 10_000), false);
      assert.equal(await b.writeLocks.renew(key, t1!, 30_000, T0 + 10_000), true, 'renewed (on any node) with the token');
      assert.equal(await b.writeLocks.acquire(key, 30_000, T0 + 30_000), null, 'the renewal moved the expiry to T0 + 40 s');
      await b.writeLocks.release(key, 'not-the-token');
      assert.equal(await a.writeLocks.acquire(key, 30_000, T0 + 39_999), null, 'a release without the token changes nothing');

      // Expired (the holder died): another node takes it over, and the old holder's token is dead.
      const t2 = await b.writeLocks.acquire(key, 30_000, T0 + 40_000);
      assert.ok(t2);
      assert.notEqual(t2, t1);
      assert.equal(await a.writeLocks.renew(key, t1!, 30_000, T0 + 40_001), false, 'the old holder cannot renew it');
      await a.writeLocks.release(key, t1!);
      assert.equal(await a.writeLocks.acquire(key, 30_000, T0 + 40_002), null, 'nor release it');

      await a.writeLocks.release(key, t2!);
      const t3 = await a.writeLocks.acquire(key, 30_000, T0 + 40_003);
      assert.ok(t3, 'released: free at once');
      await a.writeLocks.release(key, t3!);
    });

    it('write locks: of concurrent acquisitions of one key on two nodes, exactly one gets it', async () => {
      for (let i = 0; i < 10; i++) {
        const key = `race:${randomUUID()}`;
        const r = await Promise.all([a, b, a, b, a, b].map((s) => s.writeLocks.acquire(key, 30_000, T0)));
        assert.equal(r.filter((x) => x !== null).length, 1, `round ${i}: ${r}`);
        // Past its expiry, again exactly one of the contenders takes it over.
        const later = await Promise.all([a, b, a, b].map((s) => s.writeLocks.acquire(key, 30_000, T0 + 30_000)));
        assert.equal(later.filter((x) => x !== null).length, 1, `round ${i}, takeover: ${later}`);
      }
    });

    it('write locks: sweep leaves live locks alone', async () => {
      const key = `sweep:${randomUUID()}`;
      const t = await a.writeLocks.acquire(key, 30_000, T0);
      await b.sweep(T0 + 1000);
      assert.equal(await b.writeLocks.acquire(key, 30_000, T0 + 1000), null);
      assert.equal(await a.writeLocks.renew(key, t!, 30_000, T0 + 1000), true);
      await a.writeLocks.release(key, t!);
    });

    it('idempotency: claim new, running on the other node, done with the replayed answer; abandon; expiry', async () => {
      const scope = `p1:${randomUUID()}`;
      const exp = T0 + DAY;
      assert.deepEqual(await a.idempotency.claim(scope, 'k1', 'fp-1', T0, exp), { state: 'new' });
      assert.deepEqual(await b.idempotency.claim(scope, 'k1', 'fp-1', T0 + 1, exp), { state: 'running', fingerprint: 'fp-1' });
      assert.deepEqual(await b.idempotency.claim(scope, 'k1', 'fp-other', T0 + 1, exp), { state: 'running', fingerprint: 'fp-1' }, 'the stored fingerprint, for the caller to compare');
      const response = { status: 201, headers: { etag: '"v2"', 'content-type': 'application/json; charset=utf-8', 'damhub-asset-id': '/A/ü b.png' }, body: '{"id":"/A/ü b.png","n":"\\u0000"}' };
      await a.idempotency.finish(scope, 'k1', response);
      assert.deepEqual(await b.idempotency.claim(scope, 'k1', 'fp-1', T0 + 2, exp), { state: 'done', fingerprint: 'fp-1', response });
      await b.idempotency.abandon(scope, 'k1');
      assert.equal((await a.idempotency.claim(scope, 'k1', 'fp-1', T0 + 3, exp)).state, 'done', 'a finished answer is not abandoned');

      // Scoped: the same key of another user is another record.
      assert.deepEqual(await b.idempotency.claim(`${scope}-other`, 'k1', 'fp-9', T0, exp), { state: 'new' });

      // Abandoned (a failure a retry may repair): the next claim is new, with its own fingerprint.
      assert.deepEqual(await a.idempotency.claim(scope, 'k2', 'fp-2', T0, exp), { state: 'new' });
      await b.idempotency.abandon(scope, 'k2');
      assert.deepEqual(await b.idempotency.claim(scope, 'k2', 'fp-3', T0 + 1, exp), { state: 'new' });
      assert.deepEqual(await a.idempotency.claim(scope, 'k2', 'fp-2', T0 + 2, exp), { state: 'running', fingerprint: 'fp-3' });

      // Past its expiry a key is new again, swept or not; sweep drops expired records only.
      assert.deepEqual(await a.idempotency.claim(scope, 'k1', 'fp-4', exp, exp + DAY), { state: 'new' });
      assert.deepEqual(await a.idempotency.claim(scope, 'k3', 'fp-5', T0, T0 + 1000), { state: 'new' });
      await a.idempotency.finish(scope, 'k3', response);
      await b.sweep(T0 + 1000);
      assert.deepEqual(await b.idempotency.claim(scope, 'k3', 'fp-6', T0 + 999, exp), { state: 'new' }, 'swept: gone even for a clock before its expiry');
      assert.deepEqual(await b.idempotency.claim(scope, 'k1', 'fp-7', T0 + 1000, exp), { state: 'running', fingerprint: 'fp-4' }, 'a live record survives the sweep');
    });

    it('idempotency: of concurrent claims of one key on two nodes, exactly one is new', async () => {
      for (let i = 0; i < 10; i++) {
        const scope = `race:${randomUUID()}`;
        const r = await Promise.all([a, b, a, b, a, b].map((s, j) => s.idempotency.claim(scope, 'k', `fp-${j}`, T0, T0 + DAY)));
        const fresh = r.filter((c) => c.state === 'new');
        assert.equal(fresh.length, 1, `round ${i}: ${JSON.stringify(r)}`);
        const winner = `fp-${r.findIndex((c) => c.state === 'new')}`;
        for (const c of r) if (c.state !== 'new') assert.deepEqual(c, { state: 'running', fingerprint: winner });
        // An expired record taken over concurrently: again exactly one.
        const again = await Promise.all([a, b, a, b].map((s) => s.idempotency.claim(scope, 'k', 'fp-x', T0 + DAY, T0 + 2 * DAY)));
        assert.equal(again.filter((c) => c.state === 'new').length, 1, `round ${i}, takeover: ${JSON.stringify(again)}`);
      }
    });

    it('audit: append on either node; list newest first with since, until, partner, limit and before; prune', async () => {
      const base = T0 + 1000 * DAY;
      const entry = (at: number, requestId: string, partnerId: string, o: Partial<AuditEntry> = {}): AuditEntry => ({
        at, requestId, partnerId, userId: 'u1', providerId: 'library', accountId: null, operation: 'upload',
        targetId: null, targetIdAfter: '/A/b.png', nameBefore: null, nameAfter: 'b.png', bytes: 1234, result: 'ok', ...o,
      });
      const p1 = `p-${randomUUID()}`;
      const p2 = `p-${randomUUID()}`;
      const full = entry(base + 10, 'r-full', p1, {
        accountId: 'acc-1', operation: 'rename', targetId: '/A/ä.png', targetIdAfter: '/A/ö.png', nameBefore: 'ä.png', nameAfter: 'ö.png', bytes: 5_000_000_000, result: 'asset-exists',
      });
      const all = [
        entry(base + 1, 'r1', p1), entry(base + 2, 'r2', p2, { bytes: null, operation: 'delete' }), entry(base + 3, 'r3', p1),
        // One request may write several times (an MCP batch): same time, same request id.
        entry(base + 3, 'r4', p1, { operation: 'move' }), entry(base + 3, 'r4', p1, { operation: 'rename' }), entry(base + 5, 'r5', p2), full,
      ];
      for (const [i, e] of all.entries()) await (i % 2 ? a : b).audit.append(e);
      const list = (s: Stores, q: Partial<AuditQuery> = {}) => s.audit.list({ since: base, limit: 100, ...q });
      const key = (e: AuditEntry) => `${e.requestId}@${e.at - base}`;

      const got = await list(a);
      assert.deepEqual(got.map(key), ['r-full@10', 'r5@5', 'r4@3', 'r4@3', 'r3@3', 'r2@2', 'r1@1'], 'newest first; equal times by request id, descending');
      assert.deepEqual(got[0], full, 'every field round-trips');
      assert.deepEqual(got.find((e) => e.requestId === 'r2'), all[1]);
      assert.deepEqual(new Set(got.filter((e) => e.requestId === 'r4').map((e) => e.operation)), new Set(['move', 'rename']));

      assert.deepEqual((await list(b, { since: base + 3 })).map(key), ['r-full@10', 'r5@5', 'r4@3', 'r4@3', 'r3@3'], 'since is inclusive');
      assert.deepEqual((await list(b, { until: base + 3 })).map(key), ['r2@2', 'r1@1'], 'until is exclusive');
      assert.deepEqual((await list(b, { since: base + 2, until: base + 6 })).map(key), ['r5@5', 'r4@3', 'r4@3', 'r3@3', 'r2@2']);
      assert.deepEqual((await list(a, { partnerId: p2 })).map(key), ['r5@5', 'r2@2']);
      assert.deepEqual((await list(a, { limit: 2 })).map(key), ['r-full@10', 'r5@5']);

      // Paging: strictly older than the (at, requestId) of the last entry seen.
      const page2 = await list(b, { limit: 2, before: { at: base + 5, requestId: 'r5' } });
      assert.deepEqual(page2.map(key), ['r4@3', 'r4@3']);
      assert.deepEqual((await list(a, { limit: 2, before: { at: base + 3, requestId: 'r4' } })).map(key), ['r3@3', 'r2@2']);
      assert.deepEqual((await list(a, { before: { at: base + 3, requestId: 'r3' }, partnerId: p1 })).map(key), ['r1@1']);
      assert.deepEqual(await list(a, { before: { at: base + 1, requestId: 'r1' } }), []);

      // Retention: entries older than the cut go, on whichever node prunes.
      assert.equal(await b.audit.prune(base + 3), 2);
      assert.deepEqual((await list(a)).map(key), ['r-full@10', 'r5@5', 'r4@3', 'r4@3', 'r3@3']);
      assert.equal(await a.audit.prune(base + 3), 0);
      await a.audit.prune(base + 11);
      assert.deepEqual(await list(b), []);
    });

    it('the periodic sweep prunes the audit past its retention (DAMHUB_AUDIT_RETENTION) and keeps the rest', async () => {
      const now = T0 + 2000 * DAY;
      const e = (at: number, requestId: string): AuditEntry => ({
        at, requestId, partnerId: 'p-ret', userId: 'u', providerId: 'library', accountId: null, operation: 'delete',
        targetId: '/x', targetIdAfter: null, nameBefore: 'x', nameAfter: null, bytes: null, result: 'ok',
      });
      for (const x of [e(now - 91 * DAY, 'gone'), e(now - 90 * DAY, 'edge'), e(now - 89 * DAY, 'kept'), e(now - 6 * DAY, 'recent')]) await a.audit.append(x);
      const left = async () => (await b.audit.list({ since: now - 100 * DAY, partnerId: 'p-ret', limit: 10 })).map((x) => x.requestId);
      assert.deepEqual(await sweepStores(b, now, 90), { auditPruned: 1 });
      assert.deepEqual(await left(), ['recent', 'kept', 'edge'], 'exactly the retention is kept');
      assert.deepEqual(await sweepStores(a, now, 5), { auditPruned: 3 });
      assert.deepEqual(await left(), []);
    });

    it('uploads: create, read on the other node, advance (compare-and-set), finish, remove, expired', async () => {
      const mk = (o: Partial<UploadRecord> = {}): UploadRecord => ({
        id: randomUUID(), partnerId: 'p1', userId: 'u1', providerId: 'library', length: 10_000_000_000, offset: 0,
        metadata: { parentId: '/Brand/ü', name: 'logo ü.png', onConflict: 'version' }, location: '/data/uploads/x.part',
        createdAt: T0, expiresAt: T0 + DAY, result: null, ...o,
      });
      const u = mk();
      await a.uploads.create(u);
      assert.deepEqual(await b.uploads.get(u.id), u);
      assert.equal(await b.uploads.get('nope'), null);
      await assert.rejects(b.uploads.create(u), 'an id is created once');

      assert.equal(await b.uploads.advance(u.id, 5, 10), false, 'not at that offset');
      assert.equal(await b.uploads.advance(u.id, 0, 4096), true);
      assert.equal(await a.uploads.advance(u.id, 0, 8192), false, 'moved meanwhile');
      assert.equal((await a.uploads.get(u.id))!.offset, 4096);
      assert.equal(await a.uploads.advance('nope', 0, 1), false);

      // Concurrent PATCHes from the same offset on two nodes: one wins, the offset is the winner's.
      for (let i = 0; i < 10; i++) {
        const r = await Promise.all([a, b, a, b].map((s, j) => s.uploads.advance(u.id, 4096 + i, 4096 + i + 1 + j * 100)));
        assert.equal(r.filter(Boolean).length, 1, `round ${i}: ${r}`);
        const winner = r.indexOf(true);
        assert.equal((await b.uploads.get(u.id))!.offset, 4096 + i + 1 + winner * 100);
        await a.uploads.advance(u.id, 4096 + i + 1 + winner * 100, 4096 + i + 1);
      }

      const deferred = mk({ length: null, createdAt: T0 + 1, expiresAt: T0 + 1000 });
      await b.uploads.create(deferred);
      assert.equal((await a.uploads.get(deferred.id))!.length, null);

      const result = { status: 201, headers: { 'damhub-asset-id': '/Brand/ü/logo ü.png', 'content-type': 'application/json' }, body: '{"id":"/Brand/ü/logo ü.png"}' };
      await a.uploads.finish(u.id, result);
      assert.deepEqual((await b.uploads.get(u.id))!.result, result);
      assert.equal(await b.uploads.advance(u.id, 4106, 4200), false, 'a finished upload does not move');

      // Expired: unfinished ones past their expiry, soonest first, at most `limit`.
      const later = mk({ expiresAt: T0 + 2000 });
      await a.uploads.create(later);
      const finishedExpired = mk({ expiresAt: T0 + 500 });
      await a.uploads.create(finishedExpired);
      await b.uploads.finish(finishedExpired.id, result);
      const ours = (rs: UploadRecord[]) => rs.filter((r) => [u.id, deferred.id, later.id, finishedExpired.id].includes(r.id)).map((r) => r.id);
      assert.deepEqual(ours(await b.uploads.expired(T0 + 999, 100)), []);
      assert.deepEqual(ours(await b.uploads.expired(T0 + 1000, 100)), [deferred.id]);
      assert.deepEqual(ours(await a.uploads.expired(T0 + 5000, 100)), [deferred.id, later.id]);
      assert.deepEqual(ours(await a.uploads.expired(T0 + DAY * 2, 1000)), [deferred.id, later.id], 'a finished upload is never expired');
      assert.ok((await a.uploads.expired(T0 + DAY * 2, 1)).length <= 1);
      // The sweep drops a finished upload's record once past its expiry (it answered repeated final PATCHes until then).
      await a.sweep(T0 + 499);
      assert.ok(await b.uploads.get(finishedExpired.id), 'kept until its expiry');
      await a.sweep(T0 + 500);
      assert.equal(await b.uploads.get(finishedExpired.id), null, 'swept once expired');
      assert.ok(await b.uploads.get(later.id), 'an unfinished one is the upload sweep\'s (its part file goes with it)');

      assert.equal(await b.uploads.remove(deferred.id), true);
      assert.equal(await a.uploads.remove(deferred.id), false);
      assert.equal(await a.uploads.get(deferred.id), null);
      for (const x of [u, later, finishedExpired]) await a.uploads.remove(x.id);
    });

    it('invalidation: revocations, user and partner changes reach the listeners', async () => {
      let onA = 0;
      let onB = 0;
      a.onInvalidate(() => onA++);
      b.onInvalidate(() => onB++);
      const { p, u } = await seedUser();
      const s = await seedSession(u.id, p.id);

      const check = async (what: string, write: () => Promise<unknown>) => {
        const [a0, b0] = [onA, onB];
        await write();
        assert.ok(onB > b0, `${what}: the writing node's listener runs at once`);
        if (pair!.crossInstanceInvalidation) assert.ok(await waitFor(() => onA > a0), `${what}: the other node hears it`);
      };
      await check('session revoked', () => b.sessions.revoke(s.id, T0));
      await check('partner updated', () => b.partners.update(p.id, { enabled: false }, T0));
      await check('user removed', () => b.users.remove(u.id));
      await check('partner removed', () => b.partners.remove(p.id));
    });
  });
}
