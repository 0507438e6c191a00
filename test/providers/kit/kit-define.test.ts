/** defineProvider's declaration checks, the connectors configuration, and the call deadline reaching a connector's requests. */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { KeyRing } from '../../../src/auth/keys.js';
import { ManualClock } from '../../../src/clock.js';
import { isHubError } from '../../../src/errors.js';
import type { ListOptions } from '../../../src/providers/contract.js';
import { callOnSession } from '../../../src/providers/deadline.js';
import { operation } from '../../../src/providers/capabilities.js';
import { ProviderRegistry } from '../../../src/providers/registry.js';
import { connectorsFromEnv, knownConnectors } from '../../../src/catalog.js';
import { defineProvider } from '../../../src/providers/kit/define.js';
import { codeForStatus, parseRetryAfter } from '../../../src/providers/kit/upstream-errors.js';

const base = {
  id: 'example', name: 'Example', version: '1', glyph: 'E', paging: { defaultSize: 10, maxSize: 20 },
  credentials: (raw: Record<string, unknown>) => raw,
  signIn: { kind: 'form' as const, title: 'signInTitle' as const, fields: [], verify: async () => ({ credentials: {}, accountId: 'a', displayName: 'a' }) },
};

test('what a connector can do follows from the hooks it gives; a capability cannot be declared apart from its operation', async () => {
  const deps = { clock: new ManualClock(), keys: KeyRing.generate(0), publicUrl: 'http://hub.test' };
  const empty = async () => ({ assets: [], folders: [], filters: [], totalAssetsCount: 0 });
  const none = defineProvider({ ...base, hooks: {} })(deps);
  const some = defineProvider({ ...base, id: 'some', features: { filters: true }, hooks: { search: empty, refresh: async (c) => c } })(deps);
  const registry = new ProviderRegistry();
  registry.register(none);
  registry.register(some);
  const ops = (id: string) => { const c = registry.capabilities(id)!; return { browse: c.browse, search: c.search, similarSearch: c.similarSearch, versions: c.versions, refresh: c.refresh, filters: c.filters }; };
  assert.deepEqual(ops('example'), { browse: false, search: false, similarSearch: false, versions: false, refresh: false, filters: false });
  assert.deepEqual(ops('some'), { browse: false, search: true, similarSearch: false, versions: false, refresh: true, filters: true });
  // Asking for an operation that is not there is the seed's 501, named; one that is there is bound to its provider.
  assert.throws(() => operation(none, 'browse', 'folder browsing'), (e: unknown) => isHubError(e) && e.status === 501 && e.code === 'integration-not-supported' && /does not support folder browsing/.test(String(e.details)));
  assert.equal(typeof operation(some, 'search', 'keyword search'), 'function');
  // A vendor's visual search given as the searchByImage hook is the similarSearch capability; the reference reaches it as the hub decoded it.
  let seen: { bytes: number; format: string } | null = null;
  const visual = defineProvider({ ...base, id: 'visual', hooks: { searchByImage: async (_ctx, image) => { seen = { bytes: image.bytes.length, format: image.format }; return empty(); } } })(deps);
  registry.register(visual);
  assert.deepEqual(ops('visual'), { browse: false, search: false, similarSearch: true, versions: false, refresh: false, filters: false });
  const session = { partnerId: 'p', userId: 'u', credentials: {} } as never;
  await operation(visual, 'similarSearch', 'search by image')(session, { bytes: Buffer.from('jpeg'), format: 'jpeg', width: 1, height: 1, outputs: [] }, { size: 10, more: null } as never);
  assert.deepEqual(seen, { bytes: 4, format: 'jpeg' });
  await visual.close();
  // An operation capability declared as a feature is refused at registration, whatever the provider.
  assert.throws(() => new ProviderRegistry().register({ ...none, descriptor: { ...none.descriptor, features: { browse: true } as never } }), /unknown feature "browse"/);
  assert.throws(() => defineProvider({ ...base, id: 'Bad Id', hooks: {} }), /lower-case/);
  await none.close();
  await some.close();
});

