/**
 * The demo page with <damhub-picker>, driven in real Chromium (Debian's, never a downloaded one)
 * the way a person uses it: open the demo, connect the library through the sign-in popup, open a
 * folder, scroll to the second page, search, filter, drop an image, open an asset's versions,
 * pick two assets. The hub is the real `damhub serve --demo` process over a generated library.
 * Each step leaves a screenshot in test-artifacts/; axe-core checks the page at the end, and no
 * step may trip the page's Content-Security-Policy.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import sharp from 'sharp';
import { chromium, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { tempDir } from '../helpers/hub.js';
import { writeFiles } from '../helpers/library.js';
import { REPO_ROOT, runCli, startServer, type ServerProcess } from '../helpers/process.js';
import { sceneSvg, transform } from '../helpers/scenes.js';
import { connectorEnvPrefix, knownConnectors, oauthConnectors } from '../../src/catalog.js';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = path.join(REPO_ROOT, 'test-artifacts');
const PHOTOS = 30;

let server: ServerProcess;
let context: BrowserContext;
let profile: string;
let dropped: Buffer;

const scene = (seed: number, w = 320, h = 240) => sharp(Buffer.from(sceneSvg(seed, w, h)));

before(async () => {
  const data = tempDir('damhub-picker-data-');
  const lib = tempDir('damhub-picker-lib-');
  const boats = await scene(101, 640, 480).jpeg({ quality: 90 }).toBuffer();
  // The image a user drops: a smaller, recompressed copy of "harbor boats.jpg".
  dropped = await transform(boats, 'resize50');
  const files: Record<string, Buffer | string> = {
    'Photos/harbor boats.jpg': boats,
    'Photos/harbor map.png': await scene(102).png().toBuffer(),
    'Notes/harbor notes.md': '# Harbor\n\nTide tables.\n',
  };
  for (let i = 1; i <= PHOTOS - 2; i++) files[`Photos/scene ${String(i).padStart(2, '0')}.jpg`] = await scene(i).jpeg({ quality: 80 }).toBuffer();
  writeFiles(lib, files);
  // Index, change the map, index again: the map gets a second version before the hub starts.
  const first = await runCli(['index', '--library', lib, '--data', data]);
  assert.equal(first.code, 0, first.stderr);
  fs.writeFileSync(path.join(lib, 'Photos/harbor map.png'), await scene(103).png().toBuffer());
  const second = await runCli(['index', '--library', lib, '--data', data]);
  assert.equal(second.code, 0, second.stderr);

  server = await startServer(['--data', data, '--library', lib, '--demo']);
  fs.rmSync(ARTIFACTS, { recursive: true, force: true });
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  profile = fs.mkdtempSync(path.join(os.tmpdir(), 'damhub-chromium-'));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 800 },
  });
  // Runs before the page's own scripts (through the DevTools protocol, so the CSP does not apply to it).
  await context.addInitScript(() => {
    const g = globalThis as any;
    g.__cspViolations = [];
    g.document.addEventListener('securitypolicyviolation', (e: any) => g.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
});

after(async () => {
  await context?.close();
  await server?.stop();
  if (profile) fs.rmSync(profile, { recursive: true, force: true });
});

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** Names of the options the grid shows, in order. */
async function optionNames(page: Page): Promise<string[]> {
  return page.locator('damhub-picker .item').evaluateAll((els) => els.map((e: any) => e.title as string));
}

/** "Show versions" disappears once the list is in; focus moves to the list rather than to <body>. */
async function assertFocusInVersions(page: Page): Promise<void> {
  const where = await page.evaluate(() => (globalThis as any).document.querySelector('damhub-picker').shadowRoot.activeElement?.className ?? 'none');
  assert.equal(where, 'version-list');
}

/**
 * The sources of the images that did not decode, once each has finished loading. An image is in
 * the page before it has decoded (even an inline data: SVG decodes asynchronously), so reading
 * naturalWidth right away is a race: it waits for each one's load or error first.
 */
