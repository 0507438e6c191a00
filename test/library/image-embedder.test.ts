/**
 * The optional semantic embedder of search by image, with tiny ONNX models the test builds itself
 * (helpers/onnx-model.ts: mean colour → fixed linear map) and runs through onnxruntime-node:
 * embeddings computed at indexing and stored per asset and model, equal to an independent
 * computation of the model's output; a search by image ranked by them; a model change rebuilding
 * them; a missing, corrupt or unsuitable model stopping the start with a clear error; and nothing
 * changed without a model.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import type { LibraryIndex } from '../../src/providers/library/index/sqlite.js';
import { assetIdFor } from '../../src/providers/library/scanner.js';
import { CLIP_MEAN, CLIP_STD, EmbedderError, ImageEmbedder, quantise } from '../../src/providers/library/similarity/embedder.js';
import { cosine } from '../../src/providers/library/similarity/descriptor.js';
import { VectorIndex } from '../../src/providers/library/similarity/vector-index.js';
import { startTestHub, tempDir } from '../helpers/hub.js';
import { startLibraryHub, type LibraryHarness, libraryOf } from '../helpers/library.js';
import { meanColourModel, type TinyModel } from '../helpers/onnx-model.js';
import { sceneJpeg } from '../helpers/scenes.js';
import { REPO_ROOT, startServer } from '../helpers/process.js';

const api = '/api/v1';
const dataUri = (b: Buffer, type = 'image/png') => `data:${type};base64,${b.toString('base64')}`;
const solidPng = (rgb: [number, number, number], w = 300, h = 200) =>
  sharp({ create: { width: w, height: h, channels: 3, background: { r: rgb[0], g: rgb[1], b: rgb[2] } } }).png().toBuffer();

/** The model's embedding of a flat colour, computed here from its definition, not by running it. */
function expectedEmbedding(model: TinyModel, rgb: [number, number, number]): Int8Array {
  const x = rgb.map((c, i) => (c / 255 - CLIP_MEAN[i]!) / CLIP_STD[i]!);
  const out = Array.from({ length: model.dim }, (_, j) => x.reduce((s, xc, c) => s + xc * model.weights[c * model.dim + j]!, 0));
  return quantise(out);
}

const COLOURS: Record<string, [number, number, number]> = {
  'Flat/red.png': [220, 30, 30],
  'Flat/green.png': [30, 200, 40],
  'Flat/blue.png': [20, 40, 210],
  'Flat/orange.png': [240, 140, 20],
  'Flat/grey.png': [128, 128, 128],
};

let files: Record<string, Buffer>;
let query: Buffer;
let queryMean: [number, number, number];
let modelDir: string;
let model: TinyModel;
let modelPath: string;

before(async () => {
  modelDir = tempDir('damhub-model-');
  model = meanColourModel({ size: 16 });
  modelPath = path.join(modelDir, 'tiny.onnx');
  fs.writeFileSync(modelPath, model.bytes);
  // The query: a generated scene pushed towards red. Library: its greyscale copy (same structure,
  // other colours), a flat image of its mean colour (same colour, no structure), flat colours.
  query = await sharp(await sceneJpeg(5)).linear([1, 0.45, 0.45], [70, 0, 0]).png().toBuffer();
  const stats = await sharp(query).resize(16, 16, { fit: 'cover' }).removeAlpha().stats();
  queryMean = stats.channels.slice(0, 3).map((c) => Math.round(c.mean)) as [number, number, number];
  files = {
    'Scenes/grey-copy.png': await sharp(query).greyscale().toColourspace('srgb').png().toBuffer(),
    'Scenes/same-colour.png': await solidPng(queryMean),
    'Scenes/other-scene.jpg': await sceneJpeg(9),
  };
  for (const [rel, rgb] of Object.entries(COLOURS)) files[rel] = await solidPng(rgb);
});

