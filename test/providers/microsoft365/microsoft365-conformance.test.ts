/** The Microsoft 365 connector passes the provider conformance suite against its documented-response replay server. */
import { microsoft365Connector } from '../../../src/providers/microsoft365/provider.js';
import { startMicrosoft365Replay } from '../../helpers/microsoft365-replay.js';
import { runSaasConformance } from '../../helpers/saas.js';

runSaasConformance('microsoft365', startMicrosoft365Replay, (url) => microsoft365Connector({
  clientId: 'm365-app', clientSecret: 'm365-secret', allowInsecureRequests: true,
  endpoints: { authorize: `${url}/common/oauth2/v2.0/authorize`, token: `${url}/common/oauth2/v2.0/token`, graph: `${url}/v1.0` },
}));
