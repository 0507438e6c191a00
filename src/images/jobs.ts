/** The messages between the image pool (pool.ts) and its child processes (worker.ts). */

/** One raw RGB output of a decode: `width × height × 3` bytes. */
export interface OutputSpec {
  width: number;
  height: number;
  /** sharp's fit: 'fill' stretches (descriptors), 'cover' crops the centre (CLIP-style models). */
  fit: 'fill' | 'cover';
}

export type WorkerJob =
  | {
      op: 'analyse';
      /** Untrusted bytes, or the path of a file. */
      input: Uint8Array | string;
      outputs: OutputSpec[];
      /** Decode budget in pixel-equivalents (budget.ts). */
      budget: number;
      /** Largest declared width × height. */
      maxPixels: number;
      failOn: 'none' | 'truncated' | 'error' | 'warning';
    }
  | {
      op: 'render';
      source: string;
      budget: number;
      /** Largest declared width × height; the pool lowers it to its own limit (ImagePoolOptions.maxPixels). */
      maxPixels?: number;
      preview: { file: string; size: number; quality: number };
      thumbnail: { file: string; size: number; quality: number };
    }
  | {
      /** sharp's metadata() of a library file: the header only, but a hostile file (a TIFF with a
       * million IFDs) can still make even that slow, so it runs here too. */
      op: 'probe';
      source: string;
    }
  | { op: 'ping' };

export interface AnalyseResult {
  format: string;
  width: number;
  height: number;
  /** One raw RGB buffer per requested output, in order. */
  outputs: Buffer[];
}

export type JobReply =
  | { id: number; ok: true; result: unknown }
  | { id: number; ok: false; kind: 'over-budget' | 'undecodable' | 'unsupported' | 'out-of-memory' | 'failed'; message: string };

/**
 * A search-by-image reference decoded once by the hub (content/image-reference.ts): its bytes (for
 * a connector that forwards them to its DAM), its header, and the raw outputs the provider asked
 * for with Provider.referenceOutputs(), so the provider never decodes it again.
 */
export interface ReferenceImage {
  bytes: Buffer;
  format: string;
  width: number;
  height: number;
  /** Raw RGB (width × height × 3 of each OutputSpec), in the order asked. */
  outputs: Buffer[];
}
