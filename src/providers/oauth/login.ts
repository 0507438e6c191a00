/**
 * The hub side of an OAuth sign-in: the popup goes straight to the DAM's authorization endpoint,
 * and the DAM sends it back to `/api/v1/auth/callback/{provider}`, which settles the hub's login
 * state. A connector spreads `oauthLogin(flow)` into its Provider.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import * as oauth from 'oauth4webapi';
import { isHubError } from '../../errors.js';
import { esc, htmlPage, sendHtml, SIGNIN_CSS } from '../../http/html.js';
import type { ProviderCredentials } from '../../auth/provider-tokens.js';
import type { LoginHost, LoginStart } from '../contract.js';
import type { UpstreamClient } from '../kit/http.js';
import type { OAuthFlow } from './flow.js';

/** The callback's answer page, styled by the sign-in stylesheet (inline styles are refused by the hub's CSP). */
function page(reply: FastifyReply, providerId: string, status: number, title: string, text: string) {
  return sendHtml(reply, status, htmlPage(title, `<h1>${esc(title)}</h1><p>${esc(text)}</p>`, `/api/v1/connectors/${encodeURIComponent(providerId)}/signin.css`));
}

export function callbackPath(providerId: string): string {
  return `/api/v1/auth/callback/${encodeURIComponent(providerId)}`;
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
  return {
    async beginLogin({ state, serverUrl }, host, http) {
      return { redirectUri: await flow.authorizationUrl(state, serverUrl, redirectUri(host), http) };
    },

    routes(app, host, http) {
      app.get(`/connectors/${providerId}/signin.css`, { config: { auth: 'none' }, schema: { hide: true } }, async (_req, reply) =>
        reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=86400').send(SIGNIN_CSS));
      app.get(`/auth/callback/${providerId}`, { config: { auth: 'none' }, schema: { hide: true } }, async (req, reply) => {
        const raw = req.url.includes('?') ? req.url.slice(req.url.indexOf('?') + 1) : '';
        const params = new URLSearchParams(raw);
        const state = params.get('state') ?? '';
        const pending = state ? await host.pending(state) : { error: 'This sign-in link is not valid. Start again from the application.' };
        // A state that is not a pending login of this provider settles nothing: it may be a forged or
        // replayed callback, and the login it names (if any) is not the caller's to end.
        if ('error' in pending) return page(reply, providerId, 400, 'Sign-in', pending.error);
        if (pending.providerId !== providerId) return page(reply, providerId, 400, 'Sign-in', 'This sign-in link does not belong to this service. Start again from the application.');
        try {
          const credentials = await flow.exchange(state, pending.serverUrl, params, redirectUri(host), http);
          await host.complete(state, { credentials, accountId: credentials.acct });
          return page(reply, providerId, 200, `Signed in to ${name}`, 'You can close this window and return to the application.');
        } catch (e) {
          if (e instanceof oauth.AuthorizationResponseError) {
            const declined = e.error === 'access_denied';
            await host.fail(state, declined
              ? `access_denied: the sign-in to ${name} was declined`
              : `${e.error}: ${name} refused the sign-in${e.error_description ? ` (${e.error_description})` : ''}`);
            return page(reply, providerId, declined ? 200 : 400, declined ? 'Sign-in declined' : 'Sign-in failed',
              declined ? 'Access was not granted. You can close this window.' : `${name} refused the sign-in. Start again from the application.`);
          }
          const message = isHubError(e) ? `${e.message}${e.details ? ` (${e.details})` : ''}` : `the sign-in response from ${name} could not be checked`;
          await host.fail(state, message);
          return page(reply, providerId, 400, 'Sign-in failed', `The sign-in to ${name} could not be completed. Start again from the application.`);
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
