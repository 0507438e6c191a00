/** The SaaS connectors this node serves: each one whose OAuth app is configured (DAMHUB_*_CLIENT_ID). */
import type { Clock } from '../../clock.js';
import type { HubConfig } from '../../config.js';
import type { Provider } from '../contract.js';
import { dropboxProvider } from '../dropbox/provider.js';
import { googleDriveProvider } from '../gdrive/provider.js';

export function saasProviders(config: HubConfig, clock: Clock, pkceSecret: string): Provider[] {
  const now = () => clock.now();
  const out: Provider[] = [];
  const secret = (s: string | null) => s ?? undefined;
  if (config.dropboxApp) out.push(dropboxProvider({ clientId: config.dropboxApp.clientId, clientSecret: secret(config.dropboxApp.clientSecret), pkceSecret, now }));
  if (config.googleDriveApp) out.push(googleDriveProvider({ clientId: config.googleDriveApp.clientId, clientSecret: secret(config.googleDriveApp.clientSecret), pkceSecret, now }));
  return out;
}
