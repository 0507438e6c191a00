/**
 * The resumable path of upload() and update(): tus 1.0 at the hub's /api/v1/uploads through
 * tus-js-client (the protocol's reference client), loaded with a dynamic import the first time a
 * file crosses the threshold, so a bundle that never uploads large files (the picker's main
 * module) does not carry it. A dropped connection is retried with the same upload URL: tus asks
 * the hub for the offset it holds (HEAD) and sends the rest from there.
 */
import { abortReason, errorFromResponse, networkError, type DamhubError, type Operation } from './errors.js';
import { sizeOf, tusFileSource, type UploadSource } from './upload-source.js';

export interface TusUploadArgs {
  endpoint: string;
  source: UploadSource;
  /** Upload-Metadata: parentId, name, onConflict, or assetId and ifMatch. */
  metadata: Record<string, string>;
  operation: Operation;
  /** The hub's auth headers, asked for before every request (the session may renew during a long upload). */
  headers: () => Promise<Record<string, string>>;
  /** After a 401 about the hub or DAM session: renew it; true when the request should be sent again. */
  renew: (e: DamhubError) => Promise<boolean>;
  onProgress?: (sent: number, total: number) => void;
  signal?: AbortSignal;
  chunkSize: number;
  retryDelays: number[];
}

export interface TusResult {
  /** The final PATCH's body: the Asset as JSON. */
  body: string;
  header(name: string): string | null;
}

type TusModule = typeof import('tus-js-client');
let loaded: Promise<TusModule> | null = null;

/** tus-js-client, once; its CommonJS build (Node) puts the exports on `default`. */
function loadTus(): Promise<TusModule> {
  loaded ??= import('tus-js-client').then((m) => ((m as { Upload?: unknown }).Upload ? m : (m as unknown as { default: TusModule }).default));
  return loaded;
}

interface TusResponse {
  getStatus(): number;
  getHeader(name: string): string | undefined;
  getBody(): string;
}

/**
 * A tus error as the DamhubError the rest of the client throws: the hub's envelope when it
 * answered, a network error when a request got no answer. Anything else (a stream that yields
 * another length than it declared) is thrown as it is.
 */
function toDamhubError(err: unknown, operation: Operation): DamhubError | Error {
  if (!(err as { originalRequest?: unknown }).originalRequest) return err instanceof Error ? err : new Error(String(err));
  const res = (err as { originalResponse?: TusResponse | null }).originalResponse;
  if (res && res.getStatus() > 0) {
    return errorFromResponse(res.getStatus(), res.getBody() ?? '', { get: (n) => res.getHeader(n) ?? null }, operation);
  }
  const cause = (err as { causingError?: unknown }).causingError ?? err;
  // The source's own refusal (upload-source.ts throws RangeError when a stream's length is not the declared one).
  if (cause instanceof RangeError) return cause;
  return networkError(cause, operation);
}

/** Codes a retry with the same upload URL cannot fix (the answer would be the same). */
const FINAL = new Set(['asset-exists', 'asset-locked', 'asset-version-conflict', 'asset-name-invalid', 'writes-disabled', 'folder-not-empty', 'upload-expired']);

export async function tusUpload(a: TusUploadArgs): Promise<TusResult> {
  const tus = await loadTus();
  if (a.signal?.aborted) throw abortReason(a.signal);
  const browser = typeof XMLHttpRequest === 'function';
  return new Promise<TusResult>((resolve, reject) => {
    let settled = false;
    /** A renewal after a 401, which the retried request waits for. */
    let renewing: Promise<unknown> | null = null;
    const upload = new tus.Upload(a.source as Blob, {
      endpoint: a.endpoint,
      metadata: a.metadata,
      uploadSize: sizeOf(a.source),
      chunkSize: a.chunkSize,
      retryDelays: a.retryDelays,
      // Resuming across page loads by a file's fingerprint could pick up an upload made with other
      // metadata (another folder, another If-Match): each call starts its own upload.
      storeFingerprintForResuming: false,
      removeFingerprintOnSuccess: true,
      fingerprint: (async () => null) as unknown as () => Promise<string>,
      fileReader: { openFile: async () => tusFileSource(a.source, !browser) },
      async onBeforeRequest(req) {
        if (renewing) await renewing;
        renewing = null;
        for (const [k, v] of Object.entries(await a.headers())) req.setHeader(k, v);
      },
      onShouldRetry(err, attempt, options) {
        if (settled) return false;
        const status = err.originalResponse?.getStatus() ?? 0;
        const e = toDamhubError(err, a.operation) as DamhubError;
        if (status === 401) {
          // The session expired mid-upload: renew it, then the same request goes again.
          renewing = a.renew(e).catch(() => false);
          return attempt < (options.retryDelays?.length ?? 0);
        }
        if (e.code && FINAL.has(e.code)) return false;
        return status === 0 || status === 409 || status === 429 || status === 408 || (status >= 500 && status !== 501 && status !== 507);
      },
      onProgress: a.onProgress ? (sent, total) => a.onProgress!(sent, total) : null,
      onSuccess({ lastResponse }) {
        settled = true;
        a.signal?.removeEventListener('abort', onAbort);
        resolve({ body: lastResponse.getBody() ?? '', header: (n) => lastResponse.getHeader(n) ?? null });
      },
      onError(err) {
        if (settled) return;
        settled = true;
        a.signal?.removeEventListener('abort', onAbort);
        // No later call resumes this upload (each call starts its own): let the hub drop its parts now.
        if (upload.url) upload.abort(true).catch(() => undefined);
        reject(toDamhubError(err, a.operation));
      },
    });
    const onAbort = () => {
      if (settled) return;
      settled = true;
      // Terminate: the hub removes the parts it holds (tus termination) rather than keep them until they expire.
      upload.abort(true).catch(() => undefined);
      reject(abortReason(a.signal!));
    };
    a.signal?.addEventListener('abort', onAbort, { once: true });
    upload.start();
  });
}
