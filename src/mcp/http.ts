/**
 * /mcp over Streamable HTTP and the OAuth protected-resource metadata (RFC 9728), as the MCP
 * authorization specification asks: the hub is a resource server; a request without a valid
 * access token gets 401 with `WWW-Authenticate: Bearer resource_metadata="…"` so the client can
 * discover the authorization server, run OAuth 2.1 with PKCE and retry.
 *
 * The SDK's transport speaks Node's req/res: Fastify authenticates and parses the body, then
 * hands the raw request over (reply.hijack) to a per-request stateless transport.
 */
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hubError } from '../errors.js';
import { sendError } from '../http/errors.js';
import { mcpResource, McpTokenError, McpTokenVerifier, type McpIdentity } from './identity.js';
import { createMcpServer, toolContext } from './server.js';

export const PROTECTED_RESOURCE_PATH = '/.well-known/oauth-protected-resource';

export async function mcpRoutes(app: FastifyInstance): Promise<void> {
  const hub = app.hub;
  const { mcpIssuer, mcpJwksUrl } = hub.config;
  if (!mcpIssuer || !mcpJwksUrl) return;
  const publicUrl = hub.config.publicUrl.replace(/\/+$/, '');
  const resource = mcpResource(publicUrl);
  const metadataUrl = `${publicUrl}${PROTECTED_RESOURCE_PATH}/mcp`;
  const verifier = new McpTokenVerifier(hub, mcpIssuer, mcpJwksUrl);
  const ctx = await toolContext(hub);
  if (ctx.upgraded) app.log.info(ctx.upgraded, 'MCP connections moved from the data dir\'s own file into the hub\'s store');

  const metadata = {
    resource,
    authorization_servers: [mcpIssuer],
    bearer_methods_supported: ['header'],
    resource_name: 'damhub',
    resource_documentation: `${publicUrl}/api/v1/docs`,
  };
  // RFC 9728 section 3.1: the path-suffixed location for the /mcp resource, and the root one that
  // older clients try first.
  for (const url of [PROTECTED_RESOURCE_PATH, `${PROTECTED_RESOURCE_PATH}/mcp`]) {
    app.get(url, { config: { auth: 'none' }, schema: { hide: true } }, async (_req, reply) => {
      reply.header('cache-control', 'public, max-age=3600').header('access-control-allow-origin', '*');
      return metadata;
    });
  }

  const challenge = (e: McpTokenError): Record<string, string> => {
    const parts = [`resource_metadata="${metadataUrl}"`];
    if (e.problem !== 'missing') parts.push('error="invalid_token"', `error_description="${e.message.replace(/["\\]/g, "'")}"`);
    return { 'WWW-Authenticate': `Bearer ${parts.join(', ')}` };
  };

  const authenticate = async (req: FastifyRequest): Promise<McpIdentity> => {
    try {
      return await verifier.verify(req.headers.authorization);
    } catch (e) {
      if (!(e instanceof McpTokenError)) throw e;
      const code = e.problem === 'missing' ? 'hub-access-token-missing' : 'hub-access-token-invalid';
      throw hubError(code, e.message, { headers: challenge(e) });
    }
  };

  const handle = async (req: FastifyRequest, reply: FastifyReply) => {
    const id = await authenticate(req);
    if (req.method !== 'POST') {
      // Stateless: no server-initiated stream (GET) and no session to end (DELETE).
      reply.header('allow', 'POST');
      return sendError(hubError('hub-validation-error', `${req.method} /mcp is not used: this endpoint is stateless; send JSON-RPC with POST`, { status: 405, message: 'Method not allowed.' }), req, reply);
    }
    const server = createMcpServer(ctx, id);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    reply.hijack();
    reply.raw.on('close', () => {
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      const raw = Object.assign(req.raw, { auth: { token: '', clientId: id.clientId, scopes: id.scopes, expiresAt: id.expiresAt, resource: new URL(resource) } });
      await transport.handleRequest(raw, reply.raw, req.body);
    } catch (e) {
      req.log.error({ err: e }, 'MCP request failed');
      if (!reply.raw.headersSent) {
        reply.raw.writeHead(500, { 'content-type': 'application/json' });
        reply.raw.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'internal error' }, id: null }));
      }
    }
  };
  app.route({ method: ['GET', 'POST', 'DELETE'], url: '/mcp', config: { auth: 'none' }, schema: { hide: true }, handler: handle });
}
