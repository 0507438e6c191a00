/**
 * The generated demo library (`npm start`, src/demo/library.ts) is marked by a file at its root,
 * so that what only the demo's own folder may get (its account writing there) is never given to
 * a folder of someone's own served in demo mode. Here, below the catalog that builds the demo
 * account, rather than in src/demo/, which sits above it.
 */
import fs from 'node:fs';
import path from 'node:path';

export const DEMO_LIBRARY_MARKER = '.damhub-demo';

/** The folder is the generated demo library (its marker file), not someone's own. */
export function isGeneratedDemoLibrary(dir: string): boolean {
  return fs.existsSync(path.join(dir, DEMO_LIBRARY_MARKER));
}
