/**
 * Property-based fuzzing of every route the app serves. Routes come from the app itself (its route
 * tree, including hidden ones such as sign-in pages) and its OpenAPI document (query names), so a
 * new route is fuzzed without touching this file. Requests mix valid, mutated and foreign pieces:
 * paths, ids, query strings, cursors, headers, token shapes and JSON bodies, with and without
 * valid credentials. Properties, on every answer:
 *   - no 5xx other than 503;
 *   - every error is the envelope with the code/status/source pairing of SPEC.md section 5;
 *   - nothing of another hub user, another library account or from outside the library root;
 * and across the run: /healthz answers throughout, and the heap returns to its baseline after GC.
 * Seeds are fixed and run counts bounded, so a failure replays exactly.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { SignJWT } from 'jose';
import { ERROR_CODES } from '../../src/errors.js';
import { addAccount } from '../../src/providers/library/accounts.js';
import { bearer, startTestHub, tempDir, type TestHub } from '../helpers/hub.js';
import { signInToLibrary, solidJpeg, writeFiles, libraryOf } from '../helpers/library.js';
import { recordFigure } from '../helpers/figures.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const SEED = 0x5eed8;
const RUNS = Number(process.env.DAMHUB_FUZZ_RUNS ?? 2500);
/** Strings that must never appear in an answer to user A (library account alice, limited to alice/). */
const FORBIDDEN = ['BOBONLY-notes', 'BOBONLY-pic', 'bob-secret-content', 'OUTSIDE-FILE-zz', 'outside-content-zz', 'other-user@example.com', 'sub-of-b'];

let t: TestHub;
let outside: string;
interface Pair { access: string; refresh: string }
let a: Pair;
let b: Pair;
let damA: string;
let damB: string;
const ids: string[] = [];
const cursors: string[] = [];
const mediaPaths: string[] = [];
let requests = 0;
const statuses = new Map<number, number>();

interface Route { method: string; path: string; query: string[] }
let routes: Route[] = [];

/** The app's route tree (printRoutes) as method + path pattern; `:x` and `*` are placeholders. */
function routesOf(tree: string, doc: { paths: Record<string, Record<string, { parameters?: { in: string; name: string }[] }>> }): Route[] {
  const out: Route[] = [];
  const stack: string[] = [];
  for (const line of tree.split('\n')) {
    const at = line.search(/[├└]/);
    if (at < 0) continue;
    const depth = Math.floor(at / 4);
    const m = /── (\S+) \(([^)]+)\)/.exec(line);
    if (!m) continue;
    const full = (stack[depth - 1] ?? '') + m[1];
    stack[depth] = full;
    stack.length = depth + 1;
    for (const method of m[2]!.split(', ')) {
      // The document names the wildcards (src/http/openapi.ts): folder ids and asset ids.
      const openapiPath = full.replace(/:(\w+)/g, '{$1}').replace(/\/folder\/\*$/, '/folder/{folderId}').replace(/\*$/, '{assetId}');
      const op = doc.paths[openapiPath]?.[method.toLowerCase()];
      out.push({ method, path: full, query: (op?.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name) });
    }
  }
  return out;
}

async function exchange(sub: string, email: string): Promise<Pair> {
  const res = await t.app.inject({ method: 'POST', url: '/api/v1/auth/exchangeToken', headers: { authorization: bearer(await t.jwt({ sub, email })) } });
  assert.equal(res.statusCode, 200, res.body);
  return { access: res.json().access_token, refresh: res.json().refresh_token };
}

