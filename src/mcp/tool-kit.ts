/**
 * What the MCP tool modules share (./tools.ts, ./write-tools.ts): the context they run in, the
 * registration kit, and the compact result shapes.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import type { AssetOps } from '../content/asset-ops.js';
import type { AssetWrites } from '../content/asset-writes.js';
import type { Hub } from '../hub.js';
import type { ProviderSession } from '../providers/contract.js';
import type { Asset } from '../providers/model.js';
import type { McpConnections } from './connections.js';

export interface ToolContext {
  hub: Hub;
  ops: AssetOps;
  writes: AssetWrites;
  connections: McpConnections;
}

/** MCP's tool annotations (hints to the assistant's client, which may ask the user before a destructive call). */
export interface ToolHints {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
}

/** What a tool module registers its tools with (the write tools: ./write-tools.ts). */
export interface ToolKit {
  tool<S extends z.ZodObject>(name: string, description: string, schema: S, run: (args: z.infer<S>) => Promise<CallToolResult>, hints?: ToolHints): void;
  /** The user's DAM connection for `provider` (default: the hub's default provider), after the per-user budget. */
  session(provider: string | undefined): Promise<ProviderSession>;
}

export function json(body: unknown): CallToolResult & { content: CallToolResult['content'] } {
  return { content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: body as Record<string, unknown> };
}

export function compactAsset(a: Asset) {
  return prune({
    id: a.id, name: a.name, title: a.title, type: a.type, mimeType: a.mimeType, fileSize: a.fileSize,
    width: a.xSizePx, height: a.ySizePx, modified: a.modified, version: a.version, parentPath: a.parentPath,
    thumbnailUrl: a.thumbnailUrl, downloadUrl: a.downloadUrl,
  });
}

export function prune<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null)) as T;
}
