/**
 * Opens the DAM connection an MCP tool call runs under, from the connection the hub holds for the
 * user (Stores.mcpConnections: the hub's SQLite store, or PostgreSQL in cluster mode, so every node
 * sees it), through the same checks as the `provider-authorization` header
 * (ProviderConnections.open: decryption, expiry, binding to this user). A sign-in started by
 * connect_provider is collected from the hub's login state machine on the next call.
 *
 * What is stored is the hub's own DAM connection token (and its refresh token): a JWE under the key
 * ring's active `enc` key, so the rows are encrypted at rest and follow key rotation
 * (`damhub keys rotate`): new and refreshed connections are sealed under the new key, older rows
 * keep opening while their key is retained (src/auth/keys.ts).
 *
 * Two tool calls may act on one row at once (an assistant's parallel calls, or two nodes): every
 * write is conditional on what this call read (the pending sign-in it collected, the access token
 * it renewed), so a slower call never undoes a faster one's sign-in, renewal or removal.
 */
import { hubError, isHubError } from '../errors.js';
import type { Hub } from '../hub.js';
import type { ProviderSession } from '../providers/contract.js';
import type { McpConnection } from '../stores/types.js';
import type { McpIdentity } from './identity.js';

export type ConnectState =
  | { status: 'connected' }
  | { status: 'pending'; signInUrl: string }
  | { status: 'failed'; error: string }
  | { status: 'none' };

export class McpConnections {
  constructor(private readonly hub: Hub) {}

  private get store() {
    return this.hub.stores.mcpConnections;
  }

  /** Starts a DAM sign-in for this user: the URL the user opens in a browser. */
  async start(id: McpIdentity, providerId: string, serverUrl: string | null): Promise<string> {
    const { redirect_uri, state } = await this.hub.damLogin.start(id, providerId, serverUrl);
    await this.store.startSignIn(id.user.id, providerId, state, redirect_uri, this.hub.clock.now());
    return redirect_uri;
  }

  /** Collects a finished sign-in, if one is pending, and says where the connection stands. */
  async state(id: McpIdentity, providerId: string): Promise<ConnectState> {
    const row = await this.store.get(id.user.id, providerId);
    if (row?.pendingState) {
      const answer = await this.hub.damLogin.poll(row.pendingState);
      if ('access_token' in answer) {
        const stored = await this.store.completeSignIn(id.user.id, providerId, row.pendingState, answer.access_token, answer.refresh_token ?? null, this.hub.clock.now());
        // Not stored: the connection was removed while this call collected it.
        return stored ? { status: 'connected' } : { status: 'none' };
      }
      if ('error' in answer) {
        if (!(await this.store.dropSignIn(id.user.id, providerId, row.pendingState))) {
          // The row moved on since it was read (the sign-in collected by a concurrent call, a new
          // one started, or the connection removed): report what it is now, not the stale read.
          return stateOf(await this.store.get(id.user.id, providerId));
        }
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
    if (st.status !== 'connected') throw notConnected(name, providerId, st.status === 'failed' ? st.error : null);
    const row = await this.store.get(id.user.id, providerId);
    // Removed between the two reads (by the user's other call, on any node).
    if (!row?.accessToken) throw notConnected(name, providerId, null);
    const who = { userId: id.user.id, partnerId: id.partner.id, writes: await this.writesOf(id) };
    try {
      return await this.hub.connections.open(`Bearer ${row.accessToken}`, who);
    } catch (e) {
      if (!isHubError(e) || e.code !== 'provider-access-token-invalid') throw e;
      // An expired connection is renewed with its refresh token where the DAM allows it.
      const provider = this.hub.providers.get(providerId);
      if (row.refreshToken && provider?.refresh) return this.renew(id, name, providerId, row.accessToken, row.refreshToken);
      throw hubError('provider-access-token-invalid', `${e.details ?? 'the connection is no longer valid'}; call connect_provider with provider "${providerId}" to sign in again`);
    }
  }

  /**
   * The partner's write opt-in as it is now: an MCP session (stdio above all) outlives the identity
   * it started with, and the operator's `partners writes … on|off` must apply to its next call.
   */
  private async writesOf(id: McpIdentity): Promise<boolean> {
    return (await this.hub.stores.partners.get(id.partner.id))?.writes === true;
  }

  /**
   * Renews an expired connection and stores the renewal only while the row still holds the token
   * that expired (compare-and-set). A call that loses (another call or node renewed first, or a
   * new sign-in replaced the connection) uses the connection the row holds now; so does one whose
   * own renewal the DAM refused because the winner's had already used the refresh credentials.
   */
  private async renew(id: McpIdentity, name: string, providerId: string, expired: string, refreshToken: string): Promise<ProviderSession> {
    const who = { userId: id.user.id, partnerId: id.partner.id, writes: await this.writesOf(id) };
    const replaced = async (): Promise<string | null> => {
      const now = await this.store.get(id.user.id, providerId);
      return now?.accessToken && now.accessToken !== expired ? now.accessToken : null;
    };
    let renewed;
    try {
      renewed = await this.hub.connections.refresh(refreshToken, { sub: id.user.id, pid: id.partner.id });
    } catch (e) {
      const other = await replaced();
      if (other) return this.hub.connections.open(`Bearer ${other}`, who);
      throw e;
    }
    if (await this.store.renew(id.user.id, providerId, expired, renewed.access_token, renewed.refresh_token ?? refreshToken, this.hub.clock.now())) {
      return this.hub.connections.open(`Bearer ${renewed.access_token}`, who);
    }
    const other = await replaced();
    if (other) return this.hub.connections.open(`Bearer ${other}`, who);
    // The connection was removed meanwhile: this renewal must not bring it back.
    throw notConnected(name, providerId, null);
  }

  async disconnect(id: McpIdentity, providerId: string): Promise<void> {
    await this.store.remove(id.user.id, providerId);
  }
}

function notConnected(name: string, providerId: string, failure: string | null) {
  return hubError('provider-access-token-missing', `${failure !== null ? `the last sign-in to ${name} failed (${failure}); ` : ''}not connected to ${name}: call connect_provider with provider "${providerId}"`);
}

function stateOf(row: McpConnection | null): ConnectState {
  if (row?.accessToken) return { status: 'connected' };
  if (row?.pendingState) return { status: 'pending', signInUrl: row.pendingUrl ?? '' };
  return { status: 'none' };
}
