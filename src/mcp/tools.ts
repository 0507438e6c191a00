/**
 * The MCP tools. Each one validates its input with a strict schema, opens the user's DAM
 * connection (connections.ts) and calls the same operations as the REST routes
 * (src/content/asset-ops.ts), so capabilities, permissions, cursors and error codes are the
 * hub's. Results are compact JSON; listings carry `more` (the hub's opaque cursor) and, when asked
 * for, thumbnails as image content. A refusal is a tool error whose JSON keeps the envelope's
 * `code`, `source` ("hub" or "integration") and `provider`, so an assistant can say who refused.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { ListParams } from '../content/asset-ops.js';
import { registerWriteTools } from './write-tools.js';
import { compactAsset, json, prune, type ToolContext, type ToolHints } from './tool-kit.js';

export type { ToolContext } from './tool-kit.js';
import { hubError, integrationError, type HubError } from '../errors.js';
import { rateLimited } from '../http/auth.js';
import { toHubError } from '../http/errors.js';
import { UI_LOCALES, type ProviderSession } from '../providers/contract.js';
import type { Asset, AssetPage } from '../providers/model.js';
import type { McpIdentity } from './identity.js';


/** Thumbnails attached to one result, at most. */
const MAX_THUMBNAILS = 8;

const providerArg = z.string().min(1).max(64).optional().describe('provider id from list_providers; default: the hub\'s default provider');
const listArgs = {
  size: z.number().int().min(0).max(10_000).optional().describe('results per page; clamped to the provider maximum; 0 or absent: provider default'),
  more: z.string().min(1).max(4096).optional().describe('the `more` cursor of the previous page, unchanged'),
  filters: z.array(z.string().min(1).max(256)).max(50).optional().describe('filter option ids from a previous result\'s `filters`'),
  dataLocale: z.string().min(1).max(35).optional(),
  timeZone: z.string().min(1).max(64).optional().describe('IANA time zone name'),
  uiLocale: z.enum(UI_LOCALES).optional(),
  thumbnails: z.boolean().optional().describe(`attach up to ${MAX_THUMBNAILS} thumbnails as images (default true); false for text-only clients`),
};
const idArg = (what: string) => z.string().min(1).max(2048).describe(what);

type ListArgs = { size?: number; more?: string; filters?: string[]; dataLocale?: string; timeZone?: string; uiLocale?: string; thumbnails?: boolean };

