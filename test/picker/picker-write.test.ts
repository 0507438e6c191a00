/**
 * <damhub-picker>'s write side in real Chromium against the in-process hub (test/helpers/picker-page.ts):
 * drop-to-upload into the current folder with a progress bar per file, cancel, the conflict choice
 * on asset-exists (new version / keep both / cancel), `mode="destination"` and its event; and the
 * detail panel's "Show versions" while the full asset is still on its way. Screenshots go to
 * test-artifacts/picker-write/.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { Locator, Page, Route } from 'playwright-core';
import { addAccount } from '../../src/providers/library/accounts.js';
import { libraryOf, solidJpeg } from '../helpers/library.js';
import { pickerEvents, startPickerPage, type PickerPageHarness } from '../helpers/picker-page.js';
import { REPO_ROOT } from '../helpers/process.js';

const ARTIFACTS = path.join(REPO_ROOT, 'test-artifacts', 'picker-write');
/** May write everywhere. */
const ACCOUNT = { name: 'writer', password: 'correct horse battery', writeFolders: ['/'] };
/** May write in Notes only. */
const NOTES_ONLY = { name: 'noter', password: 'notes horse battery' };
let p: PickerPageHarness;
let boats: Buffer;

before(async () => {
  boats = await solidJpeg(64, 48, [20, 90, 160]);
  p = await startPickerPage({
    account: ACCOUNT,
    partner: { writes: true },
    files: {
      'Photos/harbor boats.jpg': boats,
      'Photos/harbor map.jpg': await solidJpeg(48, 64, [160, 90, 20]),
      'Notes/readme.md': '# Notes\n',
    },
  });
  await addAccount(libraryOf(p.h.t.hub).index, NOTES_ONLY.name, NOTES_ONLY.password, [], p.h.t.clock.now(), { writeFolders: ['Notes'] });
  fs.rmSync(ARTIFACTS, { recursive: true, force: true });
  fs.mkdirSync(ARTIFACTS, { recursive: true });
});

after(async () => {
  await p?.close();
});

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
}

const AXE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's serious and critical findings on the page as it is. */
async function seriousAxe(page: Page): Promise<{ id: string; nodes: string[] }[]> {
  if (!(await page.evaluate(() => !!(globalThis as any).axe))) await page.evaluate(AXE);
  const all = await page.evaluate(async () => {
    const r = await (globalThis as any).axe.run((globalThis as any).document, { resultTypes: ['violations'] });
    return r.violations.map((v: any) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n: any) => JSON.stringify(n.target)) }));
  });
  return all.filter((v: { impact: string }) => v.impact === 'serious' || v.impact === 'critical');
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

