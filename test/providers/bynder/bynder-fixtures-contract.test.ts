/**
 * The Bynder replay fixtures and what they are held to. Bynder publishes no TypeScript types or
 * JSON schema package: its JavaScript SDK (`@bynder/bynder-js-sdk`) ships no declarations (its
 * registry entry names no `types`), and the API reference's OpenAPI documents are not published
 * as a package. So no body can be compiled against a vendor type as the Dropbox fixtures are;
 * each is listed here as unchecked, with why, and this test fails when a fixture body appears
 * that is not listed (or a listed one disappears), and when a body lacks the fields the
 * connector reads, as the reference's schema names them.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fixtureBodies } from '../../helpers/fixture-contract.js';

const NO_TYPES = 'no published Bynder types or schema package to check against (the JS SDK ships no declarations); field names follow the reference schema cited in the fixture';

export const BYNDER_UNCHECKED: Record<string, string> = {
  'oauth2_token.json#code': NO_TYPES,
  'oauth2_token.json#refresh': NO_TYPES,
  'oauth2_token.json#invalid_grant': 'an RFC 6749 section 5.2 token endpoint error, not a Bynder body',
  'scopes.json#response': NO_TYPES,
  'current_user.json#response': `${NO_TYPES}; values are ours (the page has no example)`,
  'media.json#item': `${NO_TYPES}; values are ours (the page has no example)`,
  'media.json#total': 'the total=1 envelope as Bynder\'s C# SDK reads it (MediaFullResult); not typed for TypeScript anywhere',
  'media.json#count': 'the count=1 envelope as Bynder\'s C# SDK reads it (MediaWithCount, Counts); not typed for TypeScript anywhere',
  'media.json#detail': 'media item fields of Bynder\'s C# SDK (MediaItem); not typed for TypeScript anywhere',
  'download.json#response': NO_TYPES,
  'download.json#not_available': NO_TYPES,
  'collections.json#list': NO_TYPES,
  'collections.json#one': NO_TYPES,
  'collections.json#not_found': NO_TYPES,
  'brands.json#response': `${NO_TYPES}; values are ours (the page has no example)`,
  'metaproperties.json#response': NO_TYPES,
  'similarity.json#request': NO_TYPES,
  'similarity.json#response': NO_TYPES,
  'similarity.json#multiple': NO_TYPES,
  'errors.json#not_found': NO_TYPES,
  'errors.json#forbidden': NO_TYPES,
  'errors.json#unauthorized': 'the documented {message, statuscode} shape with the status\'s words: the page shows no 401 body',
  'errors.json#rate_limited': 'the documented {message, statuscode} shape with the status\'s words: the page shows no 429 body',
};

/** The fields the connector reads, by body, with their JSON types (the reference schema's). */
const READ: Record<string, Record<string, string>> = {
  'oauth2_token.json#code': { access_token: 'string', refresh_token: 'string', expires_in: 'number', token_type: 'string' },
  'scopes.json#response': { groups: 'array' },
  'current_user.json#response': { id: 'string' },
  'media.json#item': { id: 'string', name: 'string', extension: 'array', fileSize: 'number', width: 'number', height: 'number', dateCreated: 'string', dateModified: 'string', tags: 'array', description: 'string', copyright: 'string', thumbnails: 'object' },
  'media.json#total': { total: 'object', media: 'array' },
  'media.json#count': { count: 'object', media: 'array' },
  'download.json#response': { s3_file: 'string' },
  'similarity.json#response': { assets: 'array' },
  'brands.json#response': {},
  'collections.json#one': { name: 'string' },
};

const typeOf = (v: unknown) => (Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v);

test('every Bynder fixture body is listed as unchecked, with why (no vendor types exist)', () => {
  const bodies = [...fixtureBodies('bynder').keys()].sort();
  assert.deepEqual(bodies, Object.keys(BYNDER_UNCHECKED).sort());
  for (const [body, why] of Object.entries(BYNDER_UNCHECKED)) assert.ok(why.length > 20, body);
});

test('the bodies carry the fields the connector reads, with the schema\'s types', () => {
  const bodies = fixtureBodies('bynder');
  for (const [body, fields] of Object.entries(READ)) {
    const b = bodies.get(body) as Record<string, unknown>;
    assert.ok(b, body);
    for (const [k, ty] of Object.entries(fields)) assert.equal(typeOf(b[k]), ty, `${body} ${k}`);
  }
  const item = (bodies.get('media.json#detail') as any).mediaItems[0];
  for (const [k, ty] of Object.entries({ id: 'string', version: 'number', fileName: 'string', size: 'number', active: 'boolean', type: 'string' })) assert.equal(typeOf(item[k]), ty, `mediaItems[0].${k}`);
  const brand = (bodies.get('brands.json#response') as any[])[0];
  assert.equal(typeOf(brand.subBrands), 'array');
  const sim = (bodies.get('similarity.json#response') as any).assets[0];
  assert.match(sim.assetId, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'the similarity search answers in the newer id form');
});
