/** Small helpers for MCP tests: library files and reading tool results. */
import assert from 'node:assert/strict';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { solidJpeg } from './library.js';

export const TOOL_NAMES = ['batch', 'browse_folder', 'connect_provider', 'create_folder', 'delete_asset', 'get_asset', 'get_download_link', 'list_providers', 'list_versions', 'move_asset', 'rename_asset', 'search_assets', 'search_by_image', 'upload_from_url'];

export async function mcpLibraryFiles(): Promise<Record<string, Buffer>> {
  return {
    'brand/red-logo.jpg': await solidJpeg(96, 64, [220, 20, 30]),
    'brand/blue-banner.jpg': await solidJpeg(120, 40, [20, 40, 220]),
    'brand/print/green-poster.jpg': await solidJpeg(64, 96, [20, 200, 60]),
    'secret/plans.jpg': await solidJpeg(80, 80, [250, 250, 0]),
  };
}

export interface ToolOutcome {
  isError: boolean;
  body: any;
  images: { data: string; mimeType: string }[];
}

export async function callTool(client: Client, name: string, args: Record<string, unknown> = {}): Promise<ToolOutcome> {
  const r = await client.callTool({ name, arguments: args }) as { isError?: boolean; content: { type: string; text?: string; data?: string; mimeType?: string }[] };
  const text = r.content.find((c) => c.type === 'text')?.text ?? '';
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch { /* a plain-text error (e.g. the SDK's input validation) */ }
  const images = r.content.filter((c) => c.type === 'image').map((c) => ({ data: c.data!, mimeType: c.mimeType! }));
  return { isError: r.isError === true, body, images };
}

export async function ok(client: Client, name: string, args: Record<string, unknown> = {}): Promise<ToolOutcome> {
  const r = await callTool(client, name, args);
  assert.equal(r.isError, false, `${name} failed: ${JSON.stringify(r.body)}`);
  return r;
}

export async function refused(client: Client, name: string, args: Record<string, unknown>, code: string, source: 'hub' | 'integration'): Promise<any> {
  const r = await callTool(client, name, args);
  assert.equal(r.isError, true, `${name} should have failed: ${JSON.stringify(r.body)}`);
  assert.equal(r.body.error.code, code, JSON.stringify(r.body));
  assert.equal(r.body.error.source, source);
  if (source === 'integration') assert.equal(typeof r.body.error.provider, 'string');
  else assert.equal(r.body.error.provider, undefined);
  assert.ok(!/\n\s+at /.test(JSON.stringify(r.body)), 'no stack trace in tool errors');
  return r.body.error;
}