/** Drops files on the grid the way a browser does: a DataTransfer with File objects. */
async function dropFiles(picker: Locator, files: { name: string; type: string; base64: string }[]): Promise<void> {
  await picker.locator('.main').evaluate((main: any, list: { name: string; type: string; base64: string }[]) => {
    const g = globalThis as any;
    const dt = new g.DataTransfer();
    for (const f of list) dt.items.add(new g.File([Uint8Array.from(g.atob(f.base64), (c: string) => c.charCodeAt(0))], f.name, { type: f.type }));
    main.dispatchEvent(new g.DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
    main.dispatchEvent(new g.DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, files);
}

const onDisk = (...parts: string[]) => path.join(p.h.root!, ...parts);

test('upload: drop two files, a progress bar each, both appear in the grid and on disk; the damhub-upload event', async () => {
  const { page, picker } = await p.open({ upload: true });
  try {
    await openFolder(picker, 'Photos');
    const button = picker.getByRole('button', { name: 'Upload files' });
    await button.waitFor();
    // The upload is slowed to 256 KB/s (Chromium's network emulation), so its progress can be seen between its ends.
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 256 * 1024 });
    const big = Buffer.alloc(1_200_000, 7);
    await dropFiles(picker, [
      { name: 'sunrise.jpg', type: 'image/jpeg', base64: boats.toString('base64') },
      { name: 'survey.bin', type: 'application/octet-stream', base64: big.toString('base64') },
    ]);
    const uploads = picker.getByRole('list', { name: 'Uploads' });
    const survey = uploads.getByRole('listitem').filter({ hasText: 'survey.bin' });
    const bar = survey.getByRole('progressbar', { name: 'Upload of survey.bin' });
    await page.waitForFunction(() => {
      const pr = (globalThis as any).document.querySelector('#picker').shadowRoot.querySelectorAll('.upload progress')[1];
      return pr && pr.value > 0 && pr.value < pr.max;
    });
    await shot(page, '02-upload-progress');
    await survey.getByText('Uploaded', { exact: true }).waitFor({ timeout: 20_000 });
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
    assert.equal(await bar.getAttribute('aria-label'), 'Upload of survey.bin');
    assert.equal(await bar.evaluate((el: any) => el.value === el.max), true, 'the bar is full');
    await uploads.getByRole('listitem').filter({ hasText: 'sunrise.jpg' }).getByText('Uploaded', { exact: true }).waitFor();
    // Both are in the grid now, without reloading the folder.
    await picker.getByRole('option', { name: /sunrise\.jpg/ }).waitFor();
    await picker.getByRole('option', { name: /survey\.bin/ }).waitFor();
    assert.deepEqual(fs.readFileSync(onDisk('Photos', 'sunrise.jpg')), boats);
    assert.deepEqual(fs.readFileSync(onDisk('Photos', 'survey.bin')), big);
    const events = await pickerEvents(page, 'damhub-upload');
    assert.deepEqual(events.map((e) => e.detail.asset.name).sort(), ['sunrise.jpg', 'survey.bin']);
    assert.ok(events.every((e) => e.detail.provider === 'library' && e.detail.onConflict === 'fail'));
    // The filter counts follow: four assets, one of them not an image.
    await picker.getByRole('checkbox', { name: /Other/ }).waitFor();
    await page.waitForFunction(() => (globalThis as any).document.querySelector('#picker').shadowRoot.querySelector('.item').getAttribute('aria-setsize') === '4');
    await shot(page, '03-uploaded');
    assert.deepEqual(await seriousAxe(page), [], 'the upload rows pass axe-core');
  } finally {
    await page.close();
  }
});

test('upload above the threshold: the picker loads the tus chunk on demand and the file goes through /api/v1/uploads', async () => {
  const { page, picker } = await p.open({ upload: true });
  try {
    const scripts: string[] = [];
    const tus: string[] = [];
    page.on('request', (r) => {
      const u = new URL(r.url());
      if (/damhub-picker-chunk-/.test(u.pathname)) scripts.push(u.pathname);
      if (u.pathname.startsWith('/api/v1/uploads')) tus.push(r.method());
    });
    await openFolder(picker, 'Notes');
    const chunksBefore = scripts.length;
    // 9 MiB, made in the page (the client's threshold is 8 MiB).
    await picker.locator('.main').evaluate((main: any) => {
      const g = globalThis as any;
      const dt = new g.DataTransfer();
      dt.items.add(new g.File([new Uint8Array(9 * 1024 * 1024).fill(42)], 'large.bin', { type: 'application/octet-stream' }));
      main.dispatchEvent(new g.DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
    });
    const row = picker.getByRole('list', { name: 'Uploads' }).getByRole('listitem').filter({ hasText: 'large.bin' });
    await row.getByText('Uploaded', { exact: true }).waitFor({ timeout: 60_000 });
    await picker.getByRole('option', { name: /large\.bin/ }).waitFor();
    assert.equal(chunksBefore, 0, 'the tus chunk is not loaded with the page');
    assert.ok(scripts.length >= 1, 'the tus chunk was loaded for the large file');
    assert.ok(tus.includes('POST') && tus.includes('PATCH'), `tus requests: ${tus.join(', ')}`);
    const onDiskBytes = fs.readFileSync(onDisk('Notes', 'large.bin'));
    assert.equal(onDiskBytes.length, 9 * 1024 * 1024);
    assert.ok(onDiskBytes.every((b) => b === 42));
  } finally {
    await page.close();
  }
});

test('upload conflict: the same name again offers New version / Keep both / Cancel, and each does what it says', async () => {
  const { page, picker } = await p.open({ upload: true });
  try {
    await openFolder(picker, 'Photos');
    await picker.getByRole('option', { name: /harbor boats\.jpg/ }).waitFor();
    assert.equal(await picker.getByRole('option', { name: /harbor boats\.jpg/ }).count(), 1);
    const newer = await solidJpeg(64, 48, [200, 40, 40]);
    await dropFiles(picker, [{ name: 'harbor boats.jpg', type: 'image/jpeg', base64: newer.toString('base64') }]);
    const row = picker.getByRole('list', { name: 'Uploads' }).getByRole('listitem').filter({ hasText: 'harbor boats.jpg' });
    await row.getByText('“harbor boats.jpg” already exists in this folder').waitFor();
    assert.deepEqual(await row.getByRole('button').allInnerTexts(), ['New version', 'Keep both', 'Cancel']);
    await shot(page, '04-conflict');
    assert.deepEqual(await seriousAxe(page), [], 'the conflict choice passes axe-core');
    assert.deepEqual(fs.readFileSync(onDisk('Photos', 'harbor boats.jpg')), boats, 'nothing written yet');

    // New version: the same asset, its content replaced, one tile still.
    await row.getByRole('button', { name: 'New version' }).click();
    await row.getByText('Uploaded as a new version').waitFor();
    assert.deepEqual(fs.readFileSync(onDisk('Photos', 'harbor boats.jpg')), newer);
    assert.equal(await picker.getByRole('option', { name: /harbor boats\.jpg/ }).count(), 1);
    const [ev] = (await pickerEvents(page, 'damhub-upload')).slice(-1);
    assert.equal(ev!.detail.onConflict, 'version');
    assert.equal(ev!.detail.asset.name, 'harbor boats.jpg');

    // Keep both: a second asset under a free name.
    await dropFiles(picker, [{ name: 'harbor map.jpg', type: 'image/jpeg', base64: newer.toString('base64') }]);
    const mapRow = picker.getByRole('list', { name: 'Uploads' }).getByRole('listitem').filter({ hasText: 'harbor map.jpg' });
    await mapRow.getByRole('button', { name: 'Keep both' }).click();
    await mapRow.getByText('Uploaded', { exact: true }).waitFor();
    const kept = (await pickerEvents(page, 'damhub-upload')).at(-1)!.detail.asset.name as string;
    assert.notEqual(kept, 'harbor map.jpg');
    assert.ok(fs.existsSync(onDisk('Photos', kept)));
    await picker.getByRole('option', { name: new RegExp(kept.replace(/[.()]/g, '\\$&')) }).waitFor();

    // Cancel on the choice: nothing written, the row goes.
    await dropFiles(picker, [{ name: 'harbor map.jpg', type: 'image/jpeg', base64: boats.toString('base64') }]);
    const third = picker.getByRole('list', { name: 'Uploads' }).getByRole('listitem').filter({ hasText: /^harbor map\.jpg/ }).filter({ has: page.getByRole('button', { name: 'Keep both' }) });
    await third.waitFor();
    await third.getByRole('button', { name: 'Cancel' }).click();
    await third.waitFor({ state: 'detached' });
    assert.equal(await picker.locator('.status').innerText(), 'Upload of “harbor map.jpg” cancelled');
    await shot(page, '05-after-conflicts');
  } finally {
    await page.close();
  }
});

test('upload cancel: Cancel during the upload aborts it, the row goes and nothing lands on disk', async () => {
  const { page, picker } = await p.open({ upload: true });
  try {
    await openFolder(picker, 'Notes');
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 64 * 1024 });
    await dropFiles(picker, [{ name: 'slow.bin', type: 'application/octet-stream', base64: Buffer.alloc(2_000_000, 1).toString('base64') }]);
    const row = picker.getByRole('list', { name: 'Uploads' }).getByRole('listitem').filter({ hasText: 'slow.bin' });
    await page.waitForFunction(() => {
      const pr = (globalThis as any).document.querySelector('#picker').shadowRoot.querySelector('.upload progress');
      return pr && pr.value > 0;
    });
    await row.getByRole('button', { name: 'Cancel the upload of slow.bin' }).click();
    await row.waitFor({ state: 'detached' });
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
    assert.equal(await picker.locator('.status').innerText(), 'Upload of “slow.bin” cancelled');
    assert.equal(fs.existsSync(onDisk('Notes', 'slow.bin')), false);
    assert.equal((await pickerEvents(page, 'damhub-upload')).length, 0);
    assert.equal((await pickerEvents(page, 'error')).length, 0, 'a cancel is not an error');
    assert.equal(await picker.getByRole('option', { name: /slow\.bin/ }).count(), 0, 'no tile for it');
  } finally {
    await page.close();
  }
});

