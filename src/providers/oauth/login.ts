/**
 * The hub side of an OAuth sign-in. The popup (or the link connect_provider hands out) opens the
 * hub's confirm page, `/api/v1/auth/{provider}/connect?state=S`, never the vendor directly
 * (issue 28): it names the application (the partner's registered name), the hub user (the email of
 * the exchange) and the system that will be connected, and sets the cookie binding the login to this
 * browser (src/auth/login-browser.ts). Only its "Continue" (a POST on the hub) sends the browser on
 * to the DAM's authorization endpoint; "Cancel" ends the login as cancelled. The DAM sends the
 * browser back to `/api/v1/auth/callback/{provider}`, which settles the hub's login state.
 *
 * The callback's rules: a browser without the login's cookie changes nothing (no code is redeemed,
 * nothing is settled or counted), so a consent link passed on to someone else cannot finish the
 * login. From the right browser, `access_denied` ends the login as declined; any other failure
 * (a code the DAM refuses, an error answer) counts one attempt against the state's budget
 * (signInStateAttempts) and leaves it pending, so the user can try again from the confirm page,
 * until the last attempt ends it. A connector spreads `oauthLogin(flow)` into its Provider.
 *
 * Every page speaks the login's language (the uiLocale stored with its state; issue 29), the
 * callback's too: the vendor's redirect carries only the state, and the state carries the language.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import * as oauth from 'oauth4webapi';
import { isHubError } from '../../errors.js';
import { esc, sendHtml, SIGNIN_CSS } from '../../http/html.js';
import type { ProviderCredentials } from '../../auth/provider-tokens.js';
import type { LoginHost, LoginStart, LoginUnusable } from '../contract.js';
import type { UpstreamClient } from '../kit/http.js';
import type { SignInWords } from '../kit/signin-messages.js';
import { buttonRow, messagePage, pageWords, problemText, signInPage, statementHtml, unusablePage, wrongBrowser } from '../kit/signin-pages.js';
import type { OAuthFlow } from './flow.js';

export function callbackPath(providerId: string): string {
  return `/api/v1/auth/callback/${encodeURIComponent(providerId)}`;
}

/** The confirm page every OAuth sign-in starts at (POST /auth/login's redirect_uri). */
export function connectPath(providerId: string): string {
  return `/api/v1/auth/${encodeURIComponent(providerId)}/connect`;
}

export interface OAuthLogin {
  beginLogin(start: LoginStart, host: LoginHost, http?: UpstreamClient): Promise<{ redirectUri: string }>;
  /** `http`: the connector's upstream client, lent to the account lookup after the code exchange. */
  routes(app: FastifyInstance, host: LoginHost, http?: UpstreamClient): void;
  refresh(cred: ProviderCredentials, http?: UpstreamClient): Promise<ProviderCredentials>;
}

