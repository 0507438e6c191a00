/**
 * Opens the DAM connection an MCP tool call runs under, from the connection the hub holds for the
 * user (connection-store.ts), through the same checks as the `provider-authorization` header
 * (ProviderConnections.open: decryption, expiry, binding to this user). A sign-in started by
 * connect_provider is collected from the hub's login state machine on the next call.
 */
import { hubError, isHubError } from '../errors.js';
import type { Hub } from '../hub.js';
import type { ProviderSession } from '../providers/contract.js';
import type { McpConnectionStore } from './connection-store.js';
import type { McpIdentity } from './identity.js';

export type ConnectState =
  | { status: 'connected' }
  | { status: 'pending'; signInUrl: string }
  | { status: 'failed'; error: string }
  | { status: 'none' };

export class McpConnections {
  constructor(private readonly hub: Hub, readonly store: McpConnectionStore) {}

  /** Starts a DAM sign-in for this user: the URL the user opens in a browser. */
  async start(id: McpIdentity, providerId: string, serverUrl: string | null): Promise<string> {
    const { redirect_uri, state } = await this.hub.damLogin.start(id, providerId, serverUrl);
    this.store.pending(id.user.id, providerId, state, redirect_uri, this.hub.clock.now());
    return redirect_uri;
  }

  /** Collects a finished sign-in, if one is pending, and says where the connection stands. */
  async state(id: McpIdentity, providerId: string): Promise<ConnectState> {
    const row = this.store.get(id.user.id, providerId);
    if (row?.pendingState) {
      const answer = await this.hub.damLogin.poll(row.pendingState);
      if ('access_token' in answer) {
        this.store.connect(id.user.id, providerId, answer.access_token, answer.refresh_token ?? null, this.hub.clock.now());
        return { status: 'connected' };
      }
      if ('error' in answer) {
        this.store.clearPending(id.user.id, providerId);
        if (!row.accessToken) return { status: 'failed', error: answer.error };
      } else if (!row.accessToken) {
        return { status: 'pending', signInUrl: row.pendingUrl ?? '' };
      }
    }
    return row?.accessToken ? { status: 'connected' } : { status: 'none' };
  }

  /** The DAM session for a content call, or the hub's provider-access-token-* error. */
  async session(id: McpIdentity, providerId: string): Promise<ProviderSession> {
    const name = this.hub.providers.require(providerId).descriptor.name;
    const st = await this.state(id, providerId);
    if (st.status === 'pending') throw hubError('provider-access-token-missing', `the sign-in to ${name} is not finished: open ${st.signInUrl} and sign in, then retry`);
    if (st.status !== 'connected') {
      throw hubError('provider-access-token-missing', `${st.status === 'failed' ? `the last sign-in to ${name} failed (${st.error}); ` : ''}not connected to ${name}: call connect_provider with provider "${providerId}"`);
    }
    const row = this.store.get(id.user.id, providerId)!;
    const who = { userId: id.user.id, partnerId: id.partner.id };
    try {
      return await this.hub.connections.open(`Bearer ${row.accessToken}`, who);
    } catch (e) {
      if (!isHubError(e) || e.code !== 'provider-access-token-invalid') throw e;
      // An expired connection is renewed with its refresh token where the DAM allows it.
      const provider = this.hub.providers.get(providerId);
      if (row.refreshToken && provider?.refresh) {
        const renewed = await this.hub.connections.refresh(row.refreshToken, { sub: id.user.id, pid: id.partner.id });
        this.store.connect(id.user.id, providerId, renewed.access_token, renewed.refresh_token ?? row.refreshToken, this.hub.clock.now());
        return this.hub.connections.open(`Bearer ${renewed.access_token}`, who);
      }
      throw hubError('provider-access-token-invalid', `${e.details ?? 'the connection is no longer valid'}; call connect_provider with provider "${providerId}" to sign in again`);
    }
  }

  disconnect(id: McpIdentity, providerId: string): void {
    this.store.remove(id.user.id, providerId);
  }
}
