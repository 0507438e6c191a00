/** The Cloudinary connector passes the provider conformance suite against its replay (documented responses), in both folder modes. */
import { after } from 'node:test';
import { runProviderConformance } from '../../helpers/provider-conformance.js';
import { startCloudinaryHub, startCloudinaryReplay, type CloudinaryHub, type CloudinaryReplay } from '../../helpers/cloudinary-replay.js';

const open: { r?: CloudinaryReplay; h?: CloudinaryHub }[] = [];
after(async () => {
  for (const o of open) {
    await o.h?.t.close();
    await o.r?.close();
  }
});

for (const mode of ['dynamic', 'fixed'] as const) {
  runProviderConformance(`cloudinary (${mode} folders)`, async () => {
    const tree = Array.from({ length: 23 }, (_, i) => `Photos/photo ${String(i).padStart(2, '0')}.jpg`);
    tree.push('Photos/Trips/photo beach.jpg', 'Photos/Sub/photo sub.jpg', 'Docs/readme.txt');
    const o: { r?: CloudinaryReplay; h?: CloudinaryHub } = {};
    open.push(o);
    const r = (o.r = await startCloudinaryReplay(tree, { mode, versions: { 'Photos/photo 03.jpg': 1 }, tier2: true }));
    const h = (o.h = await startCloudinaryHub(r));
    return {
      provider: h.connector,
      bigFolderId: 'Photos',
      knownAssetId: r.ids['Photos/photo 03.jpg']!,
      pageSize: 7,
      commonTerm: 'photo',
      async request(method, p, body) {
        const res = method === 'GET' ? await h.get(p) : await h.post(p, body);
        return { status: res.status, body: res.body };
      },
    };
  });
}
