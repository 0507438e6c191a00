/**
 * The error contract (SPEC.md section 5). Every failure the hub answers is a HubError carrying a
 * stable code; the code fixes the HTTP status and the source, so nothing else in the code base
 * picks statuses. Rendering into the seed's envelope happens once, in http/errors.ts.
 */

export type ErrorSource = 'hub' | 'integration';

interface CodeSpec {
  status: number;
  source: ErrorSource;
  /** Default end-user message; callers may give a more specific one. */
  message: string;
}

export const ERROR_CODES = {
  'hub-validation-error': { status: 400, source: 'hub', message: 'The request is malformed.' },
  'hub-sdk-email-missing': { status: 400, source: 'hub', message: 'No usable email address was given for the user.' },
  'hub-sdk-token-missing': { status: 401, source: 'hub', message: 'The partner token is missing.' },
  'hub-sdk-token-invalid': { status: 401, source: 'hub', message: 'The partner token is invalid.' },
  'hub-sdk-token-expired': { status: 401, source: 'hub', message: 'The partner token has expired.' },
  'hub-sdk-partner-unknown': { status: 403, source: 'hub', message: 'The partner is not registered.' },
  'hub-sdk-audience-invalid': { status: 403, source: 'hub', message: 'The partner token is meant for another audience.' },
  'hub-access-token-missing': { status: 401, source: 'hub', message: 'The access token is missing.' },
  'hub-access-token-invalid': { status: 401, source: 'hub', message: 'The access token is invalid or has expired.' },
  'hub-refresh-token-invalid': { status: 401, source: 'hub', message: 'The refresh token is not valid for this session.' },
  'hub-access-denied': { status: 403, source: 'hub', message: 'Access was denied.' },
  'provider-access-token-missing': { status: 403, source: 'hub', message: 'Sign in to the asset library first.' },
  'provider-access-token-invalid': { status: 403, source: 'hub', message: 'The asset library connection is no longer valid; sign in again.' },
  'hub-not-found': { status: 404, source: 'hub', message: 'There is no such endpoint.' },
  'hub-payload-too-large': { status: 413, source: 'hub', message: 'The request body is too large.' },
  'hub-rate-limited': { status: 429, source: 'hub', message: 'Too many requests; try again later.' },
  'hub-internal-error': { status: 500, source: 'hub', message: 'Something went wrong on our side.' },
  'hub-unavailable': { status: 503, source: 'hub', message: 'The service is temporarily unavailable; try again.' },
  // Writes (docs/writes.md). Raised by the hub's write engine and by connectors mapping their DAM's answers alike.
  'asset-version-conflict': { status: 412, source: 'hub', message: 'Someone saved this asset since you opened it; reload it and try again.' },
  'hub-precondition-required': { status: 428, source: 'hub', message: 'This change needs the version you read (If-Match).' },
  'asset-locked': { status: 423, source: 'hub', message: 'This asset is locked by someone else.' },
  'asset-name-invalid': { status: 400, source: 'hub', message: 'This name cannot be used.' },
  'asset-exists': { status: 409, source: 'hub', message: 'Something with this name is already there.' },
  'folder-not-empty': { status: 409, source: 'hub', message: 'The folder is not empty.' },
  'writes-disabled': { status: 403, source: 'hub', message: 'Saving to the asset library is not enabled for this application.' },
  'upload-expired': { status: 410, source: 'hub', message: 'This upload has expired; start it again.' },
  'hub-unsupported-media-type': { status: 415, source: 'hub', message: 'This type of file cannot be uploaded here.' },
  'hub-idempotency-key-reused': { status: 422, source: 'hub', message: 'This Idempotency-Key was already used for a different request.' },
  'hub-idempotency-in-progress': { status: 409, source: 'hub', message: 'A request with this Idempotency-Key is still being processed; retry shortly.' },
  'integration-operation-failed': { status: 400, source: 'integration', message: 'The asset library rejected the request.' },
  'integration-auth-failed': { status: 401, source: 'integration', message: 'The asset library rejected the sign-in.' },
  'integration-forbidden': { status: 403, source: 'integration', message: 'You do not have permission to see this in the asset library.' },
  'integration-not-found': { status: 404, source: 'integration', message: 'The asset library has no such item.' },
  'integration-not-available': { status: 404, source: 'integration', message: 'This rendition is not available.' },
  'integration-not-implemented': { status: 501, source: 'integration', message: 'This operation is not implemented for this asset library.' },
  'integration-not-supported': { status: 501, source: 'integration', message: 'This asset library does not support this operation.' },
  'integration-storage-full': { status: 507, source: 'integration', message: 'The asset library has no room left for this file.' },
  'integration-unavailable': { status: 503, source: 'integration', message: 'The asset library is unavailable; try again later.' },
} as const satisfies Record<string, CodeSpec>;

export type ErrorCode = keyof typeof ERROR_CODES;
export type HubCode = { [K in ErrorCode]: (typeof ERROR_CODES)[K]['source'] extends 'hub' ? K : never }[ErrorCode];
export type IntegrationCode = Exclude<ErrorCode, HubCode>;

export interface HubErrorOptions {
  /** For logs and support; never shown as the user message. */
  details?: string;
  /** Overrides the code's default user message. */
  message?: string;
  /** Overrides the default status where the code allows a range (integration-unavailable: 502/503/504). */
  status?: number;
  /** Response headers that belong to this error (Retry-After, WWW-Authenticate). */
  headers?: Record<string, string>;
  cause?: unknown;
}

export class HubError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly source: ErrorSource;
  readonly details?: string;
  readonly headers?: Record<string, string>;
  /** Only integration errors name the DAM. */
  readonly provider?: string;

  constructor(code: ErrorCode, opts: HubErrorOptions = {}, provider?: string) {
    const spec: CodeSpec = ERROR_CODES[code];
    super(opts.message ?? spec.message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'HubError';
    this.code = code;
    this.source = spec.source;
    this.status = opts.status ?? spec.status;
    this.details = opts.details;
    this.headers = opts.headers;
    if (spec.source === 'integration') this.provider = provider;
  }
}

/** An error the hub raises itself. `details` says exactly what was wrong, for the partner's engineers. */
export function hubError(code: HubCode, details?: string, opts: Omit<HubErrorOptions, 'details'> = {}): HubError {
  return new HubError(code, { ...opts, details });
}

/** An error that originates in (or is about) a DAM; `details` carries the upstream message verbatim. */
export function integrationError(
  code: IntegrationCode,
  provider: string,
  details?: string,
  opts: Omit<HubErrorOptions, 'details'> = {},
): HubError {
  return new HubError(code, { ...opts, details }, provider);
}

export function validationError(details: string): HubError {
  return hubError('hub-validation-error', details);
}

export function isHubError(e: unknown): e is HubError {
  return e instanceof HubError;
}
