/**
 * The MCP write tools (docs/writes.md "MCP"): upload from a URL, rename, move, delete, create a
 * folder, and a batch of up to 10 of these. They call the same write engine as REST
 * (src/content/asset-writes.ts), so the partner's opt-in, names, limits, locks and the audit are
 * the same; destructive ones carry `destructiveHint`, so an assistant's client can ask first.
 */
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { hubError } from '../errors.js';
import { toHubError } from '../http/errors.js';
import { FetchError, safeFetch } from '../net/safe-fetch.js';
import type { ProviderSession } from '../providers/contract.js';
import { compactAsset, json, prune, type ToolContext, type ToolKit } from './tool-kit.js';

/**
 * The largest file upload_from_url fetches: the fetched bytes are held in memory until they are
 * written, so the bound is lower than DAMHUB_MAX_UPLOAD_BYTES (which still applies when smaller).
 * Larger files go through the REST upload or tus, which stream.
 */
export const MCP_URL_UPLOAD_MAX_BYTES = 256 * 1024 * 1024;
export const MAX_BATCH = 10;

const providerArg = z.string().min(1).max(64).optional().describe('provider id from list_providers; default: the hub\'s default provider');
const id = (what: string) => z.string().min(1).max(2048).describe(what);
const name = z.string().min(1).max(1024);
const ifMatch = z.string().min(1).max(512).optional().describe('the ETag the asset had when you read it (get_asset\'s etag); the change is refused (asset-version-conflict) if someone saved since');
const onConflict = z.enum(['fail', 'rename', 'version']).optional().describe('when the name is taken: fail (default), rename (keep both), version (a new version of that asset)');

const ops = {
  upload_from_url: z.object({ url: z.string().min(1).max(8192).describe('http(s) URL of the file; private addresses are refused'), parentId: id('folder to upload into'), name: name.optional().describe('file name; default: the URL\'s last path segment'), onConflict }).strict(),
  rename_asset: z.object({ assetId: id('asset id'), name, ifMatch }).strict(),
  move_asset: z.object({ assetId: id('asset id'), parentId: id('destination folder'), name: name.optional().describe('a new name on the way'), ifMatch }).strict(),
  delete_asset: z.object({ assetId: id('asset id'), ifMatch }).strict(),
  create_folder: z.object({ parentId: id('parent folder ("root" for the top)'), name }).strict(),
};
type OpName = keyof typeof ops;

export function registerWriteTools(kit: ToolKit, ctx: ToolContext): void {
  const { hub, writes } = ctx;
  const meta = () => ({ requestId: `mcp-${randomUUID()}` });

  const run: { [K in OpName]: (dam: ProviderSession, a: z.infer<(typeof ops)[K]>) => Promise<Record<string, unknown>> } = {
    async upload_from_url(dam, a) {
      const fileName = a.name ?? fileNameOf(a.url);
      // Checked before anything is fetched: opt-in, name, type.
      await writes.checkUpload(dam, { parentId: a.parentId, name: fileName, onConflict: a.onConflict }, null);
      const c = hub.config;
      let bytes: Buffer;
      try {
        bytes = await safeFetch(a.url, { allow: c.imageFetchAllow, connectTimeoutMs: c.imageFetchConnectTimeoutMs, totalTimeoutMs: Math.max(c.imageFetchTimeoutMs, 120_000), maxBytes: Math.min(c.maxUploadBytes, MCP_URL_UPLOAD_MAX_BYTES), maxRedirects: c.imageFetchMaxRedirects });
      } catch (e) {
        if (!(e instanceof FetchError)) throw e;
        if (e.kind === 'too-large') throw hubError('hub-payload-too-large', `${e.message}; upload_from_url fetches at most ${Math.min(c.maxUploadBytes, MCP_URL_UPLOAD_MAX_BYTES)} bytes`);
        throw hubError('hub-validation-error', `the file could not be fetched: ${e.message}`);
      }
      const r = await writes.upload(dam, { parentId: a.parentId, name: fileName, onConflict: a.onConflict }, { stream: Readable.from([bytes]), length: bytes.length }, meta());
      return { created: r.status === 201, etag: r.etag, asset: compactAsset(r.asset) };
    },
    async rename_asset(dam, a) {
      const r = await writes.relocate(dam, a.assetId, { name: a.name }, a.ifMatch ?? null, meta());
      return { etag: r.etag, asset: compactAsset(r.asset) };
    },
    async move_asset(dam, a) {
      const r = await writes.relocate(dam, a.assetId, { parentId: a.parentId, ...(a.name ? { name: a.name } : {}) }, a.ifMatch ?? null, meta());
      return { etag: r.etag, asset: compactAsset(r.asset) };
    },
    async delete_asset(dam, a) {
      await writes.remove(dam, a.assetId, a.ifMatch ?? null, meta());
      return { deleted: a.assetId };
    },
    async create_folder(dam, a) {
      return { folder: prune(await writes.createFolder(dam, a.parentId, a.name, meta())) };
    },
  };

  const single = <K extends OpName>(op: K, description: string, destructive: boolean) =>
    kit.tool(op, description, ops[op].extend({ provider: providerArg }).strict(), async (a): Promise<CallToolResult> => {
      const { provider, ...args } = a as { provider?: string } & z.infer<(typeof ops)[K]>;
      return json(await run[op](await kit.session(provider), args as z.infer<(typeof ops)[K]>));
    }, { readOnlyHint: false, destructiveHint: destructive, idempotentHint: false });

  single('upload_from_url', 'Upload a file from an http(s) URL into a folder of the asset library (needs the application to allow writes).', false);
  single('rename_asset', 'Rename an asset.', true);
  single('move_asset', 'Move an asset into another folder, optionally renaming it.', true);
  single('delete_asset', 'Delete an asset from the asset library.', true);
  single('create_folder', 'Create a folder.', false);

  const batchOp = z.discriminatedUnion('op', (Object.keys(ops) as OpName[]).map((op) => ops[op].extend({ op: z.literal(op) })) as never);
  kit.tool('batch', `Up to ${MAX_BATCH} write operations in order (upload_from_url, rename_asset, move_asset, delete_asset, create_folder); each answers its own result or error, and one failing does not stop the others.`,
    z.object({ provider: providerArg, operations: z.array(batchOp).min(1).max(MAX_BATCH) }).strict(),
    async (a) => {
      const dam = await kit.session(a.provider);
      const results: Record<string, unknown>[] = [];
      for (const item of a.operations as ({ op: OpName } & Record<string, unknown>)[]) {
        const { op, ...args } = item;
        try {
          results.push({ op, ok: true, ...(await (run[op] as (d: ProviderSession, x: unknown) => Promise<Record<string, unknown>>)(dam, args)) });
        } catch (e) {
          const err = toHubError(e);
          results.push({ op, ok: false, error: prune({ code: err.code, source: err.source, status: err.status, message: err.message, details: err.details, provider: err.provider }) });
        }
      }
      return json({ results, failed: results.filter((r) => !r.ok).length });
    }, { readOnlyHint: false, destructiveHint: true, idempotentHint: false });
}

function fileNameOf(url: string): string {
  try {
    const last = decodeURIComponent(new URL(url).pathname.split('/').filter(Boolean).at(-1) ?? '');
    if (last) return last;
  } catch { /* below */ }
  throw hubError('hub-validation-error', 'give a name: the URL has no file name');
}
