import { describeImage, cosine, hamming, type Descriptor } from '../../src/providers/library/similarity/descriptor.js';
import { sceneJpeg, transform, TRANSFORMS } from '../../test/helpers/scenes.js';
const N = Number(process.argv[2] ?? 150);
const lim = { limitInputPixels: 1e8, failOn: 'none' as const };
const refs: Descriptor[] = [];
const imgs: Buffer[] = [];
for (let i = 0; i < N; i++) { const b = await sceneJpeg(i); imgs.push(b); refs.push(await describeImage(b, lim)); }
let allImp: number[] = [];
for (let i = 0; i < 40; i++) for (let j = i + 1; j < N; j++) allImp.push(cosine(refs[i]!.vector, refs[j]!.vector));
allImp.sort((a, b) => b - a);
console.log('impostor cos max', allImp[0]?.toFixed(3), 'p99.9', allImp[Math.floor(allImp.length * 0.001)]?.toFixed(3), 'p99', allImp[Math.floor(allImp.length * 0.01)]?.toFixed(3));
for (const t of TRANSFORMS) {
  let r1 = 0, r10 = 0; const genu: number[] = []; const hd: number[] = [];
  for (let i = 0; i < N; i++) {
    const q = await describeImage(await transform(imgs[i]!, t), lim);
    const scores = refs.map((r, j) => ({ j, s: cosine(q.vector, r.vector) }));
    scores.sort((a, b) => b.s - a.s);
    const rank = scores.findIndex((x) => x.j === i);
    if (rank < 1) r1++; if (rank < 10) r10++;
    genu.push(scores.find((x) => x.j === i)!.s); hd.push(hamming(q.phash, refs[i]!.phash));
  }
  genu.sort((a, b) => a - b); hd.sort((a, b) => a - b);
  console.log(t.padEnd(9), 'r@1', (r1 / N).toFixed(3), 'r@10', (r10 / N).toFixed(3), 'genuine cos min', genu[0]!.toFixed(3), 'p5', genu[Math.floor(N * 0.05)]!.toFixed(3), 'ham med', hd[N >> 1], 'p95', hd[Math.floor(N * 0.95)]);
}
