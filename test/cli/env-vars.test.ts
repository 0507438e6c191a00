/**
 * Issue 28, item 4: DAMHUB_METRICS_TOKEN was documented but never read (the test that covered it
 * built its config by hand). Here every `DAMHUB_*` variable the docs name (README.md, docs/*.md,
 * packages/*\/README.md, collected from the docs at run time) has a row, and the row starts the real
 * CLI (`node bin/damhub.js …`, configured by the environment alone) and checks that the variable
 * changes what it documents: through HTTP, the start lines, stderr, or files in the data dir.
 *
 * Adding a variable: one row in ROWS (its group, its value, its check). The groups are few process
 * starts, each with the variables of its rows that do not interact. A documented variable without
 * a row fails the first test, naming it; so does one missing from src/cli/env-vars.ts, the list
 * configFrom reads through and the unknown-variable warning checks against.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import sharp from 'sharp';
import { knownEnvNames } from '../../src/cli/env-vars.js';
import { continueToVendor, formOf, TestBrowser, type Visit } from '../helpers/browser.js';
import { startFloodDav, type FloodDav } from '../helpers/flood-dav.js';
import { tempDir } from '../helpers/hub.js';
import { meanColourModel } from '../helpers/onnx-model.js';
import { makeKey, signPartnerJwt, type TestKey } from '../helpers/partner.js';
import { assertDataLimit, CLI, freePort, REPO_ROOT, runCli } from '../helpers/process.js';
import { clusterEnv, type ClusterEnv } from '../helpers/stores-env.js';
import { call as boundedCall, type Answer } from '../helpers/cluster.js';
import { runtimeDataBaselineKb } from '../../src/images/pool.js';
import { openSqlite } from '../../src/stores/sqlite/index.js';

// ── the documented variables ────────────────────────────────────────────────────────────────
function docFiles(): string[] {
  const docs = fs.readdirSync(path.join(REPO_ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => path.join(REPO_ROOT, 'docs', f));
  const pkgs = fs.readdirSync(path.join(REPO_ROOT, 'packages')).map((p) => path.join(REPO_ROOT, 'packages', p, 'README.md')).filter((f) => fs.existsSync(f));
  return [path.join(REPO_ROOT, 'README.md'), ...docs, ...pkgs];
}

/** name → the doc files naming it (pattern names such as DAMHUB_<ID>_CLIENT_ID included). */
function documented(): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const f of docFiles()) {
    for (const m of fs.readFileSync(f, 'utf8').matchAll(/DAMHUB_[A-Z0-9_<>]*[A-Z0-9>]/g)) {
      const files = out.get(m[0]) ?? [];
      if (!files.includes(path.relative(REPO_ROOT, f))) files.push(path.relative(REPO_ROOT, f));
      out.set(m[0], files);
    }
  }
  return out;
}

// ── hubs started by the environment alone ───────────────────────────────────────────────────
interface Hub {
  /** Where it listens (from its start line). */
  url: string;
  stdout(): string;
  stderr(): string;
  child: ChildProcess;
  dataDir: string;
  stop(): Promise<number | null>;
}