export function registerTools(server: McpServer, ctx: ToolContext, id: McpIdentity): void {
  const { hub, ops, connections } = ctx;
  const providerId = (p: string | undefined): string => {
    const pid = p ?? hub.providers.defaultId();
    if (!pid) throw hubError('hub-validation-error', 'this hub serves no provider');
    hub.providers.require(pid);
    return pid;
  };
  /** The same per-user budget as REST content calls (key `user:<id>`), then the user's DAM connection. */
  const session = async (p: string | undefined): Promise<ProviderSession> => {
    const limit = hub.config.userRateLimitPerMin;
    if (limit > 0) {
      const d = await hub.stores.rateLimits.hit(`user:${id.user.id}`, limit, 60_000, hub.clock.now());
      if (!d.allowed) throw rateLimited(d, 'content calls of this user');
    }
    return connections.session(id, providerId(p));
  };
  const listParams = (a: ListArgs): ListParams => ({ size: a.size, more: a.more, filters: a.filters, dataLocale: a.dataLocale, timeZone: a.timeZone, uiLocale: a.uiLocale });

  const tool = <S extends z.ZodObject>(name: string, description: string, schema: S, run: (args: z.infer<S>) => Promise<CallToolResult>, hints?: ToolHints) => {
    server.registerTool(name, { description, inputSchema: schema, annotations: { readOnlyHint: name !== 'connect_provider', openWorldHint: false, ...hints } },
      // The SDK's callback type cannot be resolved for a generic schema S; args are S's output.
      (async (args: z.infer<S>) => {
        try {
          return await run(args);
        } catch (e) {
          return errorResult(toHubError(e));
        }
      }) as unknown as Parameters<McpServer['registerTool']>[2]);
  };

  tool('list_providers', 'List the asset libraries (DAM systems) this hub serves, their capabilities and whether you are connected to each.',
    z.object({}).strict(), async () => {
      const providers = [];
      for (const p of hub.providers.list()) {
        const d = p.descriptor;
        const st = await connections.state(id, d.id);
        providers.push({
          id: d.id, name: d.name, isDefault: d.id === hub.providers.defaultId(), connected: st.status === 'connected',
          ...(st.status === 'pending' ? { signInUrl: st.signInUrl } : {}),
          capabilities: Object.entries(hub.providers.capabilities(d.id) ?? {}).filter(([, v]) => v === true).map(([k]) => k),
          maxPageSize: d.paging.maxSize,
        });
      }
      return json({ providers });
    });

  tool('connect_provider', 'Connect your account at an asset library: returns a sign-in URL for the user to open in a browser. Call again after signing in to confirm; set reconnect to sign in again.',
    z.object({ provider: providerArg, serverUrl: z.string().url().max(2048).optional().describe('server URL, for libraries that ask for one'), reconnect: z.boolean().optional() }).strict(),
    async (a) => {
      const pid = providerId(a.provider);
      const name = hub.providers.require(pid).descriptor.name;
      const st = await connections.state(id, pid);
      if (st.status === 'connected' && !a.reconnect) {
        try {
          await connections.session(id, pid);
          return json({ provider: pid, status: 'connected', message: `Connected to ${name}.` });
        } catch {
          // The held connection expired or was refused: fall through to a new sign-in.
        }
      }
      if (st.status === 'pending' && !a.reconnect) {
        return json({ provider: pid, status: 'pending', signInUrl: st.signInUrl, message: `Open the sign-in URL to connect to ${name}, then call connect_provider again.` });
      }
      const url = await connections.start(id, pid, a.serverUrl ?? null);
      return json({ provider: pid, status: 'pending', signInUrl: url, message: `Open the sign-in URL to connect to ${name} (valid 5 minutes), then call connect_provider again.` });
    });

  tool('browse_folder', 'List the subfolders and a page of assets of a folder ("root" for the top level).',
    z.object({ provider: providerArg, folderId: idArg('folder id; "root" for the top').default('root'), ...listArgs }).strict(),
    async (a) => {
      const dam = await session(a.provider);
      const page = await ops.browse(dam, a.folderId, listParams(a));
      return pageResult({ id: page.id, name: page.name, ...compactPage(page) }, page.assets, a.thumbnails);
    });

  tool('search_assets', 'Keyword search over asset names and metadata, optionally within a folder and with filters from a previous result.',
    z.object({ provider: providerArg, query: z.string().max(1024).optional().describe('keywords; empty lists everything'), parentId: idArg('limit to this folder and its subfolders').optional(), ...listArgs }).strict(),
    async (a) => {
      const dam = await session(a.provider);
      const page = await ops.search(dam, { query: a.query, parentId: a.parentId }, listParams(a));
      return pageResult(compactPage(page), page.assets, a.thumbnails);
    });

  tool('search_by_image', 'Find visually similar assets, from an image URL (http/https or a data: URI) or from an asset of the library.',
    z.object({ provider: providerArg, imageUrl: z.string().min(1).max(30_000_000).optional().describe('http(s) URL or data:image/...;base64 URI'), assetId: idArg('use this asset as the reference image').optional(), ...listArgs }).strict()
      .refine((a) => (a.imageUrl === undefined) !== (a.assetId === undefined), { message: 'give exactly one of imageUrl or assetId' }),
    async (a) => {
      const dam = await session(a.provider);
      let reference = a.imageUrl;
      if (a.assetId !== undefined) {
        const asset = await ops.asset(dam, a.assetId, {});
        reference = asset.downloadUrl ?? asset.thumbnailUrl;
        if (!reference) throw integrationError('integration-not-available', dam.providerId, `asset ${a.assetId} has no image to search with`);
      }
      const page = await ops.searchByImage(dam, reference!, listParams(a));
      return pageResult(compactPage(page), page.assets, a.thumbnails);
    });

  tool('get_asset', 'One asset with its metadata (title, caption, keywords, EXIF/IPTC/XMP) and its renditions.',
    z.object({ provider: providerArg, assetId: idArg('asset id'), uiLocale: z.enum(UI_LOCALES).optional(), timeZone: listArgs.timeZone, thumbnails: listArgs.thumbnails }).strict(),
    async (a) => {
      const dam = await session(a.provider);
      const asset = await ops.asset(dam, a.assetId, { uiLocale: a.uiLocale, timeZone: a.timeZone });
      return pageResult({ asset: prune(asset) }, [asset], a.thumbnails);
    });

  tool('list_versions', 'The version history of an asset, newest first.',
    z.object({ provider: providerArg, assetId: idArg('asset id'), withMaster: z.boolean().optional().describe('include the current version'), uiLocale: z.enum(UI_LOCALES).optional() }).strict(),
    async (a) => {
      const dam = await session(a.provider);
      const list = await ops.versions(dam, a.assetId, { withMaster: a.withMaster, uiLocale: a.uiLocale });
      return json({ id: list.id, name: list.name, versions: list.versions.map(compactAsset) });
    });

  tool('get_download_link', 'A signed, expiring download link for an asset\'s original or one of its renditions, optionally of an earlier version.',
    z.object({ provider: providerArg, assetId: idArg('asset id'), version: z.number().int().min(1).optional(), rendition: z.string().min(1).max(64).optional().describe('rendition id from get_asset\'s conversions; absent: the original') }).strict(),
    async (a) => {
      const dam = await session(a.provider);
      let asset: Asset = await ops.asset(dam, a.assetId, {});
      if (a.version !== undefined && a.version !== asset.version) {
        const list = await ops.versions(dam, a.assetId, { withMaster: true });
        const v = list.versions.find((x) => x.version === a.version);
        if (!v) throw integrationError('integration-not-found', dam.providerId, `asset ${a.assetId} has no version ${a.version}`);
        asset = v;
      }
      let url = asset.downloadUrl;
      if (a.rendition !== undefined) {
        const c = asset.conversions?.find((x) => x.id === a.rendition);
        if (!c) throw integrationError('integration-not-available', dam.providerId, `asset ${a.assetId} has no rendition ${a.rendition}; available: ${(asset.conversions ?? []).map((x) => x.id).join(', ') || 'none'}`);
        url = c.url;
      }
      if (!url) throw integrationError('integration-not-available', dam.providerId, `asset ${a.assetId} has no download`);
      return json({ assetId: asset.id, name: asset.name, version: asset.version, rendition: a.rendition ?? 'original', url, expiresAt: expiryOf(url) });
    });

  registerWriteTools({ tool, session }, ctx);

  async function pageResult(body: Record<string, unknown>, assets: Asset[], thumbnails: boolean | undefined): Promise<CallToolResult> {
    const result = json(body);
    if (thumbnails === false) return result;
    for (const a of assets.slice(0, MAX_THUMBNAILS)) {
      if (!a.thumbnailUrl) continue;
      try {
        // The same resolution as a search-by-image reference: a signed hub URL read directly.
        const bytes = await ops.imageBytes(a.thumbnailUrl);
        const mimeType = imageType(bytes);
        if (mimeType) result.content.push({ type: 'image', data: bytes.toString('base64'), mimeType }, { type: 'text', text: `thumbnail of ${a.id}` });
      } catch {
        // A missing thumbnail does not fail the listing; its URL is still in the JSON.
      }
    }
    return result;
  }
}


