// Bundles <damhub-picker> and @damhub/client into one minified ES module the hub serves (and a partner can host).
// tus-js-client, which @damhub/client imports only when a file crosses its upload threshold, is split
// into a chunk beside it (damhub-picker-chunk-*.js), loaded on the first large upload: a page that
// never uploads one does not download it. esbuild puts the helpers both share in a second, tiny
// chunk the module imports. Host the chunks in the same folder as the module.
import { build } from 'esbuild';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
// Chunks of earlier builds have other hashes: start from an empty dist/ so only this build's are served.
fs.rmSync(new URL('dist', import.meta.url), { recursive: true, force: true });
await build({
  absWorkingDir: here,
  entryPoints: ['src/index.ts'],
  outdir: 'dist',
  entryNames: 'damhub-picker',
  chunkNames: 'damhub-picker-chunk-[hash]',
  splitting: true,
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: ['es2022'],
  minify: true,
  sourcemap: 'linked',
  legalComments: 'none',
  logLevel: 'warning',
});
