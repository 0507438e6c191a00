/**
 * A hub that serves the WebDAV connector with a user signed in through the connector's sign-in
 * form. The WebDAV servers themselves are real ones (test/helpers/real-servers.ts: Apache
 * mod_dav, rclone) or, for faults, a misbehaving loopback server in the test.
 */
import assert from 'node:assert/strict';
import type { HubConfig } from '../../src/config.js';
import { startTestHub, type TestHub } from './hub.js';
import { formBrowserSignIn, TestBrowser } from './browser.js';

export interface WebdavHub {
  t: TestHub;
  access: string;
  dam: string;
  headers: Record<string, string>;
  get(url: string): Promise<{ status: number; body: any; headers: Record<string, unknown>; raw: Buffer }>;
  post(url: string, body: unknown): Promise<{ status: number; body: any }>;
}

/** Drives the form: start the login, open the form, submit; returns the poll's DAM token. */
export async function signInWebdav(t: TestHub, access: string, fields: { serverUrl: string; username: string; password: string }): Promise<{ token: string | null; refresh: string | null; status: number; page: string }> {
  const start = await t.app.inject({ method: 'POST', url: `/api/v1/auth/login?provider=webdav&polling=true&serverUrl=${encodeURIComponent(fields.serverUrl)}`, headers: { authorization: `Bearer ${access}` } });
  assert.equal(start.statusCode, 200, start.body);
  const { redirect_uri, state } = start.json();
  // As a browser does it (test/helpers/browser.ts): the form page sets the login's cookie, the POST carries it.
  const browser = new TestBrowser(t);
  const { form: page, submit } = await formBrowserSignIn(browser, redirect_uri, { ...fields });
  assert.equal(page.status, 200, page.body);
  assert.ok(page.body.includes(`value="${fields.serverUrl}"`), 'the form is prefilled with the serverUrl');
  const poll = await t.app.inject({ method: 'GET', url: `/api/v1/auth/login?state=${encodeURIComponent(state)}&polling=true` });
  return { token: poll.json().access_token ?? null, refresh: poll.json().refresh_token ?? null, status: submit.status, page: submit.body };
}

export async function startWebdavHub(dav: { url: string }, opts: { user?: string; password?: string; config?: Partial<HubConfig> } = {}): Promise<WebdavHub> {
  const t = await startTestHub({ config: { userRateLimitPerMin: 0, connectors: { webdav: { allowHosts: ['127.0.0.1'], timeoutMs: 5000 } }, ...opts.config } });
  const { access_token } = await t.login();
  const r = await signInWebdav(t, access_token, { serverUrl: dav.url, username: opts.user ?? 'alice', password: opts.password ?? 'alice-pw' });
  assert.ok(r.token, r.page);
  const headers = { authorization: `Bearer ${access_token}`, 'provider-authorization': `Bearer ${r.token}` };
  return {
    t, access: access_token, dam: r.token!, headers,
    async get(url) {
      const res = await t.app.inject({ method: 'GET', url, headers });
      let body: any = null;
      try {
        body = res.json();
      } catch { /* not JSON */ }
      return { status: res.statusCode, body, headers: res.headers, raw: res.rawPayload };
    },
    async post(url, body) {
      const res = await t.app.inject({ method: 'POST', url, headers, payload: body as object });
      return { status: res.statusCode, body: res.json() };
    },
  };
}
