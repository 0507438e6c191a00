/**
 * The provider conformance suite: runs any provider, through the hub's HTTP contract, against
 * the seed's paging rules 1-5, capability honesty and error mapping. A connector passes it by
 * calling runProviderConformance with a harness that signs in and knows one folder with assets.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { capabilitiesOf } from '../../src/providers/capabilities.js';
import type { Provider } from '../../src/providers/contract.js';

export interface ConformanceResponse {
  status: number;
  body: any;
}

export interface ConformanceHarness {
  /** The provider under test, as the hub registered it. */
  provider: Provider;
  /** GET/POST relative to /api/v1 with both credentials attached. */
  request(method: 'GET' | 'POST', path: string, body?: unknown): Promise<ConformanceResponse>;
  /** A folder id holding more assets than `pageSize` (and at least one subfolder, unless `subfolderParentId` is given). */
  bigFolderId: string;
  /**
   * A folder with subfolders, where the big folder cannot have any (Canto: albums hold assets,
   * folders hold albums). Default: bigFolderId.
   */
  subfolderParentId?: string;
  /** An asset id that exists. */
  knownAssetId: string;
  pageSize: number;
  /** A keyword that matches more than `pageSize` assets. */
  commonTerm: string;
}

const q = (params: Record<string, string | number | undefined>) =>
  Object.entries(params).filter(([, v]) => v !== undefined).map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`).join('&');

function assertIntegrationError(r: ConformanceResponse, code: string, status: number, provider: string) {
  assert.equal(r.status, status, JSON.stringify(r.body));
  assert.equal(r.body.error.code, code);
  assert.equal(r.body.error.source, 'integration');
  assert.equal(r.body.error.provider, provider);
  assert.equal(r.body.errorCode, code);
}

/** Follows `more` to the end; asserts rules 1-4 on the way. */
async function traverse(h: ConformanceHarness, path: string, params: Record<string, string | number>, method: 'GET' | 'POST' = 'GET', body?: unknown) {
  const pages: any[] = [];
  let more: string | undefined;
  for (let i = 0; i < 1000; i++) {
    const r = await h.request(method, `${path}?${q({ ...params, more })}`, body);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    pages.push(r.body);
    assert.ok(Array.isArray(r.body.assets) && Array.isArray(r.body.folders) && Array.isArray(r.body.filters));
    assert.equal(typeof r.body.totalAssetsCount, 'number');
    assert.ok(r.body.assets.length <= Number(params.size ?? Infinity), 'a page never exceeds size');
    if (r.body.more === undefined) return pages;
    assert.ok(typeof r.body.more === 'string' || typeof r.body.more === 'number');
    more = String(r.body.more);
  }
  throw new Error('traversal did not end in 1000 pages');
}

export function runProviderConformance(name: string, setup: () => Promise<ConformanceHarness>): void {
  let h: ConformanceHarness;
  const id = () => h.provider.descriptor.id;

  test(`${name} conformance: setup`, async () => {
    h = await setup();
    assert.ok(h.provider.descriptor.paging.defaultSize >= 1 && h.provider.descriptor.paging.maxSize >= h.provider.descriptor.paging.defaultSize);
  });

  test(`${name} conformance: browse follows more to the end without duplicates or gaps (rules 1, 3, 4)`, async () => {
    const pages = await traverse(h, `/assets/folder/${encodeURIComponent(h.bigFolderId)}`, { size: h.pageSize });
    assert.ok(pages.length > 1, 'the big folder needs more than one page');
    const ids = pages.flatMap((p) => p.assets.map((a: any) => a.id));
    assert.equal(new Set(ids).size, ids.length, 'no asset appears twice');
    assert.equal(ids.length, pages[0].totalAssetsCount, 'totalAssetsCount is exact');
    const all = await h.request('GET', `/assets/folder/${encodeURIComponent(h.bigFolderId)}?size=${h.provider.descriptor.paging.maxSize}`);
    if (all.body.more === undefined) assert.deepEqual(new Set(all.body.assets.map((a: any) => a.id)), new Set(ids), 'paged and unpaged listings agree');
    assert.equal(pages.at(-1).more, undefined, 'the last page has no more');
  });

  test(`${name} conformance: folders on the first page, de-duplicable by id (rule 2)`, async () => {
    const pages = await traverse(h, `/assets/folder/${encodeURIComponent(h.subfolderParentId ?? h.bigFolderId)}`, { size: h.pageSize });
    assert.ok(pages[0].folders.length > 0, 'the big folder has subfolders on the first page');
    for (const p of pages.slice(1)) {
      if (capabilitiesOf(h.provider).foldersOnEveryPage) assert.deepEqual(p.folders, pages[0].folders);
      else assert.deepEqual(p.folders, [], 'folders are not repeated when the provider says so');
    }
    for (const f of pages[0].folders) {
      assert.equal(typeof f.id, 'string');
      const sub = await h.request('GET', `/assets/folder/${encodeURIComponent(f.id)}?size=1`);
      assert.equal(sub.status, 200, `subfolder ${f.id} opens by its id`);
    }
  });

  test(`${name} conformance: size above the maximum is clamped, not rejected (rule 5); bad size is a 400`, async () => {
    const r = await h.request('GET', `/assets/folder/${encodeURIComponent(h.bigFolderId)}?size=1000000`);
    assert.equal(r.status, 200);
    assert.ok(r.body.assets.length <= h.provider.descriptor.paging.maxSize);
    for (const bad of ['-1', 'abc', '1.5']) {
      const b = await h.request('GET', `/assets/folder/root?size=${bad}`);
      assert.equal(b.status, 400, `size=${bad}`);
      assert.equal(b.body.error.code, 'hub-validation-error');
    }
  });

  test(`${name} conformance: a forged, altered or foreign more is a clear 400`, async () => {
    const first = await h.request('GET', `/assets/folder/${encodeURIComponent(h.bigFolderId)}?size=${h.pageSize}`);
    const more: string = first.body.more;
    for (const bad of ['garbage', `${more}x`, more.replace(/^./, (c) => (c === 'a' ? 'b' : 'a')), '../../etc/passwd']) {
      const r = await h.request('GET', `/assets/folder/${encodeURIComponent(h.bigFolderId)}?size=${h.pageSize}&more=${encodeURIComponent(bad)}`);
      assert.equal(r.status, 400, bad);
      assert.equal(r.body.error.code, 'hub-validation-error');
    }
    const foreign = await h.request('GET', `/assets/folder/root?size=${h.pageSize}&more=${encodeURIComponent(more)}`);
    assert.equal(foreign.status, 400, 'a cursor of another folder is refused');
  });

  test(`${name} conformance: search pages like browse and carries capabilities`, async () => {
    if (!capabilitiesOf(h.provider).search) {
      assertIntegrationError(await h.request('GET', '/assets/search?query=x'), 'integration-not-supported', 501, id());
      return;
    }
    const pages = await traverse(h, '/assets/search', { query: h.commonTerm, size: h.pageSize });
    assert.ok(pages.length > 1);
    const ids = pages.flatMap((p) => p.assets.map((a: any) => a.id));
    assert.equal(new Set(ids).size, ids.length);
    assert.equal(ids.length, pages[0].totalAssetsCount);
    assert.equal(typeof pages[0].capabilities.canAddAsset, 'boolean');
  });

  test(`${name} conformance: capabilities are honest`, async () => {
    const caps = capabilitiesOf(h.provider);
    const img = await h.request('POST', '/assets/search', { dataBase64: 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==' });
    if (!caps.similarSearch) assertIntegrationError(img, 'integration-not-supported', 501, id());
    else assert.notEqual(img.status, 501);
    const versions = await h.request('GET', `/assets/assetversions/${encodeURIComponent(h.knownAssetId)}`);
    if (!caps.versions) assertIntegrationError(versions, 'integration-not-supported', 501, id());
    else assert.equal(versions.status, 200);
  });

  test(`${name} conformance: unknown ids map to integration-not-found with the provider named`, async () => {
    assertIntegrationError(await h.request('GET', '/assets/asset/no-such-asset-id'), 'integration-not-found', 404, id());
    assertIntegrationError(await h.request('GET', `/assets/folder/${encodeURIComponent('/no/such/folder')}`), 'integration-not-found', 404, id());
  });

  test(`${name} conformance: assets carry absolute URLs and the declared hash`, async () => {
    const r = await h.request('GET', `/assets/asset/${encodeURIComponent(h.knownAssetId)}`);
    assert.equal(r.status, 200);
    const a = r.body;
    assert.equal(a.id, h.knownAssetId);
    assert.equal(typeof a.name, 'string');
    for (const u of [a.thumbnailUrl, a.downloadUrl].filter(Boolean)) assert.match(u, /^https?:\/\/|\$[a-zA-Z]+\$/);
    const alg = capabilitiesOf(h.provider).assetHashAlgorithm;
    if (alg) assert.match(a[`downloadHash${alg}`], /^[0-9a-f]+$/, `downloadHash${alg} is always reported`);
  });
}