async function startHub(env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<Hub> {
  // Nothing inherited from the test's own environment but PATH and the like: the rows' values alone.
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DAMHUB_') && k !== 'DATABASE_URL' && k !== 'REDIS_URL'));
  const child = spawn(process.execPath, [CLI, 'serve'], { cwd: tempDir('damhub-cwd-'), env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start in ${timeoutMs} ms:\n${out}\n${err}`)), timeoutMs);
    child.stdout!.on('data', () => {
      if (/damhub listening on \S+\n/.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before listening:\n${out}\n${err}`));
    });
  });
  return {
    url: /damhub listening on (\S+)\n/.exec(out)![1]!,
    stdout: () => out,
    stderr: () => err,
    child,
    dataDir: env.DAMHUB_DATA_DIR ?? '',
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

/** The cluster helper's bounded call, with a longer bound: a hang fails the row instead of stalling it. */
const call = (url: string, init: RequestInit & { token?: string; dam?: string } = {}): Promise<Answer> => boundedCall(url, init, 20_000);

/** A partner registered through the admin API (DAMHUB_ADMIN_KEY), and its users' sessions. */
class Partner {
  private n = 0;
  constructor(readonly hub: Hub, readonly key: TestKey, readonly issuer: string) {}
  static async register(hub: Hub, adminKey: string): Promise<Partner> {
    const key = await makeKey();
    const issuer = `https://env-${Math.random().toString(36).slice(2)}.example/`;
    const r = await call(`${hub.url}/api/v1/admin/partners`, {
      method: 'POST', token: adminKey, headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'env test', issuer, jwks: { keys: [key.publicJwk] }, rateLimit: 10_000 }),
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    return new Partner(hub, key, issuer);
  }
  /** A new hub user: its access and refresh tokens. */
  async user(): Promise<{ access: string; refresh: string }> {
    const jwt = await signPartnerJwt(Date.now(), { key: this.key, issuer: this.issuer, sub: `u${++this.n}`, email: `u${this.n}@example.com` });
    const r = await call(`${this.hub.url}/api/v1/auth/exchangeToken`, { method: 'POST', token: jwt });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return { access: r.body.access_token, refresh: r.body.refresh_token };
  }
}

/** POST /auth/login for a provider: the answer (redirect_uri and state when 200). */
function loginStart(hub: Hub, access: string, provider: string, serverUrl?: string): Promise<Answer> {
  const q = new URLSearchParams({ provider, polling: 'true', ...(serverUrl ? { serverUrl } : {}) });
  return call(`${hub.url}/api/v1/auth/login?${q}`, { method: 'POST', token: access });
}

/** A browser's visit as an Answer (the page is the body). */
const answerOf = (v: Visit): Answer => ({ status: v.status, body: v.body, headers: new Headers(Object.entries(v.headers).flatMap(([k, x]) => (x === undefined ? [] : (Array.isArray(x) ? x : [x]).map((y) => [k, y] as [string, string])))) });

/**
 * A form sign-in page opened by a browser, as a person does it: GET the login's redirect_uri (the
 * form, and the cookie binding the login to this browser), then each `submit` POSTs the form
 * with that cookie (a second submit is a second attempt on the same login).
 */
async function openForm(hub: Hub, start: Answer): Promise<(fields: Record<string, string>, withinMs?: number) => Promise<Answer>> {
  assert.equal(start.status, 200, JSON.stringify(start.body));
  const browser = new TestBrowser();
  // The page at the address the hub listens on (the core group's public URL names another host).
  const at = new URL(start.body.redirect_uri);
  const page = await browser.open(`${hub.url}${at.pathname}${at.search}`);
  assert.equal(page.status, 200, page.body);
  const form = formOf(page);
  assert.equal(form.state, start.body.state, 'the form is the login\'s');
  return async (fields, withinMs) => {
    const post = browser.post(form.action, { state: form.state, ...fields });
    if (!withinMs) return answerOf(await post);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${withinMs} ms`)), withinMs)));
    try {
      return answerOf(await Promise.race([post, late]));
    } finally {
      clearTimeout(timer);
    }
  };
}

/** The library sign-in form of a started login (POST /auth/login's answer), submitted once: its status and page. */
async function librarySignIn(hub: Hub, start: Answer, username: string, password: string): Promise<Answer> {
  return (await openForm(hub, start))({ username, password });
}

/**
 * A library DAM session of a partner allowed to write (the admin API's `writes`): the write
 * engine's own checks (size, type) answer before the library's write folders are asked.
 */
async function writer(p: Partner): Promise<{ access: string; dam: string }> {
  const list = await call(`${p.hub.url}/api/v1/admin/partners`, { token: ADMIN_KEY });
  const id = (list.body as { id: string; issuer: string }[]).find((x) => x.issuer === p.issuer)!.id;
  const on = await call(`${p.hub.url}/api/v1/admin/partners/${id}`, { method: 'PATCH', token: ADMIN_KEY, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ writes: true }) });
  assert.equal(on.status, 200, JSON.stringify(on.body));
  return damUser(p);
}

/** tus Upload-Metadata: keys with base64 values. */
const tusMeta = (m: Record<string, string>) => Object.entries(m).map(([k, v]) => `${k} ${Buffer.from(v).toString('base64')}`).join(',');
/** The DAMHUB_UPLOAD_DIR row's directory (made when its group starts). */
let uploadDir = '';

/** A library DAM token for a fresh hub user (account `alice`). */
async function damUser(p: Partner): Promise<{ access: string; dam: string }> {
  const u = await p.user();
  const s = await loginStart(p.hub, u.access, 'library');
  assert.equal(s.status, 200, JSON.stringify(s.body));
  assert.equal((await librarySignIn(p.hub, s, 'alice', ALICE_PASSWORD)).status, 200);
  const poll = await call(`${p.hub.url}/api/v1/auth/login?state=${encodeURIComponent(s.body.state)}&polling=true`);
  assert.equal(typeof poll.body.access_token, 'string', JSON.stringify(poll.body));
  return { access: u.access, dam: poll.body.access_token };
}

const imageSearch = (hub: Hub, u: { access: string; dam: string }, dataBase64: string) => call(`${hub.url}/api/v1/assets/search`, {
  method: 'POST', token: u.access, dam: u.dam, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ dataBase64 }),
});
const png = async (w: number, h: number) => sharp({ create: { width: w, height: h, channels: 3, background: { r: 200, g: 80, b: 40 } } }).png().toBuffer();
/** A 60×60 checkerboard of two tints, their red channel moved by `dRed` (a mean red of 140 + dRed). */
async function checker(dRed: number): Promise<Buffer> {
  const side = 60;
  const raw = Buffer.alloc(side * side * 3);
  for (let y = 0; y < side; y++) for (let x = 0; x < side; x++) raw.set(((x >> 3) + (y >> 3)) % 2 ? [145 + dRed, 200, 200] : [135 + dRed, 60, 60], (y * side + x) * 3);
  return sharp(raw, { raw: { width: side, height: side, channels: 3 } }).png().toBuffer();
}
const dataUri = (b: Buffer) => `data:image/png;base64,${b.toString('base64')}`;

/** Child processes of a pid (the image pool's decoders). */
function children(pid: number): number[] {
  const out: number[] = [];
  for (const task of fs.readdirSync(`/proc/${pid}/task`)) {
    const c = fs.readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
    if (c) out.push(...c.split(/\s+/).map(Number));
  }
  return out;
}

/** A start that must fail: exit code 2 and the variable named on stderr. */
async function refusedStart(env: NodeJS.ProcessEnv, name: string): Promise<void> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DAMHUB_')));
  const r = await runCli(['serve'], { ...base, DAMHUB_DATA_DIR: tempDir(), DAMHUB_PORT: '0', ...env });
  assert.notEqual(r.code, 0, `${name}: the start was not refused`);
  assert.match(r.stderr, new RegExp(name), r.stderr);
}

const ALICE_PASSWORD = 'correct horse battery';

/** A stand-in for vendors and image hosts: records requests; /hang never answers. */
class StandIn {
  readonly requests: { method: string; url: string; body: string; authorization?: string }[] = [];
  private server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', async () => {
      this.requests.push({ method: req.method!, url: req.url!, body, authorization: req.headers.authorization });
      if (req.url === '/hang') return; // never answered
      if (req.url === '/small.png') return res.writeHead(200, { 'content-type': 'image/png' }).end(await png(16, 16));
      // Enough of a Bynder portal (its scopes overview) and of a Frontify (GraphQL) for their sign-in probes.
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"groups":[],"data":{"__typename":"RootQuery"}}');
    });
  });
  url = '';
  async start(): Promise<void> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as import('node:net').AddressInfo).port}`;
  }
  close(): void {
    this.server.closeAllConnections();
    this.server.close();
  }
}

/**
 * The WebDAV servers of the media rows, each a folder of 64×48 JPEGs padded to their size:
 * `held` and `slow` send the first chunk of each GET and then wait (`held` until released),
 * `small` answers at once, `big` serves originals over the media group's thumbnail cap.
 */
/** What the DAMHUB_ORIGINAL_READS row saw, for the DAMHUB_ORIGINAL_READS_QUEUE row. */
let heldReads: { refusedWhileHeld: number; madeAfterRelease: number } | null = null;

interface Davs { held: FloodDav; slow: FloodDav; small: FloodDav; big: FloodDav }
const KiB = 1024;

/** A fresh hub user signed in to the WebDAV server at `davUrl` through its form page, as a browser does it: the folder's assets. */
async function davSession(c: Ctx, davUrl: string): Promise<{ id: string; name: string; thumbnailUrl: string; downloadUrl: string }[]> {
  const u = await c.partner.user();
  const s = await loginStart(c.hub, u.access, 'webdav', davUrl);
  const page = await (await openForm(c.hub, s))({ serverUrl: davUrl, username: 'mallory', password: 'pw' });
  assert.equal(page.status, 200, String(page.body).slice(0, 500));
  const poll = await call(`${c.hub.url}/api/v1/auth/login?state=${encodeURIComponent(s.body.state)}&polling=true`);
  assert.equal(typeof poll.body.access_token, 'string', JSON.stringify(poll.body));
  const list = await call(`${c.hub.url}/api/v1/assets/folder/root?size=500`, { token: u.access, dam: poll.body.access_token });
  assert.equal(list.status, 200, JSON.stringify(list.body));
  // The media links at the address the hub listens on (they name its public URL).
  const here = (l: string) => {
    const x = new URL(l);
    return `${c.hub.url}${x.pathname}${x.search}`;
  };
  return (list.body.assets as { id: string; name: string; thumbnailUrl: string; downloadUrl: string }[]).map((a) => ({ ...a, thumbnailUrl: here(a.thumbnailUrl), downloadUrl: here(a.downloadUrl) }));
}

/** A GET of a media link (no session: the link is the grant), its body read. */
async function media(url: string): Promise<{ status: number; headers: Headers; body: Buffer }> {
  const r = await fetch(url, { signal: AbortSignal.timeout(60_000) });
  return { status: r.status, headers: r.headers, body: Buffer.from(await r.arrayBuffer()) };
}

/** Rejects after `ms` with `why`: a guard so that a variable not applied fails its row instead of hanging it. */
function failAfter(ms: number, why: string): { promise: Promise<never>; cancel(): void } {
  let timer: NodeJS.Timeout | undefined;
  const promise = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(why)), ms)));
  return { promise, cancel: () => clearTimeout(timer) };
}

// ── the rows ───────────────────────────────────────────────────────────────────────────────
type Group = 'core' | 'signin' | 'oauth' | 'decode' | 'media' | 'cluster' | 'alone';
interface Ctx {
  hub: Hub;
  partner: Partner;
  env: NodeJS.ProcessEnv;
  standIn: StandIn;
  cluster: ClusterEnv | null;
  /** WebDAV servers an attacker controls (test/helpers/flood-dav.ts), for the media rows. */
  davs: Davs;
  /** Set by the core group's refresh-grace row before the other checks run, read after them. */
  later: (() => Promise<void>)[];
}
interface Row {
  group: Group;
  /** The variable's value for its group's start (a function: computed when the group starts). */
  value?: string | ((c: { standIn: StandIn; dirs: Record<string, string>; port: number; cluster: ClusterEnv | null }) => string);
  /** What it documents, checked against the running hub (or, for `alone`, on its own). */
  check(c: Ctx): Promise<void>;
}

const ADMIN_KEY = 'env-test-admin-key-0123456789abcdef';
const METRICS_TOKEN = 'env-test-metrics-token-0123456789';
const connectorId = (name: string) => /^DAMHUB_(.+)_(CLIENT_ID|CLIENT_SECRET|ENDPOINTS)$/.exec(name)![1]!.toLowerCase();

