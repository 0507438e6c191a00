/**
 * Builds a hub in-process with a manual clock and a fresh data dir, and speaks to it through
 * Fastify's inject (real routing, hooks and serialisation; no sockets).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../src/app.js';
import { ManualClock } from '../../src/clock.js';
import { defaultConfig, type HubConfig } from '../../src/config.js';
import { Hub } from '../../src/hub.js';
import type { Provider } from '../../src/providers/contract.js';
import type { Partner, Stores } from '../../src/stores/types.js';
import { libraryTestStores } from './cindex-env.js';
import { makeKey, signPartnerJwt, type SignOptions, type TestKey } from './partner.js';

export interface TestHub {
  hub: Hub;
  app: FastifyInstance;
  clock: ManualClock;
  dataDir: string;
  partner: Partner;
  key: TestKey;
  /** Signs a JWT for the default partner at the clock's now. */
  jwt(o?: Partial<SignOptions>): Promise<string>;
  /** Exchange → tokens, asserting success. */
  login(o?: Partial<SignOptions>): Promise<{ access_token: string; refresh_token: string; expires_in: number }>;
  close(): Promise<void>;
}

export function tempDir(prefix = 'damhub-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** `stores`: e.g. cluster stores, for a second node on the same state (give it the first node's dataDir for the same keys and secrets). */
export async function startTestHub(opts: { config?: Partial<HubConfig>; providers?: Provider[]; dataDir?: string; clock?: ManualClock; partner?: Partial<Partner>; stores?: Stores } = {}): Promise<TestHub> {
  const dataDir = opts.dataDir ?? tempDir();
  const clock = opts.clock ?? new ManualClock(Date.UTC(2026, 5, 1, 12));
  const config = defaultConfig({ dataDir, publicUrl: 'http://hub.test', logLevel: 'silent', ...opts.config });
  const hub = new Hub(config, { clock, providers: opts.providers, stores: opts.stores ?? (await libraryTestStores()) });
  const app = await buildApp(hub, { logger: false });
  const key = await makeKey();
  const issuer = opts.partner?.issuer ?? 'https://partner.example/';
  const partner = (await hub.stores.partners.getByIssuer(issuer)) ?? (await hub.stores.partners.create({
    id: 'p1', name: 'Partner One', issuer, audience: 'urn:damhub', jwksUrl: null, jwks: { keys: [key.publicJwk] },
    maxTokenAgeSec: 3600, rateLimitPerMin: 60, allowedOrigins: ['https://app.partner.example'], enabled: true, ...opts.partner,
  }, clock.now()));
  const t: TestHub = {
    hub, app, clock, dataDir, partner, key,
    jwt: (o = {}) => signPartnerJwt(clock.now(), { key, issuer: partner.issuer, ...o }),
    async login(o = {}) {
      const res = await app.inject({ method: 'POST', url: '/api/v1/auth/exchangeToken', headers: { authorization: `Bearer ${await t.jwt(o)}` } });
      assert.equal(res.statusCode, 200, res.body);
      return res.json();
    },
    async close() {
      await app.close();
      await hub.close();
    },
  };
  return t;
}

/** Asserts a response is the error envelope with this code, status and source. */
export function assertError(res: LightMyRequestResponse, code: string, status: number, source: 'hub' | 'integration' = 'hub'): Record<string, any> {
  assert.equal(res.statusCode, status, `expected ${status} ${code}, got ${res.statusCode}: ${res.body}`);
  const body = res.json();
  assert.equal(body.errorCode, code, res.body);
  assert.equal(body.message, 'Error');
  assert.match(body.details, /^[A-Z]+ \/\S* failed: .+/);
  assert.equal(body.error.code, code);
  assert.equal(body.error.status, status);
  assert.equal(body.error.source, source);
  assert.equal(typeof body.error.message, 'string');
  assert.ok(body.error.message.length > 0);
  assert.equal(body.error.requestId, res.headers['x-request-id']);
  if (source === 'integration') assert.equal(typeof body.error.provider, 'string');
  else assert.equal(body.error.provider, undefined);
  assert.ok(!/\n\s+at /.test(res.body), 'no stack trace in responses');
  return body;
}

export const bearer = (t: string) => `Bearer ${t}`;
