/**
 * One error type for everything a call can end in: the hub's envelope, the legacy shapes some
 * integrations still send (`{message, details}` without `error`, envelope fields unset, empty
 * bodies, plain-text 404s), network failures and the client's own conditions (login timed out,
 * login cancelled, no way to exchange).
 */

/** Where the error was read from. */
export type ErrorKind =
  /** The hub's envelope with an `error` object. */
  | 'envelope'
  /** JSON without an `error` object (e.g. `{message, details}`), or with its fields unset. */
  | 'legacy'
  /** A non-2xx answer with no body. */
  | 'empty'
  /** A non-2xx answer whose body is not JSON (plain text, HTML). */
  | 'text'
  /** No answer at all: DNS, connection refused, reset, CORS rejection. */
  | 'network'
  /** A condition the client itself detected (see `code`). */
  | 'client';

/** Which client operation failed; some helpers read it (search by image, hub refresh). */
export type Operation =
  | 'exchange' | 'checkToken' | 'hubRefresh' | 'logout' | 'providers' | 'providerInfo'
  | 'loginStart' | 'loginPoll' | 'damLogin' | 'damRefresh'
  | 'browse' | 'search' | 'searchByImage' | 'asset' | 'versions' | 'request'
  | 'upload' | 'update' | 'rename' | 'move' | 'remove' | 'createFolder' | 'renameFolder' | 'moveFolder' | 'removeFolder' | 'lock' | 'unlock';

/** Codes the client raises itself (source `client`). */
export type ClientErrorCode =
  | 'client-network-error'
  | 'client-no-exchange'
  | 'client-login-failed'
  | 'client-login-cancelled'
  | 'client-login-timeout'
  | 'client-no-dam-connection'
  | 'client-paging-loop'
  | 'client-placeholder-unresolved'
  /** upload() without a name: plain bytes and Blobs carry none (a File does). */
  | 'client-upload-name-missing';

/**
 * The hub's codes of the write calls (docs/writes.md). Each has its own subclass of DamhubError
 * below, so `catch (e) { if (e instanceof AssetVersionConflictError) … }` works, and `code` names it too.
 */
export type WriteErrorCode =
  | 'asset-version-conflict' | 'hub-precondition-required' | 'asset-locked' | 'asset-name-invalid' | 'asset-exists'
  | 'folder-not-empty' | 'writes-disabled' | 'upload-expired' | 'hub-unsupported-media-type' | 'hub-payload-too-large'
  | 'hub-idempotency-key-reused' | 'hub-idempotency-in-progress' | 'integration-storage-full';

export interface DamhubErrorInit {
  status: number;
  code?: string;
  source?: 'hub' | 'integration' | 'client';
  message: string;
  details?: unknown;
  provider?: string;
  requestId?: string;
  kind: ErrorKind;
  operation?: Operation;
  body?: unknown;
  retryAfterSec?: number;
  cause?: unknown;
}

export class DamhubError extends Error {
  /** HTTP status; 0 when there was no answer (network) or the client raised it. */
  readonly status: number;
  /** Machine-readable code (`error.code`, else top-level `errorCode`); undefined for bare legacy shapes. */
  readonly code: string | undefined;
  readonly source: 'hub' | 'integration' | 'client' | undefined;
  /** `error.details` (or the legacy top-level `details`): for logs and support, never for end users. */
  readonly details: unknown;
  /** The DAM, for integration errors. */
  readonly provider: string | undefined;
  /** The hub's request id (`error.requestId` or the `x-request-id` header). */
  readonly requestId: string | undefined;
  readonly kind: ErrorKind;
  readonly operation: Operation | undefined;
  /** The parsed body (JSON) or its text. */
  readonly body: unknown;
  /** From `Retry-After` on 429/503. */
  readonly retryAfterSec: number | undefined;

  constructor(init: DamhubErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'DamhubError';
    this.status = init.status;
    this.code = init.code;
    this.source = init.source;
    this.details = init.details;
    this.provider = init.provider;
    this.requestId = init.requestId;
    this.kind = init.kind;
    this.operation = init.operation;
    this.body = init.body;
    this.retryAfterSec = init.retryAfterSec;
  }

  isNotSupported(): boolean {
    return isNotSupported(this);
  }
  needsDamLogin(): boolean {
    return needsDamLogin(this);
  }
  needsExchange(): boolean {
    return needsExchange(this);
  }
}

/** 412: someone saved the asset since the ETag given in If-Match was read. */
export class AssetVersionConflictError extends DamhubError {
  /** The asset's ETag now (from the answer's ETag header, else from `details`): read the asset again, merge, update with it. */
  readonly currentEtag: string | undefined;
  constructor(init: DamhubErrorInit, currentEtag: string | undefined) {
    super(init);
    this.name = 'AssetVersionConflictError';
    this.currentEtag = currentEtag;
  }
}

