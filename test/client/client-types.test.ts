/**
 * The client's types are generated from the hub's OpenAPI document (test/helpers/client-codegen.ts).
 * This fails when a route or model schema changed and the committed file was not regenerated.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import { GENERATED_FILE, generateTypes, hubOpenApi } from '../helpers/client-codegen.js';

test('the generated client types match the hub\'s current OpenAPI document (run `npm run gen:client-types` when this fails)', async () => {
  const committed = fs.readFileSync(GENERATED_FILE, 'utf8');
  const fresh = generateTypes(await hubOpenApi());
  assert.equal(committed, fresh, 'packages/client/src/generated/types.ts is stale: run `npm run gen:client-types` and commit it');
});
