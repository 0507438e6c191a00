/** /system: runtime details of the connected provider. */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { damOf } from '../http/auth.js';
import { ContentAuth, responses, UiLocaleSchema } from '../http/schemas.js';
import { callOnSession } from '../providers/deadline.js';

export async function systemRoutes(app: FastifyInstance): Promise<void> {
  const hub = app.hub;
  app.get('/system/providerInfo', {
    config: { auth: 'content' },
    schema: {
      tags: ['system'],
      summary: 'Runtime details of the connected provider ({} when it has none)',
      security: ContentAuth,
      querystring: Type.Object({ uiLocale: Type.Optional(UiLocaleSchema) }),
      response: responses(Type.Object({}, { additionalProperties: true })),
    },
  }, async (req) => {
    const dam = damOf(req);
    const provider = hub.providers.get(dam.providerId)!;
    const { uiLocale = 'en' } = req.query as { uiLocale?: string };
    return provider.providerInfo ? callOnSession(provider, hub.config.providerTimeoutMs, dam, (s) => provider.providerInfo!(s, { uiLocale })) : {};
  });
}
