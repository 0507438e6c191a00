/** /system: runtime details of the connected provider. */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { damOf } from '../http/auth.js';
import { ContentAuth, responses, UiLocaleSchema } from '../http/schemas.js';
import { callOnSession } from '../providers/deadline.js';

/** Closed: exactly the fields of ProviderInfo (src/providers/contract.ts), each optional. */
const ProviderInfoSchema = Type.Object({
  remoteSystemPrefix: Type.Optional(Type.String({ description: "prefix of the remote system's ids or URLs" })),
  dataLocales: Type.Optional(Type.Array(Type.Object({
    id: Type.String({ description: 'what the dataLocale parameter takes' }),
    name: Type.String(),
    displayName: Type.String(),
    default: Type.Boolean(),
  }, { additionalProperties: false }), { description: 'locales of the data (metadata values)' })),
  filters: Type.Optional(Type.Array(Type.Object({ id: Type.String(), name: Type.String({ description: 'label in the requested uiLocale' }) }, { additionalProperties: false }), { description: 'filters the provider offers' })),
  renditions: Type.Optional(Type.Array(Type.String(), { description: 'named renditions (conversions) the provider can serve' })),
}, { additionalProperties: false, description: 'runtime details of the connected provider; {} when it has none' });

export async function systemRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const hub = app.hub;
  app.get('/system/providerInfo', {
    config: { auth: 'content' },
    schema: {
      tags: ['system'],
      summary: 'Runtime details of the connected provider ({} when it has none)',
      security: ContentAuth,
      querystring: Type.Object({ uiLocale: Type.Optional(UiLocaleSchema) }),
      response: responses(ProviderInfoSchema),
    },
  }, async (req) => {
    const dam = damOf(req);
    const provider = hub.providers.get(dam.providerId)!;
    const { uiLocale = 'en' } = req.query;
    const providerInfo = provider.providerInfo?.bind(provider);
    return providerInfo ? callOnSession(provider, hub.config.providerTimeoutMs, dam, (s) => providerInfo(s, { uiLocale })) : {};
  });
}
