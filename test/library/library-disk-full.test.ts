/**
 * The library's writes when the disk refuses them, through the write seam (LibraryOptions.writeFs,
 * src/providers/library/disk.ts): a file system that fills up after 1000 bytes (ENOSPC), a quota
 * (EDQUOT), a permission refusal (EACCES), a disk too small for a declared length. A seam rather
 * than a real small file system: mounting a tmpfs needs root, which a test run does not have everywhere.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import type { WriteCondition } from '../../src/providers/contract.js';
import type { WriteFs } from '../../src/providers/library/disk.js';
import { assetIdFor } from '../../src/providers/library/scanner.js';
import { writeFiles } from '../helpers/library.js';
import { body, everyName, libraryDirs, makeLibrary, sessionOf } from '../helpers/library-writes.js';

const NO_COND: WriteCondition = { ifMatch: null, upstreamTag: null };
const code = (c: string) => (e: unknown) => {
  assert.equal((e as { code?: string }).code, c, String(e));
  return true;
};

test('a full disk (ENOSPC through the write seam) → integration-storage-full, and nothing left behind', async () => {
  const full: WriteFs = {
    async create(file) {
      fs.writeFileSync(file, '');
      let written = 0;
      return {
        async write(chunk) {
          if (written + chunk.length > 1000) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
          fs.appendFileSync(file, chunk);
          written += chunk.length;
        },
        async sync() {},
        async close() {},
      };
    },
    // It does not know its free space: the write itself fails.
    freeBytes: async () => null,
  };
  const denied: WriteFs = { create: async () => { throw Object.assign(new Error('EACCES: permission denied, open'), { code: 'EACCES' }); }, freeBytes: async () => null };
  const quota: WriteFs = { create: async () => { throw Object.assign(new Error('EDQUOT: disk quota exceeded'), { code: 'EDQUOT' }); }, freeBytes: async () => null };
  const d = libraryDirs();
  writeFiles(d.root, { 'In/a.txt': 'a' });
  let n = 0;
  for (const [wfs, expected] of [[full, 'integration-storage-full'], [quota, 'integration-storage-full'], [denied, 'integration-forbidden']] as const) {
    const l = await makeLibrary(d.root, d.data, { writeFs: wfs });
    try {
      await l.rescan();
      const s = await sessionOf(l, `disk${++n}`, [], ['In']);
      const before = everyName(d.root);
      const e = await l.upload(s, { parentId: '/In', name: 'big.bin', onConflict: 'fail' }, body(Buffer.alloc(4096, 1))).catch((x: unknown) => x) as { code: string; status: number };
      assert.equal(e.code, expected);
      assert.equal(e.status, expected === 'integration-storage-full' ? 507 : 403);
      await assert.rejects(l.update(s, assetIdFor('In/a.txt'), body(Buffer.alloc(4096, 2)), NO_COND), code(expected));
      assert.deepEqual(everyName(d.root), before, 'no temp file left');
      assert.equal(fs.readFileSync(path.join(d.root, 'In/a.txt'), 'utf8'), 'a');
    } finally {
      await l.close();
    }
  }
});

test('a declared length the disk cannot hold is refused before the body is read', async () => {
  let created = 0;
  const small: WriteFs = {
    create: async () => {
      created++;
      throw new Error('not reached');
    },
    freeBytes: async () => 1000,
  };
  const d = libraryDirs();
  writeFiles(d.root, { 'In/a.txt': 'a' });
  const l = await makeLibrary(d.root, d.data, { writeFs: small });
  try {
    await l.rescan();
    const s = await sessionOf(l, 'roomy', [], ['In']);
    const b = body(Buffer.alloc(4096, 1));
    await assert.rejects(l.upload(s, { parentId: '/In', name: 'big.bin', onConflict: 'fail' }, b), code('integration-storage-full'));
    assert.equal(b.stream.readableDidRead, false, 'not a byte read');
    await assert.rejects(l.update(s, assetIdFor('In/a.txt'), body(Buffer.alloc(4096, 2)), NO_COND), code('integration-storage-full'));
    assert.equal(created, 0);
  } finally {
    await l.close();
  }
});
