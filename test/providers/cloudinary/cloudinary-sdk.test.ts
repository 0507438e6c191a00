/**
 * What the connector sends, held to Cloudinary's official Node SDK (the `cloudinary` package, a
 * devDependency): its request signature equals the SDK's api_sign_request; the signed download
 * requests carry the parameters and signature of the SDK's private_download_url and
 * download_backedup_asset; a Search API body is what the SDK's search builder sends; expressions
 * keep user input inside terms and quoted values.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import cloudinary from 'cloudinary';
import { signParams } from '../../../src/providers/cloudinary/api.js';
import { escapeTerm, filterExpression, inFolder, keywordExpression, underFolder } from '../../../src/providers/cloudinary/mapping.js';
import { startCloudinaryHub, startCloudinaryReplay } from '../../helpers/cloudinary-replay.js';

const sdk = cloudinary.v2;
const SECRET = 'a676b67565c6767a6767d6767f676fe1';
const OPTS = { cloud_name: 'cld-docs', api_key: '614335564976464', api_secret: SECRET };

test('the request signature is the SDK\'s (sorted parameters, & escaped, secret appended, SHA-1)', () => {
  const cases: Record<string, string | number>[] = [
    { public_id: 'sample', format: 'jpg', type: 'private', timestamp: 1315060510 },
    { asset_id: '03a6a5e1ee2d2a1ef5ab4d53f8b5a5e7', version_id: '7d2cc533bee9ff39f7da7414b61fce7e', timestamp: 1719316754 },
    { public_id: 'brand/a&b=c é', format: '', type: 'authenticated', timestamp: 1 },
  ];
  for (const params of cases) {
    assert.equal(signParams(params, SECRET), sdk.utils.api_sign_request(params, SECRET), JSON.stringify(params));
  }
});

test('the signed download requests are the SDK\'s private_download_url and download_backedup_asset', () => {
  const priv = new URL(sdk.utils.private_download_url('brand/logo', 'png', { ...OPTS, type: 'private', timestamp: 1719316754 } as object as { type: 'private' }));
  assert.equal(priv.pathname, '/v1_1/cld-docs/image/download');
  assert.equal(priv.searchParams.get('signature'), signParams({ public_id: 'brand/logo', format: 'png', type: 'private', timestamp: 1719316754 }, SECRET));
  const backup = new URL(sdk.utils.download_backedup_asset('03a6a5e1ee2d2a1ef5ab4d53f8b5a5e7', '7d2cc533bee9ff39f7da7414b61fce7e', { ...OPTS, timestamp: 1719316754 }));
  assert.equal(backup.pathname, '/v1_1/cld-docs/download_backup');
  assert.equal(backup.searchParams.get('signature'), signParams({ asset_id: '03a6a5e1ee2d2a1ef5ab4d53f8b5a5e7', version_id: '7d2cc533bee9ff39f7da7414b61fce7e', timestamp: 1719316754 }, SECRET));
});

test('a Search API body is the one the SDK\'s search builder sends', async (t) => {
  const r = await startCloudinaryReplay(['Brand/logo.png', 'Brand/hero.jpg'], { tier2: true });
  const h = await startCloudinaryHub(r);
  t.after(async () => {
    await h.t.close();
    await r.close();
  });
  assert.equal((await h.get('/assets/search?query=logo&size=7&parentId=Brand')).status, 200);
  const sent = r.searches.at(-1);
  const built = sdk.search.expression(sent.expression).max_results(7).sort_by('public_id', 'asc').with_field(['tags', 'context'])
    .aggregate('resource_type').aggregate('format').aggregate('type').to_query();
  assert.deepEqual(sent, built);
});

test('expressions: user input stays inside terms and quoted values', () => {
  assert.equal(escapeTerm('a(b)*c:d"e\\f'), 'a\\(b\\)\\*c\\:d\\"e\\\\f');
  assert.equal(keywordExpression('blue  sweater'), 'blue AND sweater');
  assert.equal(keywordExpression('NOT x OR y'), 'not AND x AND or AND y');
  assert.equal(keywordExpression('   '), null);
  assert.equal(inFolder('dynamic', 'Sale "2024"'), 'asset_folder="Sale \\"2024\\""');
  assert.equal(inFolder('fixed', ''), 'folder=""');
  assert.equal(underFolder('fixed', 'a b/c'), '(folder="a b/c" OR folder:a\\ b/c/*)');
  assert.deepEqual(filterExpression(['format:jpg', 'format:png', 'type:upload']).clauses, ['(format="jpg" OR format="png")', '(type="upload")']);
  assert.throws(() => filterExpression(['format']), (e: { code?: string; details?: string }) => e.code === 'hub-validation-error' && /unknown option id/.test(e.details ?? ''));
});
