/**
 * The Canto replay fixtures and what checks them. Canto publishes no SDK types or schema on the
 * npm registry (`npm view` finds no Canto API package) and its reference documents responses by
 * example, not by schema, so no fixture body can be compiled against a vendor type as Dropbox's
 * and Drive's are (test/helpers/fixture-contract.ts). Every body is therefore listed here as
 * unchecked with the reason, and a new fixture cannot slip past unlisted; what the replay serves
 * is still pinned by the assertions below on the fields the connector reads.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { FIXTURES, fixtureBodies } from '../../helpers/fixture-contract.js';

const NO_TYPES = 'Canto publishes no SDK types or schema (nothing on the npm registry); the reference shows examples only';

export const CANTO_UNCHECKED: Record<string, string> = {
  'oauth_token.json#code': `${NO_TYPES}; and the token endpoint answers in its own camelCase dialect, not RFC 6749`,
  'oauth_token.json#refresh': 'as oauth_token.json#code',
  'user.json#response': NO_TYPES,
  'tree.json#folder': NO_TYPES,
  'tree.json#album': NO_TYPES,
  'tree.json#response': NO_TYPES,
  'content.json#image': NO_TYPES,
  'album.json#response': NO_TYPES,
  'search.json#response': NO_TYPES,
  'errors.json#not_found': 'the reference documents no error body: the replay\'s own choice, named as such in the fixture',
  'errors.json#unauthorized': 'as errors.json#not_found',
  'errors.json#too_many_requests': 'as errors.json#not_found',
  'errors.json#invalid_grant': 'an OAuth token endpoint error in RFC 6749 section 5.2 form (the reference shows none)',
  'errors.json#html': 'not a Canto body: a proxy\'s HTML error page, for the non-JSON fault',
};

test('every Canto fixture body is listed as unchecked, with why; none is listed that does not exist', () => {
  const bodies = [...fixtureBodies('canto').keys()].sort();
  assert.deepEqual(bodies, Object.keys(CANTO_UNCHECKED).sort());
  for (const [b, why] of Object.entries(CANTO_UNCHECKED)) assert.ok(why.length > 10, b);
});

test('every fixture names the page and section it follows', () => {
  const fs = fixtureBodies('canto');
  assert.ok(fs.size > 0);
  for (const name of new Set([...fs.keys()].map((k) => k.split('#')[0]!))) {
    // fixtureBodies leaves `source` out; read it from the file itself.
    const doc = JSON.parse(String(readFixture(name)));
    assert.match(doc.source?.url ?? '', /^https:\/\/api\.canto\.com\//, name);
    assert.ok(typeof doc.source.section === 'string' && doc.source.section.length > 5, name);
  }
});

test('the bodies carry the fields the connector reads, with the types it reads them as', () => {
  const b = fixtureBodies('canto');
  const token = b.get('oauth_token.json#code') as Record<string, unknown>;
  for (const k of ['accessToken', 'tokenType', 'expiresIn', 'refreshToken']) assert.equal(typeof token[k], 'string', k);
  const c = b.get('content.json#image') as Record<string, any>;
  for (const k of ['id', 'name', 'scheme', 'size', 'width', 'height', 'created', 'lastUploaded', 'md5', 'approvalStatus', 'description', 'copyright']) assert.equal(typeof c[k], 'string', k);
  assert.match(c.created, /^\d{17}$/, 'the reference\'s date format');
  assert.ok(Array.isArray(c.keyword) && Array.isArray(c.tag) && Array.isArray(c.versionHistory));
  assert.equal(typeof c.url.preview, 'string');
  for (const k of ['album.json#response', 'search.json#response']) {
    const l = b.get(k) as Record<string, unknown>;
    assert.ok(Array.isArray(l.results) && typeof l.found === 'number' && typeof l.start === 'number' && typeof l.limit === 'number', k);
  }
  const node = b.get('tree.json#album') as Record<string, unknown>;
  assert.deepEqual([typeof node.id, typeof node.name, node.scheme], ['string', 'string', 'album']);
});

function readFixture(file: string): string {
  return readFileSync(path.join(FIXTURES, 'canto', file), 'utf8');
}
