/**
 * OAuth 2.0 authorization code with PKCE (RFC 6749, RFC 7636) for connectors whose DAM signs
 * users in with OAuth. The protocol work (PKCE challenge, authorization response checks including
 * RFC 9207 `iss`, token endpoint requests and responses) is oauth4webapi's; this module binds it
 * to the hub's login states:
 *
 * - the hub's login `state` is the OAuth `state`, so the callback finds its login by it and a
 *   callback for any other state is refused;
 * - the PKCE code_verifier is an HMAC of the state under a server secret, so no per-login storage
 *   is needed and any node of a cluster can finish the login, while someone who sees the state
 *   (it travels in URLs) still cannot compute the verifier.
 */
import { createHmac, randomBytes } from 'node:crypto';
import * as oauth from 'oauth4webapi';
import { integrationError, isHubError } from '../../errors.js';
import type { ProviderCredentials } from '../../auth/provider-tokens.js';
import type { UpstreamClient } from '../kit/http.js';
import { kitFetch } from './kit-fetch.js';

/** What a connector keeps in the DAM connection token (wrapped in the hub's JWE). */
export interface OAuthCredentials extends ProviderCredentials {
  /** Upstream access token. */
  at: string;
  /** Upstream refresh token, when the DAM issued one. */
  rt?: string;
  /** Upstream access token expiry, epoch ms (absent when the DAM gave no expires_in). */
  exp?: number;
  /** The DAM account id. */
  acct: string;
  /** The tenant's server URL for multi-tenant systems. */
  srv?: string;
}

export interface OAuthSpec {
  providerId: string;
  /** Display name of the DAM, for messages. */
  name: string;
  clientId: string;
  /** Absent for public clients (PKCE only). */
  clientSecret?: string;
  /** How the client authenticates at the token endpoint (default client_secret_basic, or none without a secret). */
  clientAuth?: 'client_secret_basic' | 'client_secret_post';
  scopes: string[];
  /** Extra authorization request parameters (Google's access_type=offline, Dropbox's token_access_type). */
  authorizationParams?: Record<string, string>;
  /**
   * The authorization server for a login: fixed endpoints, or derived from the tenant's serverUrl
   * (see `discoveredServer`). `serverUrl` is null for single-tenant DAMs.
   */
  server(serverUrl: string | null, http?: UpstreamClient): Promise<oauth.AuthorizationServer>;
  /** The DAM account id behind a token response (default: the ID token's `sub`). */
  accountId?(tokens: oauth.TokenEndpointResponse, at: { server: oauth.AuthorizationServer; serverUrl: string | null; http?: UpstreamClient }): Promise<string>;
  /** Secret the PKCE verifiers are derived from; must be shared by every node of a cluster. */
  pkceSecret?: string;
  timeoutMs?: number;
  /** Tests against a loopback server over plain http. */
  allowInsecureRequests?: boolean;
  /** Epoch ms, for token expiry bookkeeping (the hub's clock). */
  now(): number;
}

/** The OAuth credentials inside a DAM connection token; throws on any other shape. */
export function oauthCredentials(raw: ProviderCredentials): OAuthCredentials {
  if (typeof raw.at !== 'string' || typeof raw.acct !== 'string') throw new Error('not OAuth credentials');
  return raw as OAuthCredentials;
}

/** A fixed authorization server (single-tenant SaaS). */
export function staticServer(as: oauth.AuthorizationServer): OAuthSpec['server'] {
  return async () => as;
}

/**
 * Multi-tenant systems: the tenant's serverUrl is the issuer, whose metadata is discovered
 * (RFC 8414 / OpenID Discovery) once per issuer and cached.
 */
export function discoveredServer(opts: { providerId: string; algorithm?: 'oidc' | 'oauth2'; timeoutMs?: number; allowInsecureRequests?: boolean }): OAuthSpec['server'] {
  const cache = new Map<string, Promise<oauth.AuthorizationServer>>();
  return (serverUrl, http) => {
    if (!serverUrl) return Promise.reject(integrationError('integration-operation-failed', opts.providerId, 'this provider needs a serverUrl'));
    const issuer = new URL(serverUrl.replace(/\/+$/, ''));
    let p = cache.get(issuer.href);
    if (!p) {
      p = (async () => {
        const res = await oauth.discoveryRequest(issuer, {
          algorithm: opts.algorithm ?? 'oidc',
          signal: AbortSignal.timeout(opts.timeoutMs ?? 10_000),
          [oauth.allowInsecureRequests]: opts.allowInsecureRequests,
          ...(http ? { [oauth.customFetch]: kitFetch(http) } : {}),
        });
        return oauth.processDiscoveryResponse(issuer, res);
      })();
      cache.set(issuer.href, p);
      // A failed discovery is not cached: the tenant may be back on the next login.
      p.catch(() => cache.delete(issuer.href));
    }
    return p.catch((e) => {
      throw toIntegrationError(opts.providerId, e, `discovering the authorization server of ${issuer.host}`);
    });
  };
}

export class OAuthFlow {
  private readonly client: oauth.Client;
  private readonly auth: oauth.ClientAuth;
  private readonly secret: string;

  constructor(readonly spec: OAuthSpec) {
    this.client = { client_id: spec.clientId };
    this.auth = !spec.clientSecret ? oauth.None()
      : spec.clientAuth === 'client_secret_post' ? oauth.ClientSecretPost(spec.clientSecret) : oauth.ClientSecretBasic(spec.clientSecret);
    this.secret = spec.pkceSecret ?? randomBytes(32).toString('base64url');
  }

  /** 43 characters of base64url (RFC 7636 section 4.1 asks for 43 to 128). */
  private verifier(state: string): string {
    return createHmac('sha256', this.secret).update(`pkce\0${this.spec.providerId}\0${state}`).digest('base64url');
  }