async function brokenImages(images: Locator): Promise<string[]> {
  await images.first().waitFor({ state: 'attached' });
  return images.evaluateAll(async (imgs: any[]) => {
    await Promise.all(imgs.map((i) => (i.complete ? null : new Promise((r) => { i.addEventListener('load', r); i.addEventListener('error', r); }))));
    return imgs.filter((i) => !(i.complete && i.naturalWidth > 0)).map((i) => String(i.src).slice(0, 80));
  });
}

async function axeViolations(page: Page): Promise<{ id: string; impact: string; nodes: string[] }[]> {
  return page.evaluate(async () => {
    const r = await (globalThis as any).axe.run((globalThis as any).document, { resultTypes: ['violations'] });
    return r.violations.map((v: any) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n: any) => JSON.stringify(n.target)) }));
  });
}

test('the demo page: connect, browse, page, search, filter, search by image, versions, pick two', async () => {
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    // A browser asks for /favicon.ico on its own; the demo has none.
    if (m.type() === 'error' && !m.location().url.endsWith('/favicon.ico')) errors.push(`${m.text()} ${m.location().url}`);
  });
  const picker = page.locator('damhub-picker');
  try {
    await drive(page, picker, errors);
  } catch (e) {
    // The page as it was when a step failed, and what it logged.
    await shot(page, '99-failure').catch(() => undefined);
    throw new Error(`${(e as Error).message}\npage errors: ${JSON.stringify(errors)}`, { cause: e });
  }
});

test('every connector of the catalog, enabled at once, is in the chooser with its logo loaded', async () => {
  // The operator's way: an app id per OAuth connector, the others named in DAMHUB_CONNECTORS.
  const env: NodeJS.ProcessEnv = { DAMHUB_CONNECTORS: knownConnectors().join(',') };
  for (const id of oauthConnectors()) env[`${connectorEnvPrefix(id)}CLIENT_ID`] = `${id}-app`;
  const all = await startServer(['--data', tempDir('damhub-picker-all-'), '--demo'], env);
  const page = await context.newPage();
  try {
    await page.goto(`${all.url}/demo`);
    const logos = page.locator('damhub-picker .providers img');
    const expected = 1 + knownConnectors().length + oauthConnectors().length; // the demo library too
    await logos.nth(expected - 1).waitFor();
    assert.equal(await logos.count(), expected, 'one tile per provider');
    // Every logo decoded (an inline SVG cut at a raw "#" would not be).
    assert.deepEqual(await brokenImages(logos), [], 'every provider logo loads');
    assert.deepEqual(await page.evaluate(() => (globalThis as any).__cspViolations), [], 'no logo trips the CSP');
    await shot(page, '00-all-connectors');
  } finally {
    await page.close();
    await all.stop();
  }
});