/** 423: another user holds the asset's lock. */
export class AssetLockedError extends DamhubError {
  /** Who holds it, when the hub says. */
  readonly lockedBy: string | undefined;
  constructor(init: DamhubErrorInit, lockedBy: string | undefined) {
    super(init);
    this.name = 'AssetLockedError';
    this.lockedBy = lockedBy;
  }
}

/** 409 asset-exists: the folder holds that name already; upload again with onConflict `version` or `rename`. */
export class AssetExistsError extends DamhubError {
  override readonly name = 'AssetExistsError';
}
/** 409 folder-not-empty: removeFolder without `recursive`. */
export class FolderNotEmptyError extends DamhubError {
  override readonly name = 'FolderNotEmptyError';
}
/** 403 writes-disabled: the hub's operator has not allowed this partner to write. */
export class WritesDisabledError extends DamhubError {
  override readonly name = 'WritesDisabledError';
}
/** 400 asset-name-invalid: the name breaks a rule (the message names it). */
export class AssetNameInvalidError extends DamhubError {
  override readonly name = 'AssetNameInvalidError';
}
/** 428: update() without If-Match. */
export class PreconditionRequiredError extends DamhubError {
  override readonly name = 'PreconditionRequiredError';
}
/** 413 (the size limit) or 415 (the type is not accepted here), or 507 (the DAM is full). */
export class UploadRefusedError extends DamhubError {
  override readonly name = 'UploadRefusedError';
}
/** 410: a resumable upload waited too long and its parts were removed; start it again. */
export class UploadExpiredError extends DamhubError {
  override readonly name = 'UploadExpiredError';
}
/** 422: an Idempotency-Key came back with another request; 409 in-progress is retried by the client itself. */
export class IdempotencyError extends DamhubError {
  override readonly name = 'IdempotencyError';
}

/** The ETag in a 412's details: `current ETag "…"` (a weak W/"…" one too). */
function etagInDetails(details: unknown): string | undefined {
  if (typeof details !== 'string') return undefined;
  return /current ETag (W\/"[^"]*"|"[^"]*")/.exec(details)?.[1];
}

/** `lockedBy` from the envelope, else from the message or details ("locked by …"). */
function lockedByIn(body: unknown, details: unknown, message: string): string | undefined {
  const e = (body as { error?: { lockedBy?: unknown } } | null)?.error;
  if (e && typeof e.lockedBy === 'string') return e.lockedBy;
  for (const t of [details, message]) {
    const m = typeof t === 'string' ? /locked by ([^,;.)]+(?:\.[^,;.)\s]+)*)/i.exec(t) : null;
    if (m) return m[1]!.trim();
  }
  return undefined;
}

/** The subclass for a write code (plain DamhubError for every other code). */
function typed(init: DamhubErrorInit, headers: { get(name: string): string | null }): DamhubError {
  switch (init.code) {
    case 'asset-version-conflict': return new AssetVersionConflictError(init, headers.get('etag') ?? etagInDetails(init.details));
    case 'asset-locked': return new AssetLockedError(init, lockedByIn(init.body, init.details, init.message));
    case 'asset-exists': return new AssetExistsError(init);
    case 'folder-not-empty': return new FolderNotEmptyError(init);
    case 'writes-disabled': return new WritesDisabledError(init);
    case 'asset-name-invalid': return new AssetNameInvalidError(init);
    case 'hub-precondition-required': return new PreconditionRequiredError(init);
    case 'hub-payload-too-large': case 'hub-unsupported-media-type': case 'integration-storage-full': return new UploadRefusedError(init);
    case 'upload-expired': return new UploadExpiredError(init);
    case 'hub-idempotency-key-reused': case 'hub-idempotency-in-progress': return new IdempotencyError(init);
    default: return new DamhubError(init);
  }
}

export function clientError(code: ClientErrorCode, message: string, extra: Partial<DamhubErrorInit> = {}): DamhubError {
  return new DamhubError({ status: 0, code, source: 'client', kind: 'client', message, ...extra });
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : undefined);
const STATUS_TEXT: Record<number, string> = { 400: 'Bad request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not found', 409: 'Conflict', 410: 'Gone', 412: 'Precondition failed', 413: 'Payload too large', 415: 'Unsupported media type', 422: 'Unprocessable content', 423: 'Locked', 428: 'Precondition required', 429: 'Too many requests', 500: 'Internal server error', 501: 'Not implemented', 502: 'Bad gateway', 503: 'Service unavailable', 504: 'Gateway timeout' };

/**
 * Normalises a non-2xx answer. `text` is the raw body; every shape is accepted and none throws.
 * The envelope's `error` is checked before `error.code` is read (seed, errors rule 3).
 */
