/** Bynder's shapes → the hub's: ids in both of Bynder's forms, metaproperty labels and their translations, filter ids. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { filterParams, filtersOf, labelsOf, parseFolderId, toAsset, v4Id, valuesOf } from '../../../src/providers/bynder/mapping.js';
import { bynderFixture } from '../../helpers/bynder-replay.js';

test('ids: the v4 form and the newer 8-4-4-4-12 form name the same asset; anything else is no id', () => {
  assert.equal(v4Id('86b09440-fb61-450f-afa65fabf4f5d628'), '86B09440-FB61-450F-AFA65FABF4F5D628');
  assert.equal(v4Id('e0664bc4-4d64-4776-a010-a19d337f7ee9'), 'E0664BC4-4D64-4776-A010A19D337F7EE9');
  for (const bad of ['', 'root', '86B09440-FB61-450F-AFA65FABF4F5D62', '../86B09440-FB61-450F-AFA65FABF4F5D628', '86B09440-FB61-450F-AFA65FABF4F5D628 ']) assert.equal(v4Id(bad), null, bad);
  assert.deepEqual(parseFolderId('brand:2d389252-91a2-4eff-967f62ed8f25382c'), { kind: 'brand', id: '2D389252-91A2-4EFF-967F62ED8F25382C' });
  assert.equal(parseFolderId('brand:x'), null);
  assert.equal(parseFolderId('tag:2D389252-91A2-4EFF-967F62ED8F25382C'), null);
});

test('values: option names shown as labels; a metaproperty\'s labels map becomes i18nName (fr_FR → fr-FR)', () => {
  const props = Object.values(bynderFixture('metaproperties').response) as any[];
  // Create/Modify metaproperty document `labels` on the metaproperty itself ({"fr_FR": ..., "en_US": ...}).
  const withLabels = props.map((p) => (p.name === 'colours' ? { ...p, labels: { fr_FR: 'Couleurs', en_US: 'Colours' } } : p));
  const media = { ...bynderFixture('media').item, property_colours: ['yellow', 'red'] };
  assert.deepEqual(valuesOf(media, labelsOf(withLabels)), [{ id: '00000000-0000-0000-0000000000000000', type: 'TEXT', value: 'Yellow, Red', name: 'Colours', i18nName: { 'fr-FR': 'Couleurs', 'en-US': 'Colours' } }]);
  // Without the metaproperties (no meta.assetbank:read): the raw name and option names.
  assert.deepEqual(valuesOf(media, null), [{ id: 'property_colours', type: 'TEXT', value: 'yellow, red', name: 'colours' }]);
});

test('an asset from the documented item: file name from name and extension, CDN thumbnails as conversions', () => {
  const a = toAsset(bynderFixture('media').item, { detail: true });
  assert.equal(a.name, 'Sunset.jpg');
  assert.equal(a.title, 'Sunset');
  assert.equal(a.mimeType, 'image/jpeg');
  assert.equal(a.created, Date.parse('2017-05-30T16:47:44Z'));
  assert.deepEqual(a.keywords, ['summer', 'harbour']);
  assert.deepEqual(a.conversions!.map((c) => [c.name, c.extension]), [['mini', 'jpg'], ['webimage', 'jpg'], ['thul', 'jpg']]);
  assert.equal(a.version, undefined, 'no media items listed: no version number');
});

test('filters: facet counts with option ids that are the documented parameters; filter ids read back, foreign ones refused', () => {
  const props = Object.values(bynderFixture('metaproperties').response) as any[];
  const f = filtersOf(bynderFixture('media').count.count, props, new Set(['tags=summer']), 'en');
  assert.deepEqual(f.map((x) => x.id), ['type', 'property_colours', 'tags']);
  assert.deepEqual(f[2]!.options.find((o) => o.id === 'tags=summer'), { id: 'tags=summer', isActive: true, name: 'summer', count: 1 });
  assert.deepEqual(filterParams(['property_colours=yellow', 'property_colours=red', 'type=image']), { property_colours: 'yellow,red', type: 'image' });
  assert.deepEqual(filterParams([]), {});
  for (const bad of [['brandId=x'], ['tags=a,b'], ['tags='], ['property_=x'], ['keyword=x']]) assert.equal(filterParams(bad), null, bad[0]);
});