async function drive(page: Page, picker: Locator, errors: string[]): Promise<void> {

  // 1. Open the demo: the picker exchanges the demo partner's JWT and lists the providers with logos.
  const response = await page.goto(`${server.url}/demo`);
  const csp = (await response!.allHeaders())['content-security-policy'] ?? '';
  assert.match(csp, /script-src 'self';/);
  assert.match(csp, /style-src 'self';/);
  assert.doesNotMatch(csp, /unsafe-/, 'no unsafe-inline or unsafe-eval');
  const connect = picker.getByRole('button', { name: /Sign in to connect/ });
  await connect.waitFor();
  assert.deepEqual(await brokenImages(picker.locator('.providers img')), [], 'the provider logo loads');
  await shot(page, '01-provider-chooser');

  // 2. Connect the library through the sign-in popup.
  const [popup] = await Promise.all([page.waitForEvent('popup'), connect.click()]);
  await popup.waitForURL(/\/auth\/library\/signin/);
  await popup.getByLabel('User name').fill('demo');
  await popup.getByLabel('Password').fill('demo-password');
  await popup.screenshot({ path: path.join(ARTIFACTS, '02-sign-in-popup.png') });
  await popup.getByRole('button', { name: 'Sign in' }).click();
  const photos = picker.getByRole('button', { name: 'Photos', exact: true });
  await photos.waitFor();
  await popup.waitForEvent('close', { timeout: 10_000 }).catch(() => undefined);
  assert.equal(popup.isClosed(), true, 'the picker closes the popup once signed in');
  await shot(page, '03-connected-root');

  // 3. Open a folder: the first page (page-size 24 on the demo page) of its 30 assets.
  await photos.click();
  const options = picker.getByRole('option');
  await options.nth(23).waitFor();
  assert.equal(await options.count(), 24, 'only the first page before scrolling');
  assert.match(await picker.getByRole('listbox').getAttribute('aria-label') ?? '', /Photos/);
  assert.equal(await options.first().getAttribute('aria-setsize'), String(PHOTOS));
  await shot(page, '04-folder-first-page');

  // 4. Scroll the grid to its end: the second page loads.
  await picker.locator('.main').evaluate((el: any) => el.scrollTo(0, el.scrollHeight));
  await options.nth(PHOTOS - 1).waitFor();
  assert.equal(await options.count(), PHOTOS);
  assert.equal(new Set(await optionNames(page)).size, PHOTOS, 'no asset shown twice');
  await shot(page, '05-folder-second-page');

  // Keyboard: one tab stop in the grid, arrows move it, End jumps to the last asset.
  const names = await optionNames(page);
  await options.first().focus();
  await page.keyboard.press('ArrowRight');
  const tabStop = picker.locator('.item[tabindex="0"]');
  assert.equal(await tabStop.getAttribute('title'), names[1]);
  assert.equal(await tabStop.evaluate((el: any) => el.getRootNode().activeElement === el), true, 'focus moved with the tab stop');
  await page.keyboard.press('End');
  assert.equal(await tabStop.getAttribute('title'), names[PHOTOS - 1]);
  assert.equal(await picker.locator('.item[tabindex="0"]').count(), 1);

  // 5. Keyword search.
  const search = picker.getByRole('searchbox', { name: 'Search assets' });
  await search.fill('harbor');
  await search.press('Enter');
  await picker.getByRole('option', { name: /harbor notes\.md/ }).waitFor();
  assert.deepEqual((await optionNames(page)).sort(), ['harbor boats.jpg', 'harbor map.png', 'harbor notes.md']);
  await shot(page, '06-search');

  // 6. A facet filter narrows the search.
  const png = picker.getByRole('checkbox', { name: /png/i });
  await png.check();
  await page.waitForFunction(() => (globalThis as any).document.querySelector('damhub-picker').shadowRoot.querySelectorAll('.item').length === 1);
  assert.deepEqual(await optionNames(page), ['harbor map.png']);
  assert.equal(await picker.getByRole('checkbox', { name: /png/i }).isChecked(), true);
  await shot(page, '07-filter');

  // 7. Drop an image on the grid: its near-duplicate in the library comes first.
  assert.equal(await picker.getByRole('button', { name: /Search by image/ }).isVisible(), true, 'the library can search by image');
  await picker.locator('.main').evaluate((main: any, b64: string) => {
    const g = globalThis as any;
    const bytes = Uint8Array.from(g.atob(b64), (c: string) => c.charCodeAt(0));
    const dt = new g.DataTransfer();
    dt.items.add(new g.File([bytes], 'my boats.jpg', { type: 'image/jpeg' }));
    main.dispatchEvent(new g.DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
    main.dispatchEvent(new g.DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, dropped.toString('base64'));
  await picker.getByRole('listbox', { name: 'Assets similar to my boats.jpg' }).waitFor();
  await options.first().waitFor();
  assert.equal((await optionNames(page))[0], 'harbor boats.jpg');
  await shot(page, '08-search-by-image');

  // 8. An asset's details and versions.
  await search.fill('map');
  await search.press('Enter');
  const map = picker.getByRole('option', { name: /harbor map\.png/ });
  await map.click();
  const detail = picker.getByRole('complementary', { name: 'Asset details' });
  await detail.getByRole('heading', { name: 'harbor map.png' }).waitFor();
  await detail.getByRole('heading', { name: 'Renditions' }).waitFor();
  await detail.getByRole('button', { name: 'Show versions' }).click();
  const versions = detail.getByRole('list', { name: 'Versions of harbor map.png' }).getByRole('listitem');
  await versions.first().waitFor();
  assert.equal(await versions.count(), 2);
  // A sentence per version ("Version 2 (current): modified Nov 25, 2026, 2:30 PM, 54.0 KB"), its comment below.
  assert.match(await versions.first().innerText(), /^Version 2 \(current\): modified \w{3} \d{1,2}, \d{4}, \d{1,2}:\d{2}\s?[AP]M, [\d.]+ (B|KB)\n/);
  assert.match(await versions.first().innerText(), /\nContent changed on disk/, 'the version comment on its own line');
  assert.match(await versions.nth(1).innerText(), /^Version 1: modified /);
  await assertFocusInVersions(page);
  await shot(page, '09-versions');

  // 9. Select a second asset with the keyboard and pick both.
  await search.fill('boats');
  await search.press('Enter');
  const boats = picker.getByRole('option', { name: /harbor boats\.jpg/ });
  await boats.waitFor();
  await boats.focus();
  await page.keyboard.press('Space');
  assert.equal(await boats.getAttribute('aria-selected'), 'true');
  await page.evaluate(() => {
    const g = globalThis as any;
    g.document.querySelector('damhub-picker').addEventListener('select', (e: any) => { g.__picked = e.detail; });
  });
  await picker.getByRole('button', { name: 'Select 2', exact: true }).click();
  const picked = await page.evaluate(() => (globalThis as any).__picked);
  assert.equal(picked.provider, 'library');
  assert.deepEqual(picked.assets.map((a: { name: string }) => a.name).sort(), ['harbor boats.jpg', 'harbor map.png']);
  assert.ok(picked.assets.every((a: { downloadUrl?: string }) => a.downloadUrl?.startsWith(server.url)));
  await page.getByRole('list').filter({ hasText: 'harbor boats.jpg' }).waitFor();
  assert.equal(await page.locator('#chosen li').count(), 2, 'the demo page shows what was picked');
  await shot(page, '10-picked');

  // 10. Accessibility, light and dark: no serious or critical axe violations.
  await page.evaluate(fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8'));
  const light = (await axeViolations(page)).filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(light, [], JSON.stringify(light, null, 2));
  await page.getByRole('button', { name: 'Dark theme' }).click();
  assert.equal(await picker.getAttribute('theme'), 'dark');
  const dark = (await axeViolations(page)).filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(dark, [], JSON.stringify(dark, null, 2));
  await shot(page, '11-dark-theme');

  assert.deepEqual(await page.evaluate(() => (globalThis as any).__cspViolations), [], 'the strict CSP blocked nothing');

  // 11. Reload: the session and the DAM connection come back from sessionStorage, straight into the
  // library. The hub's providers answer is edited to drop similarSearch: no image search offered.
  await page.route('**/api/v1/auth/providers', async (route) => {
    const res = await route.fetch();
    const list = await res.json();
    for (const p of list) p.capabilities.similarSearch = false;
    await route.fulfill({ response: res, json: list });
  });
  await page.reload();
  await picker.getByRole('button', { name: 'Photos', exact: true }).waitFor();
  assert.equal(await picker.getByRole('button', { name: /Search by image/ }).isVisible(), false);
  await picker.locator('.main').evaluate((main: any, b64: string) => {
    const g = globalThis as any;
    const dt = new g.DataTransfer();
    dt.items.add(new g.File([Uint8Array.from(g.atob(b64), (c: string) => c.charCodeAt(0))], 'x.jpg', { type: 'image/jpeg' }));
    main.dispatchEvent(new g.DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, dropped.toString('base64'));
  assert.equal(await picker.getByRole('listbox').getAttribute('aria-label'), 'Assets in Home', 'a drop is ignored without the capability');
  await shot(page, '12-reload-no-image-search');
  assert.deepEqual(errors, []);
}
