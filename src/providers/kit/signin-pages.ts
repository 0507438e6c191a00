/**
 * What every sign-in start page of the hub says before anything else, and the page a browser
 * without the login's cookie gets (issue 28, item 2; src/auth/login-browser.ts). The OAuth confirm
 * page (src/providers/oauth/login.ts) and the form connectors' form (signin-form.ts) share them, so
 * the person at the browser reads the same statement whichever system they connect.
 *
 * Every page speaks the login's language (issue 29; signin-messages.ts): `pageWords` picks it from
 * the login's stored uiLocale, else the request's Accept-Language, and `<html lang>` says it.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { esc, htmlPage, sendHtml } from '../../http/html.js';
import type { LoginDescription, LoginProblem } from '../contract.js';
import { signInLocale, signInWords, type SignInKey, type SignInWords } from './signin-messages.js';

/** The words of a page answering `req`, in the login's language when it has one (`uiLocale`). */
export function pageWords(req: FastifyRequest, uiLocale?: string | null): SignInWords {
  return signInWords(signInLocale(uiLocale, req.headers['accept-language']));
}

const PROBLEM_TEXT: Record<LoginProblem, SignInKey> = { invalid: 'problemInvalid', finished: 'problemFinished', expired: 'problemExpired', gone: 'problemGone' };

/** Why a login's page cannot be used, in the page's language. */
export function problemText(w: SignInWords, problem: LoginProblem): string {
  return w.t(PROBLEM_TEXT[problem]);
}

/** The stylesheet is its own file: the hub's CSP (style-src 'self') refuses inline styles. */
export function signInPage(providerId: string, w: SignInWords, title: string, body: string): string {
  return htmlPage(title, body, `/api/v1/connectors/${encodeURIComponent(providerId)}/signin.css`, w.locale);
}

/** A page of one heading and one paragraph. */
export function messagePage(reply: FastifyReply, providerId: string, w: SignInWords, status: number, title: string, text: string, error = false): FastifyReply {
  return sendHtml(reply, status, signInPage(providerId, w, title, `<h1>${esc(title)}</h1><p${error ? ' class="error" role="alert"' : ''}>${esc(text)}</p>`));
}

/** The page for a login that cannot be used (unknown, settled, expired, or its user gone). */
export function unusablePage(reply: FastifyReply, providerId: string, w: SignInWords, problem: LoginProblem): FastifyReply {
  return messagePage(reply, providerId, w, 400, w.t('signInTitle'), problemText(w, problem), true);
}

/**
 * Who receives access to what: RFC 8628 section 5.4's mitigation for a flow that one person starts
 * and another may finish. Every name is escaped (a partner may register any name).
 */
export function statementHtml(d: LoginDescription, w: SignInWords, action: 'continue' | 'signIn'): string {
  const system = d.serverUrl ? `${d.providerName} (${d.serverUrl})` : d.providerName;
  const names = { a: d.partnerName, u: d.userEmail, s: system };
  return `<section class="statement" aria-labelledby="who">
      <h2 id="who">${esc(w.t('whoGetsAccess'))}</h2>
      <dl>
        <dt>${esc(w.t('application'))}</dt><dd>${esc(d.partnerName)}</dd>
        <dt>${esc(w.t('hubUser'))}</dt><dd>${esc(d.userEmail)}</dd>
        <dt>${esc(w.t('system'))}</dt><dd>${esc(system)}</dd>
      </dl>
      <p>${esc(w.t(action === 'continue' ? 'statementContinue' : 'statementSignIn', names))}</p>
      <p class="warning">${esc(w.t(action === 'continue' ? 'warningContinue' : 'warningSignIn', names))}</p>
    </section>`;
}

/** The answer to a step of a login from a browser without its cookie: nothing was consumed or settled. */
export function wrongBrowser(reply: FastifyReply, providerId: string, w: SignInWords): FastifyReply {
  return messagePage(reply, providerId, w, 403, w.t('wrongBrowserTitle'), w.t('wrongBrowserText'), true);
}

/** The row of a page's two buttons: the step forward looks primary, Cancel does not (issue 29). */
export function buttonRow(w: SignInWords, forward: { label: SignInKey; name?: string }): string {
  const named = forward.name ? ` name="${esc(forward.name)}" value="1"` : '';
  return `<div class="row"><button type="submit" class="primary"${named}>${esc(w.t(forward.label))}</button><button type="submit" name="cancel" value="1" formnovalidate>${esc(w.t('cancel'))}</button></div>`;
}
