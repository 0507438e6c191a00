/**
 * <damhub-picker> in real Chromium beyond the happy path of picker-browser.test.ts (issue 21):
 * a keyboard-only walk with focus checked at every step, the states (skeleton, the API's own error
 * message with Retry, cancelled sign-in, a dropped non-image, "no assets" said once, a selection
 * that does not move the thumbnail), the partner options (`selected`, `max`, `rendition`,
 * `types`, `locale` or the browser's languages sent as `uiLocale`), and every viewport × theme ×
 * locale with a screenshot, no overflow and axe-core. Screenshots go to test-artifacts/picker/.
 * One page and one sign-in serve all tests (the session lives in that tab's sessionStorage), so
 * the tests run in order.
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
import { sceneSvg } from '../helpers/scenes.js';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = path.join(REPO_ROOT, 'test-artifacts', 'picker');
const PHOTOS = 14;
const AXE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

let server: ServerProcess;
let context: BrowserContext;
let profile: string;
let page: Page;
let picker: Locator;
const pageErrors: string[] = [];

const scene = (seed: number, w = 320, h = 240) => sharp(Buffer.from(sceneSvg(seed, w, h)));

before(async () => {
  const data = tempDir('damhub-pickerm-data-');
  const lib = tempDir('damhub-pickerm-lib-');
  const files: Record<string, Buffer | string> = {
    'Photos/harbor boats.jpg': await scene(101).jpeg({ quality: 85 }).toBuffer(),
    'Photos/harbor map.png': await scene(102).png().toBuffer(),
    'Photos/harbor notes.md': '# Harbor\n\nTide tables.\n',
    'Notes/readme.md': '# Notes\n',
  };
  for (let i = 1; i <= PHOTOS - 3; i++) files[`Photos/scene ${String(i).padStart(2, '0')}.jpg`] = await scene(i).jpeg({ quality: 80 }).toBuffer();
  writeFiles(lib, files);
  const indexed = await runCli(['index', '--library', lib, '--data', data]);
  assert.equal(indexed.code, 0, indexed.stderr);
  server = await startServer(['--data', data, '--library', lib, '--demo']);
  fs.rmSync(ARTIFACTS, { recursive: true, force: true });
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  profile = fs.mkdtempSync(path.join(os.tmpdir(), 'damhub-chromium-'));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    locale: 'en-US',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 800 },
  });
  page = await context.newPage();
  page.on('pageerror', (e) => pageErrors.push(e.message));
  picker = page.locator('#picker');
});

after(async () => {
  await context?.close();
  await server?.stop();
  if (profile) fs.rmSync(profile, { recursive: true, force: true });
});

async function shot(name: string, p: Page = page): Promise<void> {
  await p.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** The element that really has focus, through shadow roots: what a keyboard user is on. */
async function focused(): Promise<{ tag: string; name: string; role: string; inPicker: boolean }> {
  return page.evaluate(() => {
    const g = globalThis as any;
    let el = g.document.activeElement;
    let inPicker = false;
    while (el?.shadowRoot?.activeElement) {
      if (el.localName === 'damhub-picker') inPicker = true;
      el = el.shadowRoot.activeElement;
    }
    return {
      tag: el?.localName ?? 'none', role: el?.getAttribute('role') ?? el?.getAttribute('type') ?? '',
      name: (el?.getAttribute('aria-label') ?? el?.labels?.[0]?.textContent ?? (el?.title || el?.textContent) ?? '').trim().slice(0, 60), inPicker,
    };
  });
}

async function assertFocusIn(what: string, expect: (f: Awaited<ReturnType<typeof focused>>) => boolean): Promise<void> {
  const f = await focused();
  assert.notEqual(f.tag, 'body', `${what}: focus fell to <body>`);
  assert.ok(expect(f), `${what}: focus is on ${JSON.stringify(f)}`);
}

/** Tab (or Shift+Tab) until the focused element matches, as a keyboard user would; at most 40 presses. */
async function tabTo(expect: (f: Awaited<ReturnType<typeof focused>>) => boolean, back = false): Promise<void> {
  for (let i = 0; i < 40; i++) {
    if (expect(await focused())) return;
    await page.keyboard.press(back ? 'Shift+Tab' : 'Tab');
  }
  assert.fail(`never reached by ${back ? 'Shift+Tab' : 'Tab'}; stuck on ${JSON.stringify(await focused())}`);
}

