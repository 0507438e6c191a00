/**
 * The Microsoft 365 replay fixtures held to Microsoft's published Graph types
 * (`@microsoft/microsoft-graph-types`, generated from the Graph v1.0 metadata): every fixture body
 * is checked as an object literal of its type, so a renamed, invented or missing field fails,
 * naming the fixture and the field. test/fixtures/microsoft365/README.md lists the bindings.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkContract, describeProblems, fixtureBodies, type ContractSpec } from '../../helpers/fixture-contract.js';

const INNER = 'the error page shows innerError with "request-id" and "date", which PublicInnerError does not declare; the page wins';
const IDENTITY_EMAIL = 'the List drives example shows an "email" on the user identity, which Identity does not declare; the page wins';

export const M365_CONTRACT: ContractSpec = {
  vendor: 'microsoft365',
  prelude: [
    "import type { Drive, DriveItem, DriveItemVersion, PublicError, Site, ThumbnailSet, User } from '@microsoft/microsoft-graph-types';",
    // A Graph collection ("value" plus OData annotations); the package types entities, not their collections.
    "type Collection<T> = { value: T[]; '@odata.nextLink'?: string; '@odata.context'?: string };",
    // The error resource of "Microsoft Graph error responses": { error: { code, message, innerError } }.
    'type ErrorBody = { error: PublicError };',
  ].join('\n'),
  bindings: [
    { body: 'me.json#response', type: 'User' },
    { body: 'drive.json#me', type: 'Drive', pageWins: { 'lastModifiedBy.user.email': IDENTITY_EMAIL, 'owner.user.email': IDENTITY_EMAIL } },
    { body: 'drive.json#site_drives', type: 'Collection<Drive>', pageWins: { 'value[0].lastModifiedBy.user.email': IDENTITY_EMAIL } },
    { body: 'sites.json#followed', type: 'Collection<Site>' },
    { body: 'sites.json#site', type: 'Site' },
    { body: 'items.json#root', type: 'DriveItem' },
    { body: 'items.json#folder', type: 'DriveItem' },
    { body: 'items.json#file', type: 'DriveItem' },
    { body: 'collections.json#search', type: 'Collection<DriveItem>' },
    { body: 'collections.json#versions', type: 'Collection<DriveItemVersion>' },
    { body: 'collections.json#thumbnails', type: 'Collection<ThumbnailSet>' },
    { body: 'errors.json#itemNotFound', type: 'ErrorBody', pageWins: { 'error.innerError["request-id"]': INNER } },
    { body: 'errors.json#unauthenticated', type: 'ErrorBody', pageWins: { 'error.innerError["request-id"]': INNER } },
    { body: 'errors.json#invalidRequest', type: 'ErrorBody', pageWins: { 'error.innerError["request-id"]': INNER } },
    { body: 'errors.json#throttled', type: 'ErrorBody', pageWins: { 'error.innerError.date': INNER } },
  ],
  unchecked: {
    'oauth2_token.json#code': 'a Microsoft identity platform token endpoint answer (OAuth 2.0), not a Graph resource: the Graph types do not cover it; the page is "Microsoft identity platform and OAuth 2.0 authorization code flow"',
    'oauth2_token.json#refresh': 'as oauth2_token.json#code',
    'oauth2_token.json#invalid_grant': 'an identity platform token endpoint error (RFC 6749 §5.2 plus error_codes, trace_id, correlation_id), not a Graph error: no Graph type',
  },
};

/**
 * One compile for everything (the Graph types are large): the fixtures on disk, plus two drifted
 * copies bound to the same types, which must fail exactly where they drift.
 */
test('every fixture body matches its Graph type (or is listed as unchecked, with why); a drift fails, naming the fixture and the field', () => {
  const bodies = fixtureBodies('microsoft365');
  const file = structuredClone(bodies.get('items.json#file')) as any;
  file.file.hashes.sha1 = file.file.hashes.sha1Hash; // a renamed field
  delete file.file.hashes.sha1Hash;
  const versions = structuredClone(bodies.get('collections.json#versions')) as any;
  versions.value[0].size = String(versions.value[0].size); // a wrong type
  bodies.set('drift.json#file', file);
  bodies.set('drift.json#versions', versions);
  const spec: ContractSpec = {
    ...M365_CONTRACT,
    bindings: [...M365_CONTRACT.bindings, { body: 'drift.json#file', type: 'DriveItem' }, { body: 'drift.json#versions', type: 'Collection<DriveItemVersion>' }],
  };
  const r = checkContract(spec, bodies);
  const onDisk = { ...r, problems: r.problems.filter((p) => !p.body.startsWith('drift.json')) };
  assert.equal(describeProblems(onDisk), '');
  assert.deepEqual(r.problems.filter((p) => p.body.startsWith('drift.json')).map((p) => [p.body, p.path]).sort(),
    [['drift.json#file', 'file.hashes.sha1'], ['drift.json#versions', 'value[0].size']], describeProblems(r));
  assert.match(describeProblems(r), /drift\.json#versions at value\[0\]\.size: Type 'string' is not assignable/);
});
