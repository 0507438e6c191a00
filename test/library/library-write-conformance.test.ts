/**
 * The embedded library passes the write conformance suite (test/helpers/write-conformance.ts): the
 * account alice writes in Scratch (its write folder); bob, another account of the library with
 * the same rights, meets alice's locks.
 */
import { after } from 'node:test';
import { addAccount } from '../../src/providers/library/accounts.js';
import { libraryOf, signInToLibrary, solidJpeg, startLibraryHub, type LibraryHarness } from '../helpers/library.js';
import { hubDownloader, injectCaller, runWriteConformance } from '../helpers/write-conformance.js';

let lib: LibraryHarness | undefined;
after(() => lib?.t.close());

runWriteConformance('library', async () => {
  lib = await startLibraryHub({ 'Scratch/readme.txt': 'the scratch folder' }, { writeFolders: ['Scratch'] });
  const t = lib.t;
  await t.hub.stores.partners.update(t.partner.id, { writes: true }, t.clock.now());
  await addAccount(libraryOf(t.hub).index, 'bob', 'battery staple', [], t.clock.now(), { writeFolders: ['Scratch'] });
  const other = await t.login({ sub: 'bob' });
  const bobDam = await signInToLibrary(t, other.access_token, 'bob', 'battery staple');
  return {
    provider: t.hub.providers.require('library'),
    call: injectCaller(t.app, lib.headers),
    callAsOther: injectCaller(t.app, { authorization: `Bearer ${other.access_token}`, 'provider-authorization': `Bearer ${bobDam}` }),
    download: hubDownloader(t.app, 'http://hub.test'),
    scratchFolderId: '/Scratch',
    sample: { ext: 'jpg', one: await solidJpeg(24, 16, [200, 30, 30]), two: await solidJpeg(24, 16, [30, 30, 200]) },
  };
});
