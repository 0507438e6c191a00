/**
 * Real `damhub serve` processes in cluster mode for the multi-node and fault tests: each node has
 * its own data dir and port and shares one PostgreSQL database, one Redis and one library folder.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ClusterStores } from '../../src/stores/index.js';
import type { Partner } from '../../src/stores/types.js';
import { tempDir } from './hub.js';
import { makeKey, signPartnerJwt, type TestKey } from './partner.js';
import { runCli, startServer, type ServerProcess } from './process.js';
import { TestBrowser } from './browser.js';

export const LIBRARY_USER = { name: 'alice', password: 'correct horse battery' };

export interface ClusterUrls {
  databaseUrl: string;
  redisUrl: string;
  keyPrefix: string;
}

export interface TestPartner {
  partner: Partner;
  key: TestKey;
  /** A fresh partner JWT (new jti) for `sub`. */
  jwt(sub?: string): Promise<string>;
}

/** Migrates the database and registers a partner, as `damhub migrate` and `partners add` would. */
export async function addPartner(u: ClusterUrls, id: string, rateLimitPerMin: number): Promise<TestPartner> {
  const stores = await ClusterStores.open(u);
  try {
    const key = await makeKey();
    const issuer = `https://${id}.example/`;
    const partner = await stores.partners.create({
      id, name: id, issuer, audience: 'urn:damhub', jwksUrl: null, jwks: { keys: [key.publicJwk] },
      maxTokenAgeSec: 3600, rateLimitPerMin, allowedOrigins: [], enabled: true,
    }, Date.now());
    return { partner, key, jwt: (sub = 'user-1') => signPartnerJwt(Date.now(), { key, issuer, sub, email: `${sub}@example.com` }) };
  } finally {
    await stores.close();
  }
}

/** A small library folder every node serves. */
export function makeLibrary(): string {
  const root = tempDir('damhub-cluster-lib-');
  for (const [rel, text] of Object.entries({
    'projects/alpha/readme.txt': 'alpha project notes about harbour cranes',
    'projects/beta/notes.txt': 'beta notes about lighthouses',
    'press/release.txt': 'press release lighthouse opening',
  })) {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), text);
  }
  return root;
}

/**
 * Starts `count` nodes in parallel. The library account is created once, before any node starts:
 * in cluster mode accounts live in PostgreSQL with the rest of the library index, so one account
 * (and a DAM token made through any node) is valid on every node.
 */
export async function startNodes(u: ClusterUrls, library: string, count: number, env: NodeJS.ProcessEnv = {}): Promise<ServerProcess[]> {
  const nodeEnv = { DATABASE_URL: u.databaseUrl, REDIS_URL: u.redisUrl, DAMHUB_REDIS_PREFIX: u.keyPrefix, DAMHUB_USER_RATE_LIMIT: '0', ...env };
  const add = await runCli(['users', 'add', LIBRARY_USER.name, '--password-stdin', '--data', tempDir('damhub-node-')], nodeEnv, `${LIBRARY_USER.password}\n`);
  assert.ok(add.code === 0 || /already exists/.test(add.stderr), add.stderr);
  return Promise.all(Array.from({ length: count }, () => startServer(['--data', tempDir('damhub-node-'), '--library', library], nodeEnv)));
}

export interface Answer {
  status: number;
  body: any;
  headers: Headers;
}

/** One HTTP call with a bound: a hang fails the test instead of stalling it. */
export async function call(url: string, init: RequestInit & { token?: string; dam?: string } = {}, timeoutMs = 15_000): Promise<Answer> {
  const headers = new Headers(init.headers);
  if (init.token) headers.set('authorization', `Bearer ${init.token}`);
  if (init.dam) headers.set('provider-authorization', `Bearer ${init.dam}`);
  const res = await fetch(url, { ...init, headers, signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch { /* not JSON */ }
  return { status: res.status, body, headers: res.headers };
}

export const api = (node: ServerProcess, p: string) => `${node.url}/api/v1${p}`;

export function exchange(node: ServerProcess, jwt: string): Promise<Answer> {
  return call(api(node, '/auth/exchangeToken'), { method: 'POST', token: jwt, headers: { 'content-type': 'application/json' }, body: '{}' });
}

/**
 * POST /auth/login on `start`; the sign-in form opened on `start` (its page sets the login's cookie,
 * test/helpers/browser.ts) and submitted through `form`: the cookie, like the state, holds on every node.
 */
export async function damSignIn(start: ServerProcess, form: ServerProcess, access: string): Promise<string> {
  const s = await call(api(start, '/auth/login?provider=library&polling=true'), { method: 'POST', token: access });
  assert.equal(s.status, 200, JSON.stringify(s.body));
  const { state, redirect_uri } = s.body as { state: string; redirect_uri: string };
  assert.ok(redirect_uri.startsWith(`${start.url}/api/v1/auth/library/signin?state=`), redirect_uri);
  const browser = new TestBrowser();
  const page = await browser.open(redirect_uri);
  assert.equal(page.status, 200, page.body);
  const submit = await browser.post(api(form, '/auth/library/signin'), { state, username: LIBRARY_USER.name, password: LIBRARY_USER.password });
  assert.equal(submit.status, 200, submit.body);
  assert.match(submit.body, /You are signed in to the library/);
  return state;
}

export function poll(node: ServerProcess, state: string): Promise<Answer> {
  return call(api(node, `/auth/login?state=${encodeURIComponent(state)}&polling=true`));
}
