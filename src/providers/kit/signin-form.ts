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
 *
 * Its words are keys of the sign-in catalogue (signin-messages.ts): the page speaks the login's
 * language (issue 29), and a connector's title, labels and messages are in all six.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isHubError } from '../../errors.js';
import { esc, sendHtml, SIGNIN_CSS } from '../../http/html.js';
import type { LoginDescription, LoginHost, LoginUnusable } from '../contract.js';
import { ENGLISH, type SignInKey, type SignInText, type SignInWords } from './signin-messages.js';
import { buttonRow, messagePage, pageWords, signInPage, statementHtml, unusablePage, wrongBrowser } from './signin-pages.js';
import type { UpstreamClient } from './http.js';

export interface FormField {
  name: string;
  /** The field's label: a key of the sign-in catalogue (signin-messages.ts). */
  label: SignInKey;
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
  /** The page's title and heading (a catalogue key, as every word below). */
  title: SignInKey;
  fields: FormField[];
  /**
   * Checks the values (against the upstream, or the provider's own accounts). A FormValueError's
   * text is shown on the form in the page's language; another HubError's message after "The
   * server could not be used:".
   */
  verify(values: Record<string, string>, http: UpstreamClient): Promise<SignInResult<C>>;
  /** A plain-text note above the form (the demo account's credentials in demo mode). */
  hint?: SignInText;
  /** What the form says when verify answers integration-auth-failed or -forbidden. */
  rejectedText?: SignInKey;
  /** The success page's sentence before "You can close this window…"; default "You are signed in as {displayName}." */
  signedInText?(result: SignInResult<C>): SignInText;
}

/**
 * A value the form refuses (a server URL that is not one, a cloud name with characters it cannot
 * have): its text, a catalogue key, is shown above the fields in the page's language. It counts
 * as a failed attempt like any other. Its message is the English text, for logs.
 */
export class FormValueError extends Error {
  constructor(readonly text: SignInKey) {
    super(ENGLISH.t(text));
    this.name = 'FormValueError';
  }
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
  const render = (d: LoginDescription, w: SignInWords, state: string, error: string | null, values: Record<string, string>) => signInPage(providerId, w, w.t(form.title), `
    <h1>${esc(w.t(form.title))}</h1>
    ${error ? `<p class="error" role="alert">${esc(error)}</p>` : ''}
    ${statementHtml(d, w, 'signIn')}
    ${form.hint ? `<p class="hint">${esc(w.t(form.hint))}</p>` : ''}
    <form method="post" action="${action}">
      <input type="hidden" name="state" value="${esc(state)}">
      ${form.fields.map((f, i) => `<label for="${esc(f.name)}">${esc(w.t(f.label))}</label><input id="${esc(f.name)}" name="${esc(f.name)}" type="${f.type ?? 'text'}"${f.required === false ? '' : ' required'}${f.placeholder ? ` placeholder="${esc(f.placeholder)}"` : ''}${f.type === 'password' ? ' autocomplete="current-password"' : `${f.autocomplete ? ` autocomplete="${esc(f.autocomplete)}"` : ''} value="${esc(values[f.name] ?? '')}"`}${i === firstEmpty(values) ? ' autofocus' : ''}>`).join('\n      ')}
      ${buttonRow(w, { label: 'signIn' })}
    </form>`);
  const message = (reply: FastifyReply, w: SignInWords, status: number, title: string, text: string, error = false) => messagePage(reply, providerId, w, status, title, text, error);
  /** A login that cannot be used, said in the login's language when it has one, else the browser's. */
  const unusable = (req: FastifyRequest, reply: FastifyReply, u: LoginUnusable) => unusablePage(reply, providerId, pageWords(req), u.problem);
  /** The page again, with an error above the fields (the login's names read again: it is still pending). */
  const again = async (req: FastifyRequest, reply: FastifyReply, w: SignInWords, status: number, state: string, error: string, values: Record<string, string>) => {
    const d = await host.describe(state);
    if ('error' in d) return unusable(req, reply, d);
    return sendHtml(reply, status, render(d, w, state, error, values));
  };