  /** The provider's authorization URL the user's popup is sent to. */
  async authorizationUrl(state: string, serverUrl: string | null, redirectUri: string, http?: UpstreamClient): Promise<string> {
    const as = await this.spec.server(serverUrl, http);
    if (!as.authorization_endpoint) throw integrationError('integration-operation-failed', this.spec.providerId, `${this.spec.name} has no authorization endpoint`);
    const url = new URL(as.authorization_endpoint);
    const params: Record<string, string> = {
      response_type: 'code',
      client_id: this.spec.clientId,
      redirect_uri: redirectUri,
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(this.verifier(state)),
      code_challenge_method: 'S256',
      ...(this.spec.scopes.length ? { scope: this.spec.scopes.join(' ') } : {}),
      ...this.spec.authorizationParams,
    };
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
    return url.href;
  }

  /**
   * Checks the authorization response for `state` and redeems its code. Throws
   * oauth.AuthorizationResponseError for an `error=...` response (access_denied and the like).
   */
  async exchange(state: string, serverUrl: string | null, callbackParams: URLSearchParams, redirectUri: string, http?: UpstreamClient): Promise<OAuthCredentials> {
    const as = await this.spec.server(serverUrl, http);
    const params = oauth.validateAuthResponse(as, this.client, callbackParams, state);
    const tokens = await this.tokenCall('redeeming the authorization code', async () => {
      const res = await oauth.authorizationCodeGrantRequest(as, this.client, this.auth, params, redirectUri, this.verifier(state), this.http(http));
      return oauth.processAuthorizationCodeResponse(as, this.client, res);
    });
    const acct = this.spec.accountId
      ? await this.spec.accountId(tokens, { server: as, serverUrl, http })
      : oauth.getValidatedIdTokenClaims(tokens)?.sub;
    if (!acct) throw integrationError('integration-operation-failed', this.spec.providerId, `${this.spec.name} did not say which account signed in`);
    return this.credentials(tokens, { acct, ...(serverUrl ? { srv: serverUrl } : {}) });
  }

  /** The refresh_token grant: new upstream tokens for a DAM connection. */
  async refresh(cred: ProviderCredentials, http?: UpstreamClient): Promise<OAuthCredentials> {
    const c = cred as Partial<OAuthCredentials>;
    if (typeof c.rt !== 'string' || typeof c.acct !== 'string') {
      throw integrationError('integration-auth-failed', this.spec.providerId, `this ${this.spec.name} connection cannot be renewed; sign in again`);
    }
    const as = await this.spec.server(c.srv ?? null, http);
    const tokens = await this.tokenCall('refreshing the access token', async () => {
      const res = await oauth.refreshTokenGrantRequest(as, this.client, this.auth, c.rt!, this.http(http));
      return oauth.processRefreshTokenResponse(as, this.client, res);
    });
    // Providers that do not rotate refresh tokens (Dropbox, Google) keep the one they issued first.
    return this.credentials(tokens, { acct: c.acct, ...(c.srv ? { srv: c.srv } : {}), rt: c.rt });
  }

  /**
   * `cred` while its access token has a minute left, else renewed: a grant link (a download, a
   * thumbnail) may be used hours after it was made, past the token it carries.
   */
  async fresh(cred: OAuthCredentials, http?: UpstreamClient): Promise<OAuthCredentials> {
    return cred.exp !== undefined && cred.exp <= this.spec.now() + 60_000 ? this.refresh(cred, http) : cred;
  }

  private credentials(tokens: oauth.TokenEndpointResponse, base: { acct: string; srv?: string; rt?: string }): OAuthCredentials {
    const out: OAuthCredentials = { ...base, at: tokens.access_token };
    if (tokens.refresh_token) out.rt = tokens.refresh_token;
    if (typeof tokens.expires_in === 'number') out.exp = this.spec.now() + tokens.expires_in * 1000;
    return out;
  }

  /** Request options: through the connector's upstream client when there is one. */
  private http(http?: UpstreamClient) {
    return {
      signal: () => AbortSignal.timeout(this.spec.timeoutMs ?? 15_000),
      [oauth.allowInsecureRequests]: this.spec.allowInsecureRequests,
      ...(http ? { [oauth.customFetch]: kitFetch(http) } : {}),
    };
  }

  private async tokenCall<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      throw toIntegrationError(this.spec.providerId, e, what);
    }
  }
}

/** Token endpoint and discovery failures as integration-* errors, the upstream message verbatim in details. */
export function toIntegrationError(providerId: string, e: unknown, what: string) {
  if (isHubError(e)) return e;
  if (e instanceof oauth.ResponseBodyError) {
    const upstream = `${e.error}${e.error_description ? `: ${e.error_description}` : ''}`;
    const code = e.error === 'invalid_grant' || e.error === 'invalid_client' || e.error === 'unauthorized_client' ? 'integration-auth-failed'
      : e.status >= 500 ? 'integration-unavailable' : 'integration-operation-failed';
    return integrationError(code, providerId, upstream, { message: `${what} failed (HTTP ${e.status})`, cause: e });
  }
  const err = e as Error;
  if (err?.name === 'TimeoutError' || err?.name === 'AbortError') {
    return integrationError('integration-unavailable', providerId, `${what} timed out`, { message: `${what} timed out`, status: 504, cause: e });
  }
  if (err instanceof oauth.OperationProcessingError || err instanceof oauth.UnsupportedOperationError) {
    return integrationError('integration-operation-failed', providerId, err.message, { message: `${what} failed: the authorization server answered unexpectedly`, cause: e });
  }
  return integrationError('integration-unavailable', providerId, err?.message, { message: `${what} failed: the authorization server could not be reached`, cause: e });
}
