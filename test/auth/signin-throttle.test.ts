/**
 * Online password guessing on the sign-in forms (issue 17, item 2; OWASP ASVS V2.2.1) and the
 * bounds on login states (item 9): attempts are reserved per account name, per hub user and per
 * state before the password check; throttled attempts are 429 with Retry-After whatever the
 * password; login starts and pending states are limited per user. Time moves by the ManualClock.
 * The library form runs on the embedded store; the connector kit's form on the embedded store and
 * on two hub nodes sharing PostgreSQL + Redis.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { KeyRing } from '../../src/auth/keys.js';
import { configFrom } from '../../src/cli/main.js';
import { defaultConfig } from '../../src/config.js';
import { ManualClock } from '../../src/clock.js';
import { integrationError } from '../../src/errors.js';
import { defineProvider } from '../../src/providers/kit/define.js';
import { addAccount } from '../../src/providers/library/accounts.js';
import { ClusterStores } from '../../src/stores/index.js';
import { assertError, startTestHub, tempDir, type TestHub } from '../helpers/hub.js';
import { TestBrowser } from '../helpers/browser.js';
import { startLibraryHub, type LibraryHarness, libraryOf } from '../helpers/library.js';
import { clusterEnv, type ClusterEnv } from '../helpers/stores-env.js';


async function startLogin(t: TestHub, access: string, provider = 'library'): Promise<LightMyRequestResponse> {
  return t.app.inject({ method: 'POST', url: `/api/v1/auth/login?provider=${provider}&polling=true`, headers: { authorization: `Bearer ${access}` } });
}

/** The browser that opened each state's form (test/helpers/browser.ts): its POSTs carry the login's cookie. */
const browsers = new Map<string, TestBrowser>();

async function newState(t: TestHub, access: string, provider = 'library'): Promise<string> {
  const r = await startLogin(t, access, provider);
  assert.equal(r.statusCode, 200, r.body);
  const { state, redirect_uri } = r.json();
  const browser = new TestBrowser(t);
  assert.equal((await browser.open(redirect_uri)).status, 200);
  browsers.set(state, browser);
  return state;
}

/** Posts the form from the browser that opened it (on whichever node `t` is). */
async function submit(t: TestHub, path: string, fields: Record<string, string>) {
  const browser = (browsers.get(fields.state ?? '') ?? new TestBrowser()).on(t);
  const v = await browser.post(`/api/v1${path}`, fields);
  return { statusCode: v.status, body: v.body, headers: v.headers };
}

const libSubmit = (lib: LibraryHarness, state: string, username: string, password: string) =>
  submit(lib.t, '/auth/library/signin', { state, username, password });

async function poll(t: TestHub, state: string) {
  return (await t.app.inject({ url: `/api/v1/auth/login?state=${encodeURIComponent(state)}&polling=true` })).json();
}

