/**
 * A real OAuth 2.1 / OpenID authorization server on loopback (oidc-provider), issuing JWT access
 * tokens for one resource (RFC 8707 resource indicators), and a client that runs the
 * authorization-code flow with PKCE through its real login and consent pages.
 */
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import Provider, { errors } from 'oidc-provider';
import { freePort } from './process.js';

export const CLIENT_ID = 'damhub-mcp-test';
export const REDIRECT_URI = 'http://127.0.0.1/mcp-client/callback';
export const SCOPE = 'assets:read';

export interface AuthServer {
  issuer: string;
  jwksUrl: string;
  close(): Promise<void>;
}

export async function startAuthServer(resource: string): Promise<AuthServer> {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid: 'as-key-1', alg: 'RS256', use: 'sig' };
  const provider = new Provider(issuer, {
    clients: [{ client_id: CLIENT_ID, token_endpoint_auth_method: 'none', redirect_uris: [REDIRECT_URI], grant_types: ['authorization_code'], response_types: ['code'] }],
    jwks: { keys: [jwk] },
    cookies: { keys: [randomBytes(16).toString('hex')] },
    pkce: { required: () => true },
    claims: { openid: ['sub'], email: ['email'] },
    findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub, email: `${sub}@example.test` }) }),
    features: {
      devInteractions: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator) => {
          if (indicator !== resource) throw new errors.InvalidTarget();
          return { scope: SCOPE, audience: resource, accessTokenTTL: 3600, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } };
        },
      },
    },
  });
  const server = http.createServer(provider.callback());
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  const addr = server.address() as AddressInfo;
  return {
    issuer,
    jwksUrl: `http://127.0.0.1:${addr.port}/jwks`,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

/** Authorization code + PKCE against `issuer` (discovered), signing in as `sub`; returns the access token. */
export async function obtainAccessToken(issuer: string, resource: string, sub: string): Promise<string> {
  const meta = await (await fetch(`${issuer}/.well-known/openid-configuration`)).json() as { authorization_endpoint: string; token_endpoint: string; code_challenge_methods_supported?: string[] };
  if (!meta.code_challenge_methods_supported?.includes('S256')) throw new Error('the authorization server does not offer PKCE S256');
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const state = randomBytes(8).toString('hex');
  const jar = new Map<string, string>();
  const cookieHeader = () => [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
  const keep = (res: Response) => {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const i = pair!.indexOf('=');
      jar.set(pair!.slice(0, i), pair!.slice(i + 1));
    }
  };
  const auth = new URL(meta.authorization_endpoint);
  auth.search = new URLSearchParams({
    client_id: CLIENT_ID, response_type: 'code', redirect_uri: REDIRECT_URI, scope: `openid email ${SCOPE}`,
    code_challenge: challenge, code_challenge_method: 'S256', state, resource,
  }).toString();
  let res = await fetch(auth, { redirect: 'manual', headers: { cookie: cookieHeader() } });
  for (let step = 0; step < 12; step++) {
    keep(res);
    const location = res.headers.get('location');
    if (location?.startsWith(REDIRECT_URI)) {
      const cb = new URL(location);
      if (cb.searchParams.get('state') !== state) throw new Error('state mismatch');
      const code = cb.searchParams.get('code');
      if (!code) throw new Error(`authorization failed: ${location}`);
      const tok = await fetch(meta.token_endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, client_id: CLIENT_ID, code_verifier: verifier, resource }),
      });
      const body = await tok.json() as { access_token?: string; error?: string; error_description?: string };
      if (!body.access_token) throw new Error(`token request failed: ${JSON.stringify(body)}`);
      return body.access_token;
    }
    if (location) {
      res = await fetch(new URL(location, issuer), { redirect: 'manual', headers: { cookie: cookieHeader() } });
      continue;
    }
    // An interaction page: the login form, then the consent form.
    const html = await res.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    const prompt = /name="prompt" value="([^"]+)"/.exec(html)?.[1];
    if (!action || !prompt) throw new Error(`unexpected page (${res.status}): ${html.slice(0, 300)}`);
    const form: Record<string, string> = prompt === 'login' ? { prompt, login: sub, password: 'any' } : { prompt };
    res = await fetch(new URL(action, issuer), {
      method: 'POST', redirect: 'manual',
      headers: { cookie: cookieHeader(), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form),
    });
  }
  throw new Error('the authorization flow did not finish');
}