describe('with a model', () => {
  let lib: LibraryHarness;
  before(async () => {
    lib = await startLibraryHub(files, { config: { imageModel: modelPath, imageModelWeight: 1 } });
  });
  after(() => lib.t.close());

  const search = (ref: string, q = '') => lib.t.app.inject({ method: 'POST', url: `${api}/assets/search${q}`, headers: lib.headers, payload: { dataBase64: ref } });

  test('the model is loaded with its input size and output dimension read from the model', () => {
    const e = libraryOf(lib.t.hub).similarity.embedder!;
    assert.ok(e);
    assert.equal(e.width, 16);
    assert.equal(e.height, 16);
    assert.equal(e.dim, model.dim);
    assert.match(e.modelId, /^[0-9a-f]{16}$/);
  });

  test('every image gets an embedding, stored per asset and model, equal to the model computed independently', () => {
    const sim = libraryOf(lib.t.hub).similarity;
    const db = (libraryOf(lib.t.hub).index as LibraryIndex).db;
    const rows = db.prepare('SELECT asset_id, model, vec FROM similarity_embeddings').all() as { asset_id: string; model: string; vec: Buffer }[];
    assert.equal(rows.length, Object.keys(files).length);
    assert.ok(rows.every((r) => r.model === sim.embedder!.modelId && r.vec.length === model.dim));
    assert.equal(sim.embeddings!.size, Object.keys(files).length);
    for (const [rel, rgb] of Object.entries(COLOURS)) {
      const got = sim.embeddings!.get(assetIdFor(rel));
      assert.ok(got, rel);
      const want = expectedEmbedding(model, rgb);
      // The preview is a JPEG of the flat colour: a channel may move by a level or two.
      for (let i = 0; i < model.dim; i++) assert.ok(Math.abs(got[i]! - want[i]!) <= 3, `${rel}: component ${i} is ${got[i]}, expected ${want[i]}`);
    }
  });

  test('a search by image ranks by the model: the flat image of the same mean colour comes first', async () => {
    const res = await search(dataUri(query));
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    const ids = body.assets.map((a: { id: string }) => a.id);
    assert.equal(ids[0], assetIdFor('Scenes/same-colour.png'));
    assert.ok(body.totalAssetsCount >= 1);
    // Flat colours are ordered by their model cosine with the query, as computed independently.
    const qe = expectedEmbedding(model, queryMean);
    const cos = (a: Int8Array) => a.reduce((s, v, i) => s + v * qe[i]!, 0) / (127 * 127);
    const flat = Object.keys(COLOURS).filter((rel) => cos(expectedEmbedding(model, COLOURS[rel]!)) >= 0.62);
    const expectOrder = flat.sort((a, b) => cos(expectedEmbedding(model, COLOURS[b]!)) - cos(expectedEmbedding(model, COLOURS[a]!))).map(assetIdFor);
    assert.ok(expectOrder.length >= 1, 'some flat colours are near the query in the model space');
    assert.deepEqual(ids.filter((id: string) => expectOrder.includes(id)), expectOrder);
  });

  test('pages of a model-ranked search neither repeat nor skip', async () => {
    const first = (await search(dataUri(query))).json();
    const seen: string[] = [];
    let more: string | undefined;
    do {
      const r = await search(dataUri(query), `?size=1${more ? `&more=${encodeURIComponent(more)}` : ''}`);
      assert.equal(r.statusCode, 200, r.body);
      const b = r.json();
      seen.push(...b.assets.map((a: { id: string }) => a.id));
      assert.equal(b.totalAssetsCount, first.totalAssetsCount);
      more = b.more;
    } while (more && seen.length < 50);
    assert.deepEqual(seen, first.assets.map((a: { id: string }) => a.id));
  });

  test('a changed model file replaces the stored embeddings', async () => {
    const lp = libraryOf(lib.t.hub);
    const other = meanColourModel({ size: 8, weights: [[0, 1, 0], [0, 0, 1], [1, 0, 0]] });
    const otherPath = path.join(modelDir, 'other.onnx');
    fs.writeFileSync(otherPath, other.bytes);
    const oldId = lp.similarity.embedder!.modelId;
    const e = await ImageEmbedder.load(otherPath);
    assert.notEqual(e.modelId, oldId);
    // A second ImageSimilarity over the same database, as a restart with the new model would make.
    const { ImageSimilarity } = await import('../../src/providers/library/similarity/index.js');
    const sim = new ImageSimilarity(lp.index.descriptors(), {
      preview: (id, version) => (lp.renditions.has(id, version, 'preview') ? lp.renditions.file(id, version, 'preview') : null),
      blob: (blob) => lp.scanner.blobPath(blob),
    }, lib.t.clock);
    await sim.useEmbedder(e, 1);
    await sim.refresh();
    const rows = (lp.index as LibraryIndex).db.prepare('SELECT model, vec FROM similarity_embeddings').all() as { model: string; vec: Buffer }[];
    assert.equal(rows.length, Object.keys(files).length);
    assert.ok(rows.every((r) => r.model === e.modelId && r.vec.length === 3));
    const got = sim.embeddings!.get(assetIdFor('Flat/blue.png'))!;
    const want = expectedEmbedding(other, COLOURS['Flat/blue.png']!);
    for (let i = 0; i < 3; i++) assert.ok(Math.abs(got[i]! - want[i]!) <= 3, `component ${i} is ${got[i]}, expected ${want[i]}`);
    await sim.close();
  });
});