/** An OAuth connector's app and origins: its login goes to the replaced authorize origin with the configured client id. */
function oauthRows(id: string, endpoints: (s: string) => Record<string, string>, serverUrl?: (s: string) => string): Record<string, Row> {
  const ID = id.toUpperCase();
  // The login's redirect_uri is the hub's confirm page; its Continue (in this browser, which the
  // page gave the login's cookie) sends the browser on to the vendor's authorize URL.
  const redirect = async (c: Ctx, browser = new TestBrowser()) => {
    const u = await c.partner.user();
    const before = c.standIn.requests.length;
    const r = await loginStart(c.hub, u.access, id, serverUrl?.(c.standIn.url));
    assert.equal(r.status, 200, `${id}: ${JSON.stringify(r.body)} ${JSON.stringify(c.standIn.requests.slice(before))}`);
    assert.equal(new URL(r.body.redirect_uri).pathname, `/api/v1/auth/${id}/connect`, `${id}: the hub's confirm page first`);
    return new URL(await continueToVendor(browser, r.body.redirect_uri));
  };
  return {
    [`DAMHUB_${ID}_CLIENT_ID`]: {
      group: 'oauth', value: `client-${id}`,
      async check(c) {
        const providers = await call(`${c.hub.url}/api/v1/auth/providers`, { token: (await c.partner.user()).access });
        assert.ok((providers.body as { id: string }[]).some((p) => p.id === id), `${id} is served: ${JSON.stringify(providers.body)}`);
        assert.equal((await redirect(c)).searchParams.get('client_id'), `client-${id}`);
      },
    },
    [`DAMHUB_${ID}_ENDPOINTS`]: {
      group: 'oauth', value: ({ standIn }) => JSON.stringify(endpoints(standIn.url)),
      async check(c) {
        assert.equal((await redirect(c)).origin, c.standIn.url, `${id}: the login goes to the replaced origin`);
      },
    },
    [`DAMHUB_${ID}_CLIENT_SECRET`]: {
      group: 'oauth', value: `secret-${id}-0123456789`,
      // The callback makes the hub redeem the code at the (replaced) token endpoint with the app's secret.
      async check(c) {
        const browser = new TestBrowser();
        const u = await redirect(c, browser);
        const state = u.searchParams.get('state')!;
        const before = c.standIn.requests.length;
        // The vendor's redirect back, in the browser that pressed Continue (its cookie binds the callback).
        const back = await browser.open(`${c.hub.url}/api/v1/auth/callback/${id}?${new URLSearchParams({ code: 'the-code', state })}`);
        assert.notEqual(back.status, 403, `${id}: the callback was refused for want of the login's cookie: ${back.body.slice(0, 300)}`);
        const sent = c.standIn.requests.slice(before).map((r) => `${r.body} ${r.authorization ? decodeURIComponent(Buffer.from(r.authorization.replace(/^Basic /, ''), 'base64').toString()) : ''}`).join('\n');
        assert.match(sent, new RegExp(`secret-${id}-0123456789`), `${id}: the token request carries the client secret: ${JSON.stringify(c.standIn.requests.slice(before))}`);
      },
    },
  };
}

