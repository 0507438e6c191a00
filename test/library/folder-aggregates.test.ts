/**
 * A folder's total and facet counts are memoised per index generation (index/folder-aggregates.ts):
 * counted once per change of the index, never stale after a change by this or another connection.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import test from 'node:test';
import type { AssetRow } from '../../src/providers/library/index/contract.js';
import { FolderAggregates } from '../../src/providers/library/index/folder-aggregates.js';
import { LibraryIndex } from '../../src/providers/library/index/sqlite.js';
import { tempDir } from '../helpers/hub.js';

const empty = { type: [], ext: [], year: [], orientation: [], keyword: [] };

test('the memo counts once per generation and key; filters in another order are the same key; a new generation recounts', () => {
  const memo = new FolderAggregates(2);
  let counted = 0;
  const count = () => ({ total: ++counted, facets: empty });
  assert.equal(memo.get('g1', { folderPath: 'A', filters: { ext: ['jpg', 'png'], type: ['image'] } }, count).total, 1);
  assert.equal(memo.get('g1', { folderPath: 'A', filters: { type: ['image'], ext: ['png', 'jpg'] } }, count).total, 1, 'same selection, another order');
  assert.equal(memo.get('g1', { folderPath: 'A', filters: { ext: [] } }, count).total, 2, 'no filters is another key');
  assert.equal(memo.get('g1', { folderPath: 'A', filters: {} }, count).total, 2, 'an empty filter list is no filter');
  assert.equal(memo.get('g1', { folderPath: 'B', filters: {} }, count).total, 3, 'another folder');
  // Bounded (2 entries here): the least recently used went.
  assert.equal(memo.get('g1', { folderPath: 'A', filters: { ext: ['jpg', 'png'], type: ['image'] } }, count).total, 4);
  assert.equal(memo.get('g1', { folderPath: 'B', filters: {} }, count).total, 3, 'the most recent stays');
  assert.equal(memo.get('g2', { folderPath: 'B', filters: {} }, count).total, 5, 'a new generation recounts');
  const shared = memo.get('g2', { folderPath: 'B', filters: {} }, count);
  assert.ok(Object.isFrozen(shared) && Object.isFrozen(shared.facets), 'shared between answers, so frozen');
});

const row = (i: number, folder: string, ext: string): AssetRow => ({
  id: `asset${String(i).padStart(17, '0')}`, relPath: `${folder}/f${i}.${ext}`, folderPath: folder, name: `f${i}.${ext}`, ext, size: 1, mtimeMs: Date.UTC(2020, 0, 1), createdMs: 0,
  mimeType: ext === 'png' ? 'image/png' : 'image/jpeg', kind: 'image', width: 2, height: 1, version: 1, versionComment: null,
  meta: { keywords: [`kw${i % 2}`], categories: [], iptc: {}, xmp: {} } as unknown as AssetRow['meta'], hashes: null, blob: null, indexedAt: i,
});

test('a listing\'s total and facets follow changes by this connection and by another one on the same file', () => {
  const file = path.join(tempDir('damhub-aggregates-'), 'library.sqlite');
  const writer = new LibraryIndex(file);
  writer.ensureFolder('A');
  for (let i = 1; i <= 3; i++) writer.upsertAsset(row(i, 'A', 'jpg'), null);
  const reader = new LibraryIndex(file);
  const list = (index: LibraryIndex, filters = {}) => index.list({ folderPath: 'A', filters, limit: 2, after: null });
  const ext = (p: ReturnType<typeof list>) => p.facets.ext.map((o) => `${o.value}:${o.count}`);
  assert.equal(list(reader).total, 3);
  assert.deepEqual(ext(list(reader)), ['jpg:3']);
  // Another connection commits: the reader's next listing counts again.
  writer.upsertAsset(row(4, 'A', 'png'), null);
  const after = list(reader);
  assert.equal(after.total, 4);
  assert.deepEqual(ext(after), ['jpg:3', 'png:1']);
  assert.equal(after.rows.length, 2, 'the page itself is still one page');
  // This connection's own change.
  reader.removeAsset('A/f1.jpg');
  assert.equal(list(reader).total, 3);
  assert.deepEqual(ext(list(reader)), ['jpg:2', 'png:1']);
  // Filters: counted under the other active filters, memoised apart from the unfiltered listing.
  const png = list(reader, { ext: ['png'] });
  assert.equal(png.total, 1);
  assert.deepEqual(png.facets.keyword.map((o) => `${o.value}:${o.count}`), ['kw0:1']);
  assert.equal(list(reader).total, 3);
  writer.close();
  reader.close();
});
