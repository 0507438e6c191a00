/**
 * The Google Drive replay fixtures held to Google's own generated types (`@googleapis/drive`,
 * generated from the Drive API v3 discovery document that the reference pages are made from):
 * each body is checked as an object literal of its `drive_v3.Schema$…` type, so a renamed or
 * invented field, or a wrong type, fails, naming the fixture and the field. Every Drive schema
 * field is optional, so a missing field cannot fail here. test/fixtures/gdrive/README.md lists
 * the bindings.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkContract, describeProblems, fixtureBodies, type ContractSpec } from '../../helpers/fixture-contract.js';

export const DRIVE_CONTRACT: ContractSpec = {
  vendor: 'gdrive',
  prelude: "import type { drive_v3 } from '@googleapis/drive';",
  bindings: [
    { body: 'files.json#list', type: 'drive_v3.Schema$FileList' },
    { body: 'files.json#file', type: 'drive_v3.Schema$File' },
    { body: 'files.json#folder', type: 'drive_v3.Schema$File' },
    { body: 'files.json#root', type: 'drive_v3.Schema$File' },
    { body: 'revisions.json#list', type: 'drive_v3.Schema$RevisionList' },
    { body: 'revisions.json#revision', type: 'drive_v3.Schema$Revision' },
    { body: 'about.json#response', type: 'drive_v3.Schema$About' },
  ],
  unchecked: {
    'errors.json#invalid_credentials': 'the error envelope is Google\'s common JSON error format ("Resolve errors" guide), which the generated client does not type (it surfaces errors as GaxiosError)',
    'errors.json#user_rate_limit': 'as errors.json#invalid_credentials',
    'errors.json#not_found': 'as errors.json#invalid_credentials',
    'errors.json#too_many_requests': 'as errors.json#invalid_credentials',
    'oauth2_token.json#code': 'the OAuth 2.0 token endpoint is not part of the Drive API: no Drive type describes its answer',
    'oauth2_token.json#refresh': 'as oauth2_token.json#code',
    'oauth2_token.json#invalid_grant': 'as oauth2_token.json#code',
    'thumbnail.json#field': 'not a response body: the File reference\'s description of thumbnailLink, quoted (the link itself is a File field, checked in files.json)',
    'thumbnail.json#description': 'as thumbnail.json#field',
    'thumbnail.json#host': 'as thumbnail.json#field',
  },
};

test('every Drive fixture body matches its generated type (or is listed as unchecked, with why)', () => {
  assert.equal(describeProblems(checkContract(DRIVE_CONTRACT)), '');
});

/** The fixtures on disk with one body replaced by `edit` of a copy of it. */
function drifted(body: string, edit: (b: any) => void): Map<string, unknown> {
  const bodies = fixtureBodies('gdrive');
  const copy = structuredClone(bodies.get(body));
  edit(copy);
  bodies.set(body, copy);
  return bodies;
}

test('a renamed field fails, naming the fixture and the field', () => {
  const r = checkContract(DRIVE_CONTRACT, drifted('files.json#file', (f) => {
    f.modified_time = f.modifiedTime;
    delete f.modifiedTime;
  }));
  assert.deepEqual(r.problems.map((p) => [p.body, p.path]), [['files.json#file', 'modified_time']], describeProblems(r));
  assert.match(r.problems[0]!.message, /'"?modified_time"?' does not exist in type 'Schema\$File'/);
});

test('a wrong type fails, nested fields included (int64 values are strings in Drive\'s JSON)', () => {
  const width = describeProblems(checkContract(DRIVE_CONTRACT, drifted('files.json#file', (f) => { f.imageMediaMetadata.width = '1600'; })));
  assert.match(width, /^files\.json#file at imageMediaMetadata\.width: Type 'string' is not assignable to type 'number'/);
  const size = describeProblems(checkContract(DRIVE_CONTRACT, drifted('revisions.json#revision', (r) => { r.size = 48213; })));
  assert.match(size, /^revisions\.json#revision at size: Type 'number' is not assignable to type 'string'/);
});

test('a body no type checks fails', () => {
  const bodies = fixtureBodies('gdrive');
  bodies.set('files.json#shortcut', { kind: 'drive#file' });
  assert.deepEqual(checkContract(DRIVE_CONTRACT, bodies).unbound, ['files.json#shortcut']);
});
