// Bundles <damhub-picker> and @damhub/client into one minified ES module the hub serves (and a partner can host).
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
await build({
  absWorkingDir: here,
  entryPoints: ['src/index.ts'],
  outfile: 'dist/damhub-picker.js',
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: ['es2022'],
  minify: true,
  sourcemap: 'linked',
  legalComments: 'none',
  logLevel: 'warning',
});
