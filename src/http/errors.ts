/**
 * One place renders every failure into the seed's envelope: HubErrors thrown anywhere, Fastify's
 * own errors (validation, body limit, bad JSON, bad content type), unknown routes and crashes.
 * Stack traces go to the log, never to the response.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HubError, hubError, isHubError } from '../errors.js';

export interface ErrorEnvelope {
  message: string;
  details: string;
  errorCode: string;
  error: {
    code: string;
    source: 'hub' | 'integration';
    status: number;
    message: string;
    details?: string;
    provider?: string;
    requestId: string;
  };
}

export function envelope(err: HubError, req: FastifyRequest): ErrorEnvelope {
  const path = req.url.split('?')[0];
  const body: ErrorEnvelope = {
    message: 'Error',
    details: `${req.method} ${path} failed: ${err.message}`,
    errorCode: err.code,
    error: { code: err.code, source: err.source, status: err.status, message: err.message, requestId: String(req.id) },
  };
  // Hub errors carry the request id in details for support; integration errors keep the DAM's message verbatim.
  if (err.source === 'integration') {
    if (err.details !== undefined) body.error.details = err.details;
    body.error.provider = err.provider ?? 'unknown';
  } else {
    body.error.details = err.details ? `${err.details} (request id ${req.id})` : `request id ${req.id}`;
  }
  return body;
}

/** Maps any thrown value to a HubError; unknown failures become hub-internal-error. */
export function toHubError(e: unknown): HubError {
  if (isHubError(e)) return e;
  const fe = e as FastifyError & { validation?: unknown };
  if (fe?.validation) return hubError('hub-validation-error', validationDetails(fe));
  switch (fe?.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return hubError('hub-payload-too-large', 'the request body is over the configured limit');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return hubError('hub-validation-error', 'unsupported Content-Type; send application/json');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return hubError('hub-validation-error', 'Content-Type is application/json but the body is empty');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return hubError('hub-validation-error', 'the body is not valid JSON');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return hubError('hub-validation-error', 'Content-Length does not match the body');
  }
  if (isStorageFault(e)) return hubError('hub-unavailable', 'the data directory cannot be written (read-only or full)');
  if (fe instanceof SyntaxError && (fe as FastifyError).statusCode === 400) return hubError('hub-validation-error', 'the body is not valid JSON');
  const status = typeof fe?.statusCode === 'number' ? fe.statusCode : 500;
  if (status === 404) return hubError('hub-not-found', fe.message);
  if (status === 413) return hubError('hub-payload-too-large', fe.message);
  if (status >= 400 && status < 500) return hubError('hub-validation-error', fe.message);
  if (status === 503) return hubError('hub-unavailable', fe.message);
  return hubError('hub-internal-error');
}

/**
 * A data directory that became read-only or full is an outage of the hub's own storage, not a
 * bug: 503 so clients retry, and reads keep working meanwhile.
 */
const STORAGE_FAULTS = /^(SQLITE_(FULL|READONLY|IOERR|CANTOPEN)|EROFS|ENOSPC|EDQUOT)/;
function isStorageFault(e: unknown): boolean {
  const code = (e as { code?: unknown })?.code;
  return typeof code === 'string' && STORAGE_FAULTS.test(code);
}

/** Ajv's "must NOT have additional properties" does not say which one; the details must name it. */
function validationDetails(fe: FastifyError & { validation?: unknown }): string {
  const extra = Array.isArray(fe.validation)
    ? (fe.validation as { keyword?: string; params?: { additionalProperty?: unknown } }[])
      .filter((v) => v.keyword === 'additionalProperties' && typeof v.params?.additionalProperty === 'string')
      .map((v) => JSON.stringify(v.params!.additionalProperty))
    : [];
  return extra.length ? `${fe.message}: ${extra.join(', ')}` : fe.message;
}

export function sendError(err: HubError, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (err.headers) reply.headers(err.headers);
  return reply.code(err.status).type('application/json; charset=utf-8').send(envelope(err, req));
}

/** Why a request was answered with a 4xx, for its log line. */
export const rejections = new WeakMap<FastifyRequest, { code: string; details?: string }>();

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((e, req, reply) => {
    const err = toHubError(e);
    if (!isHubError(e) && err.status >= 500) {
      // Something nobody anticipated: the stack is what finds it.
      req.log.error({ err: e, code: err.code, requestId: req.id }, 'request failed');
    } else if (err.status >= 500 && err.status !== 501) {
      // An outage the hub or a connector recognised (a DAM down, a storage fault named as such):
      // its code and details say what happened; a stack would only show where it was mapped.
      req.log.warn({ code: err.code, provider: err.provider, details: err.details, requestId: req.id }, 'request failed');
    } else {
      // Expected answers (the client's mistake, or the DAM's own 404 or 501 "not supported"):
      // said on the request's one log line when it completes (src/app.ts), not on a line of its own.
      rejections.set(req, { code: err.code, details: err.details });
    }
    return sendError(err, req, reply);
  });
  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split('?')[0];
    return sendError(hubError('hub-not-found', `no route ${req.method} ${path}`), req, reply);
  });
}
