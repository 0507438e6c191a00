/**
 * JSON calls to a SaaS API for the OAuth connectors: bearer token, a deadline per call, a bounded
 * response body, and every failure turned into an integration-* error by the vendor's own
 * `mapError` (each vendor words its errors differently). Nothing here retries: a non-idempotent
 * vendor API (Dropbox RPC calls are all POST) must not be replayed blindly.
 */
import { HubError, integrationError } from '../../errors.js';

export interface UpstreamFailure {
  status: number;
  /** Parsed JSON body when the answer was JSON, else the text (truncated). */
  body: unknown;
  retryAfter: string | null;
}

export interface UpstreamOptions {
  providerId: string;
  name: string;
  timeoutMs: number;
  /** Largest JSON body accepted (a listing page of a few thousand entries fits easily). */
  maxBytes?: number;
  mapError(f: UpstreamFailure): HubError;
}

const DEFAULT_MAX_BYTES = 16 * 1024 * 1024;

export async function requestJson<T>(o: UpstreamOptions, url: string, init: { method: 'GET' | 'POST'; token: string; body?: unknown }): Promise<T> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: init.method,
      headers: { authorization: `Bearer ${init.token}`, accept: 'application/json', ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      signal: AbortSignal.timeout(o.timeoutMs),
      redirect: 'error',
    });
  } catch (e) {
    throw transportError(o, e);
  }
  let text: string;
  try {
    text = await readBounded(o, res, o.maxBytes ?? DEFAULT_MAX_BYTES);
  } catch (e) {
    if (e instanceof HubError) throw e;
    throw transportError(o, e);
  }
  const json = parseJson(text);
  if (!res.ok) throw o.mapError({ status: res.status, body: json === undefined ? text.slice(0, 500) : json, retryAfter: res.headers.get('retry-after') });
  if (json === undefined || json === null || typeof json !== 'object') {
    throw integrationError('integration-unavailable', o.providerId, `expected JSON, got ${res.headers.get('content-type') ?? 'no content type'}: ${text.slice(0, 200)}`, {
      status: 502, message: `${o.name} answered with something other than JSON`,
    });
  }
  return json as T;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

async function readBounded(o: UpstreamOptions, res: Response, max: number): Promise<string> {
  const declared = Number(res.headers.get('content-length') ?? NaN);
  if (declared > max) {
    await res.body?.cancel();
    throw integrationError('integration-unavailable', o.providerId, `response of ${declared} bytes exceeds ${max}`, { status: 502, message: `${o.name} answered with too much data` });
  }
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const chunk of res.body ?? []) {
    n += chunk.byteLength;
    if (n > max) {
      await res.body?.cancel().catch(() => {});
      throw integrationError('integration-unavailable', o.providerId, `response exceeds ${max} bytes`, { status: 502, message: `${o.name} answered with too much data` });
    }
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks).toString('utf8');
}

function transportError(o: UpstreamOptions, e: unknown): HubError {
  const err = e as Error;
  if (err?.name === 'TimeoutError' || err?.name === 'AbortError') {
    return integrationError('integration-unavailable', o.providerId, `no answer within ${o.timeoutMs} ms`, { status: 504, message: `${o.name} did not answer in time` });
  }
  return integrationError('integration-unavailable', o.providerId, err?.message, { status: 502, message: `${o.name} could not be reached` });
}