describe('with a model, for an account limited to a folder', () => {
  let lib: LibraryHarness;
  before(async () => {
    lib = await startLibraryHub(files, { folders: ['Flat'], config: { imageModel: modelPath, imageModelWeight: 1 } });
  });
  after(() => lib.t.close());

  test('no hit and no count comes from outside the folder', async () => {
    const res = await lib.t.app.inject({ method: 'POST', url: `${api}/assets/search`, headers: lib.headers, payload: { dataBase64: dataUri(query) } });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    const flat = new Set(Object.keys(COLOURS).map(assetIdFor));
    assert.ok(body.assets.length >= 1);
    assert.ok(body.assets.every((a: { id: string }) => flat.has(a.id)), JSON.stringify(body.assets.map((a: { id: string }) => a.id)));
    assert.equal(body.totalAssetsCount, body.assets.length);
  });
});

describe('without a model', () => {
  let lib: LibraryHarness;
  before(async () => {
    lib = await startLibraryHub(files);
  });
  after(() => lib.t.close());

  test('nothing is loaded or stored, and the built-in descriptors rank alone', async () => {
    const lp = libraryOf(lib.t.hub);
    assert.equal(lp.similarity.embedder, null);
    assert.equal(lp.similarity.embeddings, null);
    const table = (lp.index as LibraryIndex).db.prepare("SELECT name FROM sqlite_master WHERE name = 'similarity_embeddings'").get();
    assert.equal(table, undefined);
    const res = await lib.t.app.inject({ method: 'POST', url: `${api}/assets/search`, headers: lib.headers, payload: { dataBase64: dataUri(query) } });
    assert.equal(res.statusCode, 200, res.body);
    const ids = res.json().assets.map((a: { id: string }) => a.id);
    // By the descriptors the greyscale copy (same structure) is the closest; with the model it is
    // the flat image of the same mean colour (previous suite).
    assert.equal(ids[0], assetIdFor('Scenes/grey-copy.png'));
    assert.notEqual(ids[0], assetIdFor('Scenes/same-colour.png'));
  });
});

test('the blended score: (1 − w)·(descriptor score) + w·(model cosine), the cut-off applied to it', () => {
  const unit = (xs: number[]) => quantise(xs);
  const phash = (b: number) => new Uint8Array(8).fill(b);
  const index = new VectorIndex();
  // Descriptor cosines with the query: a 1.0, b ≈ 0.6, c ≈ 0.0; hashes far apart (no boost) but for a.
  const q = { vector: unit([1, 0, ...new Array(62).fill(0)]), phash: phash(0) };
  index.put('a', '', { vector: unit([1, 0, ...new Array(62).fill(0)]), phash: phash(0xff) });
  index.put('b', '', { vector: unit([0.6, 0.8, ...new Array(62).fill(0)]), phash: phash(0xff) });
  index.put('c', '', { vector: unit([0, 1, ...new Array(62).fill(0)]), phash: phash(0xff) });
  const model: Record<string, number | null> = { a: 0.2, b: 1, c: null };
  const run = (weight: number) => index.query(q, { k: 10, after: null, cutoff: 0.6, folderAllowed: null, blend: { weight, embeddingScore: (id) => model[id]! } });
  const cosB = cosine(q.vector, unit([0.6, 0.8, ...new Array(62).fill(0)])); // 76/127 after int8 rounding
  // w = 0.5: a = 0.5·1 + 0.5·0.2 = 0.6, b = 0.5·0.6 + 0.5·1 = 0.8, c has no embedding: 0 (below).
  const half = run(0.5);
  assert.deepEqual(half.hits.map((h) => h.id), ['b', 'a']);
  assert.ok(Math.abs(half.hits[0]!.score - (0.5 * cosB + 0.5)) < 1e-9);
  assert.ok(Math.abs(half.hits[1]!.score - (0.5 * 1 + 0.5 * 0.2)) < 1e-9);
  assert.equal(half.total, 2);
  // w = 1: the model alone; a (0.2) drops below the cut-off, c keeps its descriptor score (0).
  const only = run(1);
  assert.deepEqual(only.hits.map((h) => h.id), ['b']);
  assert.equal(only.hits[0]!.score, 1);
  // No blend: the descriptors alone (b's cosine ≈ 0.6 is at the cut-off's edge, a is 1).
  assert.equal(index.query(q, { k: 10, after: null, cutoff: 0.6, folderAllowed: null }).hits[0]!.id, 'a');
});

