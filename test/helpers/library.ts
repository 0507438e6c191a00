/**
 * A hub with the embedded library over a generated folder tree, a library account, and a user
 * signed in to both the hub and the library (through the real sign-in form).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { addAccount } from '../../src/providers/library/accounts.js';
import type { HubConfig } from '../../src/config.js';
import { startTestHub, tempDir, type TestHub } from './hub.js';
import { formBrowserSignIn, TestBrowser } from './browser.js';
import { embeddedLibrary } from '../../src/catalog.js';
import type { Hub } from '../../src/hub.js';
import type { LibraryProvider } from '../../src/providers/library/provider.js';

/** The hub's embedded library (the catalog built it from config.libraryDir). */
export function libraryOf(hub: Hub): LibraryProvider {
  const library = embeddedLibrary(hub.providers);
  assert.ok(library, 'the hub serves the embedded library');
  return library;
}

export interface LibraryHarness {
  t: TestHub;
  root: string;
  access: string;
  dam: string;
  headers: Record<string, string>;
  get(url: string): Promise<{ status: number; body: any; headers: Record<string, unknown>; raw: Buffer }>;
  post(url: string, body: unknown): Promise<{ status: number; body: any }>;
}

/** A small JPEG of a flat colour (distinct colours give distinct files and hashes). */
export async function solidJpeg(width: number, height: number, rgb: [number, number, number]): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: { r: rgb[0], g: rgb[1], b: rgb[2] } } }).jpeg({ quality: 80 }).toBuffer();
}

export function writeFiles(root: string, files: Record<string, Buffer | string>): void {
  for (const [rel, content] of Object.entries(files)) {
    const file = path.join(root, rel);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content);
  }
}

export async function signInToLibrary(t: TestHub, access: string, user: string, password: string): Promise<string> {
  const start = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login?provider=library&polling=true', headers: { authorization: `Bearer ${access}` } });
  assert.equal(start.statusCode, 200, start.body);
  const { redirect_uri, state } = start.json();
  // As a browser does it (test/helpers/browser.ts): the form page sets the login's cookie, the POST carries it.
  const browser = new TestBrowser(t);
  const { form: page, submit } = await formBrowserSignIn(browser, redirect_uri, { username: user, password });
  assert.equal(page.status, 200);
  assert.match(page.body, /<form method="post"/);
  assert.equal(submit.status, 200, submit.body);
  const poll = await t.app.inject({ method: 'GET', url: `/api/v1/auth/login?state=${encodeURIComponent(state)}&polling=true` });
  const tokens = poll.json();
  assert.ok(tokens.access_token, poll.body);
  return tokens.access_token;
}

/** `writeFolders`: where the account alice may write (default none, as `damhub users add`). */
export async function startLibraryHub(files: Record<string, Buffer | string>, opts: { folders?: string[]; writeFolders?: string[]; config?: Partial<HubConfig> } = {}): Promise<LibraryHarness> {
  const root = tempDir('damhub-lib-');
  writeFiles(root, files);
  const t = await startTestHub({ config: { libraryDir: root, userRateLimitPerMin: 0, ...opts.config } });
  await t.hub.start();
  await addAccount(libraryOf(t.hub).index, 'alice', 'correct horse', opts.folders ?? [], t.clock.now(), { writeFolders: opts.writeFolders ?? [] });
  const { access_token } = await t.login();
  const dam = await signInToLibrary(t, access_token, 'alice', 'correct horse');
  const headers = { authorization: `Bearer ${access_token}`, 'provider-authorization': `Bearer ${dam}` };
  return {
    t, root, access: access_token, dam, headers,
    async get(url) {
      const r = await t.app.inject({ method: 'GET', url, headers });
      let body: any = null;
      try {
        body = r.json();
      } catch { /* not JSON */ }
      return { status: r.statusCode, body, headers: r.headers, raw: r.rawPayload };
    },
    async post(url, body) {
      const r = await t.app.inject({ method: 'POST', url, headers, payload: body as object });
      return { status: r.statusCode, body: r.json() };
    },
  };
}

/**
 * The library's DAM login against a real server over HTTP, through its real form: the page's
 * cookies and hidden fields are sent back with the credentials, as a browser would.
 */
export async function libraryLoginOverHttp(baseUrl: string, access: string, user: string, password: string): Promise<string> {
  const api = `${baseUrl}/api/v1`;
  const start = (await (await fetch(`${api}/auth/login?provider=library&polling=true`, { method: 'POST', headers: { authorization: `Bearer ${access}` } })).json()) as { state: string; redirect_uri: string };
  const page = await fetch(start.redirect_uri);
  const cookie = page.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  const html = await page.text();
  const action = /<form method="post" action="([^"]+)"/.exec(html)![1]!.replace(/&amp;/g, '&');
  const fields = new URLSearchParams();
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)) fields.set(m[1]!, m[2]!);
  fields.set('username', user);
  fields.set('password', password);
  const signin = await fetch(new URL(action, start.redirect_uri), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) }, body: fields });
  assert.equal(signin.status, 200, await signin.text());
  const dam = (await (await fetch(`${api}/auth/login?state=${encodeURIComponent(start.state)}&polling=true`)).json()) as { access_token: string };
  assert.ok(dam.access_token, 'the login finished');
  return dam.access_token;
}
