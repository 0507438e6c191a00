/**
 * The sign-in pages in the login's language (issue 29, item 2), against a real hub process
 * (`damhub serve --demo` over a small library, with WebDAV, S3 and Cloudinary enabled and a
 * Dropbox app configured). POST /auth/login takes `uiLocale`; it is kept with the login state, so
 * every page of the login speaks it: the start page (each form connector's form, the OAuth
 * confirm page), the answers to the form's POST and to Cancel, and the OAuth callback after the
 * vendor's redirect. Without it the browser's Accept-Language decides, else English. In Chromium,
 * on every start page, the forward button (Sign in, Continue) looks primary and Cancel does not.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { chromium, type Browser } from 'playwright-core';
import { UI_LOCALES } from '../../../src/providers/contract.js';
import { signInMessages, type SignInMessages } from '../../../src/providers/kit/signin-messages.js';
import { TestBrowser, formOf } from '../../helpers/browser.js';
import { tempDir } from '../../helpers/hub.js';
import { writeFiles } from '../../helpers/library.js';
import { REPO_ROOT, runCli, startServer, type ServerProcess } from '../../helpers/process.js';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = path.join(REPO_ROOT, 'test-artifacts', 'signin');
const AXE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

let server: ServerProcess;
let access: string;

before(async () => {
  const data = tempDir('damhub-signin-lang-data-');
  const lib = tempDir('damhub-signin-lang-lib-');
  writeFiles(lib, { 'readme.txt': 'hello\n' });
  const indexed = await runCli(['index', '--library', lib, '--data', data]);
  assert.equal(indexed.code, 0, indexed.stderr);
  server = await startServer(['--data', data, '--library', lib, '--demo'], {
    DAMHUB_CONNECTORS: 'webdav,s3,cloudinary', DAMHUB_DROPBOX_CLIENT_ID: 'dropbox-app', DAMHUB_USER_RATE_LIMIT: '0', DAMHUB_LOGIN_STARTS_PER_MIN: '1000', DAMHUB_PENDING_LOGINS_PER_USER: '1000',
  });
  const { jwt } = (await (await fetch(`${server.url}/demo/partner-token`, { method: 'POST' })).json()) as { jwt: string };
  const exchanged = await fetch(`${server.url}/api/v1/auth/exchangeToken`, { method: 'POST', headers: { authorization: `Bearer ${jwt}` } });
  assert.equal(exchanged.status, 200);
  access = ((await exchanged.json()) as { access_token: string }).access_token;
  fs.mkdirSync(ARTIFACTS, { recursive: true });
});

after(async () => {
  await server?.stop();
});

/** POST /auth/login: the answer's status and body. */
async function startLogin(provider: string, q: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const query = new URLSearchParams({ provider, polling: 'true', ...q });
  const res = await fetch(`${server.url}/api/v1/auth/login?${query}`, { method: 'POST', headers: { authorization: `Bearer ${access}` } });
  return { status: res.status, body: await res.json() };
}

async function started(provider: string, q: Record<string, string> = {}): Promise<{ state: string; redirect_uri: string }> {
  const r = await startLogin(provider, q);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body;
}

/** The start page of each provider that signs in on a page of the hub (the server URL for those that take one). */
const START_PAGES: [provider: string, q: Record<string, string>][] = [
  ['library', {}], ['webdav', { serverUrl: 'https://dav.example/files/' }], ['s3', { serverUrl: 'https://s3.example' }], ['cloudinary', {}], ['dropbox', {}],
];

