/** /admin: partner registration (SPEC.md section 4) and the write audit (docs/writes.md), behind the admin bearer key. */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { partnerInput, partnerPatch, partnerView } from '../auth/partners.js';
import { hubError, validationError } from '../errors.js';
import { responses } from '../http/schemas.js';
import { AUDIT_MAX_LIMIT, AuditQueryError, auditPage, decodeAuditCursor, parseAuditTime } from '../stores/audit-listing.js';
import { StoreConflictError } from '../stores/types.js';

const PartnerBody = Type.Object({
  id: Type.Optional(Type.String({ maxLength: 64 })),
  name: Type.Optional(Type.String({ maxLength: 256 })),
  issuer: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
  audience: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
  jwksUrl: Type.Optional(Type.Union([Type.String({ maxLength: 2048 }), Type.Null()])),
  jwks: Type.Optional(Type.Union([Type.Object({ keys: Type.Array(Type.Object({}, { additionalProperties: true }), { maxItems: 50 }) }), Type.Null()])),
  maxTokenAge: Type.Optional(Type.Integer()),
  rateLimit: Type.Optional(Type.Integer()),
  allowedOrigins: Type.Optional(Type.Array(Type.String({ maxLength: 512 }), { maxItems: 100 })),
  enabled: Type.Optional(Type.Boolean()),
  writes: Type.Optional(Type.Boolean({ description: 'whether the partner\'s users may upload, change and delete (docs/writes.md); off unless given' })),
}, { additionalProperties: false });

const PartnerView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  issuer: Type.String(),
  audience: Type.String(),
  jwksUrl: Type.Union([Type.String(), Type.Null()]),
  jwks: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()]),
  maxTokenAge: Type.Integer(),
  rateLimit: Type.Integer(),
  allowedOrigins: Type.Array(Type.String()),
  enabled: Type.Boolean(),
  writes: Type.Boolean(),
  createdAt: Type.Integer(),
  updatedAt: Type.Integer(),
});

const nullable = (t: ReturnType<typeof Type.String>) => Type.Union([t, Type.Null()]);
const AuditEntryView = Type.Object({
  at: Type.Integer({ description: 'when, in epoch milliseconds' }),
  requestId: Type.String(),
  partnerId: Type.String(),
  userId: Type.String({ description: 'the hub user' }),
  providerId: Type.String(),
  accountId: nullable(Type.String({ description: 'the DAM account, as the provider names it' })),
  operation: Type.String({ description: 'upload, update, rename, move, delete, create-folder, update-folder, delete-folder, lock or unlock' }),
  targetId: nullable(Type.String({ description: 'the asset or folder id before' })),
  targetIdAfter: nullable(Type.String({ description: 'the asset or folder id after (a rename or move may change a path-based id)' })),
  nameBefore: nullable(Type.String()),
  nameAfter: nullable(Type.String()),
  bytes: Type.Union([Type.Integer(), Type.Null()]),
  result: Type.String({ description: '`ok`, or the error code the client got' }),
});
const AuditAnswer = Type.Object({
  entries: Type.Array(AuditEntryView),
  more: Type.Optional(Type.String({ description: 'the `before` of the next, older page; absent on the last page' })),
});
const timeParam = (what: string) => Type.Optional(Type.String({ maxLength: 64, description: `${what}: a duration back from now (\`24h\`, \`7d\`), an ISO 8601 date or date-time (UTC unless it names a zone) or epoch milliseconds` }));
const AuditQuerystring = Type.Object({
  since: timeParam('entries at or after this time (default: every entry kept)'),
  until: timeParam('entries before this time'),
  partnerId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'one partner\'s entries' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: AUDIT_MAX_LIMIT, default: 100, description: 'entries per page' })),
  before: Type.Optional(Type.String({ maxLength: 2048, description: 'the `more` of the previous page' })),
}, { additionalProperties: false });

const security = [{ AdminKey: [] }];
const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });

export async function adminRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const hub = app.hub;
  const conflict = (e: unknown) => {
    if (e instanceof StoreConflictError) throw validationError(e.message);
    throw e;
  };
  const notFound = (id: string) => hubError('hub-not-found', `no partner with id ${JSON.stringify(id)}`, { message: 'No such partner.' });

  app.get('/admin/partners', { config: { auth: 'admin' }, schema: { tags: ['admin'], security, response: responses(Type.Array(PartnerView)) } }, async () =>
    (await hub.stores.partners.list()).map(partnerView));

  app.post('/admin/partners', { config: { auth: 'admin' }, schema: { tags: ['admin'], security, body: PartnerBody, response: responses(PartnerView, 201) } }, async (req, reply) => {
    const input = partnerInput(req.body, hub.config.defaultPartnerRateLimitPerMin);
    const p = await hub.stores.partners.create(input, hub.clock.now()).catch(conflict);
    return reply.code(201).send(partnerView(p));
  });

  app.get('/admin/partners/:id', { config: { auth: 'admin' }, schema: { tags: ['admin'], security, params: IdParams, response: responses(PartnerView) } }, async (req) => {
    const { id } = req.params;
    const p = await hub.stores.partners.get(id);
    if (!p) throw notFound(id);
    return partnerView(p);
  });

  app.patch('/admin/partners/:id', { config: { auth: 'admin' }, schema: { tags: ['admin'], security, params: IdParams, body: PartnerBody, response: responses(PartnerView) } }, async (req) => {
    const { id } = req.params;
    const body = req.body;
    if (body.id !== undefined && body.id !== id) throw validationError('a partner id cannot be changed');
    const p = await hub.stores.partners.update(id, partnerPatch(body), hub.clock.now()).catch(conflict);
    if (!p) throw notFound(id);
    hub.jwks.invalidate(id);
    return partnerView(p);
  });

  app.delete('/admin/partners/:id', { config: { auth: 'admin' }, schema: { tags: ['admin'], security, params: IdParams, response: { 204: Type.Null(), '4xx': Type.Ref('ErrorEnvelope') } } }, async (req, reply) => {
    const { id } = req.params;
    if (!(await hub.stores.partners.remove(id))) throw notFound(id);
    hub.jwks.invalidate(id);
    // No body at all (send(null) would serialise one): reply.code(204) is typed to send the 204
    // schema's null, the reply itself is not.
    reply.code(204);
    return reply.send();
  });

  app.get('/admin/audit', { config: { auth: 'admin' }, schema: { tags: ['admin'], security, querystring: AuditQuerystring, response: responses(AuditAnswer) } }, async (req) => {
    const q = req.query;
    const now = hub.clock.now();
    try {
      return await auditPage(hub.stores.audit, {
        since: q.since === undefined ? 0 : parseAuditTime(q.since, now, 'since'),
        until: q.until === undefined ? undefined : parseAuditTime(q.until, now, 'until'),
        partnerId: q.partnerId,
        before: q.before === undefined ? undefined : decodeAuditCursor(q.before),
      }, q.limit ?? 100);
    } catch (e) {
      if (e instanceof AuditQueryError) throw validationError(e.message);
      throw e;
    }
  });
}