test('DAMHUB_CONNECTORS enables known connectors with the shared overrides; an unknown id is refused', () => {
  assert.deepEqual(knownConnectors(), ['cloudinary', 's3', 'webdav']);
  assert.deepEqual(connectorsFromEnv({ DAMHUB_CONNECTORS: 'webdav, s3', DAMHUB_CONNECTOR_ALLOW_HOSTS: 'nas.local,10.0.0.0/8', DAMHUB_CONNECTOR_TIMEOUT_MS: '5000' }), {
    webdav: { allowHosts: ['nas.local', '10.0.0.0/8'], timeoutMs: 5000 },
    s3: { allowHosts: ['nas.local', '10.0.0.0/8'], timeoutMs: 5000 },
  });
  assert.deepEqual(connectorsFromEnv({}), {});
  assert.throws(() => connectorsFromEnv({ DAMHUB_CONNECTORS: 'dropbox-ish' }), /unknown connector "dropbox-ish"; known: cloudinary, s3, webdav/);
  assert.throws(() => connectorsFromEnv({ DAMHUB_CONNECTORS: 'webdav', DAMHUB_CONNECTOR_TIMEOUT_MS: 'soon' }), /DAMHUB_CONNECTOR_TIMEOUT_MS/);
});

test('Retry-After in seconds or as an HTTP date; statuses to codes', () => {
  const now = Date.UTC(2026, 5, 1, 12);
  assert.equal(parseRetryAfter('30', now), 30);
  assert.equal(parseRetryAfter(new Date(now + 90_000).toUTCString(), now), 90);
  assert.equal(parseRetryAfter('soon', now), undefined);
  assert.equal(parseRetryAfter('2.128', now), 3, 'fractional seconds (Microsoft Graph) round up');
  assert.deepEqual(codeForStatus(410), { code: 'integration-not-found' });
  assert.deepEqual(codeForStatus(422), { code: 'integration-operation-failed' });
  assert.deepEqual(codeForStatus(504), { code: 'integration-unavailable', status: 504 });
});

test('a connector call past the hub deadline ends its upstream request: the deadline reaches ctx.http through the session', async () => {
  let closed!: () => void;
  const upstreamClosed = new Promise<void>((r) => (closed = r));
  let asked = 0;
  const server = http.createServer((req, res) => {
    if (req.url === '/warm') return void res.end('ok'); // loads the HTTP client before the timed call
    asked++;
    req.on('close', closed); // never answers
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const provider = defineProvider({
      ...base, upstream: { allowHosts: ['127.0.0.1'], timeoutMs: 60_000, retries: 3 },
      hooks: {
        browse: async (ctx) => {
          await ctx.http.text({ method: 'GET', url: `${url}/folder` });
          return { id: 'root', name: 'r', folders: [], assets: [], filters: [], totalAssetsCount: 0 };
        },
      },
    })({ clock: new ManualClock(), keys: KeyRing.generate(0), publicUrl: 'http://hub.test' });
    await provider.http.text({ method: 'GET', url: `${url}/warm` });
    const session = { providerId: 'example', userId: 'u', partnerId: 'p', credentials: {} };
    const opts: ListOptions = { size: 10, more: null, filters: [], timeZone: null, dataLocale: null, uiLocale: 'en' };
    const started = Date.now();
    const e = await callOnSession(provider, 50, session, (s) => operation(provider, 'browse', 'folder browsing')(s, 'root', opts)).then(() => null, (x: unknown) => x);
    assert.ok(isHubError(e) && e.status === 504 && e.code === 'integration-unavailable', String(e));
    // Let go at the hub's 50 ms deadline, not at the connector's own 60 s.
    await Promise.race([upstreamClosed, new Promise((_, reject) => setTimeout(() => reject(new Error('the upstream request was not ended')), 10_000).unref())]);
    assert.ok(Date.now() - started < 10_000);
    assert.equal(asked, 1, 'no retry after the call was given up');
    await provider.close();
    // Closing again is harmless: the hub closes every provider it registered, and a test may too.
    await provider.close();
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
