/** The Google Drive connector passes the provider conformance suite against its documented-response replay server. */
import { googleDriveConnector } from '../../../src/providers/gdrive/provider.js';
import { startDriveReplay } from '../../helpers/gdrive-replay.js';
import { runSaasConformance } from '../../helpers/saas.js';

runSaasConformance('gdrive', startDriveReplay, (url) => googleDriveConnector({
  clientId: 'drive-app', clientSecret: 'drive-secret', allowInsecureRequests: true,
  endpoints: { authorize: `${url}/o/oauth2/v2/auth`, token: `${url}/token`, api: url },
}));
