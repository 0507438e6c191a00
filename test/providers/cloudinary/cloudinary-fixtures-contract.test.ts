/**
 * The Cloudinary replay fixtures held to the types of Cloudinary's official Node SDK (the
 * `cloudinary` package, types/index.d.ts): every body is compiled as an object literal of its
 * type, so a wrong type of a declared field, a missing required field, or (where the type has no
 * index signature) an invented field fails, naming the fixture and the field. The SDK's resource
 * type carries an index signature (`[futureKey: string]: any`: "Cloudinary may add more fields"),
 * so invented fields inside a resource are not caught; its declared fields are. Bodies the SDK
 * does not type (it returns Promise<any>) are listed as unchecked, with why.
 * test/fixtures/cloudinary/README.md lists the bindings.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkContract, describeProblems, fixtureBodies, type ContractSpec } from '../../helpers/fixture-contract.js';

const NULL_ACL = 'the SDK declares access_control as Array<string>; the page (and the SDK\'s own asset-management model) shows null for an asset without access control';

export const CLOUDINARY_CONTRACT: ContractSpec = {
  // The shared helper's vendor union names the vendors it was written for; any fixtures folder works.
  vendor: 'cloudinary' as ContractSpec['vendor'],
  prelude: [
    "import type { AdminApiPaginationResponse, ConfigResponse, ResourceApiResponse } from 'cloudinary';",
    // One resource as the SDK types it; every field optional, as the API returns each only when it applies or is asked for.
    "type Found = Partial<ResourceApiResponse['resources'][0]>;",
    'type SearchBody = Omit<ResourceApiResponse, \'resources\'> & { total_count: number; time: number; aggregations?: Record<string, Record<string, number>>; resources: Found[] };',
  ].join('\n'),
  bindings: [
    { body: 'config.json#dynamic', type: 'ConfigResponse' },
    { body: 'config.json#fixed', type: 'ConfigResponse' },
    {
      body: 'resource.json#response', type: 'Found',
      pageWins: {
        'derived[0]': 'the SDK declares derived as Array<string>; the page shows objects (transformation, format, bytes, id, url, secure_url)',
        access_control: NULL_ACL,
      },
    },
    { body: 'search.json#response', type: 'SearchBody', pageWins: { 'resources[0].access_control': NULL_ACL } },
    { body: 'visual_search.json#response', type: 'AdminApiPaginationResponse & { resources: Found[] }' },
  ],
  unchecked: {
    'folders.json#root': 'the SDK types root_folders as Promise<any>; the page is Admin API "Get root folders"',
    'folders.json#sub': 'the SDK types sub_folders as Promise<any>; the page is Admin API "Get subfolders"',
    'ping.json#response': 'the SDK types ping as Promise<any>',
    'errors.json#not_found': 'the SDK types the error it raises (UploadApiErrorResponse: message, name, http_code), not the answered body {"error": {"message"}}',
    'errors.json#unauthorized': 'as errors.json#not_found',
    'errors.json#rate_limited': 'as errors.json#not_found',
    'errors.json#bad_request': 'as errors.json#not_found',
    'errors.json#no_aggregation': 'as errors.json#not_found',
    'errors.json#signature': 'as errors.json#not_found',
  },
};

test('every Cloudinary fixture body matches its SDK type (or is listed as unchecked, with why)', () => {
  const r = checkContract(CLOUDINARY_CONTRACT);
  assert.equal(describeProblems(r), '');
});

test('drifts fail, naming the fixture and the field: a wrong type, an invented field, a missing one', () => {
  // One compile for all of them (each check compiles a program): each drift in a body of its own.
  const bodies = fixtureBodies('cloudinary');
  const edit = (body: string, f: (b: any) => void) => {
    const copy = structuredClone(bodies.get(body));
    f(copy);
    bodies.set(body, copy);
  };
  edit('search.json#response', (b) => { b.resources[0].bytes = String(b.resources[0].bytes); });
  edit('config.json#dynamic', (b) => { b.settings.folder_mode = 'dynamc'; });
  edit('config.json#fixed', (b) => { b.cloudName = b.cloud_name; delete b.cloud_name; });
  edit('visual_search.json#response', (b) => { delete b.resources; });
  const r = checkContract(CLOUDINARY_CONTRACT, bodies);
  const at = (body: string) => r.problems.filter((p) => p.body === body);
  assert.deepEqual(at('search.json#response').map((p) => p.path), ['resources[0].bytes']);
  assert.deepEqual(at('config.json#dynamic').map((p) => p.path), ['settings.folder_mode']);
  assert.ok(at('config.json#fixed').length > 0, 'a renamed field of a closed type');
  assert.match(describeProblems(r), /visual_search\.json#response at \(body\): .*resources/s);
});
