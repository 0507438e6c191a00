/**
 * Who an MCP caller is. Over HTTP the hub is an OAuth 2.1 resource server: it verifies access
 * tokens (JWT, RS256/ES256/PS256) issued by one configured authorization server for the resource
 * `<publicUrl>/mcp` and maps the token's `sub` to a hub user. Over stdio the operator names the
 * user (`damhub mcp --user SUB`). Both land on the same hub user: the authorization server is kept
 * as a partner row that owns these users, disabled so its tokens are never accepted by
 * /auth/exchangeToken (an MCP token must not turn into a hub session).
 */
import { createHash } from 'node:crypto';
import { errors as joseErrors, importJWK, jwtVerify, type JWTPayload } from 'jose';
import type { Hub } from '../hub.js';
import type { Partner, User } from '../stores/types.js';


export interface McpIdentity {
  user: User;
  partner: Partner;
  /** Epoch seconds the token expires at (HTTP only). */
  expiresAt?: number;
  scopes: string[];
  clientId: string;
}

export type TokenProblem = 'missing' | 'invalid' | 'expired';

/** A refusal of the bearer token; the HTTP layer turns it into a 401 with a WWW-Authenticate challenge. */
export class McpTokenError extends Error {
  constructor(readonly problem: TokenProblem, message: string) {
    super(message);
    this.name = 'McpTokenError';
  }
}

export function mcpResource(publicUrl: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/mcp`;
}

/** The partner row owning MCP users of `issuer`, created on first use. */
export async function mcpPartner(hub: Hub, issuer: string, jwksUrl: string | null): Promise<Partner> {
  const existing = await hub.stores.partners.getByIssuer(issuer);
  if (existing) {
    if (jwksUrl && existing.jwksUrl !== jwksUrl) return (await hub.stores.partners.update(existing.id, { jwksUrl }, hub.clock.now())) ?? existing;
    return existing;
  }
  return hub.stores.partners.create({
    id: `mcp-${createHash('sha256').update(issuer).digest('hex').slice(0, 10)}`,
    name: 'MCP clients',
    issuer,
    audience: mcpResource(hub.config.publicUrl),
    jwksUrl,
    // A partner needs a JWKS source; the local (stdio) partner verifies no tokens at all.
    jwks: jwksUrl ? null : { keys: [] },
    maxTokenAgeSec: 3600,
    rateLimitPerMin: 0,
    allowedOrigins: [],
    enabled: false,
  }, hub.clock.now());
}

export async function identityFor(hub: Hub, partner: Partner, sub: string, claims: { email?: unknown; name?: unknown; given_name?: unknown; family_name?: unknown } = {}): Promise<User> {
  const str = (v: unknown) => (typeof v === 'string' && v ? v : null);
  return hub.stores.users.upsert(partner.id, sub, {
    email: str(claims.email) ?? '',
    name: str(claims.name),
    givenName: str(claims.given_name),
    familyName: str(claims.family_name),
  }, hub.clock.now());
}

const ALGS = ['RS256', 'PS256', 'ES256'];

/** Verifies access tokens of the configured authorization server for this hub's /mcp resource. */
export class McpTokenVerifier {
  private partner: Promise<Partner> | null = null;

  constructor(private readonly hub: Hub, private readonly issuer: string, private readonly jwksUrl: string) {}

  async verify(authorization: string | undefined): Promise<McpIdentity> {
    const m = authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization) : null;
    if (!m) throw new McpTokenError('missing', 'send "Authorization: Bearer <access token>" from the authorization server');
    const token = m[1]!;
    this.partner ??= mcpPartner(this.hub, this.issuer, this.jwksUrl).catch((e) => {
      this.partner = null;
      throw e;
    });
    const partner = await this.partner;
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, async (h) => {
        const jwk = h.kid ? await this.hub.jwks.keyFor(partner, h.kid) : null;
        if (!jwk) throw new McpTokenError('invalid', 'the token is signed with a key the authorization server does not publish');
        return importJWK(jwk, h.alg);
      }, {
        issuer: this.issuer,
        audience: mcpResource(this.hub.config.publicUrl),
        algorithms: ALGS,
        requiredClaims: ['sub', 'exp'],
        currentDate: new Date(this.hub.clock.now()),
        clockTolerance: 0,
      }));
    } catch (e) {
      if (e instanceof McpTokenError) throw e;
      if (e instanceof joseErrors.JWTExpired) throw new McpTokenError('expired', 'the access token has expired');
      if (e instanceof joseErrors.JWTClaimValidationFailed) throw new McpTokenError('invalid', `the access token's ${e.claim} claim is not accepted (${e.reason})`);
      if (e instanceof joseErrors.JOSEError) throw new McpTokenError('invalid', 'the access token is malformed or its signature does not verify');
      throw new McpTokenError('invalid', `the access token could not be verified: ${(e as Error).message}`);
    }
    const user = await identityFor(this.hub, partner, payload.sub!, payload as Record<string, unknown>);
    const scope = typeof payload.scope === 'string' ? payload.scope.split(' ').filter(Boolean) : [];
    const clientId = typeof payload.client_id === 'string' ? payload.client_id : typeof payload.azp === 'string' ? payload.azp : 'unknown';
    return { user, partner, expiresAt: payload.exp, scopes: scope, clientId };
  }
}
