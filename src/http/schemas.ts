/**
 * Shared JSON schemas. Each route's schema drives validation, fast response serialisation and
 * the OpenAPI document, so the three cannot disagree.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import { UI_LOCALES } from '../providers/contract.js';
import { MODEL_SCHEMAS } from '../providers/model.js';

export const ErrorEnvelopeSchema = Type.Object(
  {
    message: Type.String(),
    details: Type.String(),
    errorCode: Type.String(),
    error: Type.Object({
      code: Type.String(),
      source: Type.Union([Type.Literal('hub'), Type.Literal('integration')]),
      status: Type.Integer(),
      message: Type.String(),
      details: Type.Optional(Type.String()),
      provider: Type.Optional(Type.String()),
      requestId: Type.String(),
    }),
  },
  { $id: 'ErrorEnvelope', description: 'Every error: status == error.status (SPEC.md section 5).' },
);

/** The schemas every route can reference by $id (the app adds them; the page serialiser compiles against them). */
export const SHARED_SCHEMAS: readonly TSchema[] = [ErrorEnvelopeSchema, ...MODEL_SCHEMAS];

const errorRef = Type.Ref('ErrorEnvelope');

/** Response map for a route: its success schema plus the error envelope for 4xx/5xx. */
export function responses(ok: TSchema, status = 200): Record<string, TSchema> {
  return { [status]: ok, '4xx': errorRef, '5xx': errorRef };
}

export const TokenPairSchema = Type.Object({
  access_token: Type.String(),
  refresh_token: Type.Optional(Type.String()),
  expires_in: Type.Integer(),
  token_type: Type.Literal('Bearer'),
});

export { UI_LOCALES };
export const UiLocaleSchema = Type.Union(UI_LOCALES.map((l) => Type.Literal(l)), { default: 'en', description: 'locale of interface labels' });

export const HubAuth = [{ HubAuth: [] }];
export const ContentAuth = [{ HubAuth: [], ProviderAuth: [] }];
