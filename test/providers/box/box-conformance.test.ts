/** The Box connector passes the provider conformance suite against its documented-response replay server. */
import { boxConnector } from '../../../src/providers/box/provider.js';
import { BOX_CLIENT, startBoxReplay } from '../../helpers/box-replay.js';
import { runSaasConformance } from '../../helpers/saas.js';

runSaasConformance('box', startBoxReplay, (url) => boxConnector({
  clientId: BOX_CLIENT.id, clientSecret: BOX_CLIENT.secret, allowInsecureRequests: true,
  endpoints: { authorize: `${url}/api/oauth2/authorize`, token: `${url}/oauth2/token`, api: `${url}/2.0`, app: url },
}));