const ROWS: Record<string, Row> = {
  // ── core: one SQLite hub with a library, configured by the environment alone ──
  DAMHUB_HOST: { group: 'core', value: '127.0.0.2', async check(c) {
    assert.match(c.hub.url, /^http:\/\/127\.0\.0\.2:/);
    assert.equal((await call(`${c.hub.url}/healthz`)).status, 200);
  } },
  DAMHUB_PORT: { group: 'core', value: ({ port }) => String(port), async check(c) {
    assert.equal(new URL(c.hub.url).port, c.env.DAMHUB_PORT);
  } },
  DAMHUB_DATA_DIR: { group: 'core', value: ({ dirs }) => dirs.data!, async check(c) {
    assert.match(c.hub.stdout(), new RegExp(`SQLite in ${c.env.DAMHUB_DATA_DIR}`));
    assert.ok(fs.existsSync(path.join(c.env.DAMHUB_DATA_DIR!, 'library', 'library.sqlite')), 'the store and the library index are in it');
  } },
  DAMHUB_LIBRARY: { group: 'core', value: ({ dirs }) => dirs.library!, async check(c) {
    assert.match(c.hub.stdout(), new RegExp(`library: +${c.env.DAMHUB_LIBRARY} \\(2 files indexed`));
  } },
  DAMHUB_PUBLIC_URL: { group: 'core', value: ({ port }) => `http://localhost:${port}`, async check(c) {
    assert.match(c.hub.stdout(), new RegExp(`API reference: +${c.env.DAMHUB_PUBLIC_URL}/api/v1/docs`));
    const r = await loginStart(c.hub, (await c.partner.user()).access, 'library');
    assert.ok(r.body.redirect_uri.startsWith(`${c.env.DAMHUB_PUBLIC_URL}/api/v1/auth/library/signin`), r.body.redirect_uri);
  } },
  DAMHUB_METRICS_TOKEN: { group: 'core', value: METRICS_TOKEN, async check(c) {
    assert.equal((await call(`${c.hub.url}/metrics`)).status, 401, 'no token');
    assert.equal((await call(`${c.hub.url}/metrics`, { token: `${METRICS_TOKEN}x` })).status, 403, 'a wrong token');
    const ok = await call(`${c.hub.url}/metrics`, { token: METRICS_TOKEN });
    assert.equal(ok.status, 200);
    assert.match(String(ok.body), /damhub_http_requests_total/);
    assert.match(c.hub.stdout(), /\/metrics \(bearer DAMHUB_METRICS_TOKEN\)/, 'the start line says it is protected');
  } },
  DAMHUB_ADMIN_KEY: { group: 'core', value: ADMIN_KEY, async check(c) {
    assert.match(c.hub.stdout(), /admin key: +\(from DAMHUB_ADMIN_KEY\)/);
    assert.equal(fs.existsSync(path.join(c.env.DAMHUB_DATA_DIR!, 'admin.key')), false, 'none generated');
    assert.equal((await call(`${c.hub.url}/api/v1/admin/partners`, { token: ADMIN_KEY })).status, 200);
    assert.equal((await call(`${c.hub.url}/api/v1/admin/partners`, { token: `${ADMIN_KEY}x` })).status, 403);
  } },
  DAMHUB_LOG_LEVEL: { group: 'core', value: 'error', async check(c) {
    // At the default (info) every request the other rows make is logged (level 30); at error, nothing below 50.
    assert.doesNotMatch(c.hub.stdout() + c.hub.stderr(), /"level":(10|20|30|40)\b/);
    assert.match(c.hub.stdout(), /damhub listening on/, 'the start lines are not logs');
  } },
  DAMHUB_BODY_LIMIT: { group: 'core', value: '4096', async check(c) {
    const big = await call(`${c.hub.url}/api/v1/auth/exchangeToken`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ pad: 'x'.repeat(8000) }) });
    assert.equal(big.status, 413, JSON.stringify(big.body));
  } },
  DAMHUB_USER_RATE_LIMIT: { group: 'core', value: '3', async check(c) {
    const u = await damUser(c.partner);
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await call(`${c.hub.url}/api/v1/assets/folder/root`, { token: u.access, dam: u.dam })).status);
    assert.deepEqual(statuses, [200, 200, 200, 429]);
  } },
  DAMHUB_REFRESH_GRACE: { group: 'core', value: '0', async check(c) {
    // Rotated now; used again after the other rows (well past a grace of 0 s): a reuse. (Default 60: answered.)
    const u = await c.partner.user();
    const r1 = await call(`${c.hub.url}/api/v1/auth/refreshToken`, { token: u.access, dam: u.refresh });
    assert.equal(r1.status, 200);
    c.later.push(async () => {
      const again = await call(`${c.hub.url}/api/v1/auth/refreshToken`, { token: u.access, dam: u.refresh });
      assert.equal(again.status, 403, `grace 0: ${JSON.stringify(again.body)}`);
    });
  } },
  DAMHUB_IMAGE_MAX_BYTES: { group: 'core', value: '3000', async check(c) {
    const r = await imageSearch(c.hub, await damUser(c.partner), dataUri(Buffer.concat([await png(8, 8), Buffer.alloc(4000)])));
    assert.equal(r.status, 413, JSON.stringify(r.body));
  } },
  DAMHUB_IMAGE_MAX_PIXELS: { group: 'core', value: '2500', async check(c) {
    const r = await imageSearch(c.hub, await damUser(c.partner), dataUri(await png(60, 60)));
    assert.equal(r.status, 413, JSON.stringify(r.body));
    assert.match(r.body.error.details, /3600 pixels|60×60 pixels, over the limit of 2500/);
  } },
  DAMHUB_IMAGE_DECODE_BUDGET: { group: 'core', value: '1000', async check(c) {
    const r = await imageSearch(c.hub, await damUser(c.partner), dataUri(await png(40, 40)));
    assert.equal(r.status, 413, JSON.stringify(r.body));
    assert.match(r.body.error.details, /decode budget/);
    assert.equal((await imageSearch(c.hub, await damUser(c.partner), dataUri(await png(16, 16)))).status, 200, 'within the budget');
  } },
  DAMHUB_IMAGE_FETCH_ALLOW: { group: 'core', value: '127.0.0.1', async check(c) {
    const r = await imageSearch(c.hub, await damUser(c.partner), `${c.standIn.url}/small.png`);
    assert.equal(r.status, 200, `a loopback reference URL is fetched: ${JSON.stringify(r.body)}`);
  } },
  DAMHUB_IMAGE_FETCH_TIMEOUT: { group: 'core', value: '300', async check(c) {
    const r = await imageSearch(c.hub, await damUser(c.partner), `${c.standIn.url}/hang`);
    assert.ok(r.status >= 400 && r.status < 500, JSON.stringify(r.body));
    assert.match(JSON.stringify(r.body), /300 ?ms|timed out|time/i);
  } },
  DAMHUB_IMAGE_POOL_SIZE: { group: 'core', value: '1', async check(c) {
    await imageSearch(c.hub, await damUser(c.partner), dataUri(await png(16, 16)));
    assert.equal(children(c.hub.child.pid!).length, 1, 'one decoder process');
  } },
  DAMHUB_PAGE_CACHE_MB: { group: 'core', value: '0', async check(c) {
    // The cache answers a page again with the exact bytes it sent before, sealed cursor included
    // (sealed with a fresh nonce each time a page is made). Off: the same page is made again.
    const u = await damUser(c.partner);
    const page = () => call(`${c.hub.url}/api/v1/assets/folder/root?size=1`, { token: u.access, dam: u.dam });
    const [a, b] = [await page(), await page()];
    assert.equal(a.status, 200, JSON.stringify(a.body));
    assert.equal(b.status, 200, JSON.stringify(b.body));
    assert.deepEqual(b.body.assets.map((x: { id: string }) => x.id), a.body.assets.map((x: { id: string }) => x.id), 'the same page');
    assert.equal(typeof a.body.more, 'string', `a next page: ${JSON.stringify(a.body)}`);
    assert.notEqual(b.body.more, a.body.more, 'the page was made again (a cached answer repeats the first one\'s bytes)');
  } },
  DAMHUB_IMAGE_INDEX_DECODE_BUDGET: { group: 'core', value: '1000', async check(c) {
    // The library holds a 40×40 image: over 1000 pixel-equivalents, indexed without renditions.
    assert.match(c.hub.stderr(), /big\.png is indexed without renditions: .*decode budget/);
  } },
  DAMHUB_METRIC_TOKEN: { group: 'core', value: 'a typo', async check(c) {
    // README's example of a typo: named at start, with the variable it was probably meant to be.
    assert.match(c.hub.stderr(), /damhub: warning: unknown environment variable DAMHUB_METRIC_TOKEN \(did you mean DAMHUB_METRICS_TOKEN\?\): it is ignored/);
  } },
  DAMHUB_MCP_ISSUER: { group: 'core', value: 'https://as.example', async check(c) {
    const r = await call(`${c.hub.url}/.well-known/oauth-protected-resource/mcp`);
    assert.equal(r.status, 200, 'MCP over HTTP is on');
    assert.deepEqual(r.body.authorization_servers, ['https://as.example']);
  } },
  DAMHUB_MCP_JWKS_URL: { group: 'core', value: ({ standIn }) => `${standIn.url}/jwks`, async check(c) {
    // A token of the issuer makes the hub fetch the JWKS from there.
    const before = c.standIn.requests.filter((r) => r.url === '/jwks').length;
    const key = await makeKey();
    const jwt = await signPartnerJwt(Date.now(), { key, issuer: 'https://as.example', sub: 'x', email: 'x@example.com', audience: `${c.env.DAMHUB_PUBLIC_URL}/mcp` });
    await call(`${c.hub.url}/mcp`, { method: 'POST', token: jwt, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{"jsonrpc":"2.0","id":1,"method":"ping"}' });
    assert.ok(c.standIn.requests.filter((r) => r.url === '/jwks').length > before, 'the JWKS was fetched from DAMHUB_MCP_JWKS_URL');
  } },

  DAMHUB_MAX_UPLOAD_BYTES: { group: 'core', value: '100', async check(c) {
    const w = await writer(c.partner);
    const r = await call(`${c.hub.url}/api/v1/assets/upload?parentId=root&name=big.txt`, { method: 'POST', token: w.access, headers: { 'provider-authorization': `Bearer ${w.dam}`, 'content-type': 'text/plain' }, body: 'x'.repeat(200) });
    assert.equal(r.status, 413, JSON.stringify(r.body));
    assert.match(r.body.error.details, /limit is 100 bytes \(DAMHUB_MAX_UPLOAD_BYTES\)/);
  } },
  DAMHUB_UPLOAD_EXTENSIONS: { group: 'core', value: 'png, .JPG', async check(c) {
    const w = await writer(c.partner);
    const r = await call(`${c.hub.url}/api/v1/assets/upload?parentId=root&name=notes.txt`, { method: 'POST', token: w.access, headers: { 'provider-authorization': `Bearer ${w.dam}`, 'content-type': 'text/plain' }, body: 'hi' });
    assert.equal(r.status, 415, JSON.stringify(r.body));
    assert.match(r.body.error.details, /allowed: \.png, \.jpg/);
  } },
  DAMHUB_UPLOAD_EXPIRY: { group: 'core', value: '90s', async check(c) {
    // A tus upload's Upload-Expires is its creation plus the expiry (default 24 h).
    const w = await writer(c.partner);
    const r = await call(`${c.hub.url}/api/v1/uploads`, { method: 'POST', token: w.access, dam: w.dam, headers: { 'tus-resumable': '1.0.0', 'upload-length': '10', 'upload-metadata': tusMeta({ parentId: 'root', name: 'expiry.png' }) } });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const lifetime = Date.parse(r.headers.get('upload-expires')!) - Date.parse(r.headers.get('date')!);
    assert.ok(lifetime >= 88_000 && lifetime <= 91_000, `expires ${lifetime} ms after creation`);
  } },
  DAMHUB_UPLOAD_DIR: { group: 'core', value: () => (uploadDir = tempDir('damhub-env-uploads-')), async check(c) {
    // The bytes of an unfinished tus upload wait in a part file there (default <data dir>/uploads).
    const w = await writer(c.partner);
    const r = await call(`${c.hub.url}/api/v1/uploads`, {
      method: 'POST', token: w.access, dam: w.dam, body: 'fives',
      headers: { 'tus-resumable': '1.0.0', 'upload-length': '10', 'upload-metadata': tusMeta({ parentId: 'root', name: 'parts.png' }), 'content-type': 'application/offset+octet-stream' },
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(r.headers.get('upload-offset'), '5');
    const id = new URL(r.headers.get('location')!).pathname.split('/').pop()!;
    assert.equal(fs.readFileSync(path.join(uploadDir, `${id}.part`), 'utf8'), 'fives');
  } },
  DAMHUB_AUDIT_RETENTION: { group: 'core', value: ({ dirs }) => {
    // Two writes in the data dir's audit before the hub starts: three days old and an hour old.
    // The hub sweeps at start: with a retention of 2 days (default 90) the older one goes.
    const db = openSqlite(path.join(dirs.data!, 'hub.sqlite'));
    const add = db.prepare(`INSERT INTO audit_log (at, request_id, partner_id, user_id, provider_id, operation, result) VALUES (?, ?, 'p', 'u', 'library', 'upload', 'ok')`);
    add.run(Date.now() - 3 * 86_400_000, 'audit-three-days');
    add.run(Date.now() - 3600_000, 'audit-an-hour');
    db.close();
    return '2';
  }, async check(c) {
    const r = await call(`${c.hub.url}/api/v1/admin/audit?since=0&partnerId=p`, { token: ADMIN_KEY });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body.entries.map((e: { requestId: string }) => e.requestId), ['audit-an-hour']);
  } },

  // ── signin: sign-in and login-state bounds, over the generated demo library (DAMHUB_DEMO) ──
  DAMHUB_DEMO: { group: 'signin', value: '1', async check(c) {
    assert.equal((await call(`${c.hub.url}/demo`)).status, 200);
    assert.match(c.hub.stdout(), /library login: +demo \/ demo-password/);
  } },
  DAMHUB_SIGNIN_STATE_ATTEMPTS: { group: 'signin', value: '1', async check(c) {
    const s = await loginStart(c.hub, (await c.partner.user()).access, 'library');
    const submit = await openForm(c.hub, s);
    assert.equal((await submit({ username: 'alice', password: 'wrong' })).status, 401);
    const right = await submit({ username: 'alice', password: ALICE_PASSWORD });
    assert.notEqual(right.status, 200, 'one failed attempt ended the state');
  } },
  DAMHUB_SIGNIN_ACCOUNT_FAILURES: { group: 'signin', value: '1', async check(c) {
    const u = await c.partner.user();
    const s1 = await loginStart(c.hub, u.access, 'library');
    assert.equal((await librarySignIn(c.hub, s1, 'nobody-a', 'wrong')).status, 401);
    const s2 = await loginStart(c.hub, (await c.partner.user()).access, 'library');
    const again = await librarySignIn(c.hub, s2, 'nobody-a', 'wrong');
    assert.equal(again.status, 429, 'the second failure of the account (from another hub user) is throttled');
  } },
  DAMHUB_SIGNIN_ACCOUNT_WINDOW: { group: 'signin', value: '7200', async check(c) {
    const s1 = await loginStart(c.hub, (await c.partner.user()).access, 'library');
    await librarySignIn(c.hub, s1, 'nobody-b', 'wrong');
    const s2 = await loginStart(c.hub, (await c.partner.user()).access, 'library');
    // One failure per 7200 s: the wait is two hours (the default, 5 per 900 s, waits 3 minutes).
    assert.match(String((await librarySignIn(c.hub, s2, 'nobody-b', 'wrong')).body), /Wait 120 minutes/);
  } },
  DAMHUB_SIGNIN_USER_FAILURES: { group: 'signin', value: '2', async check(c) {
    const u = await c.partner.user();
    const statuses: number[] = [];
    for (const acct of ['nobody-c1', 'nobody-c2', 'nobody-c3']) {
      const s = await loginStart(c.hub, u.access, 'library');
      statuses.push((await librarySignIn(c.hub, s, acct, 'wrong')).status);
    }
    assert.deepEqual(statuses, [401, 401, 429], 'the third failure of one hub user, each on a fresh account');
  } },
  DAMHUB_SIGNIN_USER_WINDOW: { group: 'signin', value: '3000', async check(c) {
    const u = await c.partner.user();
    let last: Answer | null = null;
    for (const acct of ['nobody-d1', 'nobody-d2', 'nobody-d3']) {
      const s = await loginStart(c.hub, u.access, 'library');
      last = await librarySignIn(c.hub, s, acct, 'wrong');
    }
    assert.match(String(last!.body), /Wait 25 minutes/, '3000 s / 2 failures');
  } },
  DAMHUB_LOGIN_STARTS_PER_MIN: { group: 'signin', value: '4', async check(c) {
    const u = await c.partner.user();
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const s = await loginStart(c.hub, u.access, 'library');
      statuses.push(s.status);
      if (s.status === 200) await librarySignIn(c.hub, s, 'demo', 'demo-password'); // settles it: only the start rate counts
    }
    assert.deepEqual(statuses, [200, 200, 200, 200, 429]);
  } },
  DAMHUB_PENDING_LOGINS_PER_USER: { group: 'signin', value: '2', async check(c) {
    const u = await c.partner.user();
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await loginStart(c.hub, u.access, 'library')).status);
    assert.deepEqual(statuses, [200, 200, 429]);
  } },


  // ── oauth: every OAuth connector's app and origins replaced by a stand-in, the kit connectors ──
  ...oauthRows('dropbox', (s) => ({ authorize: `${s}/oauth2/authorize`, token: `${s}/oauth2/token`, api: s })),
  ...oauthRows('gdrive', (s) => ({ authorize: `${s}/o/oauth2/v2/auth`, token: `${s}/token`, api: s })),
  ...oauthRows('box', (s) => ({ authorize: `${s}/api/oauth2/authorize`, token: `${s}/oauth2/token`, api: `${s}/2.0` })),
  ...oauthRows('microsoft365', (s) => ({ authorize: `${s}/common/oauth2/v2.0/authorize`, token: `${s}/common/oauth2/v2.0/token`, graph: `${s}/v1.0` })),
  ...oauthRows('bynder', (s) => ({ portal: s })),
  ...oauthRows('frontify', (s) => ({ tenant: s })),
  ...oauthRows('canto', (s) => ({ oauth: s }), (s) => s),
  DAMHUB_OAUTH_PKCE_SECRET: { group: 'oauth', value: 'pkce-secret-of-the-env-test-0123456789', async check(c) {
    assert.equal(fs.existsSync(path.join(c.env.DAMHUB_DATA_DIR!, 'oauth-pkce.key')), false, 'none generated into the data dir');
  } },
  DAMHUB_CONNECTORS: { group: 'oauth', value: 'webdav,s3,cloudinary', async check(c) {
    const providers = await call(`${c.hub.url}/api/v1/auth/providers`, { token: (await c.partner.user()).access });
    for (const id of ['webdav', 's3', 'cloudinary']) assert.ok((providers.body as { id: string }[]).some((p) => p.id === id), id);
  } },
  DAMHUB_CONNECTOR_ALLOW_HOSTS: { group: 'oauth', value: '127.0.0.1', async check(c) {
    // The WebDAV sign-in reaches the stand-in on loopback (refused without it).
    const before = c.standIn.requests.length;
    await webdavSignIn(c, `${c.standIn.url}/dav/`);
    assert.ok(c.standIn.requests.slice(before).some((r) => r.url.startsWith('/dav')), 'the connector reached the loopback server');
  } },
  DAMHUB_CONNECTOR_TIMEOUT_MS: { group: 'oauth', value: '200', async check(c) {
    // A server that never answers: the sign-in page says so well within 10 s (the default deadline, 15 s, would not).
    const page = await webdavSignIn(c, `${c.standIn.url}/hang`, 10_000);
    assert.match(String(page.body), /could not be used: The asset library is unavailable/);
  } },
  DAMHUB_CLOUDINARY_ENDPOINTS: { group: 'oauth', value: ({ standIn }) => JSON.stringify({ api: `${standIn.url}/cld`, res: `${standIn.url}/res` }), async check(c) {
    const u = await c.partner.user();
    const s = await loginStart(c.hub, u.access, 'cloudinary');
    const submit = await openForm(c.hub, s);
    const before = c.standIn.requests.length;
    const page = await submit({ cloud: 'demo', key: '1234', secret: 'secret' });
    assert.notEqual(page.status, 403, `the form POST was refused: ${String(page.body).slice(0, 300)}`);
    assert.ok(c.standIn.requests.slice(before).some((r) => r.url.startsWith('/cld')), 'the sign-in checked the key at the replaced api origin');
  } },
  DAMHUB_CLOUDINARY_CLIENT_ID: { group: 'oauth', value: 'no-such-app', async check(c) {
    // Documented as not existing (Cloudinary has no OAuth app): named as unknown at start.
    assert.match(c.hub.stderr(), /unknown environment variable DAMHUB_CLOUDINARY_CLIENT_ID/);
  } },

  // ── decode: decoder deadlines at 1 ms ──
  DAMHUB_IMAGE_DECODE_TIMEOUT: { group: 'decode', value: '1', async check(c) {
    const r = await imageSearch(c.hub, await damUser(c.partner), dataUri(await png(400, 400)));
    assert.equal(r.status, 413, JSON.stringify(r.body));
    assert.match(r.body.error.details, /decoder was stopped/);
  } },
  DAMHUB_IMAGE_INDEX_DECODE_TIMEOUT: { group: 'decode', value: '1', async check(c) {
    assert.match(c.hub.stderr(), /big\.png is indexed without renditions/);
  } },
  DAMHUB_IMAGE_POOL_QUEUE: { group: 'decode', value: '0', async check(c) {
    // One decoder (DAMHUB_IMAGE_POOL_SIZE=1 in this group) and no queue: of concurrent decodes, some are turned away.
    const u = await damUser(c.partner);
    const big = dataUri(await png(2000, 2000));
    const answers = await Promise.all(Array.from({ length: 6 }, () => imageSearch(c.hub, u, big)));
    assert.ok(answers.some((a) => a.status === 503 && a.body.errorCode === 'hub-unavailable'), JSON.stringify(answers.map((a) => a.status)));
  } },

  DAMHUB_THUMBNAIL_TIMEOUT: { group: 'decode', value: '1500', async check(c) {
    // An original whose body never ends (the upstream sends its first chunk and waits): cut at the
    // time budget, a generic icon that says so (default 20000 ms).
    const [a] = await davSession(c, c.davs.slow.url);
    const t = await media(a!.thumbnailUrl);
    assert.equal(t.status, 200);
    assert.equal(t.headers.get('x-damhub-thumbnail'), 'icon');
    assert.match(t.headers.get('x-damhub-thumbnail-reason') ?? '', /the upstream body did not end within 1500 ms/);
  } },
  DAMHUB_PENDING_LOGINS_TOTAL: { group: 'decode', value: '3', async check(c) {
    // The rows before settled their logins: three pending ones from three users fill the hub, a fourth waits.
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await loginStart(c.hub, (await c.partner.user()).access, 'library')).status);
    assert.deepEqual(statuses, [200, 200, 200, 503]);
  } },

  // ── media: the WebDAV connector against servers an attacker controls (flood-dav.ts), and the library ──
  DAMHUB_ORIGINAL_READS: { group: 'media', value: '1', async check(c) {
    // One read at a time hub-wide: while one thumbnail's upstream answer is held, of two more
    // thumbnails one waits for the slot (DAMHUB_ORIGINAL_READS_QUEUE=1) and the other is 503 at
    // once, and the upstream has seen one GET. Released: the held one and the waiting one are made.
    const dav = c.davs.held;
    const [a, b, x] = await davSession(c, dav.url);
    const held = media(a!.thumbnailUrl);
    await dav.whenOpen(1);
    const more = [media(b!.thumbnailUrl), media(x!.thumbnailUrl)];
    const guard = failAfter(20_000, 'neither of the two thumbnails past the bound was refused (the queue did not end at 1)');
    try {
      const first = await Promise.race([...more, dav.whenOpen(2).then(() => Promise.reject(new Error(`a second upstream read started (${dav.stats.gets} GETs): the bound is not 1`))), guard.promise]);
      assert.equal(first.status, 503, first.body.toString('utf8'));
      assert.equal(first.headers.get('retry-after'), '1');
      assert.equal(JSON.parse(first.body.toString('utf8')).error.code, 'hub-unavailable');
      assert.equal(dav.stats.gets, 1, 'one upstream read');
    } finally {
      guard.cancel();
      dav.release();
    }
    const all = await Promise.all([held, ...more]);
    assert.deepEqual(all.map((r) => r.status).sort(), [200, 200, 503], 'the held one and the waiting one are made');
    assert.equal(dav.stats.gets, 2, 'the refused one never reached the upstream');
    heldReads = { refusedWhileHeld: 1, madeAfterRelease: all.filter((r) => r.status === 200).length - 1 };
  } },
  DAMHUB_ORIGINAL_READS_QUEUE: { group: 'media', value: '1', async check(c) {
    // The scenario of DAMHUB_ORIGINAL_READS above (one slot, taken): one more waited and was made
    // after the release, the next was refused at once (the default queue, 16, would hold both and
    // that row then fails at its guard, naming the queue).
    void c;
    assert.deepEqual(heldReads, { refusedWhileHeld: 1, madeAfterRelease: 1 }, 'one waited, one was refused');
  } },
  DAMHUB_MEDIA_RATE_LIMIT_PER_LINK: { group: 'media', value: '1', async check(c) {
    const [a] = await davSession(c, c.davs.small.url);
    assert.equal((await media(a!.thumbnailUrl)).status, 200);
    const again = await media(a!.thumbnailUrl);
    assert.equal(again.status, 429, 'the second request of one link in a minute');
    assert.equal(again.headers.get('ratelimit-limit'), '1');
    assert.equal(JSON.parse(again.body.toString('utf8')).error.code, 'hub-rate-limited');
  } },
  DAMHUB_MEDIA_RATE_LIMIT_PER_USER: { group: 'media', value: '3', async check(c) {
    // Each link once (within the per-link budget): the user's fourth request, over all their links, is refused.
    const assets = await davSession(c, c.davs.small.url);
    const statuses = [];
    for (const url of [assets[1]!.thumbnailUrl, assets[2]!.downloadUrl, assets[3]!.thumbnailUrl]) statuses.push((await media(url)).status);
    assert.deepEqual(statuses, [200, 200, 200]);
    const fourth = await media(assets[4]!.thumbnailUrl);
    assert.equal(fourth.status, 429, 'the fourth request of one hub user');
    assert.equal(fourth.headers.get('ratelimit-limit'), '3');
    assert.equal(JSON.parse(fourth.body.toString('utf8')).error.code, 'hub-rate-limited');
    const other = await davSession(c, c.davs.small.url);
    assert.equal((await media(other[4]!.thumbnailUrl)).status, 200, 'another hub user has a budget of their own');
  } },
  DAMHUB_THUMBNAIL_CACHE_BYTES: { group: 'media', value: '0', async check(c) {
    // Two hub users signed in to the same server with the same credentials share cache entries
    // (the key is the connection's account scope, not the hub user): with no disk cache the second
    // thumbnail is made again from a second upstream read.
    const dav = c.davs.small;
    const name = (await davSession(c, dav.url))[5]!;
    const before = dav.stats.gets;
    const first = await media(name.thumbnailUrl);
    assert.equal(first.headers.get('x-damhub-thumbnail'), 'made');
    const second = await media((await davSession(c, dav.url))[5]!.thumbnailUrl);
    assert.equal(second.status, 200);
    assert.equal(second.headers.get('x-damhub-thumbnail'), 'made', 'not served from a cache');
    assert.equal(dav.stats.gets - before, 2, 'two upstream reads');
    const dir = path.join(c.env.DAMHUB_DATA_DIR!, 'thumbnails', 'webdav');
    assert.deepEqual(fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => !f.startsWith('.')) : [], [], 'nothing on disk');
  } },
  DAMHUB_THUMBNAIL_MAX_BYTES: { group: 'media', value: String(1024 * KiB), async check(c) {
    // An original of 2 MiB (declared): refused before reading, a generic icon naming the cap (default 50 MiB: made).
    const [a] = await davSession(c, c.davs.big.url);
    const t = await media(a!.thumbnailUrl);
    assert.equal(t.status, 200);
    assert.equal(t.headers.get('x-damhub-thumbnail'), 'icon');
    assert.match(t.headers.get('x-damhub-thumbnail-reason') ?? '', new RegExp(`the original is ${2048 * KiB} bytes, over the thumbnail cap of ${1024 * KiB}`));
  } },
  DAMHUB_IMAGE_DECODER_MEMORY_MB: { group: 'media', value: '512', async check(c) {
    // After a decode the pool's processes run under a data limit of 512 MiB above the runtime's own (default 1024).
    assert.equal((await imageSearch(c.hub, await damUser(c.partner), dataUri(await png(16, 16)))).status, 200);
    const decoders = children(c.hub.child.pid!);
    assert.ok(decoders.length >= 1, 'decoder processes');
    // 512 MiB for the work on top of what this Node binary reserves by itself (the hub runs the same binary).
    for (const pid of decoders) assertDataLimit(pid, 512, runtimeDataBaselineKb());
    await refusedStart({ DAMHUB_IMAGE_DECODER_MEMORY_MB: '100' }, 'DAMHUB_IMAGE_DECODER_MEMORY_MB');
  } },
  DAMHUB_IMAGE_MODEL_WEIGHT: { group: 'media', value: '0', async check(c) {
    // The media group's model (DAMHUB_IMAGE_MODEL: test/helpers/onnx-model.ts, an embedding of the
    // mean red alone, so its cosine is 1 or -1 by the side of the mean red) calls the reference, the
    // library's tint.png with its red lowered by 30, the opposite of tint.png; the descriptors call
    // them near-duplicates. Weight 0 ranks by the descriptors alone: found. (At the default 0.5 the
    // score is at most 0.5 · (descriptor + boost) − 0.5, under the cut-off of 0.60.)
    const r = await imageSearch(c.hub, await damUser(c.partner), dataUri(await checker(-30)));
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.ok(r.body.assets.some((a: { name: string }) => a.name === 'tint.png'), `found by the descriptors alone: ${JSON.stringify(r.body.assets.map((a: { name: string }) => a.name))}`);
    await refusedStart({ DAMHUB_IMAGE_MODEL_WEIGHT: '2' }, 'DAMHUB_IMAGE_MODEL_WEIGHT must be between 0 and 1');
  } },
  DAMHUB_IMAGE_INDEX_MAX_PIXELS: { group: 'media', value: '4000', async check(c) {
    // 80×60 = 4800 declared pixels: a reference is refused (413), a library file indexed without
    // renditions; the connectors' 64×48 originals (3072) are still made (the rows above).
    const jpeg = await sharp({ create: { width: 80, height: 60, channels: 3, background: '#3a7' } }).jpeg().toBuffer();
    const r = await imageSearch(c.hub, await damUser(c.partner), `data:image/jpeg;base64,${jpeg.toString('base64')}`);
    assert.equal(r.status, 413, JSON.stringify(r.body));
    assert.match(r.body.error.details, /80×60 pixels, over the limit of 4000/);
    assert.match(c.hub.stderr(), /library file wide\.png is indexed without renditions: .*80×60 pixels, over the limit of 4000/);
  } },

  // ── cluster: PostgreSQL + Redis ──
  DAMHUB_REDIS_PREFIX: { group: 'cluster', value: ({ cluster }) => cluster!.keyPrefix, async check(c) {
    const { Redis } = await import('ioredis');
    const r = new Redis(c.cluster!.redisUrl);
    try {
      await c.partner.user(); // a replay key and a rate-limit key
      const keys = await r.keys(`${c.cluster!.keyPrefix}*`);
      assert.ok(keys.length > 0, 'keys under the prefix');
    } finally {
      r.disconnect();
    }
  } },
  DAMHUB_LIBRARY_LEASE_SEC: { group: 'cluster', value: '37', async check(c) {
    const db = new pg.Client({ connectionString: c.cluster!.databaseUrl });
    await db.connect();
    try {
      const row = (await db.query('SELECT expires_at FROM library_lease')).rows[0];
      assert.ok(row, 'the lease is held');
      // Renewed every third of its life: between 2/3 and all of 37 s ahead (the default, 15 s, never more than 15 s).
      const ahead = Number(row.expires_at) - Date.now();
      assert.ok(ahead > 20_000 && ahead <= 37_500, `a lease of 37 s: expires in ${ahead} ms`);
    } finally {
      await db.end();
    }
  } },
  DAMHUB_LIBRARY_RESCAN_SEC: { group: 'cluster', value: '1', async check(c) {
    // A change no file-system event reports (as on a network file system): the index's record of
    // notes.txt made stale behind the watcher's back. The indexer's periodic rescan finds the
    // size/mtime mismatch and indexes the file again, within seconds at 1 s (the default, 60 s,
    // would not within the deadline). Polled, not timed.
    const db = new pg.Client({ connectionString: c.cluster!.databaseUrl });
    await db.connect();
    try {
      const mtime = async () => (await db.query("SELECT mtime_ms FROM library_assets WHERE rel_path = 'notes.txt'")).rows[0]?.mtime_ms;
      const real = Number(await mtime());
      assert.ok(real > 0, 'notes.txt is indexed');
      await db.query("UPDATE library_assets SET mtime_ms = 1 WHERE rel_path = 'notes.txt'");
      const deadline = Date.now() + 20_000;
      while (Number(await mtime()) !== real) {
        assert.ok(Date.now() < deadline, 'no rescan within 20 s');
        await new Promise((r) => setTimeout(r, 200));
      }
    } finally {
      await db.end();
    }
  } },

  // ── alone: own process or command each ──
  DAMHUB_IMAGE_MODEL: { group: 'alone', async check() {
    const r = await runCli(['serve'], { DAMHUB_DATA_DIR: tempDir(), DAMHUB_PORT: '0', DAMHUB_LIBRARY: tempDir(), DAMHUB_IMAGE_MODEL: '/nonexistent/model.onnx' });
    assert.equal(r.code, 1, 'a missing model stops the start');
    assert.match(r.stderr, /model\.onnx/);
  } },
  DAMHUB_USER_PASSWORD: { group: 'alone', async check() {
    const data = tempDir();
    const add = await runCli(['users', 'add', 'carol', '--data', data], { DAMHUB_USER_PASSWORD: 'from the environment' });
    assert.equal(add.code, 0, add.stderr);
    assert.match((await runCli(['users', 'list', '--data', data])).stdout, /^carol\t/m);
  } },
  DAMHUB_TRUSTED_PROXIES: { group: 'alone', async check() {
    // Its own hub at info (the groups log at error): the request log line's `ip` is the
    // X-Forwarded-For client for a request from 127.0.0.1, the socket address from 127.0.0.5
    // (by default no address is trusted: test/cli/operating.test.ts). A bad entry stops the start.
    const hub = await startHub({ DAMHUB_DATA_DIR: tempDir(), DAMHUB_PORT: String(await freePort()), DAMHUB_LOG_LEVEL: 'info', DAMHUB_TRUSTED_PROXIES: '10.0.0.0/8, 127.0.0.1' });
    try {
      const ipOf = async (from: string, id: string) => {
        await new Promise<void>((resolve, reject) => {
          http.get(`${hub.url}/api/v1/auth/providers`, { localAddress: from, headers: { 'x-forwarded-for': '198.51.100.4', 'x-request-id': id } }, (res) => res.resume().on('end', resolve)).on('error', reject);
        });
        const until = Date.now() + 10_000;
        for (;;) {
          const line = hub.stdout().split('\n').find((l) => l.includes(`"id":"${id}"`));
          if (line) return JSON.parse(line).req.ip;
          assert.ok(Date.now() < until, `no log line for ${id}`);
          await new Promise((r) => setTimeout(r, 50));
        }
      };
      assert.equal(await ipOf('127.0.0.1', 'trusted-proxy'), '198.51.100.4', 'from a listed address: the forwarded client');
      assert.equal(await ipOf('127.0.0.5', 'not-a-proxy'), '127.0.0.5', 'from another address: the socket\'s');
    } finally {
      await hub.stop();
    }
    await refusedStart({ DAMHUB_TRUSTED_PROXIES: '127.0.0.1,proxy.example' }, 'DAMHUB_TRUSTED_PROXIES: "proxy.example" is not an IP address');
  } },
  DAMHUB_MCP_USER: { group: 'alone', async check() {
    const init = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n';
    const r = await runCli(['mcp', '--data', tempDir()], { DAMHUB_MCP_USER: 'assistant-user' }, init);
    assert.match(r.stdout, /"serverInfo"/, `${r.stdout}\n${r.stderr}`);
    const without = await runCli(['mcp', '--data', tempDir()], {}, init);
    assert.equal(without.code, 2);
  } },
};

