/**
 * One page of search by image: the query image's descriptor, the provider cursor (keyset position
 * plus a fingerprint of the query), the ranked hits mapped to assets.
 */
import { createHash } from 'node:crypto';
import { validationError } from '../../../errors.js';
import type { ListOptions } from '../../contract.js';
import type { Asset, AssetPage } from '../../model.js';
import { DESCRIPTOR_OUTPUT, describeDecoded, type Descriptor } from './descriptor.js';
import type { OutputSpec, ReferenceImage } from '../../../images/jobs.js';
import type { ImageSimilarity } from './index.js';
import type { Hit } from './vector-index.js';


interface Cursor {
  /** Fingerprint of the query descriptor: a cursor only continues the search it came from. */
  f: string;
  /** Score and id of the last hit of the previous page. */
  s: number;
  i: string;
}

export interface SearchContext {
  folderAllowed: ((folderPath: string) => boolean) | null;
  /** The assets of a page of hits, in order, in one read; those that vanished since the index was read are skipped. */
  toAssets(ids: string[]): Asset[] | Promise<Asset[]>;
}

/**
 * The decodes of the reference image a search needs, made once by the hub in its image pool
 * (content/image-reference.ts): the descriptor's, then the model's when one is configured.
 */
export function referenceOutputs(sim: ImageSimilarity): OutputSpec[] {
  return sim.embedder ? [DESCRIPTOR_OUTPUT, sim.embedder.decodeSpec] : [DESCRIPTOR_OUTPUT];
}

export async function searchByImage(sim: ImageSimilarity, image: ReferenceImage, opts: ListOptions, ctx: SearchContext): Promise<AssetPage> {
  if (opts.filters.length) throw validationError('filters are not supported by search by image');
  const embedder = sim.embedder;
  const [pixels, modelPixels] = image.outputs;
  // The hub decoded what referenceOutputs() asked for; anything else is a bug, not the client's.
  if (!pixels || (embedder && !modelPixels)) throw new Error('the reference image was not decoded for this provider (referenceOutputs)');
  const q: Descriptor = describeDecoded(pixels);
  const embedding: Int8Array | null = embedder ? await embedder.embedDecoded(modelPixels!) : null;
  const fingerprint = fingerprintOf(q, embedder?.modelId);
  const after = opts.more ? parseCursor(opts.more, fingerprint) : null;
  const { hits, total } = await sim.search(q, { k: opts.size + 1, after, folderAllowed: ctx.folderAllowed, embedding });
  const page = hits.slice(0, opts.size);
  const last = page[page.length - 1];
  const assets = await ctx.toAssets(page.map((h) => h.id));
  return {
    assets,
    folders: [],
    filters: [],
    totalAssetsCount: total,
    ...(hits.length > opts.size && last ? { more: JSON.stringify({ f: fingerprint, s: last.score, i: last.id } satisfies Cursor) } : {}),
  };
}

/** With a model, its id is part of the fingerprint: a cursor does not outlive a model change. */
export function fingerprintOf(q: Descriptor, modelId?: string): string {
  const h = createHash('sha256').update(q.vector).update(q.phash);
  if (modelId) h.update(`model:${modelId}`);
  return h.digest('base64url').slice(0, 16);
}

function parseCursor(more: string, fingerprint: string): Hit {
  let c: Cursor;
  try {
    c = JSON.parse(more) as Cursor;
  } catch {
    throw validationError('more: not a cursor of this search by image');
  }
  if (typeof c !== 'object' || c === null || typeof c.f !== 'string' || typeof c.s !== 'number' || !Number.isFinite(c.s) || typeof c.i !== 'string') {
    throw validationError('more: not a cursor of this search by image');
  }
  if (c.f !== fingerprint) throw validationError('more: the cursor belongs to another search by image; start again from the first page');
  return { score: c.s, id: c.i };
}
