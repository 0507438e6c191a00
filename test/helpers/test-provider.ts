/**
 * A minimal provider for the hub's own tests: its sign-in page is a form that accepts the
 * password "secret"; its connection can be refreshed when `refreshable`.
 */
import type { FastifyInstance } from 'fastify';
import { integrationError } from '../../src/errors.js';
import type { LoginHost, Provider } from '../../src/providers/contract.js';

export function testProvider(opts: { id?: string; refreshable?: boolean; serverUrl?: boolean } = {}): Provider & { refreshCalls: number } {
  const id = opts.id ?? 'testdam';
  const p: Provider & { refreshCalls: number } = {
    refreshCalls: 0,
    descriptor: {
      id,
      name: `Test DAM ${id}`,
      version: '1.0.0',
      logo: `/api/v1/auth/${id}/logo.svg`,
      glyph: 'T',
      features: { serverUrl: opts.serverUrl ?? false },
      paging: { defaultSize: 25, maxSize: 100 },
    },
    async beginLogin({ state }, host) {
      return { redirectUri: `${host.publicUrl}/api/v1/auth/${id}/signin?state=${encodeURIComponent(state)}` };
    },
    routes(app: FastifyInstance, host: LoginHost) {
      app.post(`/auth/${id}/signin`, { config: { auth: 'none' } }, async (req) => {
        const { state, user, password, cancel } = req.body as Record<string, string>;
        const pending = await host.pending(state);
        if ('error' in pending) return { ok: false, error: pending.error };
        if (cancel) {
          await host.cancel(state);
          return { ok: false, error: 'cancelled' };
        }
        if (password !== 'secret') {
          await host.fail(state, 'wrong password');
          return { ok: false, error: 'wrong password' };
        }
        await host.complete(state, { credentials: { account: user }, accountId: user });
        return { ok: true };
      });
    },
    // An empty DAM that can browse and search: listing its capabilities shows both (they are the methods).
    async browse(_session, folderId) {
      return { id: folderId, name: folderId, folders: [], assets: [], filters: [], totalAssetsCount: 0 };
    },
    async search() {
      return { folders: [], assets: [], filters: [], totalAssetsCount: 0 };
    },
    async refresh(cred) {
      p.refreshCalls++;
      if (cred.account === 'revoked') throw integrationError('integration-auth-failed', id, 'account revoked upstream');
      return { ...cred, refreshedAt: p.refreshCalls };
    },
    async providerInfo(session, { uiLocale }) {
      // The filter's label shows the uiLocale the route passed on (the schema is closed: no echo field).
      return { remoteSystemPrefix: `test:${session.credentials.account}`, filters: [{ id: 'kind', name: `kind (${uiLocale})` }], dataLocales: [{ id: 'en', name: 'English', displayName: 'English', default: true }] };
    },
  };
  if (!opts.refreshable && opts.refreshable !== undefined) delete p.refresh;
  return p;
}