describe('library sign-in form (embedded store)', () => {
  let lib: LibraryHarness;
  before(async () => {
    lib = await startLibraryHub({ 'a.txt': 'x' });
    await addAccount(libraryOf(lib.t.hub).index, 'bob', 'bob password', [], lib.t.clock.now());
  });
  after(() => lib.t.close());

  test('library sign-in: failed attempts are limited per account name across login states; the 6th is 429 with Retry-After and the same page for the right password; another account signs in meanwhile; the account recovers after its window (ASVS 2.2.1)', async () => {
    const s1 = await newState(lib.t, lib.access);
    for (let i = 0; i < 4; i++) assert.equal((await libSubmit(lib, s1, 'alice', `guess-${i}`)).statusCode, 401);
    // A new login state does not give a new budget: the account name carries it.
    const s2 = await newState(lib.t, lib.access);
    assert.equal((await libSubmit(lib, s2, 'Alice ', 'guess-4')).statusCode, 401, 'case and blanks do not make a new name');
    const wrong = await libSubmit(lib, s2, 'alice', 'guess-5');
    const right = await libSubmit(lib, s2, 'alice', 'correct horse');
    for (const r of [wrong, right]) {
      assert.equal(r.statusCode, 429, r.body);
      assert.match(r.body, /Too many sign-in attempts\. Wait 3 minutes, then try again\./);
      assert.equal(r.headers['retry-after'], '180', '5 per 15 minutes: one unit back every 3 minutes');
    }
    assert.equal(right.body, wrong.body, 'the right password is not told apart while throttled');
    assert.deepEqual(await poll(lib.t, s2), {}, 'the state is still pending: the throttle is not a lockout');

    // No global lockout: another account signs in at once, on another state.
    const s3 = await newState(lib.t, lib.access);
    assert.equal((await libSubmit(lib, s3, 'bob', 'bob password')).statusCode, 200);
    assert.ok((await poll(lib.t, s3)).access_token);

    // The account recovers after its window.
    lib.t.clock.advance(179_000);
    assert.equal((await libSubmit(lib, s2, 'alice', 'correct horse')).statusCode, 429, 'not a second early');
    lib.t.clock.advance(1000);
    const ok = await libSubmit(lib, s2, 'alice', 'correct horse');
    assert.equal(ok.statusCode, 200, ok.body);
    assert.ok((await poll(lib.t, s2)).access_token);
    lib.t.clock.advance(15 * 60_000);
  });

  test('library sign-in: of ten concurrent guesses on one account name, five are checked and five are 429 without a check', async () => {
    // Three states, so that no state reaches its own limit of five and ends (which would let a late
    // request hear "already finished" before it reserves anything): the account budget decides.
    const states = [await newState(lib.t, lib.access), await newState(lib.t, lib.access), await newState(lib.t, lib.access)];
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => libSubmit(lib, states[i % 3]!, 'carol', `guess-${i}`)));
    const statuses = answers.map((r) => r.statusCode).sort();
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429, 429, 429, 429, 429], answers.map((r) => r.body.slice(-300)).join('\n'));
    for (const r of answers.filter((x) => x.statusCode === 401)) assert.match(r.body, /Wrong user name or password\./);
    for (const r of answers.filter((x) => x.statusCode === 429)) assert.match(r.body, /Wait 3 minutes/);
    for (const s of states) assert.deepEqual(await poll(lib.t, s), {}, 'throttling ends no state');
    lib.t.clock.advance(15 * 60_000);
  });

  test('library sign-in: a hub user\'s failed attempts are limited across account names and login states; other hub users are not', async () => {
    const h = await startLibraryHub({ 'a.txt': 'x' }, { config: { signInUserFailures: 6 } });
    try {
      let state = await newState(h.t, h.access);
      for (let i = 0; i < 6; i++) {
        if (i === 5) state = await newState(h.t, h.access); // the first state ended at its fifth failure
        assert.equal((await libSubmit(h, state, `name-${i}`, 'x')).statusCode, 401);
      }
      const seventh = await libSubmit(h, state, 'alice', 'correct horse');
      assert.equal(seventh.statusCode, 429, 'the right password of a fresh name, but this user has no attempts left');
      assert.equal(seventh.headers['retry-after'], '150', '6 per 15 minutes: one unit back every 150 s');
      const other = await h.t.login({ sub: 'someone-else' });
      const theirs = await newState(h.t, other.access_token);
      assert.equal((await libSubmit(h, theirs, 'alice', 'correct horse')).statusCode, 200);
    } finally {
      await h.t.close();
    }
  });

  test('POST /auth/login: starts are limited per hub user (429 hub-rate-limited with Retry-After); other users start normally', async () => {
    // Cancel in the browser that opened the form.
    const cancel = async (start: LightMyRequestResponse) => {
      const { state, redirect_uri } = start.json();
      const browser = new TestBrowser(lib.t);
      await browser.open(redirect_uri);
      browsers.set(state, browser);
      return submit(lib.t, '/auth/library/signin', { state, cancel: '1' });
    };
    const me = (await lib.t.login({ sub: 'starter' })).access_token; // a budget no other test touched
    for (let i = 0; i < 30; i++) {
      const r = await startLogin(lib.t, me);
      assert.equal(r.statusCode, 200, `start ${i}: ${r.body}`);
      assert.equal(r.headers['ratelimit-limit'], '30');
      assert.equal((await cancel(r)).statusCode, 200); // settled: no pending cap involved
    }
    const refused = await startLogin(lib.t, me);
    const body = assertError(refused, 'hub-rate-limited', 429);
    assert.match(body.error.details, /login starts of this user/);
    assert.equal(refused.headers['retry-after'], '2');
    const other = await lib.t.login({ sub: 'another-user' });
    assert.equal((await startLogin(lib.t, other.access_token)).statusCode, 200);
    lib.t.clock.advance(2000);
    assert.equal((await startLogin(lib.t, me)).statusCode, 200);
    lib.t.clock.advance(5 * 60_000);
  });

  test('POST /auth/login: pending login states are capped per user (429) and in total (503), with Retry-After; a settled or expired state frees its slot', async () => {
    const h = await startLibraryHub({ 'a.txt': 'x' }, { config: { pendingLoginsPerUser: 10, pendingLoginsTotal: 14 } });
    try {
      // The harness's own sign-in completed: it holds no slot.
      const mine: string[] = [];
      for (let i = 0; i < 10; i++) mine.push(await newState(h.t, h.access));
      h.t.clock.advance(1000);
      const over = await startLogin(h.t, h.access);
      const body = assertError(over, 'hub-rate-limited', 429);
      assert.match(body.error.details, /too many sign-ins in progress/);
      assert.equal(over.headers['retry-after'], '299', 'until the oldest pending state expires');
      assert.equal((await submit(h.t, '/auth/library/signin', { state: mine[0]!, cancel: '1' })).statusCode, 200);
      mine.push(await newState(h.t, h.access));
      // The hub-wide cap: another user fills the remaining four slots, then the hub refuses.
      const other = (await h.t.login({ sub: 'other' })).access_token;
      for (let i = 0; i < 4; i++) await newState(h.t, other);
      const full = await startLogin(h.t, other);
      assertError(full, 'hub-unavailable', 503);
      assert.ok(Number(full.headers['retry-after']) > 0);
      // Expired states free their slots, swept or not.
      h.t.clock.advance(5 * 60_000);
      assert.equal((await startLogin(h.t, h.access)).statusCode, 200);
      assert.equal((await startLogin(h.t, other)).statusCode, 200);
    } finally {
      await h.t.close();
    }
  });
});

