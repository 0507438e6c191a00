/**
 * A generic sign-in form for connectors that sign in with typed credentials (server URL, user,
 * password or key) rather than a redirect to the DAM. It drives the hub's DAM login state machine
 * (src/content/dam-login.ts): GET shows the form for a pending state, POST verifies (against the
 * upstream, or the library's accounts), then completes, or after five failures fails, the state.
 * Cancel settles it as cancelled. Secrets never leave in an answer or a log line. Every attempt is
 * reserved with the hub's sign-in throttle (src/auth/signin-throttle.ts) before the upstream sees it.
 *
 * The form is the login's start page (issue 28): above its fields it says which application and
 * which hub user will get access to which system (signin-pages.ts), and its GET sets the cookie that
 * binds the login to this browser (src/auth/login-browser.ts). Submitting the form is the
 * "Continue"; a POST (sign-in or Cancel) from a browser without the cookie is refused before
 * anything is counted, checked or settled.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { throttledText } from '../../auth/signin-throttle.js';
import { isHubError } from '../../errors.js';
import { esc, sendHtml, SIGNIN_CSS } from '../../http/html.js';
import type { LoginDescription, LoginHost } from '../contract.js';
import { messagePage, signInPage, statementHtml, wrongBrowser } from './signin-pages.js';
import type { UpstreamClient } from './http.js';

export interface FormField {
  name: string;
  label: string;
  type?: 'text' | 'password' | 'url';
  required?: boolean;
  placeholder?: string;
  /** Filled from the login's serverUrl (POST /auth/login?serverUrl=...). */
  fromServerUrl?: boolean;
  /** The browser's autocomplete token (e.g. "username"); password fields get "current-password". */
  autocomplete?: string;
}

export interface SignInResult<C> {
  credentials: C;
  /** Stable id of the DAM account (hashed into userHash). */
  accountId: string;
  /** Shown on the success page. */
  displayName: string;
}

export interface FormSignIn<C> {
  title: string;
  fields: FormField[];
  /** Checks the values (against the upstream, or the provider's own accounts); a HubError's message is shown on the form. */
  verify(values: Record<string, string>, http: UpstreamClient): Promise<SignInResult<C>>;
  /** A plain-text note above the form (the demo account's credentials in demo mode). */
  hint?: string;
  /** What the form says when verify answers integration-auth-failed or -forbidden. */
  rejectedText?: string;
  /** The success page's sentence before "You can close this window…"; default "You are signed in as {displayName}." */
  signedInText?(result: SignInResult<C>): string;
}

export function signInPath(providerId: string): string {
  return `/auth/${providerId}/signin`;
}

/** The form as mounted: `verify` already holds whatever it checks against (the connector's upstream client). */
export type MountedForm<C> = Omit<FormSignIn<C>, 'verify'> & { verify(values: Record<string, string>): Promise<SignInResult<C>> };