/** Named by the docs as names that do not exist (their rows check the start-up warning). */
const DOCUMENTED_AS_UNKNOWN = ['DAMHUB_CLOUDINARY_CLIENT_ID', 'DAMHUB_METRIC_TOKEN'];

/** Read by the repository's tooling, not by the hub: the file that reads it (and the hub does not warn about it). */
const TOOLING: Record<string, string> = {
  DAMHUB_FIGURES: 'test/helpers/figures.ts',
  DAMHUB_FUZZ_RUNS: 'test/http/fuzz-routes.test.ts',
  DAMHUB_TEST_DATABASE_URL: 'test/helpers/stores-env.ts',
  DAMHUB_TEST_REDIS_URL: 'test/helpers/stores-env.ts',
  DAMHUB_AUDIT_REQUIRED: '.ci/audit.mjs',
  DAMHUB_TEST_CONCURRENCY: 'scripts/test.mjs',
};

/** The pattern names of the docs, each the row of one concrete connector. */
const PATTERNS: Record<string, string> = {
  'DAMHUB_<ID>_CLIENT_ID': 'DAMHUB_DROPBOX_CLIENT_ID',
  'DAMHUB_<ID>_CLIENT_SECRET': 'DAMHUB_BOX_CLIENT_SECRET',
  'DAMHUB_<ID>_ENDPOINTS': 'DAMHUB_MICROSOFT365_ENDPOINTS',
};