async function seriousAxe(): Promise<{ id: string; impact: string; nodes: string[] }[]> {
  if (!(await page.evaluate(() => !!(globalThis as any).axe))) await page.evaluate(AXE);
  const all = await page.evaluate(async () => {
    const r = await (globalThis as any).axe.run((globalThis as any).document, { resultTypes: ['violations'] });
    return r.violations.map((v: any) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n: any) => JSON.stringify(n.target)) }));
  });
  return all.filter((v: { impact: string }) => v.impact === 'serious' || v.impact === 'critical');
}

const options = () => picker.getByRole('option');
const alertText = () => picker.locator('.error').innerText();

async function clearSelection(): Promise<void> {
  const clear = picker.locator('footer button').first();
  if (await clear.isEnabled()) await clear.click();
}

/** Opens Photos from Home (by the breadcrumb when already inside) and waits for all its assets. */
async function openPhotos(expect = PHOTOS): Promise<void> {
  const home = picker.locator('.crumbs button').first();
  if (await home.isVisible()) await home.click();
  await picker.locator('.folders button', { hasText: 'Photos' }).click();
  await options().nth(expect - 1).waitFor();
}

test('keyboard only: a cancelled sign-in, sign-in, a folder, details, search, a filter and select; focus never on <body>', async () => {
  await page.goto(`${server.url}/demo`);
  const connect = picker.getByRole('button', { name: /Sign in to connect/ });
  await connect.waitFor();
  // The library chooser on a phone, light and dark.
  for (const theme of ['light', 'dark'] as const) {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.emulateMedia({ colorScheme: theme });
    await assertNoOverflow(`chooser 390 ${theme}`, false);
    await shot(`390x844-${theme}-en-chooser`);
    const found = await seriousAxe();
    assert.deepEqual(found, [], `chooser 390 ${theme}: ${JSON.stringify(found, null, 2)}`);
  }
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.emulateMedia({ colorScheme: 'light' });

  // Closing the sign-in popup is not an error: a quiet status, no alert, focus back on the library button.
  await tabTo((f) => f.inPicker && /Sign in to connect/.test(f.name));
  const [cancelled] = await Promise.all([page.waitForEvent('popup'), page.keyboard.press('Enter')]);
  await cancelled.waitForURL(/\/auth\/library\/signin/);
  await cancelled.close();
  await picker.locator('.status', { hasText: 'was cancelled' }).waitFor({ timeout: 10_000 });
  assert.equal(await alertText(), '', 'no error for a cancelled sign-in');
  await assertFocusIn('after a cancelled sign-in', (f) => /Sign in to connect/.test(f.name));

  // Sign in; the popup follows the dark preference like the picker does.
  const [popup] = await Promise.all([page.waitForEvent('popup'), page.keyboard.press('Enter')]);
  await popup.waitForURL(/\/auth\/library\/signin/);
  await popup.emulateMedia({ colorScheme: 'dark' });
  assert.equal(await popup.evaluate(() => (globalThis as any).getComputedStyle((globalThis as any).document.body).backgroundColor), 'rgb(22, 26, 33)', 'the sign-in page is dark under a dark preference');
  await popup.getByLabel('User name').fill('demo');
  await popup.getByLabel('Password').fill('demo-password');
  await shot('00-sign-in-dark', popup);
  await popup.keyboard.press('Enter');
  await picker.locator('.folders button', { hasText: 'Photos' }).waitFor();
  await page.waitForFunction(() => (globalThis as any).document.querySelector('#picker').shadowRoot.activeElement !== null);
  await assertFocusIn('after sign-in', (f) => f.tag === 'button' && f.name === 'Notes');

  // Into a folder: focus lands on the first asset; Space selects it and opens its details.
  await page.keyboard.press('Tab');
  await assertFocusIn('next subfolder', (f) => f.name === 'Photos');
  await page.keyboard.press('Enter');
  await options().nth(PHOTOS - 1).waitFor();
  await assertFocusIn('after opening a folder', (f) => f.role === 'option' && f.name === 'harbor boats.jpg');
  // The focus ring is not an error colour (the danger colour or any red/orange hue).
  const ring = await picker.locator('.item[tabindex="0"]').evaluate(focusRing);
  assert.notEqual(ring.style, 'none', 'a keyboard focus shows a ring');
  assert.notEqual(ring.outline, ring.danger, 'the focus ring is not the danger colour');
  assert.ok(!(ring.hue < 45 || ring.hue > 330), `the focus ring's hue ${ring.hue} is not red or orange`);
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('Space');
  const detail = picker.getByRole('complementary', { name: 'Asset details' });
  await detail.getByRole('heading', { name: 'harbor map.png' }).waitFor();
  await page.keyboard.press('Escape');
  assert.equal(await detail.isVisible(), false);
  await assertFocusIn('after closing the details', (f) => f.role === 'option' && f.name === 'harbor map.png');
  // The close button returns focus to the asset too.
  await page.keyboard.press('ArrowLeft');
  await page.keyboard.press('Space');
  await detail.getByRole('heading', { name: 'harbor boats.jpg' }).waitFor();
  await tabTo((f) => f.name === 'Close details');
  await page.keyboard.press('Enter');
  await assertFocusIn('after the close button', (f) => f.role === 'option' && f.name === 'harbor boats.jpg');
  assert.equal(await picker.locator('[aria-selected="true"]').count(), 2, 'boats and map selected');

  // Search from the keyboard: focus stays in the search box.
  await tabTo((f) => f.role === 'search', true);
  await page.keyboard.type('harbor');
  await page.keyboard.press('Enter');
  await picker.getByRole('listbox', { name: 'Search results for harbor' }).waitFor();
  await options().nth(2).waitFor();
  await assertFocusIn('after a search', (f) => f.role === 'search');

  // A filter: the checkboxes are rebuilt, focus returns to the one toggled.
  await tabTo((f) => f.role === 'checkbox' && /PNG/.test(f.name));
  await page.keyboard.press('Space');
  await page.waitForFunction(() => (globalThis as any).document.querySelector('#picker').shadowRoot.querySelectorAll('.item').length === 1);
  assert.equal(await picker.getByRole('checkbox', { name: /PNG/ }).isChecked(), true);
  await assertFocusIn('after a filter', (f) => f.role === 'checkbox');

  // To the grid and pick with Enter.
  await tabTo((f) => f.role === 'option');
  await page.evaluate(() => {
    const g = globalThis as any;
    g.document.querySelector('#picker').addEventListener('select', (e: any) => { g.__picked = e.detail; }, { once: true });
  });
  await page.keyboard.press('Enter');
  const picked = await page.evaluate(() => (globalThis as any).__picked);
  assert.deepEqual(picked.assets.map((a: { name: string }) => a.name).sort(), ['harbor boats.jpg', 'harbor map.png']);
  assert.deepEqual(picked.renditions, picked.assets.map((a: { id: string; downloadUrl: string }) => ({ id: a.id, rendition: 'original', url: a.downloadUrl })));
  await shot('01-keyboard-walk-end');
});

