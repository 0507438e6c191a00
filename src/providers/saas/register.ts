/**
 * The SaaS connectors this node serves: each one whose OAuth app is configured
 * (DAMHUB_DROPBOX_CLIENT_ID, DAMHUB_GDRIVE_CLIENT_ID). They are kit connectors, but unlike the
 * catalog's (src/providers/kit/catalog.ts) they cannot run without an app registered at the vendor.
 */
import type { HubConfig } from '../../config.js';
import { dropboxConnector } from '../dropbox/provider.js';
import { googleDriveConnector } from '../gdrive/provider.js';
import type { ConnectorDeps, DefinedConnector } from '../kit/define.js';

export function saasConnectors(config: HubConfig, deps: ConnectorDeps, pkceSecret: string): DefinedConnector[] {
  const out: DefinedConnector[] = [];
  const secret = (s: string | null) => s ?? undefined;
  if (config.dropboxApp) out.push(dropboxConnector({ clientId: config.dropboxApp.clientId, clientSecret: secret(config.dropboxApp.clientSecret), pkceSecret })(deps));
  if (config.googleDriveApp) out.push(googleDriveConnector({ clientId: config.googleDriveApp.clientId, clientSecret: secret(config.googleDriveApp.clientSecret), pkceSecret })(deps));
  return out;
}
