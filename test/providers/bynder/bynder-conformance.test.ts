/**
 * The Bynder connector passes the provider conformance suite against its documented-response
 * replay (the suite's folder with subfolders is a brand with its sub-brands). The portal is the
 * operator's configured one, so the suite's sign-in needs no serverUrl.
 */
import { bynderConnector } from '../../../src/providers/bynder/provider.js';
import { BYNDER_CLIENT, startBynderReplay } from '../../helpers/bynder-replay.js';
import { runSaasConformance } from '../../helpers/saas.js';

runSaasConformance('bynder', async (tree, revisions) => {
  const r = await startBynderReplay(tree, revisions);
  return { url: r.url, ids: r.ids, close: () => r.close() };
}, (url) => bynderConnector({
  clientId: BYNDER_CLIENT.id, clientSecret: BYNDER_CLIENT.secret, allowInsecureRequests: true,
  endpoints: { portal: url },
}));
