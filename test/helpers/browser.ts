/**
 * A browser for the hub's DAM sign-in pages, without a browser: a cookie jar, GETs and form POSTs
 * that keep and send cookies, redirects returned (not followed) so a test sees each hop. Every
 * helper that signs a user in to a DAM goes through it (issue 28): the start page sets the cookie
 * binding the login to this browser, and the Continue, the form POST and the OAuth callback need it.
 *
 * Requests to the in-process test hub (its public URL, http://hub.test) go through `app.inject`;
 * any other URL (a hub process, a vendor's replay server) through fetch. Another `TestBrowser` is
 * another person's browser: it holds none of this one's cookies.
 */
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { bearer } from './hub.js';

export interface Visit {
  status: number;
  /** The absolute URL visited. */
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** The absolute redirect target of a 30x, else null. */
  location: string | null;
}

/** Something that answers the hub's URLs in process (a TestHub). */
export interface InProcessHub {
  app: FastifyInstance;
  hub: { config: { publicUrl: string } };
}

export class TestBrowser {
  /**
   * @param cookies name → value; one jar for every origin the test uses (the hubs of one test
   * share their secrets, as the nodes of a cluster do).
   */
  constructor(private readonly inProcess?: InProcessHub, readonly cookies = new Map<string, string>()) {}

  /** The same browser (the same cookie jar) talking to another in-process hub: a second node. */
  on(other: InProcessHub): TestBrowser {
    return new TestBrowser(other, this.cookies);
  }

  private cookieHeader(): string | undefined {
    return this.cookies.size ? [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ') : undefined;
  }

  private keep(setCookie: string | string[] | undefined): void {
    for (const line of Array.isArray(setCookie) ? setCookie : setCookie ? [setCookie] : []) {
      const [pair, ...attrs] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      const gone = attrs.some((a) => /^\s*max-age\s*=\s*0\s*$/i.test(a));
      if (gone) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  async request(method: 'GET' | 'POST', url: string, form?: Record<string, string>): Promise<Visit> {
    const base = this.inProcess?.hub.config.publicUrl;
    const abs = new URL(url, base ?? undefined).href;
    const headers: Record<string, string> = {};
    const cookie = this.cookieHeader();
    if (cookie) headers.cookie = cookie;
    const payload = form ? new URLSearchParams(form).toString() : undefined;
    if (payload !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
    let visit: Visit;
    if (this.inProcess && base && abs.startsWith(`${new URL(base).origin}/`)) {
      const u = new URL(abs);
      const res = await this.inProcess.app.inject({ method, url: u.pathname + u.search, headers, ...(payload !== undefined ? { payload } : {}) });
      const loc = res.headers.location;
      visit = { status: res.statusCode, url: abs, headers: res.headers as Visit['headers'], body: res.body, location: typeof loc === 'string' ? new URL(loc, abs).href : null };
    } else {
      const res = await fetch(abs, { method, headers, body: payload, redirect: 'manual', signal: AbortSignal.timeout(30_000) });
      const h: Visit['headers'] = Object.fromEntries(res.headers);
      h['set-cookie'] = res.headers.getSetCookie();
      const loc = res.headers.get('location');
      visit = { status: res.status, url: abs, headers: h, body: await res.text(), location: loc ? new URL(loc, abs).href : null };
    }
    this.keep(visit.headers['set-cookie']);
    return visit;
  }

  open(url: string): Promise<Visit> {
    return this.request('GET', url);
  }

  post(url: string, form: Record<string, string>): Promise<Visit> {
    return this.request('POST', url, form);
  }
}

/** A hub to sign in at: in process (a TestHub) or a process at `url`. */
export type HubAt = { t: InProcessHub & { app: FastifyInstance } } | { url: string };

async function hubCall(at: HubAt, method: 'GET' | 'POST', pathAndQuery: string, access?: string): Promise<{ status: number; body: any; text: string }> {
  if ('t' in at) {
    const res = await at.t.app.inject({ method, url: pathAndQuery, headers: access ? { authorization: bearer(access) } : {} });
    let body: any = null;
    try { body = res.json(); } catch { /* not JSON */ }
    return { status: res.statusCode, body, text: res.body };
  }
  const res = await fetch(`${at.url}${pathAndQuery}`, { method, headers: access ? { authorization: bearer(access) } : {}, signal: AbortSignal.timeout(30_000) });
  const text = await res.text();
  let body: any = null;
  try { body = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, body, text };
}

/** POST /auth/login: the state and the start page the popup would open. */
export async function startDamLogin(at: HubAt, access: string, provider: string, serverUrl?: string): Promise<{ state: string; redirect_uri: string }> {
  const q = `provider=${encodeURIComponent(provider)}&polling=true${serverUrl ? `&serverUrl=${encodeURIComponent(serverUrl)}` : ''}`;
  const res = await hubCall(at, 'POST', `/api/v1/auth/login?${q}`, access);
  assert.equal(res.status, 200, res.text);
  return res.body;
}

/** GET /auth/login once. */
export async function pollDamLogin(at: HubAt, state: string): Promise<{ access_token?: string; refresh_token?: string; error?: string; userHash?: string; expires_in?: number }> {
  const res = await hubCall(at, 'GET', `/api/v1/auth/login?state=${encodeURIComponent(state)}&polling=true`);
  assert.equal(res.status, 200, res.text);
  return res.body;
}

/** The hidden state and the action of the page's form. */
export function formOf(page: Visit): { action: string; state: string } {
  const action = /<form method="post" action="([^"]+)"/.exec(page.body)?.[1];
  const state = /<input type="hidden" name="state" value="([^"]*)"/.exec(page.body)?.[1];
  assert.ok(action && state !== undefined, `a sign-in form on ${page.url}: ${page.body.slice(0, 300)}`);
  return { action: new URL(action.replace(/&amp;/g, '&'), page.url).href, state: state.replace(/&amp;/g, '&') };
}

