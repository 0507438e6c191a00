/**
 * A real OAuth 2.0 / OpenID Connect authorization server (the oidc-provider package) on loopback,
 * with two scripted interactions instead of HTML forms: `accept` signs the user in and grants the
 * requested scopes, `deny` ends the interaction with access_denied. A small cookie jar and a
 * redirect walker play the user's browser.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

export interface OidcServer {
  issuer: string;
  provider: Provider;
  /**
   * Plays the browser from the authorization URL until the server redirects to `stopAt` (the
   * hub's callback) and returns that URL. `decision` answers the login and consent prompts.
   */
  authorize(url: string, stopAt: string, decision: { user: string; consent: 'accept' | 'deny' }): Promise<URL>;
  close(): Promise<void>;
}

export async function startOidcServer(opts: { clientId: string; clientSecret: string; redirectUris: string[] }): Promise<OidcServer> {
  let provider!: Provider;
  const server = http.createServer((req, res) => {
    const m = /^\/interaction\/([^/?]+)\/(accept|deny)\?user=([^&]*)$/.exec(req.url ?? '');
    if (!m) return provider.callback()(req, res);
    void interact(req, res, m[2] as 'accept' | 'deny', decodeURIComponent(m[3]!)).catch((e) => {
      res.statusCode = 500;
      res.end(String(e));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  provider = new Provider(issuer, {
    clients: [{
      client_id: opts.clientId, client_secret: opts.clientSecret, redirect_uris: opts.redirectUris,
      grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'client_secret_basic',
    }],
    // PKCE for every client, confidential ones included (oidc-provider's default asks it of public clients only).
    pkce: { required: () => true },
    scopes: ['openid', 'offline_access', 'profile'],
    claims: { openid: ['sub'], profile: ['name'] },
    findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub, name: `User ${sub}` }) }),
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    features: { devInteractions: { enabled: false } },
    cookies: { keys: ['damhub-test-cookie-key'] },
    // The hub asks for offline_access with prompt=consent; issue a refresh token then.
    issueRefreshToken: async (_ctx, client, code) => client.grantTypeAllowed('refresh_token') && code.scopes.has('offline_access'),
  });
  provider.on('server_error', () => {});

  async function interact(req: http.IncomingMessage, res: http.ServerResponse, decision: 'accept' | 'deny', user: string) {
    const details = await provider.interactionDetails(req, res);
    const prompt = details.prompt.name;
    if (prompt === 'login') return provider.interactionFinished(req, res, { login: { accountId: user } }, { mergeWithLastSubmission: false });
    if (decision === 'deny') {
      return provider.interactionFinished(req, res, { error: 'access_denied', error_description: 'End-User denied the consent' }, { mergeWithLastSubmission: false });
    }
    const grant = new provider.Grant({ accountId: details.session!.accountId, clientId: details.params.client_id as string });
    grant.addOIDCScope(String(details.params.scope));
    return provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true });
  }

  const jar = new Map<string, string>();
  async function get(url: string): Promise<Response> {
    const res = await fetch(url, { redirect: 'manual', headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') } });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const i = pair!.indexOf('=');
      jar.set(pair!.slice(0, i), pair!.slice(i + 1));
    }
    return res;
  }

  return {
    issuer,
    provider,
    async authorize(url, stopAt, decision) {
      let next = new URL(url);
      for (let i = 0; i < 20; i++) {
        if (next.href.startsWith(stopAt)) return next;
        const im = /^\/interaction\/([^/?]+)$/.exec(next.pathname);
        const target = im ? `${issuer}/interaction/${im[1]}/${decision.consent}?user=${encodeURIComponent(decision.user)}` : next.href;
        const res = await get(target);
        const loc = res.headers.get('location');
        if (!loc) throw new Error(`the authorization server stopped at ${res.status}: ${(await res.text()).slice(0, 300)}`);
        next = new URL(loc, target);
      }
      throw new Error('too many redirects');
    },
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}
