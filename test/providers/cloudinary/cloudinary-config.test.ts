/** Enabling the Cloudinary connector: DAMHUB_CONNECTORS, its endpoints by name (unknown names refused), the catalog building it. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connectorEndpointsFromEnv, connectorsFromEnv, knownConnectors, vendorConnectors } from '../../../src/catalog.js';
import { cloudinaryConnector } from '../../../src/providers/cloudinary/provider.js';

test('cloudinary is enabled by DAMHUB_CONNECTORS and takes DAMHUB_CLOUDINARY_ENDPOINTS (api, res)', () => {
  assert.ok(knownConnectors().includes('cloudinary'));
  assert.ok(vendorConnectors().includes('cloudinary'));
  assert.deepEqual(Object.keys(connectorsFromEnv({ DAMHUB_CONNECTORS: 'cloudinary' })), ['cloudinary']);
  assert.deepEqual(connectorEndpointsFromEnv({ DAMHUB_CLOUDINARY_ENDPOINTS: '{"api": "https://api-eu.cloudinary.com/"}' }).cloudinary, { api: 'https://api-eu.cloudinary.com' });
  assert.throws(() => cloudinaryConnector({ endpoints: { cdn: 'https://cdn.example.com' } }), /cloudinary: unknown endpoint "cdn"; known: api, res/);
});
