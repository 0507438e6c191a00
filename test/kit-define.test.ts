/** defineProvider's declaration checks and the connectors configuration. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connectorsFromEnv, knownConnectors } from '../src/providers/kit/catalog.js';
import { defineProvider } from '../src/providers/kit/define.js';
import { codeForStatus, parseRetryAfter } from '../src/providers/kit/upstream-errors.js';

const base = {
  id: 'example', name: 'Example', version: '1', glyph: 'E', paging: { defaultSize: 10, maxSize: 20 },
  credentials: (raw: Record<string, unknown>) => raw,
  signIn: { kind: 'form' as const, title: 't', fields: [], verify: async () => ({ credentials: {}, accountId: 'a', displayName: 'a' }) },
};

test('a declared capability without its hook, or a hook without its capability, is refused at definition', () => {
  assert.throws(() => defineProvider({ ...base, capabilities: { browse: true }, hooks: {} }), /capability browse is true but hook browse is missing/);
  assert.throws(() => defineProvider({ ...base, capabilities: {}, hooks: { search: async () => ({ assets: [], folders: [], filters: [], totalAssetsCount: 0 }) } }), /capability search is false but hook search is given/);
  assert.throws(() => defineProvider({ ...base, id: 'Bad Id', capabilities: {}, hooks: {} }), /lower-case/);
  assert.doesNotThrow(() => defineProvider({ ...base, capabilities: {}, hooks: {} }));
});

test('DAMHUB_CONNECTORS enables known connectors with the shared overrides; an unknown id is refused', () => {
  assert.deepEqual(knownConnectors(), ['s3', 'webdav']);
  assert.deepEqual(connectorsFromEnv({ DAMHUB_CONNECTORS: 'webdav, s3', DAMHUB_CONNECTOR_ALLOW_HOSTS: 'nas.local,10.0.0.0/8', DAMHUB_CONNECTOR_TIMEOUT_MS: '5000' }), {
    webdav: { allowHosts: ['nas.local', '10.0.0.0/8'], timeoutMs: 5000 },
    s3: { allowHosts: ['nas.local', '10.0.0.0/8'], timeoutMs: 5000 },
  });
  assert.deepEqual(connectorsFromEnv({}), {});
  assert.throws(() => connectorsFromEnv({ DAMHUB_CONNECTORS: 'dropbox-ish' }), /unknown connector "dropbox-ish"; known: s3, webdav/);
  assert.throws(() => connectorsFromEnv({ DAMHUB_CONNECTORS: 'webdav', DAMHUB_CONNECTOR_TIMEOUT_MS: 'soon' }), /DAMHUB_CONNECTOR_TIMEOUT_MS/);
});

test('Retry-After in seconds or as an HTTP date; statuses to codes', () => {
  const now = Date.UTC(2026, 5, 1, 12);
  assert.equal(parseRetryAfter('30', now), 30);
  assert.equal(parseRetryAfter(new Date(now + 90_000).toUTCString(), now), 90);
  assert.equal(parseRetryAfter('soon', now), undefined);
  assert.deepEqual(codeForStatus(410), { code: 'integration-not-found' });
  assert.deepEqual(codeForStatus(422), { code: 'integration-operation-failed' });
  assert.deepEqual(codeForStatus(504), { code: 'integration-unavailable', status: 504 });
});
