/** What the catalog (src/catalog.ts) gives every OAuth connector's factory: its app, the PKCE secret, replaced origins. */
export interface OAuthConnectorOptions {
  clientId: string;
  clientSecret?: string;
  /** Shared by every node of a cluster (PKCE verifiers are derived from it). */
  pkceSecret?: string;
  /** Replaced vendor origins by name (kit/endpoints.ts); absent: the vendor's public ones. */
  endpoints?: Record<string, string>;
  /** Plain http to the authorization server (a loopback stand-in named in `endpoints`). */
  allowInsecureRequests?: boolean;
}