before(async () => {
  const parent = tempDir('damhub-fuzz-');
  const root = path.join(parent, 'library');
  outside = path.join(parent, 'outside');
  writeFiles(outside, { 'OUTSIDE-FILE-zz.txt': 'outside-content-zz' });
  const files: Record<string, Buffer | string> = { 'alice/readme.txt': 'hello alice', 'BOBONLY/BOBONLY-notes.txt': 'bob-secret-content' };
  for (let i = 0; i < 6; i++) files[`alice/sub/pic-${i}.jpg`] = await solidJpeg(32, 24, [i * 40, 100, 200 - i * 30]);
  files['BOBONLY/BOBONLY-pic.jpg'] = await solidJpeg(32, 24, [1, 2, 3]);
  writeFiles(root, files);
  fs.symlinkSync(outside, path.join(root, 'alice', 'escape'));
  t = await startTestHub({ config: { libraryDir: root, userRateLimitPerMin: 0, pageCacheBytes: 256 * 1024 }, partner: { rateLimitPerMin: 1_000_000 } });
  await t.hub.start();
  await addAccount(libraryOf(t.hub).index, 'alice', 'alice-pass', ['alice'], t.clock.now());
  await addAccount(libraryOf(t.hub).index, 'bob', 'bob-pass', ['BOBONLY'], t.clock.now());
  a = await exchange('user-1', 'user1@example.com');
  b = await exchange('sub-of-b', 'other-user@example.com');
  damA = await signInToLibrary(t, a.access, 'alice', 'alice-pass');
  damB = await signInToLibrary(t, b.access, 'bob', 'bob-pass');

  // Valid ids, cursors and media URLs of user A, to mutate; one cursor of B's, to substitute.
  const hA = { authorization: bearer(a.access), 'provider-authorization': bearer(damA) };
  const walk = async (folder: string) => {
    const res = await t.app.inject({ url: `/api/v1/assets/folder/${encodeURIComponent(folder)}?size=1`, headers: hA });
    assert.equal(res.statusCode, 200, res.body);
    const page = res.json();
    if (page.more) cursors.push(page.more);
    for (const f of page.folders) {
      ids.push(f.id);
      await walk(f.id);
    }
    for (const x of page.assets) {
      ids.push(x.id);
      for (const u of [x.downloadUrl, x.thumbnailUrl]) if (u) mediaPaths.push(new URL(u).pathname + new URL(u).search);
    }
  };
  await walk('root');
  const full = await t.app.inject({ url: '/api/v1/assets/search?query=pic&size=2', headers: hA });
  for (const x of full.json().assets) {
    ids.push(x.id);
    for (const u of [x.downloadUrl, x.thumbnailUrl]) if (u) mediaPaths.push(new URL(u).pathname + new URL(u).search);
  }
  if (full.json().more) cursors.push(full.json().more);
  const bSearch = await t.app.inject({ url: '/api/v1/assets/search?query=&size=1', headers: { authorization: bearer(b.access), 'provider-authorization': bearer(damB) } });
  if (bSearch.json().more) cursors.push(bSearch.json().more);
  assert.ok(ids.length >= 6 && mediaPaths.length >= 4 && cursors.length >= 2, `fixtures: ${ids.length} ids, ${mediaPaths.length} media, ${cursors.length} cursors`);

  await t.app.ready();
  routes = routesOf(t.app.printRoutes({ commonPrefix: false }), t.app.swagger() as never);
});

after(async () => {
  await t?.close();
  recordFigure('fuzz-requests', `requests fuzzed over every route (${routes.length} method/path pairs); answers by status ${JSON.stringify(Object.fromEntries([...statuses].sort((x, y) => x[0] - y[0])))}`, requests);
});

// ---- arbitraries ----

