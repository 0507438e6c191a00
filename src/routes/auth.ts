/** /auth: token exchange, sessions, providers listing and the DAM login flow. */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { looksLikeJwe } from '../auth/provider-tokens.js';
import { bearer } from '../auth/exchange.js';
import { hubError } from '../errors.js';
import { applyRateLimitHeaders, checkOrigin, principalOf, rateLimited } from '../http/auth.js';
import { HubAuth, responses, TokenPairSchema, UI_LOCALES } from '../http/schemas.js';

/** Closed: exactly the flags of ProviderCapabilities (src/providers/contract.ts), so clients know every one. */
const ProviderCapabilitiesSchema = Type.Object({
  browse: Type.Boolean({ description: 'folders can be browsed' }),
  search: Type.Boolean({ description: 'keyword search' }),
  similarSearch: Type.Boolean({ description: 'search by image (POST /assets/search)' }),
  versions: Type.Boolean({ description: 'version history (/assets/assetversions)' }),
  refresh: Type.Boolean({ description: 'the DAM connection can be renewed without a new login' }),
  upload: Type.Boolean({ description: 'new assets can be uploaded (POST /assets/upload, tus at /uploads)' }),
  update: Type.Boolean({ description: 'new versions of an asset can be saved (POST /assets/update/{assetId})' }),
  rename: Type.Boolean({ description: 'assets can be renamed (PATCH /assets/asset/{assetId} with name)' }),
  move: Type.Boolean({ description: 'assets can be moved to another folder (PATCH /assets/asset/{assetId} with parentId)' }),
  delete: Type.Boolean({ description: 'assets can be deleted' }),
  folders: Type.Boolean({ description: 'folders can be created, renamed and deleted' }),
  lock: Type.Boolean({ description: 'assets can be locked and unlocked' }),
  filters: Type.Boolean({ description: 'facet filters on browse and search' }),
  dataLocalization: Type.Boolean({ description: 'metadata in several data locales' }),
  timeZone: Type.Boolean({ description: 'dates follow the timeZone parameter' }),
  serverUrl: Type.Boolean({ description: 'the sign-in asks for a server URL' }),
  foldersOnEveryPage: Type.Boolean({ description: 'subfolders are repeated on every page of a browse' }),
  assetHashAlgorithm: Type.Union([Type.String(), Type.Null()], { description: 'the hash field the provider always reports, or null' }),
}, { additionalProperties: false });

const ProviderSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  version: Type.String(),
  logo: Type.String(),
  glyph: Type.String(),
  capabilities: ProviderCapabilitiesSchema,
  loginUrl: Type.String(),
  isDefault: Type.Boolean(),
  paging: Type.Object({ defaultSize: Type.Integer(), maxSize: Type.Integer() }),
});

const checkTokenBodies = new WeakMap<object, string>();