/** A form connector whose check waits, per password, until the test lets it go. */
function gatedConnector() {
  const gates = new Map<string, { entered: () => void; hasEntered: Promise<void>; release: () => void; released: Promise<void> }>();
  let checks = 0;
  const gate = (password: string) => {
    let entered!: () => void;
    let release!: () => void;
    const g = { entered: () => entered(), hasEntered: new Promise<void>((r) => (entered = r)), release: () => release(), released: new Promise<void>((r) => (release = r)) };
    gates.set(password, g);
    return g;
  };
  const factory = defineProvider({
    id: 'gated', name: 'Gated', version: '1', glyph: 'G', paging: { defaultSize: 10, maxSize: 20 },
    credentials: (raw) => raw,
    signIn: {
      kind: 'form', title: 'signInTitle',
      fields: [{ name: 'username', label: 'userName' }, { name: 'password', label: 'password', type: 'password' }],
      async verify(v) {
        checks++;
        const g = gates.get(v.password!);
        if (g) {
          g.entered();
          await g.released;
        }
        if (v.password !== 'right') throw integrationError('integration-auth-failed', 'gated', 'wrong credentials');
        return { credentials: { u: v.username }, accountId: v.username!, displayName: v.username! };
      },
    },
    hooks: {},
  });
  return { factory, gate, checks: () => checks };
}

async function startGatedHub(clock: ManualClock, extra: { dataDir?: string; stores?: ClusterStores } = {}) {
  const c = gatedConnector();
  const provider = c.factory({ clock, keys: KeyRing.generate(0), publicUrl: 'http://hub.test' });
  const t = await startTestHub({ clock, providers: [provider], ...extra });
  return { t, ...c };
}

const kitSubmit = (t: TestHub, state: string, username: string, password: string) => submit(t, '/auth/gated/signin', { state, username, password });

test('kit sign-in form: an attempt checked while a concurrent one ended the state gets the same answer for the right password as for a wrong one', async () => {
  const { t, gate } = await startGatedHub(new ManualClock(Date.UTC(2026, 5, 1, 12)));
  try {
    const access = (await t.login()).access_token;
    const state = await newState(t, access, 'gated');
    for (let i = 0; i < 2; i++) assert.equal((await kitSubmit(t, state, 'x', `wrong-${i}`)).statusCode, 401);
    // Third, fourth and fifth attempts are in the check together; the fifth ends the state first.
    const [a, d, b] = [gate('right'), gate('wrong-d'), gate('wrong-b')];
    const rightP = kitSubmit(t, state, 'x', 'right');
    await a.hasEntered;
    const wrongP = kitSubmit(t, state, 'x', 'wrong-d');
    await d.hasEntered;
    const lastP = kitSubmit(t, state, 'x', 'wrong-b');
    await b.hasEntered;
    b.release();
    const last = await lastP;
    assert.equal(last.statusCode, 401);
    assert.match(last.body, /Too many failed attempts/);
    a.release();
    d.release();
    const [right, wrong] = await Promise.all([rightP, wrongP]);
    assert.equal(right.statusCode, wrong.statusCode, `right ${right.statusCode} ${right.body}\nwrong ${wrong.statusCode} ${wrong.body}`);
    assert.equal(right.statusCode, 400);
    assert.equal(right.body, wrong.body);
    assert.match(right.body, /already finished/);
    const p = await poll(t, state);
    assert.equal(p.access_token, undefined);
    assert.match(p.error, /too many failed/);
  } finally {
    await t.close();
  }
});