  app.get(`/connectors/${providerId}/signin.css`, { config: { auth: 'none' }, schema: { hide: true } }, async (_req, reply) =>
    reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=86400').send(SIGNIN_CSS));

  app.get(signInPath(providerId), { config: { auth: 'none' }, schema: { hide: true } }, async (req, reply) => {
    const state = String((req.query as { state?: string }).state ?? '');
    const d = await host.describe(state);
    if ('error' in d) return unusable(req, reply, d);
    const w = pageWords(req, d.uiLocale);
    if (d.providerId !== providerId) return message(reply, w, 400, w.t('signInTitle'), w.t('otherSystem'), true);
    const values: Record<string, string> = {};
    for (const f of form.fields) if (f.fromServerUrl && d.serverUrl) values[f.name] = d.serverUrl;
    // The browser that sees this page is the one whose POST will count.
    reply.header('set-cookie', host.browser.setCookie(state));
    return sendHtml(reply, 200, render(d, w, state, null, values));
  });

  app.post(signInPath(providerId), { config: { auth: 'none' }, schema: { hide: true } }, async (req, reply) => {
    const b = (req.body ?? {}) as Record<string, unknown>;
    const state = typeof b.state === 'string' ? b.state : '';
    const pending = await host.pending(state);
    if ('error' in pending) return unusable(req, reply, pending);
    // The login's language, stored with it: the answer to the POST speaks what the form spoke.
    const w = pageWords(req, pending.uiLocale);
    if (pending.providerId !== providerId) return message(reply, w, 400, w.t('signInTitle'), w.t('otherSystem'), true);
    // Before anything is counted, checked or settled: a browser that never saw this login's page
    // (a forwarded link, a cross-site POST) changes nothing.
    if (!host.browser.holds(state, req.headers.cookie)) return wrongBrowser(reply, providerId, w);
    if (b.cancel) {
      await host.cancel(state);
      reply.header('set-cookie', host.browser.clearCookie(state));
      return message(reply, w, 200, w.t('cancelledTitle'), w.t('closeWindow'));
    }
    const values: Record<string, string> = {};
    for (const f of form.fields) values[f.name] = typeof b[f.name] === 'string' ? (f.type === 'password' ? (b[f.name] as string) : (b[f.name] as string).trim()) : '';
    const missing = form.fields.find((f) => f.required !== false && !values[f.name]);
    const shown = Object.fromEntries(form.fields.filter((f) => f.type !== 'password').map((f) => [f.name, values[f.name]!]));
    if (missing) return again(req, reply, w, 400, state, w.t('required', { f: w.t(missing.label) }), shown);
    // The account is what the form names besides the secret (server and user, endpoint and key id).
    const account = form.fields.filter((f) => f.type !== 'password').map((f) => values[f.name]).join('\0');
    // Reserved before the upstream check, atomically: concurrent guesses beyond the budget never
    // reach the upstream, and a refused one is answered the same whatever the secret.
    const attempt = await host.reserveSignIn({ state, providerId, userId: pending.userId, account });
    if (!attempt.allowed) {
      reply.header('retry-after', String(attempt.retryAfterSec));
      return again(req, reply, w, 429, state, w.t('throttled', { w: w.wait(attempt.retryAfterSec) }), shown);
    }
    // A concurrent attempt may have ended the state meanwhile; then the answer is the settled
    // state's, for the right secret as for a wrong one.
    const settled = async () => {
      const current = await host.pending(state);
      return 'error' in current ? unusablePage(reply, providerId, w, current.problem) : null;
    };
    let result: SignInResult<C>;
    try {
      result = await form.verify(values);
    } catch (e) {
      if (!isHubError(e) && !(e instanceof FormValueError)) throw e;
      // The form tells the person a plain sentence; the cause (ECONNREFUSED, a 500, an answer that
      // is not WebDAV) goes to the log, for the operator and for `damhub connectors check`'s report.
      if (!(e instanceof FormValueError)) {
        const refused = e.code === 'integration-auth-failed' || e.code === 'integration-forbidden';
        req.log[refused ? 'info' : 'warn']({ provider: providerId, code: e.code, details: e.details }, 'sign-in check failed');
      }
      if (attempt.lastForState) {
        await host.fail(state, 'too many failed sign-in attempts');
        return message(reply, w, 401, w.t('failedTitle'), w.t('tooManyFailed'), true);
      }
      const answer = await settled();
      if (answer) return answer;
      const rejected = !(e instanceof FormValueError) && (e.code === 'integration-auth-failed' || e.code === 'integration-forbidden');
      // An upstream's own message (the connector's errorMessage) stays as the upstream said it.
      const text = e instanceof FormValueError ? w.t(e.text)
        : rejected ? w.t(form.rejectedText ?? 'rejected')
          : w.t('serverUnusable', { m: e.message });
      return again(req, reply, w, !(e instanceof FormValueError) && e.code === 'integration-auth-failed' ? 401 : 400, state, text, shown);
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
    const signedIn = w.t(form.signedInText?.(result) ?? ['signedInAs', { n: result.displayName }]);
    return message(reply, w, 200, w.t('signedInTitle'), `${signedIn} ${w.t('returnToApp')}`);
  });
}