/** What a person reads first on each start page, and the forward button, written out by hand. */
const EXPECTED: Record<'de' | 'ja', { titles: Record<string, string>; who: string; cancel: string; signIn: string; continue: string }> = {
  de: {
    titles: { library: 'Bei der Bibliothek anmelden', webdav: 'Bei Ihrem WebDAV-Server anmelden', s3: 'S3-Bucket verbinden', cloudinary: 'Cloudinary-Produktumgebung verbinden', dropbox: 'Dropbox verbinden' },
    who: 'Wer Zugriff erhält', cancel: 'Abbrechen', signIn: 'Anmelden', continue: 'Weiter',
  },
  ja: {
    titles: { library: 'ライブラリにサインイン', webdav: 'WebDAV サーバーにサインイン', s3: 'S3 バケットに接続', cloudinary: 'Cloudinary のプロダクト環境に接続', dropbox: 'Dropbox に接続' },
    who: 'アクセスの許可先', cancel: 'キャンセル', signIn: 'サインイン', continue: '続行',
  },
};

test('every start page (library, WebDAV, S3 and Cloudinary forms, the OAuth confirm page) speaks the uiLocale of POST /auth/login, <html lang> included', async () => {
  for (const locale of ['de', 'ja'] as const) {
    const x = EXPECTED[locale];
    for (const [provider, q] of START_PAGES) {
      const { redirect_uri } = await started(provider, { ...q, uiLocale: locale });
      // A browser that says English: the login's language wins.
      const res = await fetch(redirect_uri, { headers: { 'accept-language': 'en-US,en;q=0.9' } });
      const html = await res.text();
      const tag = `${provider} ${locale}`;
      assert.equal(res.status, 200, `${tag}: ${html.slice(0, 300)}`);
      assert.match(html, new RegExp(`^<!doctype html><html lang="${locale}">`), tag);
      assert.ok(html.includes(`<title>${x.titles[provider]}</title>`) && html.includes(`<h1>${x.titles[provider]}</h1>`), `${tag}: title and heading`);
      assert.ok(html.includes(`<h2 id="who">${x.who}</h2>`), `${tag}: the statement`);
      const forward = provider === 'dropbox' ? x.continue : x.signIn;
      assert.match(html, new RegExp(`<button type="submit" class="primary"[^>]*>${forward}</button><button type="submit" name="cancel" value="1" formnovalidate>${x.cancel}</button>`), `${tag}: the buttons`);
      for (const english of ['Who will get access', 'Application', 'Cancel', 'If someone sent you this link']) assert.ok(!html.includes(english), `${tag}: "${english}" left in English`);
    }
  }
});

test('the language holds through the chain: the form\'s POST (a wrong password, a missing field, Cancel), the OAuth Continue, the vendor\'s redirect back to the callback', async () => {
  // The browser sends no Accept-Language at all: only the stored uiLocale can make these German.
  const browser = new TestBrowser();
  const { redirect_uri } = await started('library', { uiLocale: 'de' });
  const form = formOf(await browser.open(redirect_uri));
  const wrong = await browser.post(form.action, { state: form.state, username: 'demo', password: 'nope' });
  assert.equal(wrong.status, 401);
  assert.match(wrong.body, /^<!doctype html><html lang="de">/);
  assert.ok(wrong.body.includes('<p class="error" role="alert">Benutzername oder Passwort ist falsch.</p>'), wrong.body.slice(0, 600));
  const missing = await browser.post(form.action, { state: form.state, username: 'demo', password: '' });
  assert.equal(missing.status, 400);
  assert.ok(missing.body.includes('„Passwort“ ist ein Pflichtfeld.'));
  const cancelled = await browser.post(form.action, { state: form.state, cancel: '1' });
  assert.equal(cancelled.status, 200);
  assert.ok(cancelled.body.includes('<h1>Anmeldung abgebrochen</h1>'));

  // English by default, in plain words.
  const en = await started('library');
  const enForm = formOf(await browser.open(en.redirect_uri));
  const enWrong = await browser.post(enForm.action, { state: enForm.state, username: 'demo', password: 'nope' });
  assert.ok(enWrong.body.includes('<p class="error" role="alert">Wrong user name or password.</p>'));
  assert.ok(!enWrong.body.includes('not right'));

  // Dropbox in Japanese: confirm page, Continue (303 to the vendor), the vendor sends the browser back.
  const dropbox = await started('dropbox', { uiLocale: 'ja' });
  const confirm = await browser.open(dropbox.redirect_uri);
  const continued = await browser.post(formOf(confirm).action, { state: dropbox.state, continue: '1' });
  assert.equal(continued.status, 303);
  const vendor = new URL(continued.location!);
  assert.equal(vendor.searchParams.get('state'), dropbox.state, 'the vendor gets the state (and no language)');
  const back = await browser.open(`${server.url}/api/v1/auth/callback/dropbox?error=access_denied&state=${encodeURIComponent(dropbox.state)}`);
  assert.equal(back.status, 200, back.body.slice(0, 300));
  assert.match(back.body, /^<!doctype html><html lang="ja">/);
  assert.ok(back.body.includes('<h1>サインインが拒否されました</h1>'), back.body.slice(0, 400));
});

