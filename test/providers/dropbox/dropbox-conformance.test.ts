/** The Dropbox connector passes the provider conformance suite against its documented-response replay server. */
import { dropboxConnector } from '../../../src/providers/dropbox/provider.js';
import { startDropboxReplay } from '../../helpers/dropbox-replay.js';
import { runSaasConformance } from '../../helpers/saas.js';

runSaasConformance('dropbox', startDropboxReplay, (url) => dropboxConnector({
  clientId: 'dbx-app', clientSecret: 'dbx-secret', allowInsecureRequests: true,
  endpoints: { authorize: `${url}/oauth2/authorize`, token: `${url}/oauth2/token`, api: url },
}));
