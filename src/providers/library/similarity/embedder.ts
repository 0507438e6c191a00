/**
 * The optional semantic embedder of search by image: a CLIP-style ONNX image model run by
 * onnxruntime-node (an optional dependency, imported only when a model is configured). Nothing is
 * downloaded: the model is a local file named by the configuration.
 *
 * Model contract (docs/image-search.md):
 * - exactly one input, a float32 tensor [N, 3, H, W] (NCHW, RGB); N may be 1 or symbolic, H and W
 *   are read from the model (symbolic sizes default to 224);
 * - pixels are scaled to 0..1 and normalised with CLIP's per-channel mean and std;
 * - the embedding is the output named `image_embeds` or `embeds` if there is one, otherwise the
 *   first output, of shape [1, D] or [D] (D ≥ 2).
 *
 * Images are decoded once by sharp (EXIF orientation, alpha flattened on white), resized to cover
 * H × W and centre-cropped (CLIP's own preprocessing), and the output is L2-normalised and stored
 * as int8 (round(x·127)), like the built-in descriptors: the cosine is the int8 dot / 127².
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import sharp from 'sharp';
import type { DecodeLimits } from './descriptor.js';
import { SCALE } from './descriptor.js';
import type { OutputSpec } from '../../../images/jobs.js';

/** CLIP's preprocessing constants (openai/clip, and the Hugging Face CLIPImageProcessor). */
export const CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073] as const;
export const CLIP_STD = [0.26862954, 0.26130258, 0.27577711] as const;
const DEFAULT_SIZE = 224;
const PREFERRED_OUTPUTS = ['image_embeds', 'embeds'];

/** A configured model that cannot be used: the hub refuses to start with this message. */
export class EmbedderError extends Error {}

// Minimal structural types of the onnxruntime-node API used here (the package is optional).
interface OrtTensor { data: unknown; dims: readonly number[]; type: string }
interface OrtValueMetadata { name: string; isTensor: boolean; type?: string; shape?: readonly (number | string)[] }
interface OrtSession {
  inputNames: readonly string[];
  outputNames: readonly string[];
  inputMetadata?: readonly OrtValueMetadata[];
  run(feeds: Record<string, OrtTensor>): Promise<Record<string, OrtTensor>>;
  release(): Promise<void>;
}
interface Ort {
  InferenceSession: { create(model: Uint8Array, opts?: Record<string, unknown>): Promise<OrtSession> };
  Tensor: new (type: 'float32', data: Float32Array, dims: readonly number[]) => OrtTensor;
}

export class ImageEmbedder {
  private constructor(
    private readonly ort: Ort,
    private readonly session: OrtSession,
    /** SHA-256 (16 hex digits) of the model file: stored embeddings are keyed by it. */
    readonly modelId: string,
    readonly modelPath: string,
    private readonly input: string,
    private readonly output: string,
    readonly width: number,
    readonly height: number,
    /** Components of an embedding (the model's output size). */
    readonly dim: number,
  ) {}

