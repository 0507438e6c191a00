/**
 * <damhub-picker> on a page of the in-process test hub (client-harness.ts), driven by Debian's
 * Chromium: the tests set the partner's fields (writes) and the library account directly, which
 * the `damhub serve --demo` process of picker-browser.test.ts does not let them do. The page is
 * same-origin with the hub; its partner "backend" is a route that signs a JWT for one test user.
 * Attributes for the element come in the page URL's query, and every event the picker sends is
 * kept in `window.__events` for the test to read.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { startClientHarness, type ClientHarness, type ClientHarnessOptions } from './client-harness.js';
import { REPO_ROOT } from './process.js';

export const CHROMIUM = '/usr/bin/chromium';
const DIST = path.join(REPO_ROOT, 'packages', 'picker', 'dist');

const APP_JS = `
const picker = document.querySelector('damhub-picker');
window.__events = [];
for (const type of ['select', 'error', 'damhub-destination', 'damhub-upload']) {
  picker.addEventListener(type, (e) => {
    const d = e.detail ?? {};
    // An Error does not survive the trip to the test: keep what a test asserts on.
    window.__events.push({ type, detail: d.error ? { context: d.context, code: d.error.code, message: d.error.message } : d });
  });
}
`;

export interface PickerPageHarness {
  h: ClientHarness;
  context: BrowserContext;
  /** The page URL that shows the picker with these attributes. */
  url(attrs?: Record<string, string | true>): string;
  /** A new tab on the picker page, signed in to the library through the sign-in popup, in Home. */
  open(attrs?: Record<string, string | true>, account?: { name: string; password: string }): Promise<{ page: Page; picker: Locator }>;
  close(): Promise<void>;
}

const escAttr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

export async function startPickerPage(opts: ClientHarnessOptions & { sub?: string; account: { name: string; password: string; writeFolders?: string[] } }): Promise<PickerPageHarness> {
  let h!: ClientHarness;
  // The module and its chunk (tus-js-client, imported on the first large upload).
  const scripts = fs.readdirSync(DIST).filter((f) => /^damhub-picker[\w-]*\.js$/.test(f));
  h = await startClientHarness({
    ...opts,
    beforeListen(t, origin) {
      void origin;
      for (const file of scripts) {
        const body = fs.readFileSync(path.join(DIST, file));
        t.app.get(`/test-picker/${file}`, async (_req, reply) => reply.type('text/javascript; charset=utf-8').send(body));
      }
      t.app.get('/test-picker/app.js', async (_req, reply) => reply.type('text/javascript; charset=utf-8').send(APP_JS));
      t.app.post('/test-picker/token', async () => ({ jwt: await h.signer({ sub: opts.sub ?? 'picker-user', email: `${opts.sub ?? 'picker-user'}@example.com`, name: 'Picker User' }) }));
      t.app.get('/test-picker/page', async (req, reply) => {
        const attrs = Object.entries(req.query as Record<string, string>).map(([k, v]) => (v === '' ? ` ${escAttr(k)}` : ` ${escAttr(k)}="${escAttr(v)}"`)).join('');
        return reply.type('text/html; charset=utf-8').send(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>picker test</title></head>
<body style="margin:0;padding:16px;font:15px system-ui"><damhub-picker id="picker" token-url="/test-picker/token" persist="memory"${attrs}></damhub-picker>
<script type="module" src="/test-picker/damhub-picker.js"></script><script type="module" src="/test-picker/app.js"></script></body></html>`);
      });
      return opts.beforeListen?.(t, origin);
    },
  });
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'damhub-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    locale: 'en-US',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1100, height: 720 },
  });
  const url = (attrs: Record<string, string | true> = {}) => {
    const q = new URLSearchParams(Object.entries(attrs).map(([k, v]) => [k, v === true ? '' : v]));
    return `${h.origin}/test-picker/page?${q}`;
  };
  return {
    h, context, url,
    async open(attrs = {}, account = opts.account) {
      const page = await context.newPage();
      await page.goto(url(attrs));
      const picker = page.locator('#picker');
      // By the form's structure, not its words: the page may be in any of the six languages.
      const connect = picker.locator('.providers button').first();
      await connect.waitFor();
      const [popup] = await Promise.all([page.waitForEvent('popup'), connect.click()]);
      await popup.locator('input[name="username"]').fill(account.name);
      await popup.locator('input[name="password"]').fill(account.password);
      await popup.locator('button.primary').click();
      await picker.locator('.crumbs button[aria-current="page"]').waitFor();
      return { page, picker };
    },
    async close() {
      await context.close();
      await h.close();
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Everything the picker sent so far (see APP_JS). */
export async function pickerEvents(page: Page, type?: string): Promise<{ type: string; detail: any }[]> {
  const all = await page.evaluate(() => (globalThis as any).__events as { type: string; detail: any }[]);
  return type ? all.filter((e) => e.type === type) : all;
}
