/**
 * What every sign-in start page of the hub says before anything else, and the page a browser
 * without the login's cookie gets (issue 28, item 2; src/auth/login-browser.ts). The OAuth confirm
 * page (src/providers/oauth/login.ts) and the form connectors' form (signin-form.ts) share them, so
 * the person at the browser reads the same statement whichever system they connect.
 */
import type { FastifyReply } from 'fastify';
import { esc, htmlPage, sendHtml } from '../../http/html.js';
import type { LoginDescription } from '../contract.js';

/** The stylesheet is its own file: the hub's CSP (style-src 'self') refuses inline styles. */
export function signInPage(providerId: string, title: string, body: string): string {
  return htmlPage(title, body, `/api/v1/connectors/${encodeURIComponent(providerId)}/signin.css`);
}

/** A page of one heading and one paragraph. */
export function messagePage(reply: FastifyReply, providerId: string, status: number, title: string, text: string, error = false): FastifyReply {
  return sendHtml(reply, status, signInPage(providerId, title, `<h1>${esc(title)}</h1><p${error ? ' class="error" role="alert"' : ''}>${esc(text)}</p>`));
}

/**
 * Who receives access to what: RFC 8628 section 5.4's mitigation for a flow that one person starts
 * and another may finish. Every name is escaped (a partner may register any name).
 */
export function statementHtml(d: LoginDescription, action: 'Continue' | 'Sign in'): string {
  const system = d.serverUrl ? `${d.providerName} (${d.serverUrl})` : d.providerName;
  return `<section class="statement" aria-labelledby="who">
      <h2 id="who">Who will get access</h2>
      <dl>
        <dt>Application</dt><dd>${esc(d.partnerName)}</dd>
        <dt>Hub user</dt><dd>${esc(d.userEmail)}</dd>
        <dt>System</dt><dd>${esc(system)}</dd>
      </dl>
      <p>If you ${action === 'Continue' ? 'continue' : 'sign in'}, the application ${esc(d.partnerName)} can read, for its user ${esc(d.userEmail)}, what the account you sign in with can see in ${esc(system)}.</p>
      <p class="warning">${action} only if you started this sign-in yourself, in ${esc(d.partnerName)}. If someone sent you this link, choose Cancel.</p>
    </section>`;
}

export const WRONG_BROWSER_TITLE = 'Open this sign-in where you started it';
export const WRONG_BROWSER_TEXT = 'This browser did not open this sign-in, so nothing was done. Open the link on the device and in the browser where you started the sign-in, or start again from the application. If someone sent you this link, do not use it.';

/** The answer to a step of a login from a browser without its cookie: nothing was consumed or settled. */
export function wrongBrowser(reply: FastifyReply, providerId: string): FastifyReply {
  return messagePage(reply, providerId, 403, WRONG_BROWSER_TITLE, WRONG_BROWSER_TEXT, true);
}