export function oauthLogin(flow: OAuthFlow): OAuthLogin {
  const { providerId, name } = flow.spec;
  const redirectUri = (host: LoginHost) => `${host.publicUrl}${callbackPath(providerId)}`;
  const confirmUrl = (host: LoginHost, state: string) => `${host.publicUrl}${connectPath(providerId)}?state=${encodeURIComponent(state)}`;
  return {
    async beginLogin({ state, serverUrl }, host, http) {
      // Computed and dropped: a tenant whose authorization server cannot be found is refused at
      // the start, before anyone is sent anywhere (its discovery stays cached for the Continue).
      await flow.authorizationUrl(state, serverUrl, redirectUri(host), http);
      return { redirectUri: confirmUrl(host, state) };
    },

    routes(app, host, http) {
      const unusable = (req: FastifyRequest, reply: FastifyReply, u: LoginUnusable) => unusablePage(reply, providerId, pageWords(req), u.problem);
      const otherSystem = (reply: FastifyReply, w: SignInWords) => messagePage(reply, providerId, w, 400, w.t('signInTitle'), w.t('otherSystem'), true);
      const notPrepared = (reply: FastifyReply, w: SignInWords) => messagePage(reply, providerId, w, 502, w.t('signInTitle'), w.t('prepareFailed', { p: name }), true);
      app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 4096 }, (_req, body, done) => {
        done(null, Object.fromEntries(new URLSearchParams(body as string)));
      });
      app.get(`/connectors/${providerId}/signin.css`, { config: { auth: 'none' }, schema: { hide: true } }, async (_req, reply) =>
        reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=86400').send(SIGNIN_CSS));

      app.get(`/auth/${providerId}/connect`, { config: { auth: 'none' }, schema: { hide: true } }, async (req, reply) => {
        const state = String((req.query as { state?: unknown }).state ?? '');
        const d = await host.describe(state);
        if ('error' in d) return unusable(req, reply, d);
        const w = pageWords(req, d.uiLocale);
        if (d.providerId !== providerId) return otherSystem(reply, w);
        let vendor: URL;
        try {
          vendor = new URL(await flow.authorizationUrl(state, d.serverUrl, redirectUri(host), http));
        } catch {
          return notPrepared(reply, w);
        }
        const title = w.t('connectTitle', { p: d.providerName });
        reply.header('set-cookie', host.browser.setCookie(state));
        // The Continue ends at the vendor: its origin is allowed as a form target (form-action is
        // checked on the redirect a submission follows).
        return sendHtml(reply, 200, signInPage(providerId, w, title, `
    <h1>${esc(title)}</h1>
    ${statementHtml(d, w, 'continue')}
    <p>${esc(w.t('continueTakesYou', { p: name }))}</p>
    <form method="post" action="${connectPath(providerId)}">
      <input type="hidden" name="state" value="${esc(state)}">
      ${buttonRow(w, { label: 'continue', name: 'continue' })}
    </form>`), [vendor.origin]);
      });

      app.post(`/auth/${providerId}/connect`, { config: { auth: 'none' }, schema: { hide: true } }, async (req, reply) => {
        const b = (req.body ?? {}) as Record<string, unknown>;
        const state = typeof b.state === 'string' ? b.state : '';
        const pending = await host.pending(state);
        if ('error' in pending) return unusable(req, reply, pending);
        const w = pageWords(req, pending.uiLocale);
        if (pending.providerId !== providerId) return otherSystem(reply, w);
        // Only the browser that was shown the confirm page may go on (a cross-site POST carries no Lax cookie).
        if (!host.browser.holds(state, req.headers.cookie)) return wrongBrowser(reply, providerId, w);
        if (b.cancel) {
          await host.cancel(state);
          reply.header('set-cookie', host.browser.clearCookie(state));
          return messagePage(reply, providerId, w, 200, w.t('cancelledTitle'), w.t('nothingConnected'));
        }
        let vendor: string;
        try {
          vendor = await flow.authorizationUrl(state, pending.serverUrl, redirectUri(host), http);
        } catch {
          return notPrepared(reply, w);
        }
        return reply.code(303).header('location', vendor).header('cache-control', 'no-store').send();
      });

      app.get(`/auth/callback/${providerId}`, { config: { auth: 'none' }, schema: { hide: true } }, async (req, reply) => {
        const raw = req.url.includes('?') ? req.url.slice(req.url.indexOf('?') + 1) : '';
        const params = new URLSearchParams(raw);
        const state = params.get('state') ?? '';
        const pending = state ? await host.pending(state) : null;
        // A state that is not a pending login of this provider settles nothing: it may be a forged or
        // replayed callback, and the login it names (if any) is not the caller's to end.
        if (!pending || 'error' in pending) {
          const w = pageWords(req);
          return messagePage(reply, providerId, w, 400, w.t('signInTitle'), problemText(w, pending?.problem ?? 'invalid'));
        }
        const w = pageWords(req, pending.uiLocale);
        if (pending.providerId !== providerId) return messagePage(reply, providerId, w, 400, w.t('signInTitle'), w.t('otherSystem'));
        // Nor does a browser that did not start it: no code is redeemed, nothing is counted.
        if (!host.browser.holds(state, req.headers.cookie)) return wrongBrowser(reply, providerId, w);
        /** A failure of the right browser: one attempt of the state's budget, the login kept pending until the last. */
        const failed = async (error: string, text: string) => {
          const title = w.t('failedTitle');
          const { ended } = await host.failedAttempt(state, error);
          if (ended) {
            reply.header('set-cookie', host.browser.clearCookie(state));
            return messagePage(reply, providerId, w, 400, title, `${text} ${w.t('tooManyAttempts')}`, true);
          }
          return sendHtml(reply, 400, signInPage(providerId, w, title,
            `<h1>${esc(title)}</h1><p class="error" role="alert">${esc(text)}</p><p><a href="${esc(connectPath(providerId))}?state=${esc(encodeURIComponent(state))}">${esc(w.t('tryAgain'))}</a></p>`));
        };
        try {
          const credentials = await flow.exchange(state, pending.serverUrl, params, redirectUri(host), http);
          await host.complete(state, { credentials, accountId: credentials.acct });
          reply.header('set-cookie', host.browser.clearCookie(state));
          return messagePage(reply, providerId, w, 200, w.t('signedInTo', { p: name }), w.t('returnToApp'));
        } catch (e) {
          if (e instanceof oauth.AuthorizationResponseError) {
            if (e.error === 'access_denied') {
              // The person at the browser refused: that ends the login, as Cancel does.
              await host.fail(state, `access_denied: the sign-in to ${name} was declined`);
              reply.header('set-cookie', host.browser.clearCookie(state));
              return messagePage(reply, providerId, w, 200, w.t('declinedTitle'), w.t('declinedText'));
            }
            return failed(`${e.error}: ${name} refused the sign-in${e.error_description ? ` (${e.error_description})` : ''}`, w.t('vendorRefused', { p: name }));
          }
          const message = isHubError(e) ? `${e.message}${e.details ? ` (${e.details})` : ''}` : `the sign-in response from ${name} could not be checked`;
          return failed(message, w.t('notCompleted', { p: name }));
        }
      });
    },

    refresh: (cred, http) => flow.refresh(cred, http),
  };
}

/**
 * The `signIn` of an OAuth connector's spec (kit/define.ts): the popup goes to the vendor, the
 * vendor comes back to the callback route; the connector's upstream client carries both.
 */
export function redirectSignIn(flow: OAuthFlow): { kind: 'redirect'; begin: OAuthLogin['beginLogin']; routes: OAuthLogin['routes'] } {
  const login = oauthLogin(flow);
  return { kind: 'redirect', begin: (start, host, http) => login.beginLogin(start, host, http), routes: (app, host, http) => login.routes(app, host, http) };
}