async function webdavSignIn(c: Ctx, serverUrl: string, withinMs?: number): Promise<Answer> {
  const u = await c.partner.user();
  const s = await loginStart(c.hub, u.access, 'webdav', serverUrl);
  assert.equal(s.status, 200, JSON.stringify(s.body));
  const page = await (await openForm(c.hub, s))({ serverUrl, username: 'u', password: 'p' }, withinMs);
  assert.notEqual(page.status, 403, `the form POST was refused: ${String(page.body).slice(0, 300)}`);
  return page;
}

// ── the tests ──────────────────────────────────────────────────────────────────────────────
test('every DAMHUB_* variable the docs name has a row here and is known to the CLI (src/cli/env-vars.ts)', () => {
  const known = new Set(knownEnvNames());
  const missing: string[] = [];
  const unknown: string[] = [];
  for (const [name, files] of documented()) {
    const rowName = PATTERNS[name] ?? name;
    if (!ROWS[rowName] && !TOOLING[rowName]) missing.push(`${name} (${files.join(', ')})`);
    if (!known.has(rowName) && !DOCUMENTED_AS_UNKNOWN.includes(rowName)) unknown.push(name);
  }
  assert.deepEqual(missing, [], `documented DAMHUB_* variables without a row in test/cli/env-vars.test.ts ROWS: ${missing.join('; ')}`);
  assert.deepEqual(unknown, [], `documented DAMHUB_* variables missing from src/cli/env-vars.ts: ${unknown.join(', ')}`);
  for (const [name, file] of Object.entries(TOOLING)) assert.match(fs.readFileSync(path.join(REPO_ROOT, file), 'utf8'), new RegExp(name), `${file} reads ${name}`);
});

