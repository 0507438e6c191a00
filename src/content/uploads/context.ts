/**
 * What one tus request carries that @tus/server does not hand to its data store and hooks: who
 * asks (the owner every later request of the upload must match) and the Upload-Checksum of the
 * body. The route runs @tus/server inside `runCall`, so the store reads them from here.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { ProviderSession } from '../../providers/contract.js';
import type { UploadRecord } from '../../stores/types.js';

export interface TusCall {
  /** Who asks: the DAM connection, bound to its partner and hub user (the upload's owner at creation). */
  dam: ProviderSession;
  requestId: string;
  /** Upload-Checksum, parsed and checked for a known algorithm. */
  checksum: { algorithm: string; digest: Buffer } | null;
  /** The upload's record as this request last read or created it. */
  record: UploadRecord | null;
  /** The first failure of the request as thrown (a HubError keeps its code through @tus/server). */
  error: unknown;
  /** Set by the final request: the headers of the answer it kept (ETag, Damhub-Asset-Id, content-type). */
  finished: Record<string, string> | null;
}

const calls = new AsyncLocalStorage<TusCall>();

export function runCall<T>(call: TusCall, fn: () => Promise<T>): Promise<T> {
  return calls.run(call, fn);
}

export function currentCall(): TusCall {
  const c = calls.getStore();
  if (!c) throw new Error('a tus data store call outside a tus request');
  return c;
}