  /** Loads and checks a model; every failure is an EmbedderError naming the file and the cause. */
  static async load(modelPath: string, opts: { threads?: number } = {}): Promise<ImageEmbedder> {
    const fail = (why: string) => new EmbedderError(`image model ${modelPath}: ${why}`);
    let bytes: Buffer;
    try {
      bytes = fs.readFileSync(modelPath);
    } catch (e) {
      throw fail(`cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
    let ort: Ort;
    try {
      // A variable specifier: the optional package is neither needed to build nor loaded without a model.
      const name = 'onnxruntime-node';
      // ONNX Runtime (1.29 and later) starts a telemetry uploader on Linux and macOS too: it
      // writes a device id under $HOME/.cache/Microsoft and sends usage events to Microsoft when
      // it finds a CA bundle. A self-hosted hub sends nothing anywhere unasked. The library reads
      // the switch when it initialises, so it is set before the import (an operator's own value
      // of ORT_DISABLE_TELEMETRY is left as it is).
      process.env.ORT_DISABLE_TELEMETRY ??= '1';
      const mod = (await import(name)) as Ort & { default?: Ort };
      ort = mod.InferenceSession ? mod : mod.default!;
    } catch (e) {
      throw fail(`onnxruntime-node, an optional dependency, is not installed or cannot load (${(e as Error).message.split('\n')[0]}); run npm install, or unset the model to use the built-in descriptors`);
    }
    let session: OrtSession;
    try {
      session = await ort.InferenceSession.create(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length), {
        executionProviders: ['cpu'],
        intraOpNumThreads: opts.threads ?? 1,
        interOpNumThreads: 1,
        graphOptimizationLevel: 'all',
      });
    } catch (e) {
      throw fail(`not a valid ONNX model (${(e as Error).message.split('\n')[0]})`);
    }
    try {
      if (session.inputNames.length !== 1) throw fail(`expected one image input, the model has ${session.inputNames.length} (${session.inputNames.join(', ')})`);
      const input = session.inputNames[0]!;
      const meta = session.inputMetadata?.find((m) => m.name === input);
      const shape = meta?.shape;
      if (!meta || !meta.isTensor || (meta.type && meta.type !== 'float32') || !shape || shape.length !== 4) {
        throw fail(`the input ${input} must be a float32 tensor [N, 3, H, W], it is ${meta?.type ?? '?'} [${shape?.join(', ') ?? '?'}]`);
      }
      const dimOf = (d: number | string | undefined) => (typeof d === 'number' && d > 0 ? d : DEFAULT_SIZE);
      if (shape[1] !== 3) throw fail(`the input ${input} must have 3 channels (NCHW RGB), its shape is [${shape.join(', ')}]`);
      if (typeof shape[0] === 'number' && shape[0] !== 1 && shape[0] > 0) throw fail(`the input ${input} must take a batch of 1, its shape is [${shape.join(', ')}]`);
      const height = dimOf(shape[2]), width = dimOf(shape[3]);
      if (height > 1024 || width > 1024) throw fail(`input size ${width}×${height} is larger than 1024×1024`);
      const output = PREFERRED_OUTPUTS.find((o) => session.outputNames.includes(o)) ?? session.outputNames[0];
      if (!output) throw fail('the model has no output');
      const probe = new ImageEmbedder(ort, session, createHash('sha256').update(bytes).digest('hex').slice(0, 16), modelPath, input, output, width, height, 0);
      // One inference on a grey image: proves the model runs and tells the embedding size.
      const raw = await probe.infer(new Float32Array(3 * width * height));
      if (raw.length < 2) throw fail(`the output ${output} has ${raw.length} component(s); an embedding vector is expected`);
      return new ImageEmbedder(ort, session, probe.modelId, modelPath, input, output, width, height, raw.length);
    } catch (e) {
      await session.release().catch(() => undefined);
      if (e instanceof EmbedderError) throw e;
      throw fail(`cannot be run (${(e as Error).message.split('\n')[0]})`);
    }
  }

  /** The decode the model needs (resized to cover W × H, centre-cropped): made by the image pool. */
  get decodeSpec(): OutputSpec {
    return { width: this.width, height: this.height, fit: 'cover' };
  }

  /**
   * The int8 embedding of an image decoded in THIS process: for trusted inputs and benchmarks.
   * The hub decodes untrusted images in its image pool (`decodeSpec`) and calls embedDecoded.
   */
  async embed(image: Buffer | string, limits: DecodeLimits): Promise<Int8Array> {
    const { data } = await sharp(image, { limitInputPixels: limits.limitInputPixels, failOn: limits.failOn })
      .rotate()
      .flatten({ background: '#ffffff' })
      .resize(this.width, this.height, { fit: 'cover', position: 'centre', kernel: 'cubic' })
      .removeAlpha()
      .toColourspace('srgb')
      .raw()
      .toBuffer({ resolveWithObject: true });
    return this.embedDecoded(data);
  }

  /** The int8 embedding of a `decodeSpec` decode (W × H RGB), L2-normalised × 127. */
  async embedDecoded(data: Uint8Array): Promise<Int8Array> {
    const { width, height } = this;
    if (data.length !== width * height * 3) throw new Error(`unexpected decode of ${data.length} bytes, ${width}×${height}×3 expected`);
    const plane = width * height;
    const chw = new Float32Array(3 * plane);
    for (let i = 0, p = 0; i < plane; i++, p += 3) {
      for (let c = 0; c < 3; c++) chw[c * plane + i] = (data[p + c]! / 255 - CLIP_MEAN[c]!) / CLIP_STD[c]!;
    }
    const raw = await this.infer(chw);
    if (raw.length !== this.dim) throw new Error(`the model returned ${raw.length} components, ${this.dim} expected`);
    return quantise(raw);
  }

  private async infer(chw: Float32Array): Promise<Float32Array> {
    const out = await this.session.run({ [this.input]: new this.ort.Tensor('float32', chw, [1, 3, this.height, this.width]) });
    const t = out[this.output];
    if (!t || !(t.data instanceof Float32Array)) throw new Error(`the output ${this.output} is not a float32 tensor`);
    const batch = t.dims.length > 1 ? t.dims[0] : 1;
    if (batch !== 1 || t.dims.length > 2) throw new Error(`the output ${this.output} must be [1, D] or [D], it is [${t.dims.join(', ')}]`);
    return t.data;
  }

  async close(): Promise<void> {
    await this.session.release().catch(() => undefined);
  }
}

/** L2-normalises a float vector and stores it as int8 (round(x·127)); a zero vector stays zero. */
export function quantise(v: ArrayLike<number>): Int8Array {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i]! * v[i]!;
  const n = Math.sqrt(s);
  const out = new Int8Array(v.length);
  if (!(n > 1e-12) || !Number.isFinite(n)) return out;
  for (let i = 0; i < v.length; i++) out[i] = Math.max(-127, Math.min(127, Math.round((v[i]! / n) * SCALE)));
  return out;
}