const nasty = fc.constantFrom(
  '', ' ', '..', '../..', '../../etc/passwd', '..%2F..%2Fetc%2Fpasswd', '%2e%2e%2f', '/', '//', '\\..\\..', '%00', 'a%00b', '\u0000',
  'root', 'null', 'undefined', '[]', '{}', '-1', '0', '1e309', 'NaN', '9'.repeat(40), '%', '%zz', '%%', '\u202e', '\ud83d\ude00', 'é', '\uFEFF',
  '<script>alert(1)</script>', "' OR 1=1 --", '${jndi:ldap://x}', '$name$', 'x'.repeat(5000), 'outside', 'escape', 'escape/OUTSIDE-FILE-zz.txt',
  'BOBONLY', 'BOBONLY/', '/BOBONLY', 'alice/../BOBONLY', 'alice/escape', '../outside',
);
const idLike = fc.oneof(
  fc.constantFrom(...['__ids__']).chain(() => fc.constantFrom(...ids)),
  fc.constantFrom(...['__ids__']).chain(() => fc.constantFrom(...ids)).chain((id) => fc.nat(id.length).map((i) => id.slice(0, i) + 'x' + id.slice(i + 1))),
  nasty,
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
);
const encodeMaybe = (s: string, how: number) => (how === 0 ? encodeURIComponent(s) : how === 1 ? s.replace(/[?#\s]/g, encodeURIComponent) : encodeURIComponent(encodeURIComponent(s)));

const cursorLike = fc.oneof(
  fc.constant(null),
  fc.constantFrom(...['__c__']).chain(() => fc.constantFrom(...cursors)),
  fc.constantFrom(...['__c__']).chain(() => fc.constantFrom(...cursors)).chain((c) => fc.nat(Math.max(0, c.length - 1)).map((i) => c.slice(0, i) + (c[i] === 'A' ? 'B' : 'A') + c.slice(i + 1))),
  fc.base64String({ maxLength: 80 }),
  nasty,
);

const queryValue = fc.oneof(nasty, fc.string({ maxLength: 30 }), fc.integer({ min: -5, max: 1e6 }).map(String), fc.constantFrom('en', 'de', 'xx', 'true', 'false', 'Europe/Berlin', 'Mars/Olympus'));

type TokenKind = 'none' | 'validA' | 'validB' | 'refreshA' | 'garbage' | 'jwtNone' | 'partnerJwt' | 'basic' | 'empty' | 'adminKey' | 'hugeBearer';
const tokenKind = fc.constantFrom<TokenKind>('none', 'validA', 'validA', 'validA', 'validB', 'refreshA', 'garbage', 'jwtNone', 'partnerJwt', 'basic', 'empty', 'adminKey', 'hugeBearer');
const damKind = fc.constantFrom('none', 'damA', 'damA', 'damA', 'damB', 'refreshA', 'garbage', 'truncated');

const body = fc.oneof(
  fc.constant(undefined),
  fc.jsonValue({ maxDepth: 3 }),
  fc.record({ dataBase64: fc.oneof(fc.base64String({ maxLength: 200 }), nasty, fc.constantFrom('data:image/png;base64,AAAA', 'http://127.0.0.1:1/x.jpg', 'file:///etc/passwd', 'data:,')) }),
  fc.record({ issuer: fc.string(), jwks: fc.jsonValue({ maxDepth: 2 }), allowedOrigins: fc.array(fc.string(), { maxLength: 3 }) }, { requiredKeys: [] }),
  fc.string({ maxLength: 200 }),
);

const request = fc.record({
  route: fc.nat(),
  method: fc.oneof(fc.constant(null), fc.constant(null), fc.constant(null), fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD')),
  params: fc.array(fc.tuple(idLike, fc.nat(2)), { minLength: 4, maxLength: 4 }),
  suffix: fc.oneof(fc.constant(''), fc.constant(''), fc.constantFrom('/', '//', '/..', '/%2e%2e', '?', '#x', '/extra/segment', '.json', '%00')),
  media: fc.oneof(fc.constant(-1), fc.constant(-1), fc.nat()),
  mediaMutation: fc.nat(8),
  query: fc.dictionary(fc.oneof(fc.constantFrom('size', 'more', 'filters', 'query', 'parentId', 'uiLocale', 'timeZone', 'dataLocale', 'withMaster', 'state', 'polling', 'provider', 'serverUrl', 'exp', 'k', 'sig'), fc.string({ maxLength: 8 })), queryValue, { maxKeys: 5 }),
  more: cursorLike,
  repeatFilters: fc.array(queryValue, { maxLength: 3 }),
  auth: tokenKind,
  dam: damKind,
  origin: fc.oneof(fc.constant(null), fc.constantFrom('https://app.partner.example', 'https://evil.example', 'null', 'http://hub.test')),
  requestId: fc.oneof(fc.constant(null), fc.string({ maxLength: 300 }), fc.constantFrom('ok-id-1', 'a\u00e9b', '')),
  contentType: fc.oneof(fc.constant(null), fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=utf-16', 'garbage/')),
  body,
});

type Req = typeof request extends fc.Arbitrary<infer U> ? U : never;

function token(kind: TokenKind, forged: { none: string; partner: string }): string | undefined {
  switch (kind) {
    case 'none': return undefined;
    case 'validA': return bearer(a.access);
    case 'validB': return bearer(b.access);
    case 'refreshA': return bearer(a.refresh);
    case 'garbage': return 'Bearer eyJhbGciOi.garbage.x';
    case 'jwtNone': return bearer(forged.none);
    case 'partnerJwt': return bearer(forged.partner);
    case 'basic': return 'Basic dXNlcjpwYXNz';
    case 'empty': return 'Bearer ';
    case 'adminKey': return bearer(t.hub.adminKey);
    case 'hugeBearer': return `Bearer ${'A'.repeat(12_000)}`;
  }
}

/** The envelope and the code table of SPEC.md section 5. */
function checkAnswer(res: { statusCode: number; body: string; headers: Record<string, unknown> }, method: string, url: string, input: string): void {
  const where = `${method} ${url.slice(0, 300)} → ${res.statusCode} ${res.body.slice(0, 300)}`;
  assert.ok(res.statusCode < 500 || res.statusCode === 503, `5xx: ${where}`);
  const text = res.body + JSON.stringify(res.headers);
  // A marker the request itself carried may be echoed (error details quote the path and values).
  for (const f of FORBIDDEN) if (!input.includes(f)) assert.ok(!text.includes(f), `leaked ${f}: ${where}`);
  assert.ok(!text.includes(t.hub.adminKey) || method === 'HEAD', `admin key in an answer: ${where}`);
  assert.ok(!/\n\s+at .+:\d+:\d+/.test(res.body), `stack trace: ${where}`);
  assert.ok(res.headers['x-request-id'], `no x-request-id: ${where}`);
  if (String(res.headers['content-type']).startsWith('text/html')) {
    // Pages for people (sign-in forms) answer errors as pages, under the strict page headers.
    assert.match(String(res.headers['content-security-policy']), /frame-ancestors 'none'/, where);
    assert.equal(res.headers['x-content-type-options'], 'nosniff', where);
    return;
  }
  if (res.statusCode < 400 || method === 'HEAD') return;
  let e: any;
  try {
    e = JSON.parse(res.body);
  } catch {
    assert.fail(`error without a JSON envelope: ${where}`);
  }
  assert.equal(e.message, 'Error', where);
  const spec = (ERROR_CODES as Record<string, { status: number; source: string }>)[e.errorCode];
  assert.ok(spec, `unknown code: ${where}`);
  assert.equal(e.error.code, e.errorCode, where);
  assert.equal(e.error.status, res.statusCode, where);
  assert.equal(e.error.source, spec.source, where);
  // Codes whose status may vary by design: a range answer (416) is a validation error, the DAM's
  // 502/504, and tus's statuses on /uploads (409 offset, 412 Tus-Resumable, 460 checksum).
  const allowed = e.errorCode === 'integration-unavailable' ? [502, 503, 504] : e.errorCode === 'hub-validation-error' ? [400, 408, 414, 416, 431, 409, 412, 460] : [spec.status];
  assert.ok(allowed.includes(res.statusCode), `status ${res.statusCode} for ${e.errorCode}: ${where}`);
  assert.match(e.details, /^[A-Z]+ \S* failed: .+/s, where);
  assert.equal(e.error.requestId, res.headers['x-request-id'], where);
  assert.equal(typeof e.error.message, 'string', where);
}

test(`fuzz every route (seed ${SEED}, ${RUNS} runs): no 5xx but 503, envelopes right, no foreign data, health answers, memory returns to baseline`, async () => {
  assert.ok(routes.length >= 25, `routes found: ${routes.map((r) => `${r.method} ${r.path}`).join(', ')}`);
  const forged = {
    none: `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${Buffer.from(JSON.stringify({ sub: 'user-1', typ: 'access' })).toString('base64url')}.`,
    partner: await t.jwt({ sub: 'fuzz-partner' }),
  };
  // HS256 signed with a public key as secret: the classic algorithm confusion.
  const hsConfusion = await new SignJWT({ sub: 'user-1' }).setProtectedHeader({ alg: 'HS256', kid: t.key.kid }).sign(new TextEncoder().encode(JSON.stringify(t.key.publicJwk)));
  const covered = new Set<string>();
  let heapBaseline = 0;

  const one = async (r: Req) => {
    const route = routes[r.route % routes.length]!;
    let i = 0;
    let url = route.path.replace(/:\w+|\*/g, () => {
      const [v, how] = r.params[i++ % r.params.length]!;
      return encodeMaybe(v, how);
    });
    if (r.media >= 0 && (route.path.includes('/download/') || route.path.includes('/thumbnail/'))) {
      url = mediaPaths[r.media % mediaPaths.length]!;
      const m = r.mediaMutation;
      if (m === 1) url = url.replace(/sig=([^&]{3})/, 'sig=AAA');
      else if (m === 2) url = url.replace(/exp=(\d+)/, (_x, e) => `exp=${Number(e) + 1}`);
      else if (m === 3) url = url.replace(/\/(\d+)\?/, '/99?');
      else if (m === 4) url = url.replace(/\?.*/, '');
      else if (m === 5) url = url.replace('/download/', '/thumbnail/');
      else if (m === 6) url = url.replace(/k=[^&]*/, 'k=../../keys');
    } else {
      url += r.suffix;
      const qs = new URLSearchParams();
      for (const [k, v] of Object.entries(r.query)) qs.append(k, v);
      if (r.more !== null) qs.append('more', r.more);
      for (const f of r.repeatFilters) qs.append('filters', f);
      const s = qs.toString();
      if (s) url += (url.includes('?') ? '&' : '?') + s;
    }
    const method = r.method ?? route.method;
    const headers: Record<string, string> = {};
    const auth = r.auth === 'jwtNone' && r.route % 2 ? bearer(hsConfusion) : token(r.auth, forged);
    if (auth !== undefined) headers.authorization = auth;
    const damHeaders: Record<string, string | undefined> = { none: undefined, damA: bearer(damA), damB: bearer(damB), refreshA: bearer(a.refresh), garbage: 'Bearer x.y.z.w.v', truncated: bearer(damA.slice(0, -5)) };
    const dam = damHeaders[r.dam];
    if (dam !== undefined) headers['provider-authorization'] = dam;
    if (r.origin) headers.origin = r.origin;
    if (r.requestId !== null) headers['x-request-id'] = r.requestId;
    let payload: string | undefined;
    if (r.body !== undefined && method !== 'GET' && method !== 'HEAD') {
      payload = typeof r.body === 'string' ? r.body : JSON.stringify(r.body);
      headers['content-type'] = r.contentType ?? 'application/json';
    } else if (r.contentType) headers['content-type'] = r.contentType;
    let res;
    try {
      res = await t.app.inject({ method: method as 'GET', url, headers, payload });
    } catch (e) {
      // light-my-request refuses some header values and URLs (a space or a raw "#" in the path)
      // itself, as Node's HTTP parser would on the wire; not an answer of the hub.
      if (/Invalid character in header|header content|Invalid URL/i.test(String(e))) return;
      throw e;
    }
    requests++;
    statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
    covered.add(`${route.method} ${route.path}`);
    let decoded = url;
    try {
      decoded = decodeURIComponent(decodeURIComponent(url));
    } catch { /* malformed on purpose */ }
    // User B's own credentials may be answered B's own identity (checkToken): not a leak.
    const own = r.auth === 'validB' ? ' other-user@example.com sub-of-b' : '';
    checkAnswer(res, method, url, `${url} ${decoded} ${payload ?? ''}${own}`);
    // Credentials A's own actions consumed: replace them so later runs still reach the handlers.
    if (res.statusCode === 200 && url.startsWith('/api/v1/auth/') && (url.includes('logout') || url.includes('refreshToken'))) {
      a = await exchange('user-1', 'user1@example.com');
      damA = await signInToLibrary(t, a.access, 'alice', 'alice-pass');
    }
    if (requests % 100 === 0) {
      const h = await t.app.inject({ url: '/healthz' });
      assert.equal(h.statusCode, 200, 'health check during the fuzz run');
    }
    if (requests === 300) {
      gc();
      heapBaseline = process.memoryUsage().heapUsed;
    }
  };

  const out = await fc.check(fc.asyncProperty(request, one), { seed: SEED, numRuns: RUNS, endOnFailure: true });
  // The property's own assertion message says what broke; fast-check's report says with which input.
  if (out.failed) assert.fail(`${(out.errorInstance as Error)?.message}\n${fc.defaultReportMessage(out)}`);
  // Every route was reached at least once.
  const missing = routes.map((r) => `${r.method} ${r.path}`).filter((r) => !covered.has(r));
  assert.deepEqual(missing, [], 'routes never fuzzed');

  for (let i = 0; i < 3; i++) gc();
  await new Promise((r) => setImmediate(r));
  gc();
  const heapAfter = process.memoryUsage().heapUsed;
  recordFigure('fuzz-heap', 'heap growth after GC between request 300 and the end of the fuzz run, KiB', Math.round((heapAfter - heapBaseline) / 1024));
  assert.ok(heapAfter - heapBaseline < 24 * 1024 * 1024, `heap grew by ${(heapAfter - heapBaseline) / 1048576} MiB after GC`);
});
