/**
 * Every call into a provider runs under a deadline: a DAM that never answers must cost the caller
 * a quick 504, not a connection held until the request timeout (and a pile of waiting requests).
 * At the deadline the call's AbortSignal fires: the kit's connectors end their upstream requests
 * and stop retrying (src/providers/kit/http.ts); whatever still answers late is dropped.
 */
import { hubError, integrationError, isHubError, type HubError } from '../errors.js';
import type { Provider, ProviderSession } from './contract.js';

export function providerDeadline(provider: Provider, timeoutMs: number): HubError {
  return integrationError('integration-unavailable', provider.descriptor.id, `the asset library did not answer within ${timeoutMs} ms`, { status: 504 });
}

/** `work`, or the error `onTimeout` makes once `timeoutMs` have passed without an answer. */
export async function withDeadline<T>(work: Promise<T>, timeoutMs: number, onTimeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), timeoutMs);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs a provider operation under the deadline, handing it the signal that aborts at the deadline;
 * hub errors pass through, anything else is a bug logged as hub-internal-error.
 */
export async function callProvider<T>(provider: Provider, timeoutMs: number, fn: (signal: AbortSignal) => Promise<T>, answers: 'object' | 'any' = 'object'): Promise<T> {
  const call = new AbortController();
  try {
    const out = await withDeadline(fn(call.signal), timeoutMs, () => {
      const e = providerDeadline(provider, timeoutMs);
      call.abort(e);
      return e;
    });
    // Every operation answers an object; anything else would be sent verbatim (a string) or as
    // an empty body, so it is the DAM answering garbage: 502.
    if (answers === 'object' && (typeof out !== 'object' || out === null || Array.isArray(out))) {
      throw integrationError('integration-unavailable', provider.descriptor.id, `the asset library answered ${out === null ? 'null' : Array.isArray(out) ? 'a list' : `a ${typeof out}`} where an object was expected`, { status: 502 });
    }
    return out;
  } catch (e) {
    if (isHubError(e)) throw e;
    throw Object.assign(hubError('hub-internal-error', `provider ${provider.descriptor.id} failed`), { cause: e });
  }
}

/** callProvider for an operation on a DAM session: `fn` gets the session carrying the call's signal. */
export function callOnSession<T>(provider: Provider, timeoutMs: number, session: ProviderSession, fn: (session: ProviderSession) => Promise<T>, answers?: 'object' | 'any'): Promise<T> {
  return callProvider(provider, timeoutMs, (signal) => fn({ ...session, signal }), answers);
}