test('upload affordances only where the folder says canAddAsset; mode="destination" sends the folder and the name', async () => {
  // An account that may write in Notes only: no "Upload files" in Photos, and a drop there is not an upload.
  const { page, picker } = await p.open({ upload: true }, NOTES_ONLY);
  try {
    await openFolder(picker, 'Photos');
    await picker.getByRole('option').first().waitFor();
    assert.equal(await picker.getByRole('button', { name: 'Upload files' }).isVisible(), false);
    await picker.locator('.crumbs button').first().click();
    await openFolder(picker, 'Notes');
    await picker.getByRole('button', { name: 'Upload files' }).waitFor();
  } finally {
    await page.close();
  }

  const d = await p.open({ mode: 'destination', name: 'report.pdf', locale: 'en' }, NOTES_ONLY);
  try {
    const bar = d.picker.getByRole('group', { name: 'Save to the library' });
    const save = bar.getByRole('button', { name: 'Save here' });
    const name = bar.getByRole('textbox', { name: 'File name' });
    assert.equal(await name.inputValue(), 'report.pdf');
    assert.equal(await d.picker.locator('footer').isVisible(), false, 'no selection footer');
    await openFolder(d.picker, 'Photos');
    await bar.getByText('You cannot save files in Photos').waitFor();
    assert.equal(await save.isDisabled(), true);
    await shot(d.page, '06-destination-refused');
    await d.picker.locator('.crumbs button').first().click();
    await openFolder(d.picker, 'Notes');
    await bar.getByText('Save to Notes').waitFor();
    await name.fill('');
    assert.equal(await save.isDisabled(), true, 'no name, no save');
    await name.fill('Q4 report.pdf');
    await shot(d.page, '07-destination');
    assert.deepEqual(await seriousAxe(d.page), [], 'the destination bar passes axe-core');
    await save.click();
    const [ev] = await pickerEvents(d.page, 'damhub-destination');
    assert.ok(ev, 'the event was sent');
    assert.equal(ev.detail.provider, 'library');
    assert.equal(ev.detail.folderName, 'Notes');
    assert.equal(ev.detail.folderPath, '/Notes');
    assert.equal(ev.detail.name, 'Q4 report.pdf');
    assert.equal(typeof ev.detail.folderId, 'string');
    assert.equal((await pickerEvents(d.page, 'select')).length, 0);
    // The partner saves there with the client: the id is the one the hub knows.
    const c = p.h.client({ sub: 'dest-check' });
    await c.signInWithPassword({ username: NOTES_ONLY.name, password: NOTES_ONLY.password });
    const saved = await c.upload(ev.detail.folderId, Buffer.from('%PDF-1.4 report'), { name: ev.detail.name });
    assert.equal(saved.name, 'Q4 report.pdf');
    assert.ok(fs.existsSync(onDisk('Notes', 'Q4 report.pdf')));
  } finally {
    await d.page.close();
  }
});

test('the destination bar speaks the picker\'s language (locale="ja")', async () => {
  const d = await p.open({ mode: 'destination', name: 'x.pdf', locale: 'ja' });
  try {
    await d.picker.getByRole('button', { name: 'ここに保存' }).waitFor();
    await openFolder(d.picker, 'Notes');
    await d.picker.getByText('Notes に保存').waitFor();
    await shot(d.page, '08-destination-ja');
  } finally {
    await d.page.close();
  }
});