describe('kit sign-in form on the cluster stores (PostgreSQL + Redis, two hub nodes)', () => {
  let env: ClusterEnv | null = null;
  before(async () => {
    env = await clusterEnv({ what: 'the sign-in throttle cluster test' });
  });
  after(async () => {
    await env?.cleanup();
  });

  test('kit sign-in on two nodes: the account budget is shared, throttled answers are 429 whatever the password, other accounts sign in, the account recovers', async (t) => {
    if (!env) return t.skip('backing services unavailable');
    const clock = new ManualClock(Date.UTC(2026, 5, 1, 12));
    const opts = { databaseUrl: env.databaseUrl, redisUrl: env.redisUrl, keyPrefix: env.keyPrefix };
    const dataDir = tempDir(); // one key ring and hash secret for both nodes, as the cluster shares them
    const a = await startGatedHub(clock, { dataDir, stores: await ClusterStores.open(opts) });
    const b = await startGatedHub(clock, { dataDir, stores: await ClusterStores.open(opts) });
    try {
      const access = (await a.t.login()).access_token;
      const s1 = await newState(a.t, access, 'gated');
      for (let i = 0; i < 3; i++) assert.equal((await kitSubmit(a.t, s1, 'x', `w${i}`)).statusCode, 401);
      const s2 = await newState(a.t, access, 'gated');
      for (let i = 3; i < 5; i++) assert.equal((await kitSubmit(b.t, s2, 'x', `w${i}`)).statusCode, 401);
      const checked = a.checks() + b.checks();
      const wrong = await kitSubmit(b.t, s2, 'x', 'w5');
      const right = await kitSubmit(a.t, s2, 'x', 'right');
      for (const r of [wrong, right]) {
        assert.equal(r.statusCode, 429, r.body);
        assert.equal(r.headers['retry-after'], '180');
        assert.match(r.body, /Wait 3 minutes/);
      }
      assert.equal(right.body, wrong.body);
      assert.equal(a.checks() + b.checks(), checked, 'throttled attempts never reach the upstream');
      // Concurrent guesses on both nodes for a fresh account: exactly five are checked.
      const s3 = await newState(a.t, access, 'gated');
      const s4 = await newState(a.t, access, 'gated');
      const burst = await Promise.all(Array.from({ length: 10 }, (_, i) => kitSubmit(i % 2 ? a.t : b.t, i % 2 ? s3 : s4, 'y', `g${i}`)));
      assert.equal(burst.filter((r) => r.statusCode === 429).length, 5, burst.map((r) => r.statusCode).join());
      // Another account signs in meanwhile (on a new state: s3/s4 may have ended).
      const s5 = await newState(b.t, access, 'gated');
      assert.equal((await kitSubmit(b.t, s5, 'z', 'right')).statusCode, 200);
      clock.advance(180_000);
      assert.equal((await kitSubmit(b.t, s2, 'x', 'right')).statusCode, 200, 'recovered after its window');
      assert.ok((await poll(a.t, s2)).access_token);
    } finally {
      await a.t.close();
      await b.t.close();
    }
  });
});

test('the limits come from the environment; defaults as documented; a non-positive or fractional value is a usage error naming the variable', () => {
  const d = defaultConfig();
  assert.deepEqual(
    [d.signInAccountFailures, d.signInAccountWindowSec, d.signInUserFailures, d.signInUserWindowSec, d.signInStateAttempts, d.loginStartsPerMin, d.pendingLoginsPerUser, d.pendingLoginsTotal],
    [5, 900, 20, 900, 5, 30, 10, 10_000],
  );
  const c = configFrom({}, {
    DAMHUB_SIGNIN_ACCOUNT_FAILURES: '3', DAMHUB_SIGNIN_ACCOUNT_WINDOW: '600', DAMHUB_SIGNIN_USER_FAILURES: '9', DAMHUB_SIGNIN_USER_WINDOW: '1200',
    DAMHUB_SIGNIN_STATE_ATTEMPTS: '4', DAMHUB_LOGIN_STARTS_PER_MIN: '12', DAMHUB_PENDING_LOGINS_PER_USER: '2', DAMHUB_PENDING_LOGINS_TOTAL: '50',
  });
  assert.deepEqual(
    [c.signInAccountFailures, c.signInAccountWindowSec, c.signInUserFailures, c.signInUserWindowSec, c.signInStateAttempts, c.loginStartsPerMin, c.pendingLoginsPerUser, c.pendingLoginsTotal],
    [3, 600, 9, 1200, 4, 12, 2, 50],
  );
  for (const bad of ['0', '2.5', '-1', 'many']) {
    assert.throws(() => configFrom({}, { DAMHUB_SIGNIN_ACCOUNT_FAILURES: bad }), /DAMHUB_SIGNIN_ACCOUNT_FAILURES must be a/);
  }
});
