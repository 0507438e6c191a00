/**
 * One MCP server per caller: the tools bound to that caller's identity. Over HTTP a server is
 * built per request (stateless Streamable HTTP, so any hub node can answer any request); over
 * stdio one lives for the process.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Hub } from '../hub.js';
import { importLegacyMcpConnections, type LegacyImport } from '../stores/legacy-mcp-file.js';
import { assetOpsOf, assetWritesOf } from '../routes/content.js';
import { McpConnections } from './connections.js';
import type { McpIdentity } from './identity.js';
import { registerTools, type ToolContext } from './tools.js';

export const SERVER_INFO = { name: 'damhub', version: '1.0.0' };

const INSTRUCTIONS = `damhub gives read access to brand assets in the user's asset libraries (DAM systems).
Start with list_providers; if not connected, call connect_provider and give the user the sign-in URL.
Listings are paged: pass a result's "more" back unchanged for the next page.
Errors carry error.source: "hub" means damhub refused, "integration" means the asset library refused.`;

/**
 * What the tools of every caller share. Held DAM connections live in the hub's stores; a data dir
 * upgraded from a version that kept them in a file of its own has them taken over here, once.
 */
export async function toolContext(hub: Hub): Promise<ToolContext & { upgraded: LegacyImport | null }> {
  const upgraded = await importLegacyMcpConnections(hub.config.dataDir, hub.stores.mcpConnections);
  return { hub, ops: assetOpsOf(hub), writes: assetWritesOf(hub, hub.connectorLog), connections: new McpConnections(hub), upgraded };
}

export function createMcpServer(ctx: ToolContext, id: McpIdentity): McpServer {
  const server = new McpServer(SERVER_INFO, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
  registerTools(server, ctx, id);
  return server;
}