/** Mounts GET/POST /auth/{provider}/signin and the form's stylesheet. */
export function formSignInRoutes<C extends Record<string, unknown>>(app: FastifyInstance, host: LoginHost, providerId: string, form: MountedForm<C>): void {
  const action = `/api/v1${signInPath(providerId)}`;
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 16384 }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });

  const firstEmpty = (values: Record<string, string>) => form.fields.findIndex((f) => !values[f.name]);
  const render = (d: LoginDescription, state: string, error: string | null, values: Record<string, string>) => signInPage(providerId, form.title, `
    <h1>${esc(form.title)}</h1>
    ${error ? `<p class="error" role="alert">${esc(error)}</p>` : ''}
    ${statementHtml(d, 'Sign in')}
    ${form.hint ? `<p class="hint">${esc(form.hint)}</p>` : ''}
    <form method="post" action="${action}">
      <input type="hidden" name="state" value="${esc(state)}">
      ${form.fields.map((f, i) => `<label for="${esc(f.name)}">${esc(f.label)}</label><input id="${esc(f.name)}" name="${esc(f.name)}" type="${f.type ?? 'text'}"${f.required === false ? '' : ' required'}${f.placeholder ? ` placeholder="${esc(f.placeholder)}"` : ''}${f.type === 'password' ? ' autocomplete="current-password"' : `${f.autocomplete ? ` autocomplete="${esc(f.autocomplete)}"` : ''} value="${esc(values[f.name] ?? '')}"`}${i === firstEmpty(values) ? ' autofocus' : ''}>`).join('\n      ')}
      <div class="row"><button type="submit">Sign in</button><button type="submit" name="cancel" value="1" formnovalidate>Cancel</button></div>
    </form>`);
  const message = (reply: FastifyReply, status: number, title: string, text: string, error = false) => messagePage(reply, providerId, status, title, text, error);
  /** The page again, with an error above the fields (the login's names read again: it is still pending). */
  const again = async (reply: FastifyReply, status: number, state: string, error: string, values: Record<string, string>) => {
    const d = await host.describe(state);
    if ('error' in d) return message(reply, 400, 'Sign-in', d.error, true);
    return sendHtml(reply, status, render(d, state, error, values));
  };

  app.get(`/connectors/${providerId}/signin.css`, { config: { auth: 'none' }, schema: { hide: true } }, async (_req, reply) =>
    reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=86400').send(SIGNIN_CSS));

  app.get(signInPath(providerId), { config: { auth: 'none' }, schema: { hide: true } }, async (req, reply) => {
    const state = String((req.query as { state?: string }).state ?? '');
    const d = await host.describe(state);
    if ('error' in d) return message(reply, 400, 'Sign-in', d.error, true);
    if (d.providerId !== providerId) return message(reply, 400, 'Sign-in', 'This sign-in link belongs to another system.', true);
    const values: Record<string, string> = {};
    for (const f of form.fields) if (f.fromServerUrl && d.serverUrl) values[f.name] = d.serverUrl;
    // The browser that sees this page is the one whose POST will count.
    reply.header('set-cookie', host.browser.setCookie(state));
    return sendHtml(reply, 200, render(d, state, null, values));
  });

  app.post(signInPath(providerId), { config: { auth: 'none' }, schema: { hide: true } }, async (req, reply) => {
    const b = (req.body ?? {}) as Record<string, unknown>;
    const state = typeof b.state === 'string' ? b.state : '';
    const pending = await host.pending(state);
    if ('error' in pending) return message(reply, 400, 'Sign-in', pending.error, true);
    if (pending.providerId !== providerId) return message(reply, 400, 'Sign-in', 'This sign-in link belongs to another system.', true);
    // Before anything is counted, checked or settled: a browser that never saw this login's page
    // (a forwarded link, a cross-site POST) changes nothing.
    if (!host.browser.holds(state, req.headers.cookie)) return wrongBrowser(reply, providerId);
    if (b.cancel) {
      await host.cancel(state);
      reply.header('set-cookie', host.browser.clearCookie(state));
      return message(reply, 200, 'Sign-in cancelled', 'You can close this window.');
    }
    const values: Record<string, string> = {};
    for (const f of form.fields) values[f.name] = typeof b[f.name] === 'string' ? (f.type === 'password' ? (b[f.name] as string) : (b[f.name] as string).trim()) : '';
    const missing = form.fields.find((f) => f.required !== false && !values[f.name]);
    const shown = Object.fromEntries(form.fields.filter((f) => f.type !== 'password').map((f) => [f.name, values[f.name]!]));
    if (missing) return again(reply, 400, state, `${missing.label} is required.`, shown);
    // The account is what the form names besides the secret (server and user, endpoint and key id).
    const account = form.fields.filter((f) => f.type !== 'password').map((f) => values[f.name]).join('\0');
    // Reserved before the upstream check, atomically: concurrent guesses beyond the budget never
    // reach the upstream, and a refused one is answered the same whatever the secret.
    const attempt = await host.reserveSignIn({ state, providerId, userId: pending.userId, account });
    if (!attempt.allowed) {
      reply.header('retry-after', String(attempt.retryAfterSec));
      return again(reply, 429, state, throttledText(attempt.retryAfterSec), shown);
    }
    // A concurrent attempt may have ended the state meanwhile; then the answer is the settled
    // state's, for the right secret as for a wrong one.
    const settled = async () => {
      const current = await host.pending(state);
      return 'error' in current ? message(reply, 400, 'Sign-in', current.error, true) : null;
    };
    let result: SignInResult<C>;
    try {
      result = await form.verify(values);
    } catch (e) {
      if (!isHubError(e)) throw e;
      // The form tells the person a plain sentence; the cause (ECONNREFUSED, a 500, an answer that
      // is not WebDAV) goes to the log, for the operator and for `damhub connectors check`'s report.
      const rejected = e.code === 'integration-auth-failed' || e.code === 'integration-forbidden';
      req.log[rejected ? 'info' : 'warn']({ provider: providerId, code: e.code, details: e.details }, 'sign-in check failed');
      if (attempt.lastForState) {
        await host.fail(state, 'too many failed sign-in attempts');
        return message(reply, 401, 'Sign-in failed', 'Too many failed attempts. Start again from the application.', true);
      }
      const answer = await settled();
      if (answer) return answer;
      const text = e.code === 'integration-auth-failed' || e.code === 'integration-forbidden'
        ? (form.rejectedText ?? 'The server did not accept these credentials.')
        : `The server could not be used: ${e.message}`;
      return again(reply, e.code === 'integration-auth-failed' ? 401 : 400, state, text, shown);
    }
    try {
      await host.complete(state, { credentials: result.credentials, accountId: result.accountId });
    } catch (e) {
      const answer = await settled();
      if (answer) return answer;
      throw e;
    }
    await attempt.succeeded();
    reply.header('set-cookie', host.browser.clearCookie(state));
    const signedIn = form.signedInText?.(result) ?? `You are signed in as ${result.displayName}.`;
    return message(reply, 200, 'Signed in', `${signedIn} You can close this window and return to the application.`);
  });
}
