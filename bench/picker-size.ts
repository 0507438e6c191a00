/**
 * The size a browser downloads for <damhub-picker>: the minified ES module that `npm run build`
 * writes (the picker and @damhub/client in one file), raw, gzip -9 and brotli (max quality).
 * Run: npm run bench:picker-size
 * Ends with RESULT lines (bench/lib.ts): min+gzip, target ≤ 40 KB (docs/benchmarks.md); minified and
 * min+brotli without a target.
 */
import { REPO_ROOT, reportResults, result } from './lib.js';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

const TARGET_GZIP_BYTES = 40 * 1024;
const file = path.join(REPO_ROOT, 'packages', 'picker', 'dist', 'damhub-picker.js');
if (!fs.existsSync(file)) {
  process.stderr.write(`${file} is missing: run npm run build\n`);
  process.exit(1);
}
const min = fs.readFileSync(file);
const gzip = zlib.gzipSync(min, { level: 9 }).length;
const brotli = zlib.brotliCompressSync(min, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } }).length;
const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;
process.stdout.write([
  'packages/picker/dist/damhub-picker.js (minified, ES module, @damhub/client bundled in)',
  `  min:         ${min.length} bytes (${kb(min.length)})`,
  `  min+gzip -9: ${gzip} bytes (${kb(gzip)})`,
  `  min+brotli:  ${brotli} bytes (${kb(brotli)})`,
  '',
].join('\n'));
// The chunks beside the module: the ones it imports statically load with it (and count in the
// target); the one it imports on the first upload above the tus threshold (tus-js-client) loads
// only then.
const dir = path.dirname(file);
const gz = (f: string) => zlib.gzipSync(fs.readFileSync(path.join(dir, f)), { level: 9 }).length;
const staticChunks = [...min.toString('utf8').matchAll(/import\s*"\.\/(damhub-picker-chunk-[\w-]+\.js)"/g)].map((m) => m[1]!);
const lazyChunks = fs.readdirSync(dir).filter((f) => /^damhub-picker-chunk-[\w-]+\.js$/.test(f) && !staticChunks.includes(f));
const staticGzip = staticChunks.reduce((n, f) => n + gz(f), 0);
const chunkGzip = lazyChunks.reduce((n, f) => n + gz(f), 0);
process.stdout.write(`  + chunks it imports at load, min+gzip -9: ${staticGzip} bytes; loaded on the first resumable upload (tus-js-client): ${chunkGzip} bytes (${kb(chunkGzip)})\n`);
result('picker-min-gzip', (gzip + staticGzip) / 1024, 'KB', ['<=', TARGET_GZIP_BYTES / 1024]);
result('picker-tus-chunk-min-gzip', chunkGzip / 1024, 'KB');
result('picker-min', min.length / 1024, 'KB');
result('picker-min-brotli', brotli / 1024, 'KB');
process.stdout.write(`  loaded at once, min+gzip -9: ${gzip + staticGzip} bytes (${kb(gzip + staticGzip)})  target ≤ ${kb(TARGET_GZIP_BYTES)}: ${gzip + staticGzip <= TARGET_GZIP_BYTES ? 'met' : 'MISSED'}\n`);
reportResults();
