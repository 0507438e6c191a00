/** Vendor origins and their replacements (src/providers/kit/endpoints.ts, DAMHUB_<ID>_ENDPOINTS, DAMHUB_<ID>_CLIENT_ID). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { configFrom } from '../../../src/cli/main.js';
import { insecureEndpoints, vendorEndpoints } from '../../../src/providers/kit/endpoints.js';
import { oauthConnectors } from '../../../src/catalog.js';

const DEFAULTS = { authorize: 'https://login.example.com/authorize', token: 'https://login.example.com/token', api: 'https://api.example.com' };

test('a replaced origin wins by name, the others keep the vendor default; trailing slashes go', () => {
  const ep = vendorEndpoints('x', DEFAULTS, { api: 'https://api.example.us/' });
  assert.deepEqual(ep, { ...DEFAULTS, api: 'https://api.example.us' });
  assert.deepEqual(vendorEndpoints('x', DEFAULTS, undefined), DEFAULTS);
});

test('an origin the connector does not know, or one that is not http(s), is refused naming the known ones', () => {
  assert.throws(() => vendorEndpoints('x', DEFAULTS, { graph: 'https://graph.example.com' }), /x: unknown endpoint "graph"; known: authorize, token, api/);
  assert.throws(() => vendorEndpoints('x', DEFAULTS, { api: 'ftp://api.example.com' }), /x: endpoint api must be an http\(s\) URL/);
});

test('plain http is allowed to the authorization server only when an http origin was named', () => {
  assert.equal(insecureEndpoints(undefined), false);
  assert.equal(insecureEndpoints({ api: 'https://a.example' }), false);
  assert.equal(insecureEndpoints({ api: 'https://a.example', token: 'http://127.0.0.1:9/t' }), true);
});

test('DAMHUB_<ID>_CLIENT_ID enables each OAuth connector; DAMHUB_<ID>_ENDPOINTS replaces origins as JSON', () => {
  const env: NodeJS.ProcessEnv = {};
  for (const id of oauthConnectors()) env[`DAMHUB_${id.toUpperCase()}_CLIENT_ID`] = `${id}-app`;
  env.DAMHUB_DROPBOX_CLIENT_SECRET = 'shh';
  env.DAMHUB_DROPBOX_ENDPOINTS = '{"api": "http://127.0.0.1:9000/"}';
  const c = configFrom({}, env);
  assert.deepEqual(Object.keys(c.oauthApps).sort(), oauthConnectors());
  assert.deepEqual(c.oauthApps.dropbox, { clientId: 'dropbox-app', clientSecret: 'shh' });
  assert.equal(c.oauthApps.gdrive!.clientSecret, null);
  assert.deepEqual(c.connectorEndpoints, { dropbox: { api: 'http://127.0.0.1:9000' } });
  assert.throws(() => configFrom({}, { DAMHUB_DROPBOX_ENDPOINTS: 'not json' }), /DAMHUB_DROPBOX_ENDPOINTS must be JSON/);
  assert.throws(() => configFrom({}, { DAMHUB_DROPBOX_ENDPOINTS: '["x"]' }), /DAMHUB_DROPBOX_ENDPOINTS must be a JSON object/);
  assert.throws(() => configFrom({}, { DAMHUB_GDRIVE_ENDPOINTS: '{"api": 7}' }), /DAMHUB_GDRIVE_ENDPOINTS: api must be an http\(s\) URL/);
  // WebDAV and S3 reach the server the user names at sign-in: they have no vendor origins to replace.
  assert.deepEqual(configFrom({}, { DAMHUB_S3_ENDPOINTS: '{"api": "https://s3.example"}' }).connectorEndpoints, {});
});