export function errorResult(e: HubError): CallToolResult {
  const error: Record<string, unknown> = { code: e.code, source: e.source, status: e.status, message: e.message };
  if (e.details) error.details = e.details;
  if (e.source === 'integration') error.provider = e.provider ?? 'unknown';
  const who = e.source === 'hub' ? 'damhub' : `the asset library (${e.provider ?? 'unknown'})`;
  return { isError: true, content: [{ type: 'text', text: JSON.stringify({ error, refusedBy: who }) }], structuredContent: { error, refusedBy: who } };
}

function compactPage(p: AssetPage) {
  const out: Record<string, unknown> = {
    totalAssetsCount: p.totalAssetsCount,
    folders: p.folders.map((f) => ({ id: f.id, name: f.name })),
    assets: p.assets.map(compactAsset),
  };
  if (p.filters.length) out.filters = p.filters.map((f) => ({ id: f.id, name: f.name, options: f.options.map((o) => ({ id: o.id, name: o.name, count: o.count, isActive: o.isActive })) }));
  if (p.more !== undefined) out.more = p.more;
  return out;
}



function expiryOf(url: string): number | undefined {
  try {
    const exp = new URL(url).searchParams.get('exp');
    return exp ? Number(exp) * 1000 : undefined;
  } catch {
    return undefined;
  }
}

function imageType(b: Buffer): string | null {
  if (b[0] === 0xff && b[1] === 0xd8) return 'image/jpeg';
  if (b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
  if (b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP') return 'image/webp';
  if (b.subarray(0, 4).toString('latin1') === 'GIF8') return 'image/gif';
  return null;
}