export async function authRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const hub = app.hub;

  app.post('/auth/exchangeToken', {
    config: { auth: 'partner' },
    schema: {
      tags: ['auth'],
      summary: 'Exchange a partner-signed JWT (RS256) for hub tokens',
      description: 'Authorization: Bearer <partner JWT>. Optional JSON body {email} when the JWT has no email claim.',
      security: [{ PartnerJwt: [] }],
      body: Type.Optional(Type.Union([Type.Object({ email: Type.Optional(Type.String({ maxLength: 320 })) }), Type.Null()])),
      response: responses(TokenPairSchema),
    },
  }, async (req, reply) => {
    const identified = await hub.exchange.identify(req.headers.authorization);
    // Charged only for correctly signed tokens: knowing a partner's issuer is not enough to spend its budget.
    const verified = await hub.exchange.verify(identified);
    checkOrigin(req, identified.partner);
    const d = await hub.stores.rateLimits.hit(`exchange:${identified.partner.issuer}`, identified.partner.rateLimitPerMin, 60_000, hub.clock.now());
    if (!d.allowed) throw rateLimited(d, 'token exchanges of this partner');
    applyRateLimitHeaders(reply, d);
    const { pair } = await hub.exchange.complete(verified, req.body?.email);
    reply.header('cache-control', 'no-store');
    return pair;
  });

  app.get('/auth/checkToken', {
    config: { auth: 'access' },
    schema: {
      tags: ['auth'],
      summary: 'Verify the access token and return the current user',
      security: HubAuth,
      response: responses(Type.Object({
        adapter: Type.String(),
        source: Type.String(),
        user: Type.Object({ id: Type.String(), name: Type.Union([Type.String(), Type.Null()]), email: Type.String(), givenName: Type.Union([Type.String(), Type.Null()]), familyName: Type.Union([Type.String(), Type.Null()]) }),
        account: Type.Object({ id: Type.String(), name: Type.String(), issuer: Type.String() }),
        userHash: Type.String(),
        expiresAt: Type.Integer({ description: 'epoch milliseconds when the access token expires' }),
      })),
    },
  }, (req, reply) => {
    // Synchronous handler: no promise and no extra microtask per request on the hub's most frequent call.
    const p = principalOf(req);
    // The answer depends on the principal only, which the principal cache keeps for up to a second:
    // serialise it once per principal rather than once per request.
    let body = checkTokenBodies.get(p);
    if (!body) {
      body = reply.serialize({
        adapter: p.partner.id,
        source: 'damhub',
        user: { id: p.user.id, name: p.user.name ?? p.user.email, email: p.user.email, givenName: p.user.givenName, familyName: p.user.familyName },
        account: { id: p.partner.id, name: p.partner.name, issuer: p.partner.issuer },
        userHash: p.userHash,
        expiresAt: p.claims.exp * 1000,
      }) as string;
      checkTokenBodies.set(p, body);
    }
    return reply.type('application/json; charset=utf-8').send(body);
  });

  app.get('/auth/refreshToken', {
    config: { auth: 'none' },
    schema: {
      tags: ['auth'],
      summary: 'Rotate hub tokens (hub refresh token) or renew a DAM connection (DAM refresh token)',
      description: 'Authorization carries the current access token (it may be expired); provider-authorization carries the refresh token.',
      security: [{ HubAuth: [], ProviderAuth: [] }],
      response: responses(TokenPairSchema),
    },
  }, async (req, reply) => {
    const claims = await hub.sessions.accessClaimsForRefresh(req.headers.authorization);
    const header = req.headers['provider-authorization'];
    const token = bearer(Array.isArray(header) ? header[0] : header);
    if (!token) throw hubError('provider-access-token-missing', 'send the refresh token as "provider-authorization: Bearer <refresh token>"');
    reply.header('cache-control', 'no-store');
    if (looksLikeJwe(token)) {
      // A DAM connection is renewed only for a live hub session (not after logout or user/partner removal).
      await hub.sessions.assertLive(claims);
      return hub.connections.refresh(token, claims);
    }
    return hub.sessions.refresh(claims, token);
  });

  app.get('/auth/logout', {
    config: { auth: 'access' },
    schema: { tags: ['auth'], summary: 'End the session and revoke its refresh tokens', security: HubAuth, response: responses(Type.String()) },
  }, async (req, reply) => {
    await hub.sessions.logout(principalOf(req));
    return reply.type('text/plain; charset=utf-8').send('OK');
  });

  app.get('/auth/providers', {
    config: { auth: 'access' },
    schema: { tags: ['auth'], summary: 'Providers available to the user', security: HubAuth, response: responses(Type.Array(ProviderSchema)) },
  }, async () => {
    const def = hub.providers.defaultId();
    return hub.providers.list().map(({ descriptor: d }) => ({
      id: d.id,
      name: d.name,
      version: d.version,
      logo: absolute(hub.damLogin.publicUrl, d.logo),
      glyph: d.glyph,
      capabilities: hub.providers.capabilities(d.id),
      loginUrl: `${hub.damLogin.publicUrl}/api/v1/auth/login?provider=${encodeURIComponent(d.id)}&polling=true`,
      isDefault: d.id === def,
      paging: d.paging,
    }));
  });

  app.post('/auth/login', {
    config: { auth: 'access' },
    schema: {
      tags: ['auth'],
      summary: 'Start a DAM login; open redirect_uri in a popup and poll GET /auth/login with state',
      security: HubAuth,
      querystring: Type.Object({
        provider: Type.String({ minLength: 1, maxLength: 64 }),
        polling: Type.Optional(Type.Boolean()),
        serverUrl: Type.Optional(Type.String({ maxLength: 2048 })),
        // No default: without it the sign-in pages follow the browser's Accept-Language.
        uiLocale: Type.Optional(Type.Union(UI_LOCALES.map((l) => Type.Literal(l)), { description: 'language of the sign-in pages (as the content calls\' uiLocale); absent: the browser\'s Accept-Language, else English' })),
      }),
      response: responses(Type.Object({ redirect_uri: Type.String(), state: Type.String() })),
    },
  }, async (req, reply) => {
    const q = req.query;
    const p = principalOf(req);
    // Every start writes a login state: per user, starts are limited (issue 17), and so are the
    // states pending at once (DamLogin.start).
    const d = await hub.stores.rateLimits.hit(`login-start:${p.user.id}`, hub.config.loginStartsPerMin, 60_000, hub.clock.now());
    if (!d.allowed) throw rateLimited(d, 'login starts of this user');
    applyRateLimitHeaders(reply, d);
    return hub.damLogin.start(p, q.provider, q.serverUrl ?? null, q.uiLocale ?? null);
  });

  app.get('/auth/login', {
    config: { auth: 'none' },
    schema: {
      tags: ['auth'],
      summary: 'Poll a DAM login: {} while pending, the tokens once, {error} otherwise',
      querystring: Type.Object({ state: Type.String({ minLength: 1, maxLength: 256 }), polling: Type.Optional(Type.Boolean()) }),
      response: responses(Type.Object({
        access_token: Type.Optional(Type.String()),
        refresh_token: Type.Optional(Type.String()),
        expires_in: Type.Optional(Type.Integer()),
        userHash: Type.Optional(Type.String()),
        error: Type.Optional(Type.String()),
      })),
    },
  }, async (req, reply) => {
    reply.header('cache-control', 'no-store');
    return hub.damLogin.poll(req.query.state);
  });
}

function absolute(base: string, url: string): string {
  return /^[a-z][a-z0-9+.-]*:/i.test(url) ? url : `${base}${url.startsWith('/') ? '' : '/'}${url}`;
}
