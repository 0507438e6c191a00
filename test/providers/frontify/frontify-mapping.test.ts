/** Frontify's GraphQL errors and bodies → the hub's codes and shape (unit level, no server). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { frontifyErrorMessage, graphqlError } from '../../../src/providers/frontify/api.js';
import { parsePlace, toAsset } from '../../../src/providers/frontify/mapping.js';
import { frontifyFixture } from '../../helpers/frontify-replay.js';

test('GraphQL errors map to integration codes by code, category and Frontify\'s words; the message stays in details', () => {
  const cases: [object, string, number][] = [
    [{ message: 'UserId not set in identity.', extensions: { category: 'permission' } }, 'integration-auth-failed', 401],
    [{ message: "policy 'authenticated' not fulfilled", extensions: { category: 'permission' } }, 'integration-auth-failed', 401],
    [{ message: 'Not allowed', extensions: { code: 'UNAUTHORIZED' } }, 'integration-auth-failed', 401],
    [{ message: 'You may not view this library', extensions: { category: 'permission' } }, 'integration-forbidden', 403],
    [{ message: 'Asset missing', extensions: { code: 'NOT_FOUND' } }, 'integration-not-found', 404],
    [{ message: 'Invalid query' }, 'integration-operation-failed', 400],
    [{ message: 'boom', extensions: { category: 'internal' } }, 'integration-unavailable', 502],
  ];
  for (const [e, code, status] of cases) {
    const err = graphqlError('DamhubAsset', [e as never]);
    assert.equal(err.code, code, JSON.stringify(e));
    assert.equal(err.status, status);
    assert.match(err.details!, new RegExp(`Frontify DamhubAsset: ${(e as { message: string }).message.replace(/[.']/g, '.')}`));
  }
});

test('error bodies: the GraphQL messages, an OAuth error, or the text as it came', () => {
  assert.equal(frontifyErrorMessage(JSON.stringify(frontifyFixture('errors').unauthenticated)), 'UserId not set in identity.');
  assert.equal(frontifyErrorMessage(JSON.stringify(frontifyFixture('oauth').invalid_grant)), 'invalid_grant: The refresh token is invalid.');
  assert.equal(frontifyErrorMessage('<html>Bad Gateway</html>'), '<html>Bad Gateway</html>');
});

test('hub folder ids: root, brand, library, folder; anything else is no place', () => {
  assert.deepEqual(parsePlace('root'), { kind: 'root' });
  assert.deepEqual(parsePlace('b:eyJ9'), { kind: 'brand', id: 'eyJ9' });
  assert.deepEqual(parsePlace('l:eyJ9=='), { kind: 'library', id: 'eyJ9==' });
  assert.deepEqual(parsePlace('f:eyJ9:eyJ1'), { kind: 'folder', library: 'eyJ9', id: 'eyJ1' });
  for (const bad of ['', '/no/such', 'f:a', 'x:a', 'b:a b', `b:${'a'.repeat(201)}`, 'f:a:b:c']) assert.equal(parsePlace(bad), null, bad);
});

test('asset mapping: embedded content without a file, BigInt sizes as strings, metadata kinds', () => {
  const img = frontifyFixture('graphql').image.value;
  const embedded = toAsset({ __typename: 'EmbeddedContent', id: 'e1', title: 'Promo video', createdAt: '2024-03-01T09:30:00.000+00:00' });
  assert.equal(embedded.name, 'Promo video');
  assert.equal(embedded.type, 'embeddedcontent');
  assert.equal(embedded.mimeType, undefined);
  const a = toAsset({ ...img, size: '9007199254740993', customMetadata: [
    { property: { id: 'p1', name: 'Shot on', type: { name: 'DATE' } }, value: '2024-01-02' },
    { property: { id: 'p2', name: 'Rating', type: { name: 'NUMBER' } }, value: 4 },
    { property: { id: 'p3', name: 'Empty', type: { name: 'TEXT' } }, value: null },
  ] });
  assert.equal(a.fileSize, undefined, 'a size beyond the safe integers is left out rather than rounded');
  assert.deepEqual(a.values!.map((v) => [v.name, v.type, v.value]), [['Shot on', 'DATE', '2024-01-02'], ['Rating', 'NUMBER', '4'], ['Author', 'TEXT', 'Jane Photographer']]);
  assert.equal(a.modified, Date.parse(img.modifiedAt));
  assert.deepEqual(a.capabilities!.uploadExtensions, []);
});

test('a GraphQL error below the root field leaves the rest of the answer usable; one at the root is the answer', async () => {
  const { FrontifyApi } = await import('../../../src/providers/frontify/api.js');
  const answer = (body: unknown) => ({
    json: async () => ({ status: 200, headers: {}, data: body }),
  }) as never;
  const partial = { data: { asset: { id: 'a1', customMetadata: null } }, errors: [{ message: 'not allowed', path: ['asset', 'customMetadata'], extensions: { category: 'permission' } }] };
  assert.deepEqual(await new FrontifyApi(answer(partial), 'https://acme.frontify.com', 't').run('DamhubAsset', { id: 'a1' }), partial.data);
  const root = { data: { asset: null }, errors: [{ message: 'not allowed', path: ['asset'], extensions: { category: 'permission' } }] };
  await assert.rejects(new FrontifyApi(answer(root), 'https://acme.frontify.com', 't').run('DamhubAsset', { id: 'a1' }), (e: any) => e.code === 'integration-forbidden');
  await assert.rejects(new FrontifyApi(answer({ errors: [{ message: 'Invalid query' }] }), 'https://acme.frontify.com', 't').run('DamhubAsset', { id: 'a1' }), (e: any) => e.code === 'integration-operation-failed');
  await assert.rejects(new FrontifyApi(answer({ data: null }), 'https://acme.frontify.com', 't').run('DamhubAsset', { id: 'a1' }), (e: any) => e.code === 'integration-unavailable' && e.status === 502);
});