describe('an unusable model stops the start with a clear error', () => {
  const cases: [string, () => Buffer | null, RegExp][] = [
    ['a missing file', () => null, /image model .*missing\.onnx: cannot be read \(ENOENT\)/],
    ['a corrupt file', () => Buffer.from('this is not an ONNX model, just some bytes'), /image model .*: not a valid ONNX model/],
    ['a truncated model', () => meanColourModel().bytes.subarray(0, 60), /image model .*: not a valid ONNX model/],
    ['a model whose input is not an RGB image', () => meanColourModel({ channels: 1, weights: [[1, 0.5]] }).bytes, /must have 3 channels/],
  ];
  for (const [name, make, re] of cases) {
    test(name, async () => {
      const dir = tempDir('damhub-badmodel-');
      const file = path.join(dir, name === 'a missing file' ? 'missing.onnx' : 'model.onnx');
      const bytes = make();
      if (bytes) fs.writeFileSync(file, bytes);
      await assert.rejects(ImageEmbedder.load(file), (e: unknown) => e instanceof EmbedderError && re.test((e as Error).message));
      const root = tempDir('damhub-lib-');
      fs.writeFileSync(path.join(root, 'a.png'), await solidPng([10, 20, 30]));
      const t = await startTestHub({ config: { libraryDir: root, imageModel: file } });
      try {
        await assert.rejects(t.hub.start(), re);
      } finally {
        await t.close();
      }
    });
  }

  test('damhub serve --image-model with a corrupt file exits 1 before listening, naming the file', async () => {
    const dir = tempDir('damhub-badmodel-');
    const file = path.join(dir, 'broken.onnx');
    fs.writeFileSync(file, 'garbage');
    const lib = tempDir('damhub-lib-');
    const r = await damhub('serve', '--port', '0', '--data', path.join(dir, 'data'), '--library', lib, '--image-model', file);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /^damhub: image model .*broken\.onnx: not a valid ONNX model/);
    assert.doesNotMatch(r.stdout, /listening/);
  });
});

test('damhub serve with a model sends no telemetry: onnxruntime writes no device id under $HOME', async () => {
  // ONNX Runtime's uploader, on unless ORT_DISABLE_TELEMETRY=1, first persists a device id in
  // $HOME/.cache/Microsoft/DeveloperTools/.onnxruntime; no id, no uploader.
  const home = tempDir('damhub-home-');
  const lib = tempDir('damhub-lib-');
  fs.writeFileSync(path.join(lib, 'a.png'), await solidPng([200, 40, 40]));
  // Unset (undefined is left out of a child's environment): the hub's own default is under test.
  const env = { HOME: home, XDG_CACHE_HOME: undefined, ORT_DISABLE_TELEMETRY: undefined };
  const hub = await startServer(['--data', path.join(home, 'data'), '--library', lib, '--image-model', modelPath], env);
  try {
    const ready = await fetch(`${hub.url}/readyz`);
    assert.equal(ready.status, 200, 'the hub started with the model');
  } finally {
    assert.equal(await hub.stop(), 0, hub.output());
  }
  assert.deepEqual(fs.readdirSync(home).filter((f) => f !== 'data'), [], 'nothing in $HOME but the data directory');
});

const ROOT = REPO_ROOT;
function damhub(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env };
    for (const k of Object.keys(env)) if (k.startsWith('DAMHUB_')) delete env[k];
    const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'damhub.js'), ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