test('without uiLocale the browser\'s Accept-Language decides (q-values, regions), else English; a page of an unknown or foreign login too; an unsupported uiLocale is refused', async () => {
  const cases: [header: string | null, lang: string, title: string][] = [
    ['fr-CH, fr;q=0.9, en;q=0.8', 'fr', 'Se connecter à la médiathèque'],
    ['pt-BR, es;q=0.5', 'es', 'Iniciar sesión en la biblioteca'],
    ['ja;q=0.2, zh-Hans-CN;q=0.8', 'zh', '登录资源库'],
    ['pt', 'en', 'Sign in to the library'],
    [null, 'en', 'Sign in to the library'],
  ];
  for (const [header, lang, title] of cases) {
    const { redirect_uri } = await started('library');
    const html = await (await fetch(redirect_uri, { headers: header ? { 'accept-language': header } : {} })).text();
    assert.match(html, new RegExp(`^<!doctype html><html lang="${lang}">`), String(header));
    assert.ok(html.includes(`<h1>${title}</h1>`), `${header}: ${html.slice(0, 300)}`);
  }
  // The login's uiLocale over the header.
  const es = await started('library', { uiLocale: 'es' });
  assert.ok((await (await fetch(es.redirect_uri, { headers: { 'accept-language': 'de' } })).text()).includes('<h1>Iniciar sesión en la biblioteca</h1>'));

  // No login to take a language from: the header's.
  const unknown = await fetch(`${server.url}/api/v1/auth/library/signin?state=nope`, { headers: { 'accept-language': 'ja' } });
  assert.equal(unknown.status, 400);
  const unknownHtml = await unknown.text();
  assert.match(unknownHtml, /^<!doctype html><html lang="ja">/);
  assert.ok(unknownHtml.includes('このサインインリンクは無効です。アプリケーションからやり直してください。'));
  // A browser without the login's cookie: refused in the login's language.
  const de = await started('library', { uiLocale: 'de' });
  const stranger = await new TestBrowser().post(`${server.url}/api/v1/auth/library/signin`, { state: de.state, username: 'demo', password: 'demo-password' });
  assert.equal(stranger.status, 403);
  assert.ok(stranger.body.includes('<h1>Öffnen Sie die Anmeldung dort, wo Sie sie begonnen haben</h1>'));

  for (const bad of ['pt', 'DE', 'de-DE', '']) {
    const r = await startLogin('library', { uiLocale: bad });
    assert.equal(r.status, 400, `uiLocale=${JSON.stringify(bad)}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.error.code, 'hub-validation-error');
    assert.match(r.body.error.details ?? r.body.details, /uiLocale/);
  }
});

test('the catalogue: the picker\'s six languages, every text translated with the same placeholders', () => {
  const picker = fs.readFileSync(path.join(REPO_ROOT, 'packages/picker/src/i18n.ts'), 'utf8');
  const pickerLocales = /export const LOCALES = \[([^\]]+)\]/.exec(picker)![1]!.split(',').map((x) => x.trim().replace(/'/g, ''));
  assert.deepEqual([...UI_LOCALES], pickerLocales, 'the sign-in pages speak the picker\'s languages');
  const en = signInMessages('en');
  const holes = (s: string) => [...s.matchAll(/\{(\w)\}/g)].map((m) => m[1]).sort();
  for (const locale of UI_LOCALES) {
    const table: SignInMessages = signInMessages(locale);
    assert.deepEqual(Object.keys(table).sort(), Object.keys(en).sort(), locale);
    for (const [key, text] of Object.entries(table) as [keyof SignInMessages, string][]) {
      assert.ok(text.trim(), `${locale}.${key} is empty`);
      assert.deepEqual(holes(text), holes(en[key]), `${locale}.${key}: placeholders`);
      // A sentence left in English is a missing translation (single words like "System" may agree).
      if (locale !== 'en' && en[key].split(' ').length > 2) assert.notEqual(text, en[key], `${locale}.${key} is English`);
    }
  }
});

test('in Chromium, on every start page, light and dark: the forward button looks primary, Cancel does not, both readable; no serious axe finding', async () => {
  const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update'] });
  try {
    const context = await browser.newContext({ locale: 'de-DE', viewport: { width: 480, height: 900 } });
    const page = await context.newPage();
    for (const [provider, q] of START_PAGES) {
      // No uiLocale: the browser's German (Accept-Language from the context's locale).
      const { redirect_uri } = await started(provider, q);
      await page.goto(redirect_uri);
      assert.equal(await page.locator('html').getAttribute('lang'), 'de', provider);
      for (const scheme of ['light', 'dark'] as const) {
        await page.emulateMedia({ colorScheme: scheme });
        const [primary, cancel] = await Promise.all([page.locator('button.primary'), page.getByRole('button', { name: 'Abbrechen' })].map((b) => b.evaluate((el: any) => {
          const cs = (globalThis as any).getComputedStyle(el);
          return { bg: cs.backgroundColor as string, fg: cs.color as string, text: el.textContent as string };
        })));
        const tag = `${provider} ${scheme}`;
        assert.equal(primary!.text, provider === 'dropbox' ? 'Weiter' : 'Anmelden', tag);
        assert.notEqual(primary!.bg, cancel!.bg, `${tag}: the two buttons look the same (${primary!.bg})`);
        assert.ok(contrast(primary!.bg, primary!.fg) >= 4.5, `${tag}: primary text contrast ${contrast(primary!.bg, primary!.fg).toFixed(2)}`);
        assert.ok(contrast(cancel!.bg, cancel!.fg) >= 4.5, `${tag}: Cancel text contrast`);
        // The primary button stands out from the page, the secondary one does not pretend to.
        const main = await page.locator('main').evaluate((el: any) => (globalThis as any).getComputedStyle(el).backgroundColor as string);
        assert.ok(contrast(primary!.bg, main) >= 3, `${tag}: the primary button against the page ${contrast(primary!.bg, main).toFixed(2)}`);
        await page.screenshot({ path: path.join(ARTIFACTS, `${provider}-de-${scheme}.png`), fullPage: true });
        await page.evaluate(AXE);
        const found = await page.evaluate(async () => {
          const r = await (globalThis as any).axe.run((globalThis as any).document, { resultTypes: ['violations'] });
          return r.violations.filter((v: any) => v.impact === 'serious' || v.impact === 'critical').map((v: any) => `${v.id}: ${v.nodes.map((n: any) => n.target).join(' ')}`);
        });
        assert.deepEqual(found, [], tag);
      }
    }
  } finally {
    await browser.close();
  }
});

/** WCAG contrast ratio of two computed `rgb(...)` colours. */
function contrast(a: string, b: string): number {
  const lum = (c: string) => {
    const [r, g, bl] = c.match(/\d+(\.\d+)?/g)!.slice(0, 3).map(Number).map((v) => {
      const s = v / 255;
      return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    }) as [number, number, number];
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p) as [number, number];
  return (x + 0.05) / (y + 0.05);
}
