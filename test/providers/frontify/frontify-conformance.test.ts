/** The Frontify connector passes the provider conformance suite against its replay of one tenant (pinned as the `tenant` endpoint). */
import { frontifyConnector } from '../../../src/providers/frontify/provider.js';
import { startFrontifyReplay } from '../../helpers/frontify-replay.js';
import { runSaasConformance } from '../../helpers/saas.js';

runSaasConformance('frontify', startFrontifyReplay, (url) => frontifyConnector({
  clientId: 'fy-app', clientSecret: 'fy-secret', allowInsecureRequests: true, endpoints: { tenant: url },
}));