/**
 * An OAuth connector's confirm page and its Continue, in `browser`: the vendor's authorization URL
 * the hub sends the browser on to.
 */
export async function continueToVendor(browser: TestBrowser, redirectUri: string): Promise<string> {
  const page = await browser.open(redirectUri);
  assert.equal(page.status, 200, page.body);
  const form = formOf(page);
  const next = await browser.post(form.action, { state: form.state, continue: '1' });
  assert.equal(next.status, 303, next.body);
  assert.ok(next.location, 'Continue redirects to the vendor');
  return next.location;
}

/** The vendor's consent (a replay that consents at once): where it sends the browser back to. */
export async function vendorConsent(browser: TestBrowser, authorizeUrl: string): Promise<string> {
  const consent = await browser.open(authorizeUrl);
  assert.ok(consent.location, `the vendor answered ${consent.status} without a redirect: ${consent.body.slice(0, 300)}`);
  return consent.location;
}

/**
 * A whole OAuth sign-in as a browser does it: POST /auth/login, the confirm page, Continue, the
 * vendor's consent, the callback with the cookie, the poll. Returns the tokens and the hops.
 */
export async function oauthBrowserSignIn(at: HubAt & { t?: InProcessHub }, providerId: string, access: string, opts: { serverUrl?: string; browser?: TestBrowser } = {}) {
  const browser = opts.browser ?? new TestBrowser('t' in at ? at.t : undefined);
  const { state, redirect_uri } = await startDamLogin(at, access, providerId, opts.serverUrl);
  const authorize = await continueToVendor(browser, redirect_uri);
  const back = await vendorConsent(browser, authorize);
  assert.equal(new URL(back).pathname, `/api/v1/auth/callback/${providerId}`);
  const cb = await browser.open(back);
  assert.equal(cb.status, 200, cb.body);
  const tokens = await pollDamLogin(at, state);
  assert.equal(typeof tokens.access_token, 'string', JSON.stringify(tokens));
  return { tokens: tokens as { access_token: string; refresh_token?: string; userHash: string; expires_in: number }, state, redirect_uri, authorize: new URL(authorize), callback: cb, browser };
}

/**
 * A form connector's sign-in as a browser does it: open the start page (the form), then submit
 * `fields` with the state; returns the submission's page and the poll's answer.
 */
export async function formBrowserSignIn(browser: TestBrowser, redirectUri: string, fields: Record<string, string>): Promise<{ form: Visit; submit: Visit; state: string }> {
  const form = await browser.open(redirectUri);
  assert.equal(form.status, 200, form.body);
  const f = formOf(form);
  const submit = await browser.post(f.action, { state: f.state, ...fields });
  return { form, submit, state: f.state };
}
