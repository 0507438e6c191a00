/**
 * `damhub mcp`: the MCP server over stdio for a local assistant. The process opens the hub's data
 * dir and library directly (no HTTP), so it acts with the operator's trust: whoever can run it
 * can read the data dir's keys anyway. Per the MCP authorization specification a stdio server
 * takes its credentials from its environment rather than OAuth: `--user SUB` (or
 * DAMHUB_MCP_USER) names the hub user, the same user an OAuth token with that `sub` maps to over
 * HTTP, so DAM connections made in either place are shared. Nothing but JSON-RPC goes to stdout.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { LOCAL_MCP_ISSUER, type HubConfig } from '../config.js';
import { openHub } from '../hub.js';
import { identityFor, mcpPartner } from './identity.js';
import { createMcpServer, toolContext } from './server.js';

export async function runStdio(config: HubConfig, sub: string): Promise<number> {
  // In cluster mode with the cluster's shared keys, as `damhub serve` does: connections made over
  // HTTP on any node open here too.
  const { hub, follower } = await openHub(config, { watchLibrary: false });
  await hub.start();
  const partner = await mcpPartner(hub, config.mcpIssuer ?? LOCAL_MCP_ISSUER, config.mcpJwksUrl);
  const user = await identityFor(hub, partner, sub);
  const ctx = await toolContext(hub);
  const server = createMcpServer(ctx, { user, partner, scopes: [], clientId: 'stdio' });
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => resolve();
    process.stdin.on('end', () => resolve());
    process.once('SIGTERM', () => resolve());
    process.once('SIGINT', () => resolve());
  });
  await server.connect(transport);
  await closed;
  await server.close().catch(() => undefined);
  follower?.close();
  await hub.close();
  return 0;
}
