/**
 * <damhub-picker>'s write side in real Chromium against the in-process hub (test/helpers/picker-page.ts):
 * drop-to-upload into the current folder with a progress bar per file, cancel, the conflict choice
 * on asset-exists (new version / keep both / cancel), `mode="destination"` and its event; and the
 * detail panel's "Show versions" while the full asset is still on its way. Screenshots go to
 * test-artifacts/picker-write/.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { Locator, Page, Route } from 'playwright-core';
import { solidJpeg } from '../helpers/library.js';
import { startPickerPage, type PickerPageHarness } from '../helpers/picker-page.js';
import { REPO_ROOT } from '../helpers/process.js';

const ARTIFACTS = path.join(REPO_ROOT, 'test-artifacts', 'picker-write');
const ACCOUNT = { name: 'writer', password: 'correct horse battery' };
let p: PickerPageHarness;

before(async () => {
  p = await startPickerPage({
    account: ACCOUNT,
    partner: { writes: true },
    files: {
      'Photos/harbor boats.jpg': await solidJpeg(64, 48, [20, 90, 160]),
      'Photos/harbor map.jpg': await solidJpeg(48, 64, [160, 90, 20]),
      'Notes/readme.md': '# Notes\n',
    },
  });
  fs.rmSync(ARTIFACTS, { recursive: true, force: true });
  fs.mkdirSync(ARTIFACTS, { recursive: true });
});

after(async () => {
  await p?.close();
});

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
}

async function openFolder(picker: Locator, name: string): Promise<void> {
  await picker.locator('.folders button', { hasText: name }).click();
  await picker.locator('.crumbs button[aria-current="page"]', { hasText: name }).waitFor();
}

test('"Show versions" pressed while the full asset is still loading: the list stays in the panel', async () => {
  const { page, picker } = await p.open();
  try {
    await openFolder(picker, 'Photos');
    // The detail panel renders the list's summary first and the full asset when it arrives: hold that answer.
    let release!: () => void;
    const held = new Promise<void>((r) => { release = r; });
    let routed!: () => void;
    const arrived = new Promise<void>((r) => { routed = r; });
    await page.route('**/api/v1/assets/asset/**', async (route: Route) => {
      routed();
      await held;
      await route.continue();
    });
    await picker.getByRole('option', { name: /harbor boats\.jpg/ }).click();
    const detail = picker.getByRole('complementary', { name: 'Asset details' });
    await arrived;
    await detail.getByRole('button', { name: 'Show versions' }).click();
    const versions = detail.getByRole('list', { name: 'Versions of harbor boats.jpg' }).getByRole('listitem');
    await versions.first().waitFor();
    release();
    // The full asset re-renders the panel (aria-busy goes false): the list must still be there.
    await detail.locator('dl[aria-busy="false"]').waitFor();
    assert.equal(await versions.count(), 1, 'the versions list survived the second render');
    assert.equal(await detail.getByRole('button', { name: 'Show versions' }).count(), 0, 'no second "Show versions" button');
    await shot(page, '01-versions-race');

    // The other order: the full asset arrives while the versions are loading; the list lands in the panel.
    await page.unroute('**/api/v1/assets/asset/**');
    let releaseVersions!: () => void;
    const versionsHeld = new Promise<void>((r) => { releaseVersions = r; });
    await page.route('**/api/v1/assets/assetversions/**', async (route: Route) => {
      await versionsHeld;
      await route.continue();
    });
    let releaseAsset!: () => void;
    const assetHeld = new Promise<void>((r) => { releaseAsset = r; });
    await page.route('**/api/v1/assets/asset/**', async (route: Route) => {
      await assetHeld;
      await route.continue();
    });
    await picker.getByRole('option', { name: /harbor map\.jpg/ }).click();
    await detail.getByRole('heading', { name: 'harbor map.jpg' }).waitFor();
    await detail.getByRole('button', { name: 'Show versions' }).click();
    releaseAsset();
    await detail.locator('dl[aria-busy="false"]').waitFor();
    releaseVersions();
    await detail.getByRole('list', { name: 'Versions of harbor map.jpg' }).getByRole('listitem').first().waitFor();
    assert.equal(await detail.getByRole('button', { name: 'Show versions' }).count(), 0);
  } finally {
    await page.close();
  }
});
