/**
 * Search-by-image quality: recall of the original among edited copies.
 *
 * Builds a reference set of generated scenes (test/helpers/scenes.ts: gradients, turbulence
 * texture, shapes, a caption; seeded, so every run is identical; no photographs ship on this
 * machine), indexes them the way the library does (descriptor of the 1024 px q82 preview), then
 * queries with each edit (resize 50%, crop 10%, JPEG q35, brightness +15%, blur σ2.5, rotate 3°)
 * through the same VectorIndex the hub uses, and reports recall@1 and recall@10 of the original,
 * and how often the original scores at or above the production cut-off. Three harder edits (25%
 * crop, 8° rotation, everything combined) are reported too, outside the targets.
 *
 *   npm run bench:image-quality [-- --scenes 300]        (smoke check: --scenes 5)
 *
 * Ends with RESULT lines (bench/lib.ts): recall@1 (target ≥ 0.95) and recall@10 (target ≥ 0.99)
 * per transform and overall; the stress edits and the unrelated pairs above the cut-off without a
 * target (docs/benchmarks.md records none).
 */
import { reportResults, result } from './lib.js';
import sharp from 'sharp';
import { parseArgs } from 'node:util';
import { describeImage, type Descriptor } from '../src/providers/library/similarity/descriptor.js';
import { DEFAULT_CUTOFF, VectorIndex } from '../src/providers/library/similarity/vector-index.js';
import { sceneJpeg, STRESS, transform, TRANSFORMS, type TransformName } from '../test/helpers/scenes.js';

const { values } = parseArgs({ options: { scenes: { type: 'string', default: '300' } } });
const N = Number(values.scenes);
if (!(N >= 2)) throw new Error('--scenes: at least 2 (unrelated pairs need two scenes)');
const indexing = { limitInputPixels: 268_402_689, failOn: 'none' as const };
const query = { limitInputPixels: 50_000_000, failOn: 'error' as const };

async function inBatches<T>(n: number, size: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < n; i += size) out.push(...(await Promise.all(Array.from({ length: Math.min(size, n - i) }, (_, j) => fn(i + j)))));
  return out;
}

const t0 = Date.now();
const originals = await inBatches(N, 4, (i) => sceneJpeg(i));
const index = new VectorIndex();
const refs: Descriptor[] = await inBatches(N, 4, async (i) => {
  const preview = await sharp(originals[i]!).resize(1024, 1024, { fit: 'inside', withoutEnlargement: true }).jpeg({ quality: 82 }).toBuffer();
  return describeImage(preview, indexing);
});
refs.forEach((d, i) => index.put(`scene-${String(i).padStart(4, '0')}`, '', d));
console.log(`reference set: ${N} generated scenes (640×480 / 480×640 JPEG q90), indexed in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

const rows: { t: string; r1: number; r10: number; above: number }[] = [];
let all1 = 0, all10 = 0, allAbove = 0;
async function measure(t: TransformName) {
  let r1 = 0, r10 = 0, above = 0;
  await inBatches(N, 4, async (i) => {
    const q = await describeImage(await transform(originals[i]!, t), query);
    const { hits } = index.query(q, { k: 10, after: null, cutoff: -2, folderAllowed: null });
    const rank = hits.findIndex((h) => h.id === `scene-${String(i).padStart(4, '0')}`);
    if (rank === 0) r1++;
    if (rank >= 0 && rank < 10) r10++;
    if (rank >= 0 && hits[rank]!.score >= DEFAULT_CUTOFF) above++;
  });
  return { t, r1, r10, above };
}
for (const t of TRANSFORMS) {
  const m = await measure(t);
  rows.push({ t, r1: m.r1 / N, r10: m.r10 / N, above: m.above / N });
  all1 += m.r1;
  all10 += m.r10;
  allAbove += m.above;
}
rows.push({ t: '**overall (targets)**', r1: all1 / (N * TRANSFORMS.length), r10: all10 / (N * TRANSFORMS.length), above: allAbove / (N * TRANSFORMS.length) });
const stress: typeof rows = [];
for (const t of STRESS) {
  const m = await measure(t);
  stress.push({ t: `${t} (beyond the targets)`, r1: m.r1 / N, r10: m.r10 / N, above: m.above / N });
}

// How often unrelated scenes pass the cut-off (false positives a user would page through).
let pairs = 0, falseAbove = 0;
for (let i = 0; i < Math.min(N, 100); i++) {
  const { hits, total } = index.query(refs[i]!, { k: 1, after: null, cutoff: DEFAULT_CUTOFF, folderAllowed: null });
  void hits;
  falseAbove += total - 1; // the scene itself is always above
  pairs += N - 1;
}

console.log('\n| transform | recall@1 | recall@10 | original ≥ cut-off |\n|---|---|---|---|');
for (const r of [...rows, ...stress]) console.log(`| ${r.t} | ${r.r1.toFixed(3)} | ${r.r10.toFixed(3)} | ${r.above.toFixed(3)} |`);
console.log(`\nunrelated scene pairs at or above the cut-off (${DEFAULT_CUTOFF}): ${falseAbove} of ${pairs} (${((100 * falseAbove) / pairs).toFixed(2)}%)`);
const ok1 = rows.every((r) => r.r1 >= 0.95), ok10 = rows.every((r) => r.r10 >= 0.99); // stress rows are not targets
console.log(`targets: recall@1 ≥ 0.95 on every transform: ${ok1 ? 'met' : 'NOT met'}; recall@10 ≥ 0.99: ${ok10 ? 'met' : 'NOT met'}`);
console.log(`total ${((Date.now() - t0) / 1000).toFixed(1)} s, peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`);
const slug = (t: string) => t.replace(/\*\*|\(targets\)/g, '').trim().replace(/\W+/g, '-').replace(/^-|-$/g, '');
for (const r of rows) {
  // A recall of 0 on an edit the descriptor is built for means the benchmark is broken: positive.
  result(`image-quality-recall1-${slug(r.t)}`, r.r1, 'ratio', ['>=', 0.95]);
  result(`image-quality-recall10-${slug(r.t)}`, r.r10, 'ratio', ['>=', 0.99]);
}
for (const [i, r] of stress.entries()) {
  result(`image-quality-recall1-${STRESS[i]}`, r.r1, 'ratio', null, 'non-negative');
  result(`image-quality-recall10-${STRESS[i]}`, r.r10, 'ratio', null, 'non-negative');
}
result('image-quality-unrelated-pairs-above-cutoff', (100 * falseAbove) / pairs, '%', null, 'non-negative');
reportResults();
