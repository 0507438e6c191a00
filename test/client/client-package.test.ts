/**
 * The shape of the @damhub/client package: one runtime dependency (tus-js-client, for uploads
 * above the threshold), the browser entry imports nothing but its own modules and that one (loaded
 * on demand by tus.js alone), its type declarations compile for a browser (DOM, no Node types),
 * and `/node` uses Node built-ins only.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { tempDir } from '../helpers/hub.js';
import { REPO_ROOT } from '../helpers/process.js';

const repo = REPO_ROOT;
const pkgDir = path.join(repo, 'packages/client');
const dist = path.join(pkgDir, 'dist');

function importsOf(file: string): string[] {
  const src = fs.readFileSync(file, 'utf8');
  return [...src.matchAll(/(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+['"]([^'"]+)['"]/g), ...src.matchAll(/import\(\s*['"]([^'"]+)['"]\s*\)/g)].map((m) => m[1]!);
}

test('the package depends on tus-js-client alone and exports . and ./node with types', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
  assert.equal(pkg.name, '@damhub/client');
  assert.equal(pkg.type, 'module');
  assert.deepEqual(Object.keys(pkg.dependencies ?? {}), ['tus-js-client']);
  assert.equal(pkg.peerDependencies, undefined);
  for (const entry of ['.', './node']) {
    const e = pkg.exports[entry];
    assert.ok(fs.existsSync(path.join(pkgDir, e.import)), `${entry} → ${e.import} is built`);
    assert.ok(fs.existsSync(path.join(pkgDir, e.types)), `${entry} → ${e.types} is built`);
  }
});

test('the browser entry imports only its own modules; /node only Node built-ins', () => {
  const seen = new Set<string>();
  const walk = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    assert.doesNotMatch(fs.readFileSync(file, 'utf8'), /from\s+['"]tus-js-client['"]/, `${path.relative(dist, file)} imports tus-js-client statically`);
    for (const spec of importsOf(file)) {
      // tus-js-client, by a dynamic import in tus.js only: a bundle splits it off (the picker's does).
      if (spec === 'tus-js-client' && path.basename(file) === 'tus.js' && /import\(\s*['"]tus-js-client['"]\s*\)/.test(fs.readFileSync(file, 'utf8'))) continue;
      assert.ok(spec.startsWith('./') || spec.startsWith('../'), `${path.relative(dist, file)} imports ${spec}`);
      walk(path.resolve(path.dirname(file), spec));
    }
  };
  walk(path.join(dist, 'index.js'));
  assert.ok(!seen.has(path.join(dist, 'node.js')));
  assert.ok(seen.size >= 5);
  for (const spec of importsOf(path.join(dist, 'node.js'))) assert.match(spec, /^node:/);
});

test('the type declarations compile in a browser project (lib DOM, no Node types)', () => {
  const dir = tempDir('damhub-client-dom-');
  fs.writeFileSync(path.join(dir, 'app.ts'), `
import { DamhubClient, isNotSupported, webStorage, type Asset } from '@damhub/client';
const c = new DamhubClient({ baseUrl: 'https://hub.example/api/v1', getPartnerJwt: async () => 'jwt', storage: webStorage(localStorage) });
export async function names(): Promise<string[]> {
  const out: string[] = [];
  for await (const a of c.folderAssets('root', { size: 10 })) out.push((a as Asset).name);
  try { await c.searchByImage(new Blob([])); } catch (e) { if (!isNotSupported(e)) throw e; }
  return out;
}
`);
  fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      target: 'ES2022', module: 'ESNext', moduleResolution: 'Bundler', lib: ['ES2022', 'DOM', 'DOM.Iterable'], types: [], strict: true, noEmit: true,
      baseUrl: '.', paths: { '@damhub/client': [path.join(dist, 'index.d.ts')] },
    },
    files: ['app.ts'],
  }));
  const tsc = spawnSync(process.execPath, [path.join(repo, 'node_modules/typescript/bin/tsc'), '-p', dir], { encoding: 'utf8' });
  assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr);
});