test('an unknown DAMHUB_* variable is named at start with the closest known one; known tooling variables are not', async () => {
  const r = await runCli(['serve'], { DAMHUB_DATA_DIR: tempDir(), DAMHUB_PORT: 'not-a-port', DAMHUB_METRIC_TOKEN: 'x', DAMHUB_FIGURES: '/tmp/f', DAMHUB_ZZZ_QQQ: '1' });
  assert.match(r.stderr, /damhub: warning: unknown environment variable DAMHUB_METRIC_TOKEN \(did you mean DAMHUB_METRICS_TOKEN\?\)/);
  assert.match(r.stderr, /unknown environment variable DAMHUB_ZZZ_QQQ: it is ignored/);
  assert.doesNotMatch(r.stderr, /DAMHUB_FIGURES/);
});

const GROUPS: Group[] = ['core', 'signin', 'oauth', 'decode', 'media', 'cluster'];

describe('each documented variable changes what it documents (real CLI, environment only)', () => {
  const standIn = new StandIn();
  let davs: Davs;
  before(async () => {
    await standIn.start();
    davs = {
      held: await startFloodDav({ files: 3, size: 256 * KiB, hold: true, prefix: 'held' }),
      slow: await startFloodDav({ files: 1, size: 256 * KiB, hold: true, prefix: 'slow' }),
      small: await startFloodDav({ files: 6, size: 64 * KiB, prefix: 'small' }),
      big: await startFloodDav({ files: 1, size: 2048 * KiB, prefix: 'big' }),
    };
  });
  after(async () => {
    standIn.close();
    for (const d of Object.values(davs ?? {})) await d.close();
  });

  for (const group of GROUPS) {
    test(`${group}: ${Object.keys(ROWS).filter((n) => ROWS[n]!.group === group).join(', ')}`, async (t) => {
      const cluster = group === 'cluster' ? await clusterEnv() : null;
      if (group === 'cluster' && !cluster) return t.skip('backing services unavailable');
      const dirs = { data: tempDir('damhub-env-data-'), library: tempDir('damhub-env-lib-') };
      fs.writeFileSync(path.join(dirs.library, 'notes.txt'), 'harbour cranes');
      fs.writeFileSync(path.join(dirs.library, 'big.png'), await png(40, 40));
      const port = await freePort();
      const rows = Object.entries(ROWS).filter(([, r]) => r.group === group);
      const env: NodeJS.ProcessEnv = { DAMHUB_DATA_DIR: dirs.data, DAMHUB_PORT: String(port), DAMHUB_ADMIN_KEY: ADMIN_KEY, DAMHUB_LOG_LEVEL: 'error' };
      if (group !== 'signin') env.DAMHUB_LIBRARY = dirs.library;
      if (group === 'decode') Object.assign(env, { DAMHUB_IMAGE_POOL_SIZE: '1' });
      if (group === 'oauth') Object.assign(env, { DAMHUB_CONNECTOR_ALLOW_HOSTS: '127.0.0.1' });
      if (group === 'decode' || group === 'media') Object.assign(env, { DAMHUB_CONNECTORS: 'webdav', DAMHUB_CONNECTOR_ALLOW_HOSTS: '127.0.0.1' });
      // An image over the media group's declared-pixel limit (DAMHUB_IMAGE_INDEX_MAX_PIXELS).
      if (group === 'media') {
        fs.writeFileSync(path.join(dirs.library, 'wide.png'), await png(80, 60));
        fs.writeFileSync(path.join(dirs.library, 'tint.png'), await checker(0));
        // A tiny image model for DAMHUB_IMAGE_MODEL_WEIGHT: its embedding is the mean red channel (twice).
        const model = path.join(tempDir('damhub-env-model-'), 'red.onnx');
        fs.writeFileSync(model, meanColourModel({ weights: [[1, 1], [0, 0], [0, 0]] }).bytes);
        env.DAMHUB_IMAGE_MODEL = model;
      }
      if (cluster) Object.assign(env, { DATABASE_URL: cluster.databaseUrl, REDIS_URL: cluster.redisUrl });
      for (const [name, row] of rows) {
        if (row.value !== undefined) env[name] = typeof row.value === 'function' ? row.value({ standIn, dirs, port, cluster }) : row.value;
      }
      if (env.DAMHUB_HOST) env.DAMHUB_PUBLIC_URL ??= `http://${env.DAMHUB_HOST}:${port}`;
      // The library account the rows sign in with (in cluster mode: the shared index).
      const add = await runCli(['users', 'add', 'alice', '--data', dirs.data, ...(cluster ? ['--database-url', cluster.databaseUrl] : [])], { DAMHUB_USER_PASSWORD: ALICE_PASSWORD });
      assert.equal(add.code, 0, add.stderr);
      const hub = await startHub(env);
      try {
        const ctx: Ctx = { hub, partner: await Partner.register(hub, ADMIN_KEY), env, standIn, cluster, davs, later: [] };
        const failures: string[] = [];
        for (const [name, row] of rows) {
          try {
            await row.check(ctx);
          } catch (e) {
            failures.push(`${name}: ${(e as Error).message}`);
          }
        }
        for (const later of ctx.later) await later().catch((e) => failures.push(`(later) ${(e as Error).message}`));
        assert.deepEqual(failures, [], `variables that did not change what they document:\n${failures.join('\n')}\n--- stdout\n${hub.stdout()}\n--- stderr\n${hub.stderr().slice(-4000)}`);
      } finally {
        assert.equal(await hub.stop(), 0);
        await cluster?.cleanup();
      }
    });
  }

  test(`alone: ${Object.keys(ROWS).filter((n) => ROWS[n]!.group === 'alone').join(', ')}`, async () => {
    const failures: string[] = [];
    for (const [name, row] of Object.entries(ROWS).filter(([, r]) => r.group === 'alone')) {
      try {
        await row.check(null as unknown as Ctx);
      } catch (e) {
        failures.push(`${name}: ${(e as Error).message}`);
      }
    }
    assert.deepEqual(failures, []);
  });
});

void connectorId;