export function errorFromResponse(status: number, text: string, headers: { get(name: string): string | null }, operation?: Operation): DamhubError {
  const requestIdHeader = headers.get('x-request-id') ?? undefined;
  const ra = Number(headers.get('retry-after'));
  const retryAfterSec = Number.isFinite(ra) && ra >= 0 && headers.get('retry-after') !== null ? ra : undefined;
  const fallback = `${STATUS_TEXT[status] ?? 'HTTP error'} (${status})`;
  const trimmed = text.trim();
  if (!trimmed) return new DamhubError({ status, kind: 'empty', message: fallback, requestId: requestIdHeader, operation, body: text, retryAfterSec });
  let body: unknown;
  try {
    body = JSON.parse(trimmed);
  } catch {
    const firstLine = trimmed.split(/\r?\n/, 1)[0]!.slice(0, 300);
    return new DamhubError({ status, kind: 'text', message: /^</.test(firstLine) ? fallback : firstLine, details: trimmed.slice(0, 2000), requestId: requestIdHeader, operation, body: text, retryAfterSec });
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    return new DamhubError({ status, kind: 'legacy', message: typeof body === 'string' && body ? body : fallback, requestId: requestIdHeader, operation, body, retryAfterSec });
  }
  const b = body as Record<string, unknown>;
  const e = b.error && typeof b.error === 'object' && !Array.isArray(b.error) ? (b.error as Record<string, unknown>) : null;
  const code = str(e?.code) ?? str(b.errorCode) ?? str(b.code);
  const source = e?.source === 'hub' || e?.source === 'integration' ? e.source : code ? (code.startsWith('integration-') ? 'integration' : 'hub') : undefined;
  // The top-level `message` is "Error" on the hub's envelope; prefer anything more specific.
  const topMessage = str(b.message) !== 'Error' ? str(b.message) : undefined;
  const message = str(e?.message) ?? (typeof b.error === 'string' ? str(b.error) : undefined) ?? topMessage ?? fallback;
  const details = e?.details ?? b.details;
  const envelope = Boolean(e && str(e.code));
  return typed({
    status: envelope && typeof e!.status === 'number' ? (e!.status as number) : status,
    code,
    source,
    message,
    details,
    provider: str(e?.provider) ?? str(b.provider),
    requestId: str(e?.requestId) ?? requestIdHeader,
    kind: envelope ? 'envelope' : 'legacy',
    operation,
    body,
    retryAfterSec,
  }, headers);
}

export function networkError(cause: unknown, operation?: Operation): DamhubError {
  const m = cause instanceof Error ? cause.message : String(cause);
  return new DamhubError({ status: 0, code: 'client-network-error', source: 'client', kind: 'network', message: `network error: ${m}`, operation, cause });
}

const asError = (e: unknown): DamhubError | null => (e instanceof DamhubError ? e : null);

/**
 * "This provider cannot do that." Always for 501 and the integration-not-supported /
 * -not-implemented codes. On search by image the seed lets an integration answer 501, 404 or 400
 * for the missing capability, so there 404 and 400 count too, except the hub's own validation
 * error (a malformed image reference is the caller's mistake, not a missing feature).
 */
export function isNotSupported(e: unknown): boolean {
  const x = asError(e);
  if (!x || x.kind === 'network' || x.kind === 'client') return false;
  if (x.code === 'integration-not-supported' || x.code === 'integration-not-implemented' || x.status === 501) return true;
  if (x.operation === 'searchByImage' && (x.status === 404 || x.status === 400)) return x.code !== 'hub-validation-error' && x.code !== 'hub-payload-too-large';
  return false;
}

/** The DAM connection is missing or no longer accepted: refresh it where possible, else run the DAM login. */
export function needsDamLogin(e: unknown): boolean {
  const x = asError(e);
  if (!x) return false;
  if (x.code === 'client-no-dam-connection') return true;
  if (x.operation === 'hubRefresh') return false; // provider-access-token-invalid there means the hub refresh token failed
  return x.code === 'provider-access-token-missing' || x.code === 'provider-access-token-invalid' || x.code === 'integration-auth-failed';
}

/** The hub session is gone: a new token exchange (a fresh partner JWT) is needed. */
export function needsExchange(e: unknown): boolean {
  const x = asError(e);
  if (!x) return false;
  if (x.code === 'client-no-exchange') return true;
  if (x.code === 'hub-access-token-missing' || x.code === 'hub-access-token-invalid' || x.code === 'hub-refresh-token-invalid') return true;
  return x.operation === 'hubRefresh' && (x.code === 'provider-access-token-invalid' || x.code === 'provider-access-token-missing' || x.status === 401 || x.status === 403);
}

/** A retry of the same call may succeed (rate limit, unavailable, network). */
export function isRetryable(e: unknown): boolean {
  const x = asError(e);
  if (!x) return false;
  return x.kind === 'network' || x.status === 429 || x.status === 502 || x.status === 503 || x.status === 504;
}

/** The standard abort rejection for a signal (its reason, or an AbortError). */
export function abortReason(signal: AbortSignal): unknown {
  if (signal.reason !== undefined) return signal.reason;
  const e = new Error('This operation was aborted');
  e.name = 'AbortError';
  return e;
}