/** The focused item's outline colour, the danger colour, and the outline's hue in degrees. */
function focusRing(el: any): { style: string; outline: string; danger: string; hue: number } {
  const g = globalThis as any;
  const outline = g.getComputedStyle(el).outlineColor as string;
  const probe = g.document.createElement('span');
  probe.style.color = 'var(--_danger)';
  el.append(probe);
  const danger = g.getComputedStyle(probe).color as string;
  probe.remove();
  const [r, gr, b] = outline.match(/\d+/g)!.map(Number).map((x: number) => x / 255) as [number, number, number];
  const max = Math.max(r, gr, b);
  const min = Math.min(r, gr, b);
  const d = max - min || 1;
  const hue = max === r ? 60 * (((gr - b) / d) % 6) : max === gr ? 60 * ((b - r) / d + 2) : 60 * ((r - gr) / d + 4);
  return { style: g.getComputedStyle(el).outlineStyle, outline, danger, hue: (hue + 360) % 360 };
}

test('states: skeleton tiles, the API message with Retry, a dropped non-image, "no assets" once, a steady thumbnail', async () => {
  await clearSelection();
  // Skeleton tiles while the first page is on its way (the folder answer is held back).
  let release!: () => void;
  const held = new Promise<void>((r) => { release = r; });
  await page.route('**/api/v1/assets/folder/**', async (route) => {
    await held;
    await route.continue().catch(() => undefined); // unrouted meanwhile: the page already has its answer
  });
  await picker.locator('.crumbs button').first().click();
  await picker.locator('.skeleton .item').first().waitFor();
  assert.equal(await picker.locator('.skeleton .item').count(), 8);
  assert.equal(await picker.getByRole('listbox').getAttribute('aria-busy'), 'true');
  await shot('02-skeleton');
  release();
  await page.unroute('**/api/v1/assets/folder/**');
  await picker.locator('.folders button', { hasText: 'Photos' }).waitFor();
  assert.equal(await picker.locator('.skeleton').count(), 0);

  // An error shows the hub's own message from the envelope, and Retry repeats the step.
  await page.route('**/api/v1/assets/folder/**', (route) => route.fulfill({
    status: 503, contentType: 'application/json',
    json: { message: 'Error', error: { code: 'hub-provider-unavailable', source: 'hub', message: 'the library index is being rebuilt; try again in a minute' } },
  }));
  await picker.locator('.folders button', { hasText: 'Photos' }).click();
  await picker.locator('.error', { hasText: 'the library index is being rebuilt' }).waitFor();
  assert.match(await alertText(), /^Could not load assets: the library index is being rebuilt; try again in a minute/);
  assert.equal(await picker.locator('.empty').count(), 0, 'an error is not "this folder is empty"');
  await assertFocusIn('after a failed folder', (f) => f.name === 'Retry');
  await shot('03-error-retry');
  await page.unroute('**/api/v1/assets/folder/**');
  await page.keyboard.press('Enter');
  await options().nth(PHOTOS - 1).waitFor();
  assert.equal(await alertText(), '');
  await assertFocusIn('after Retry', (f) => f.role === 'option');

  // Selecting cards does not move their thumbnails (Ctrl+A: selected without opening the details,
  // which would narrow the grid).
  const thumbs = () => picker.locator('.item .thumb').evaluateAll((els) => els.map((e: any) => JSON.stringify(e.getBoundingClientRect())));
  const before = await thumbs();
  await page.keyboard.press('Control+a');
  assert.equal(await options().nth(3).getAttribute('aria-selected'), 'true');
  assert.deepEqual(await thumbs(), before, 'the thumbnails stay put when their cards are selected');
  await clearSelection();

  // A dropped file that is not an image gets a message; the view stays.
  await picker.locator('.main').evaluate((main: any) => {
    const g = globalThis as any;
    const dt = new g.DataTransfer();
    dt.items.add(new g.File(['tide tables'], 'tides.txt', { type: 'text/plain' }));
    main.dispatchEvent(new g.DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
    main.dispatchEvent(new g.DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  });
  assert.match(await alertText(), /“tides\.txt” is not an image/);
  assert.match(await picker.getByRole('listbox').getAttribute('aria-label') ?? '', /Photos/);

  // An empty answer is said once.
  const search = picker.getByRole('searchbox', { name: 'Search assets' });
  await search.fill('zzqxv');
  await search.press('Enter');
  await picker.locator('.empty').waitFor();
  const said = await picker.evaluate((el: any) => (el.shadowRoot.querySelector('.wrap').innerText.match(/No assets found/g) ?? []).length);
  assert.equal(said, 1, '"No assets found" appears once');
  await shot('04-no-assets');
});

test('a failed load (issue 29): a human message for no connection, no "Loading…" under it, no filters of the folder before; Home says where the assets are', async () => {
  await openPhotos();
  await clearSelection();
  const facets = picker.locator('.facets');
  assert.ok(await facets.locator('fieldset').count() > 0, 'Photos has filters');
  // No answer at all: the browser's fetch fails ("Failed to fetch").
  await page.route('**/api/v1/assets/folder/**', (route) => route.abort('failed'));
  const alert = picker.locator('.error span');
  try {
    await picker.locator('.crumbs button').first().click();
    await picker.locator('.error button').waitFor();
    assert.equal(await alert.innerText(), 'No connection to the asset hub. Check your network and try again.');
    assert.equal(await picker.locator('.status').innerText(), '', 'no "Loading…" under the error');
    assert.equal(await facets.isVisible(), false, 'the filters of Photos are gone');
    assert.equal(await facets.locator('fieldset').count(), 0);
    await shot('06-offline');
    // In German too (a locale change loads the view again, and fails again).
    await picker.evaluate((el: any) => el.setAttribute('locale', 'de'));
    await picker.locator('.error', { hasText: 'Keine Verbindung' }).waitFor();
    assert.equal(await alert.innerText(), 'Keine Verbindung zum Asset-Hub. Prüfen Sie Ihre Netzwerkverbindung und versuchen Sie es erneut.');
    assert.equal(await picker.locator('.status').innerText(), '');
  } finally {
    await page.unroute('**/api/v1/assets/folder/**');
  }
  // Retry: Home of this library holds folders only; it says to open one instead of a blank grid.
  await picker.locator('.error button').click();
  await picker.locator('.folders button', { hasText: 'Photos' }).waitFor();
  await picker.locator('.empty').waitFor();
  assert.equal(await picker.locator('.empty').innerText(), 'Hier gibt es keine Assets. Öffnen Sie oben einen Ordner.');
  await picker.evaluate((el: any) => el.removeAttribute('locale'));
  await picker.locator('.empty', { hasText: 'No assets here. Open a folder above.' }).waitFor();
  const said = await picker.evaluate((el: any) => (el.shadowRoot.querySelector('.wrap').innerText.match(/No assets here/g) ?? []).length);
  assert.equal(said, 1, 'said once');
  await shot('07-home-folders-only');
});

test('the sign-in popup speaks the picker\'s language (issue 29): Japanese form, its error after the POST, Sign in styled as the primary button', async () => {
  // A second picker that keeps its session in memory: a new hub session, no library connection, so the chooser.
  await page.evaluate(() => {
    const g = globalThis as any;
    const p = g.document.createElement('damhub-picker');
    p.id = 'ja-picker';
    p.setAttribute('token-url', '/demo/partner-token');
    p.setAttribute('persist', 'none');
    p.setAttribute('locale', 'ja');
    g.document.querySelector('#picker').after(p);
  });
  const ja = page.locator('#ja-picker');
  try {
    const connect = ja.getByRole('button', { name: /サインインして接続/ });
    await connect.waitFor();
    const [popup] = await Promise.all([page.waitForEvent('popup'), connect.click()]);
    await popup.waitForURL(/\/auth\/library\/signin/);
    // The browser says English (the context's locale en-US); the login says Japanese, and wins.
    assert.equal(await popup.locator('html').getAttribute('lang'), 'ja');
    assert.equal(await popup.locator('h1').innerText(), 'ライブラリにサインイン');
    const signIn = popup.getByRole('button', { name: 'サインイン', exact: true });
    const cancel = popup.getByRole('button', { name: 'キャンセル' });
    const look = async (b: Locator) => b.evaluate((el: any) => {
      const cs = (globalThis as any).getComputedStyle(el);
      return { bg: cs.backgroundColor, fg: cs.color, weight: cs.fontWeight };
    });
    const [primary, secondary] = [await look(signIn), await look(cancel)];
    assert.notEqual(primary.bg, secondary.bg, `Sign in and Cancel look different: ${JSON.stringify([primary, secondary])}`);
    assert.equal(primary.bg, 'rgb(31, 95, 204)', 'Sign in is filled with the picker\'s accent');
    assert.equal(primary.fg, 'rgb(255, 255, 255)');
    await popup.screenshot({ path: path.join(ARTIFACTS, '08-sign-in-ja.png') });
    await popup.getByLabel('ユーザー名').fill('demo');
    await popup.getByLabel('パスワード').fill('not-the-password');
    await signIn.click();
    await popup.locator('.error', { hasText: 'ユーザー名またはパスワードが正しくありません。' }).waitFor();
    assert.equal(await popup.locator('html').getAttribute('lang'), 'ja', 'the answer to the POST speaks the login\'s language');
    await popup.getByLabel('パスワード').fill('demo-password');
    await popup.getByRole('button', { name: 'サインイン', exact: true }).click();
    await ja.locator('.folders button', { hasText: 'Photos' }).waitFor();
  } finally {
    await page.evaluate(() => (globalThis as any).document.querySelector('#ja-picker')?.remove());
  }
});

test('keyboard: Tab to "Load more" loads the next page and focus moves to its first asset', async () => {
  // Small pages of big tiles in a short grid, so "Load more" is below the fold until Tab brings it into view.
  await picker.evaluate((el: any) => { el.setAttribute('page-size', '4'); el.style.setProperty('--damhub-height', '12rem'); el.style.setProperty('--damhub-thumb-size', '420px'); });
  try {
    await openPhotos(4);
    assert.equal(await options().count(), 4);
    await options().first().focus();
    // The grid is one tab stop, so one Tab reaches "Load more" (focusing it scrolls it into view).
    await page.keyboard.press('Tab');
    await page.waitForFunction(() => (globalThis as any).document.querySelector('#picker').shadowRoot.querySelectorAll('.item').length >= 8);
    await page.waitForFunction(() => (globalThis as any).document.querySelector('#picker').shadowRoot.activeElement?.getAttribute('aria-posinset') === '5');
    await assertFocusIn('after Load more', (f) => f.role === 'option' && f.name === 'scene 02.jpg');
  } finally {
    await picker.evaluate((el: any) => { el.setAttribute('page-size', '24'); el.style.removeProperty('--damhub-height'); el.style.removeProperty('--damhub-thumb-size'); });
  }
});

test('partner options: types, max, rendition, selected, and the browser language sent as uiLocale', async () => {
  await openPhotos();
  await clearSelection();
  // types: the Markdown file is shown but cannot be selected.
  await picker.evaluate((el: any) => el.setAttribute('types', 'image/*')); // applies to the assets already shown
  const notes = picker.getByRole('option', { name: 'harbor notes.md' });
  assert.equal(await notes.getAttribute('aria-disabled'), 'true');
  await notes.click({ force: true });
  assert.equal(await notes.getAttribute('aria-selected'), 'false');
  assert.match(await picker.locator('.status').innerText(), /cannot be selected here/);
  await page.keyboard.press('Escape');

  // max: a third asset is refused with a message.
  await picker.evaluate((el: any) => el.setAttribute('max', '2'));
  for (const i of [3, 4, 5]) {
    await options().nth(i).click();
    await page.keyboard.press('Escape');
  }
  assert.equal(await picker.locator('.item[aria-selected="true"]').count(), 2);
  assert.match(await picker.locator('.status').innerText(), /At most 2 can be selected/);
  await page.keyboard.press('Control+a');
  assert.equal(await picker.locator('.item[aria-selected="true"]').count(), 2, 'Ctrl+A respects max');

  // rendition: the select event carries the named conversion's URL.
  await options().nth(3).click();
  const detail = picker.getByRole('complementary', { name: 'Asset details' });
  const conversion = detail.locator('.renditions a').first();
  await conversion.waitFor();
  const [name, href] = [await conversion.innerText(), await conversion.getAttribute('href')];
  await page.keyboard.press('Escape');
  await options().nth(3).click(); // selected again (the click above toggled it off)
  await picker.evaluate((el: any, n: string) => el.setAttribute('rendition', n), name);
  await page.evaluate(() => {
    const g = globalThis as any;
    g.__picked = null;
    g.document.querySelector('#picker').addEventListener('select', (e: any) => { g.__picked = e.detail; }, { once: true });
  });
  await picker.getByRole('button', { name: 'Select 2', exact: true }).click();
  await page.waitForFunction(() => (globalThis as any).__picked);
  const picked = await page.evaluate(() => (globalThis as any).__picked);
  assert.equal(picked.renditions.length, 2);
  assert.ok(picked.renditions.every((r: { rendition: string }) => r.rendition === name), JSON.stringify(picked.renditions));
  const third = picked.renditions.find((r: { id: string }) => r.id === picked.assets.find((a: { name: string }) => a.name === 'scene 01.jpg')?.id);
  assert.equal(third?.url, href);
  const ids = picked.assets.map((a: { id: string }) => a.id) as string[];
  for (const a of ['types', 'max', 'rendition']) await picker.evaluate((el: any, k: string) => el.removeAttribute(k), a);

  // selected + the browser's language: a second picker on the page (same tab, same session) opens
  // straight into the library in Japanese, with the partner's two assets already selected, and
  // asks the hub for Japanese labels.
  const uiLocales: string[] = [];
  page.on('request', (r) => { const u = new URL(r.url()); if (u.pathname.startsWith('/api/v1/assets/')) uiLocales.push(u.searchParams.get('uiLocale') ?? ''); });
  await page.evaluate((sel: string) => {
    const g = globalThis as any;
    Object.defineProperty(g.navigator, 'languages', { get: () => ['ja-JP', 'en'], configurable: true });
    const p = g.document.createElement('damhub-picker');
    p.id = 'second';
    p.setAttribute('token-url', '/demo/partner-token');
    p.setAttribute('multiple', '');
    p.setAttribute('provider', 'library');
    p.setAttribute('selected', sel);
    g.document.querySelector('#picker').after(p);
  }, ids.join(' '));
  const second = page.locator('#second');
  await second.locator('.count', { hasText: '選択: 2' }).waitFor();
  assert.equal(await second.getByRole('button', { name: '2 件を選択' }).isEnabled(), true);
  assert.equal(await second.locator('.wrap').getAttribute('lang'), 'ja');
  assert.ok(uiLocales.length >= 3 && uiLocales.every((l) => l === 'ja'), JSON.stringify(uiLocales));
  await second.scrollIntoViewIfNeeded();
  await second.screenshot({ path: path.join(ARTIFACTS, '05-preselected-ja.png') });
  await page.evaluate(() => {
    const g = globalThis as any;
    g.document.querySelector('#second').remove();
    delete g.navigator.languages;
  });
});

const VIEWPORTS = [[390, 844], [768, 1024], [1280, 800]] as const;

test('every viewport × theme × locale: no overflow, sheets on small screens, one-line footer, no serious axe finding', async () => {
  await openPhotos();
  await clearSelection();
  for (const locale of ['de', 'ja'] as const) {
    await picker.evaluate((el: any, l: string) => el.setAttribute('locale', l), locale);
    await options().nth(PHOTOS - 1).waitFor();
    for (const theme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: theme });
      for (const [width, height] of VIEWPORTS) {
        const tag = `${width}x${height}-${theme}-${locale}`;
        await page.setViewportSize({ width, height });
        const narrow = width < 700;
        assert.equal(await picker.getAttribute('theme'), 'auto');
        const look = await picker.evaluate((el: any) => {
          const g = globalThis as any;
          const cs = g.getComputedStyle(el);
          return { scheme: cs.colorScheme, bg: cs.backgroundColor, box: g.getComputedStyle(el.shadowRoot.querySelector('input[type=checkbox]')).colorScheme };
        });
        assert.equal(look.scheme, theme, `${tag}: color-scheme`);
        assert.equal(look.bg, theme === 'dark' ? 'rgb(22, 26, 33)' : 'rgb(255, 255, 255)', `${tag}: background`);
        assert.equal(look.box, theme, `${tag}: native checkboxes follow the theme`);

        // Two selected, so the footer holds its longest texts.
        await options().nth(1).click();
        await page.keyboard.press('Escape');
        await options().nth(2).click();
        const detail = picker.locator('.detail');
        await detail.locator('dl[aria-busy="false"]').waitFor();
        await assertNoOverflow(tag);
        const [main, sheet] = [await picker.locator('.main').boundingBox(), await detail.boundingBox()];
        if (narrow) {
          assert.ok(Math.abs(sheet!.x - main!.x) < 2 && Math.abs(sheet!.width - main!.width) < 2, `${tag}: details are a full-width sheet over the grid`);
          await assertFocusIn(`${tag}: the sheet takes focus`, (f) => f.tag === 'button' && f.inPicker);
        } else {
          assert.ok(sheet!.x >= main!.x + main!.width - 1, `${tag}: details sit beside the grid`);
        }
        await shot(`${tag}-details`);
        const axeDetails = await seriousAxe();
        assert.deepEqual(axeDetails, [], `${tag} details: ${JSON.stringify(axeDetails, null, 2)}`);
        await page.keyboard.press('Escape');
        await assertFocusIn(`${tag}: after closing details`, (f) => f.role === 'option');

        const toggle = picker.locator('.filters-toggle');
        assert.equal(await toggle.isVisible(), narrow, `${tag}: the Filters button only on a narrow picker`);
        assert.equal(await picker.locator('.facets').isVisible(), !narrow, `${tag}: filters collapsed on a narrow picker`);
        if (narrow) {
          await toggle.click();
          assert.equal(await picker.locator('.facets').isVisible(), true);
          await assertFocusIn(`${tag}: the filter sheet`, (f) => f.role === 'checkbox');
          await assertNoOverflow(`${tag} filters`);
          await shot(`${tag}-filters`);
          await page.keyboard.press('Escape');
          assert.equal(await picker.locator('.facets').isVisible(), false);
          await assertFocusIn(`${tag}: after closing filters`, (f) => f.tag === 'button' && f.inPicker);
        }
        await shot(`${tag}-grid`);
        const axeGrid = await seriousAxe();
        assert.deepEqual(axeGrid, [], `${tag} grid: ${JSON.stringify(axeGrid, null, 2)}`);
        await clearSelection();
      }
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await picker.evaluate((el: any) => el.removeAttribute('locale'));
  assert.deepEqual(pageErrors, []);
});

/** Nothing sticks out of the page or the picker, no control's text is cut, the footer is one line. */
async function assertNoOverflow(tag: string, footer = true): Promise<void> {
  const r = await page.evaluate(() => {
    const g = globalThis as any;
    const host = g.document.querySelector('#picker');
    const hb = host.getBoundingClientRect();
    const out: string[] = [];
    if (g.document.documentElement.scrollWidth > g.innerWidth) out.push(`page scrolls sideways: ${g.document.documentElement.scrollWidth} > ${g.innerWidth}`);
    for (const el of host.shadowRoot.querySelectorAll('*')) {
      if (!el.getClientRects().length || el.closest('.sentinel') || el.closest('.sr')) continue;
      const b = el.getBoundingClientRect();
      if (b.width && (b.right > hb.right + 1 || b.left < hb.left - 1)) out.push(`${el.localName}.${el.className} sticks out: ${Math.round(b.left)}..${Math.round(b.right)} of ${Math.round(hb.left)}..${Math.round(hb.right)}`);
      if (el.localName === 'button' && el.scrollWidth > el.clientWidth + 1) out.push(`button "${el.textContent}" is cut`);
    }
    for (const sel of ['.main', '.bar', 'footer', '.detail', '.facets']) {
      const el = host.shadowRoot.querySelector(sel);
      if (el?.getClientRects().length && el.scrollWidth > el.clientWidth + 1) out.push(`${sel} scrolls sideways`);
    }
    const tops = [...host.shadowRoot.querySelectorAll('footer button')].map((el: any) => Math.round(el.getBoundingClientRect().top + el.getBoundingClientRect().height / 2));
    const heights = [...host.shadowRoot.querySelectorAll('footer button')].map((el: any) => el.getBoundingClientRect().height);
    const count = host.shadowRoot.querySelector('footer .count');
    if (count && count.scrollWidth > count.clientWidth + 1) out.push(`the selection count "${count.textContent}" is cut`);
    return { out, oneLine: new Set(tops).size <= 1 || Math.max(...tops) - Math.min(...tops) <= 2, heights };
  });
  assert.deepEqual(r.out, [], tag);
  if (!footer) return;
  assert.ok(r.oneLine, `${tag}: the footer buttons are on one line`);
  assert.ok(Math.max(...r.heights) < 48, `${tag}: no footer button wraps (heights ${r.heights})`);
}
