/**
 * Builds tiny ONNX image models for the embedder tests, written as protobuf by hand (the ONNX
 * schema's field numbers, onnx/onnx.proto), so no model is downloaded and no protobuf library
 * is needed.
 *
 * `meanColourModel(size)`: input `pixel_values` float32 [1,3,size,size] → GlobalAveragePool →
 * Flatten → MatMul with a fixed [3,dim] matrix → output `embeds` [1,dim]. Its embedding of an
 * image is a linear function of the image's mean normalised colour, so a test can compute the
 * expected vector independently and build images that only the model finds alike.
 */

const enc = new TextEncoder();

function varint(n: number | bigint): number[] {
  let v = BigInt(n);
  if (v < 0n) v += 1n << 64n;
  const out: number[] = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v) b |= 0x80;
    out.push(b);
  } while (v);
  return out;
}

type Field = number[];
const key = (field: number, wire: number) => varint((field << 3) | wire);
const int = (field: number, v: number): Field => [...key(field, 0), ...varint(v)];
const bytes = (field: number, b: Uint8Array | number[]): Field => [...key(field, 2), ...varint(b.length), ...b];
const str = (field: number, s: string): Field => bytes(field, enc.encode(s));
const msg = (field: number, ...parts: Field[]): Field => bytes(field, parts.flat());

const FLOAT = 1;

function tensorType(shape: (number | string)[]): Field {
  // TypeProto { tensor_type = 1 { elem_type = 1, shape = 2 { dim = 1 { dim_value = 1 | dim_param = 2 } } } }
  const dims = shape.map((d) => msg(1, typeof d === 'number' ? int(1, d) : str(2, d)));
  return msg(2, msg(1, int(1, FLOAT), msg(2, ...dims)));
}

const valueInfo = (field: number, name: string, shape: (number | string)[]): Field => msg(field, str(1, name), tensorType(shape));

function node(op: string, inputs: string[], outputs: string[], attrs: Field[] = []): Field {
  return msg(1, ...inputs.map((i) => str(1, i)), ...outputs.map((o) => str(2, o)), str(3, `${op}_0`), str(4, op), ...attrs);
}

function floatTensor(name: string, dims: number[], values: number[]): Field {
  const raw = new Uint8Array(new Float32Array(values).buffer);
  return msg(5, ...dims.map((d) => int(1, d)), int(2, FLOAT), str(8, name), bytes(9, raw));
}

export interface TinyModel {
  bytes: Buffer;
  size: number;
  dim: number;
  /** The fixed [3, dim] matrix, row-major. */
  weights: number[];
}

export function meanColourModel(opts: { size?: number; weights?: number[][]; batch?: number | string; channels?: number } = {}): TinyModel {
  const size = opts.size ?? 16;
  const w = opts.weights ?? [
    [1, 0, 0, 0.5],
    [0, 1, 0, 0.5],
    [0, 0, 1, 0.5],
  ];
  const dim = w[0]!.length;
  const flat = w.flat();
  const batch = opts.batch ?? 1;
  const channels = opts.channels ?? 3;
  if (w.length !== channels) throw new Error('one row of weights per channel');
  const graph = [
    node('GlobalAveragePool', ['pixel_values'], ['pooled']),
    node('Flatten', ['pooled'], ['flat'], [msg(5, str(1, 'axis'), int(3, 1), int(20, 2))]),
    node('MatMul', ['flat', 'W'], ['embeds']),
    str(2, 'tiny-mean-colour'),
    floatTensor('W', [channels, dim], flat),
    valueInfo(11, 'pixel_values', [batch, channels, size, size]),
    valueInfo(12, 'embeds', [batch, dim]),
  ];
  const model = [
    int(1, 8), // ir_version
    str(2, 'damhub-test'), // producer_name
    msg(7, ...graph),
    msg(8, str(1, ''), int(2, 13)), // opset_import: default domain, opset 13
  ];
  return { bytes: Buffer.from(model.flat()), size, dim, weights: flat };
}
