/** The write conformance suite over the in-memory DAM: the suite's own check (its failures are real). */
import { after } from 'node:test';
import { startTestHub, type TestHub } from '../helpers/hub.js';
import { memoryDam } from '../helpers/memory-dam.js';
import { injectCaller, runWriteConformance } from '../helpers/write-conformance.js';

let hub: TestHub | undefined;
after(() => hub?.close());

runWriteConformance('memory', async () => {
  const dam = memoryDam();
  const t = await startTestHub({ providers: [dam], partner: { writes: true } });
  hub = t;
  const session = async (user: string) => {
    const { access_token } = await t.login({ sub: `sub-${user}` });
    const start = (await t.app.inject({ method: 'POST', url: '/api/v1/auth/login?provider=memdam&polling=true', headers: { authorization: `Bearer ${access_token}` } })).json();
    await t.app.inject({ method: 'POST', url: '/api/v1/auth/memdam/signin', payload: { state: start.state, user, password: 'secret' } });
    const token = (await t.app.inject({ url: `/api/v1/auth/login?state=${start.state}&polling=true` })).json().access_token;
    const headers = { authorization: `Bearer ${access_token}`, 'provider-authorization': `Bearer ${token}` };
    return injectCaller(t.app, headers);
  };
  const call = await session('alice');
  return {
    provider: dam, call, callAsOther: await session('bob'),
    // The in-memory DAM has no media routes: its downloadUrl is the asset id, its bytes the last version.
    async download(url) {
      const a = [...dam.assets.values()].find((x) => x.id === url);
      return a ? a.versions.at(-1)! : Buffer.alloc(0);
    },
    scratchFolderId: 'root',
    sample: { ext: 'txt', one: Buffer.from('the first text file\n'), two: Buffer.from('a second, different text file\n') },
  };
});
