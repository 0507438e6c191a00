/**
 * The upstream HTTP client every connector uses (undici). Per provider: one connection pool, a
 * deadline per attempt, retries with full jitter for idempotent calls only, the upstream's
 * Retry-After honoured (or passed on to the client when longer than we will wait), a circuit
 * breaker per upstream host, a cap on how much of an answer is read, and an address policy so a
 * user-supplied server URL cannot reach the hub's own network unless configured.
 * Every failure leaves as a HubError with an integration-* code and the provider named.
 */
import dns from 'node:dns';
import type { LookupFunction } from 'node:net';
import type { Readable } from 'node:stream';
import type { Agent } from 'undici';
import type { Clock } from '../../clock.js';
import { integrationError, isHubError, type HubError } from '../../errors.js';
import { AddressPolicy } from '../../net/safe-fetch.js';
import { CircuitBreakers, type BreakerOptions } from './breaker.js';
import type { UpstreamLog } from './upstream-log.js';
import { malformed, parseRetryAfter, statusError, unavailable, upstreamText } from './upstream-errors.js';

export interface UpstreamSettings {
  /** Deadline of one attempt: connect, headers and (for buffered answers) the whole body. */
  timeoutMs: number;
  /** Extra attempts for idempotent calls after a network error, 429, 502, 503 or 504. */
  retries: number;
  /** Base of the exponential back-off; the wait is uniform in [0, base·2^attempt] (full jitter). */
  retryBaseMs: number;
  /** Longest Retry-After we wait for ourselves; a longer one goes back to the client. */
  maxRetryAfterMs: number;
  breaker: BreakerOptions;
  /** Largest buffered answer (listings, JSON, XML); a bigger one is refused, not read. */
  maxBodyBytes: number;
  /** Host names, IPs or CIDR ranges reachable although not public (an on-premises DAM, tests). */
  allowHosts: string[];
}

export const DEFAULT_UPSTREAM: UpstreamSettings = {
  timeoutMs: 15_000,
  retries: 2,
  retryBaseMs: 200,
  maxRetryAfterMs: 5_000,
  breaker: { failureThreshold: 5, coolDownMs: 30_000 },
  maxBodyBytes: 32 * 1024 * 1024,
  allowHosts: [],
};

export interface UpstreamRequest {
  method: string;
  url: string | URL;
  headers?: Record<string, string>;
  /**
   * A stream is sent as it is read (an upload): the call is never repeated (a stream cannot be
   * replayed), the deadline runs from the last body chunk handed over (a long upload is not cut by
   * a deadline meant for an answer's head), and an error of the stream itself (the client went
   * away, the hub's byte count refused it) comes out as that error, not as the upstream's failure.
   */
  body?: string | Buffer | Readable;
  /** Whether repeating the call is harmless; defaults from the method (GET, HEAD, OPTIONS, PROPFIND, SEARCH); never with a stream body. */
  idempotent?: boolean;
  /** Statuses the caller handles itself (besides 2xx); others become integration errors. */
  accept?: number[];
  /** What the call is, for error details ("PROPFIND /dav/photos"); defaults to method and path. */
  what?: string;
}

export interface UpstreamResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Readable;
}

export interface UpstreamDeps {
  clock: Clock;
  /** Waits between retries; tests pass one that records and returns at once. */
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
  /** Pulls the human message out of an error body (a JSON `message`, an XML `<Message>`). */
  errorMessage?: (body: string, contentType: string) => string;
  /** Where an upstream that could not be reached is reported (upstream-log.ts); absent: nowhere (unit tests of the kit). */
  log?: UpstreamLog;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'PROPFIND', 'SEARCH', 'REPORT']);
const RETRY_STATUSES = new Set([429, 502, 503, 504]);

/**
 * undici is loaded on the first upstream call, not at start: loading it installs its global
 * dispatcher, which changed how a hub without any connector drained in-flight requests on SIGTERM
 * (test/e2e/e2e.test.ts). A hub that serves no connector never loads it.
 */
let undiciModule: Promise<typeof import('undici')> | null = null;
const loadUndici = () => (undiciModule ??= import('undici'));

// Not unref'd: a caller awaits the retry. An unref'd back-off was the only thing left in the event
// loop of `damhub connectors check` (no listening socket) after a refused connection, so the
// process ran out of work and exited 0 with nothing printed, mid-check.
const realSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

class Retryable extends Error {
  /** Set when no answer came at all (refused, DNS, timeout, TLS, reset): reported once the call gives up. */
  network: unknown = undefined;
  constructor(readonly error: HubError, readonly waitMs: number | null) {
    super(error.message);
  }
}

export class UpstreamClient {
  readonly breakers: CircuitBreakers;
  /** The connection pool, made on first use; an object so that views (`during`) share it. */
  private readonly pool: { agent: Agent | null } = { agent: null };
  /** Set on a view made by `during`: aborted when the hub stops waiting for the call. */
  private callSignal: AbortSignal | null = null;
  private readonly agentOptions: ConstructorParameters<typeof Agent>[0];
  private readonly policy: AddressPolicy;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly random: () => number;

  constructor(readonly providerId: string, readonly settings: UpstreamSettings, private readonly deps: UpstreamDeps) {
    this.breakers = new CircuitBreakers(deps.clock, settings.breaker);
    this.policy = new AddressPolicy(settings.allowHosts);
    this.sleep = deps.sleep ?? realSleep;
    this.random = deps.random ?? Math.random;
    const policy = this.policy;
    const lookup: LookupFunction = (host, options, cb) => {
      dns.lookup(host, { ...options, all: true }, (err, addrs) => {
        if (err) return cb(err, '', 0);
        const list = addrs as dns.LookupAddress[];
        const refused = policy.hostAllowed(host) ? null : list.map((a) => policy.refusal(a.address)).find((r) => r !== null);
        if (refused) return cb(Object.assign(new Error(`refused to connect to ${host}: ${refused}`), { code: 'EREFUSEDADDR', refusal: { host, why: refused } }), '', 0);
        if ((options as { all?: boolean }).all) return (cb as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list);
        cb(null, list[0]!.address, list[0]!.family);
      });
    };
    this.agentOptions = {
      connect: { timeout: settings.timeoutMs, lookup },
      headersTimeout: settings.timeoutMs,
      bodyTimeout: settings.timeoutMs,
      keepAliveTimeout: 10_000,
    };
  }

  /** Ends the connection pool; closing again is a no-op (the hub closes every provider it registered, a test may too). */
  async close(): Promise<void> {
    const agent = this.pool.agent;
    if (!agent || agent.closed || agent.destroyed) return;
    await agent.close();
  }

  /**
   * This client for one provider call (pool, breakers and settings shared): once `signal` aborts
   * (the hub's deadline for the call passed) a request in flight is aborted, no retry starts and
   * a body being read is dropped, so a DAM that stopped answering stops holding sockets. Such an
   * abort is not the upstream's failure: the circuit breaker does not count it.
   */
  during(signal: AbortSignal): UpstreamClient {
    const view = Object.create(this) as UpstreamClient;
    view.callSignal = signal;
    return view;
  }

  /**
   * This client without a call's signal: for clean-up that must go out even after the hub stopped
   * waiting for the call (aborting a multipart upload whose client went away), bounded by the
   * deadline of each attempt as any call.
   */
  detached(): UpstreamClient {
    if (!this.callSignal) return this;
    const view = Object.create(this) as UpstreamClient;
    view.callSignal = null;
    return view;
  }

  /** The error for a call the hub stopped waiting for (nobody reads it; the caller had its 504). */
  private abandoned(what: string): HubError {
    return unavailable(this.providerId, `${what}: abandoned, the hub stopped waiting for the call`, { timeout: true });
  }

  /** A streamed answer (2xx or an accepted status). The caller must consume or destroy the body. */
  async send(req: UpstreamRequest): Promise<UpstreamResponse> {
    const url = typeof req.url === 'string' ? new URL(req.url) : req.url;
    const what = req.what ?? `${req.method} ${url.pathname}`;
    this.checkAddress(url, what);
    const streamed = isStream(req.body);
    const idempotent = !streamed && (req.idempotent ?? SAFE_METHODS.has(req.method.toUpperCase()));
    const attempts = idempotent ? this.settings.retries + 1 : 1;
    if (this.callSignal?.aborted) throw this.abandoned(what);
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.attempt(url, req, what);
      } catch (e) {
        if (!(e instanceof Retryable)) throw e;
        if (attempt + 1 >= attempts || this.callSignal?.aborted) {
          if (e.network !== undefined && !this.callSignal?.aborted) this.reportUnreachable(url, e.network, attempt + 1);
          throw e.error;
        }
        const backoff = this.random() * this.settings.retryBaseMs * 2 ** attempt;
        await this.sleep(e.waitMs ?? backoff);
        if (this.callSignal?.aborted) throw e.error; // abandoned during the back-off: no retry
      }
    }
  }

  /** A buffered text answer, at most maxBodyBytes. */
  async text(req: UpstreamRequest): Promise<{ status: number; headers: UpstreamResponse['headers']; text: string }> {
    const res = await this.send(req);
    const what = req.what ?? `${req.method} ${new URL(req.url).pathname}`;
    // A buffered answer gets the whole deadline, body included: a server dripping a byte at a
    // time within bodyTimeout still ends here.
    const stop = () => res.body.destroy(Object.assign(new Error('deadline'), { name: 'TimeoutError' }));
    const timer = setTimeout(stop, this.settings.timeoutMs);
    timer.unref();
    this.callSignal?.addEventListener('abort', stop, { once: true });
    try {
      return { status: res.status, headers: res.headers, text: await this.readCapped(res, what, new URL(req.url)) };
    } finally {
      clearTimeout(timer);
      this.callSignal?.removeEventListener('abort', stop);
    }
  }

  /** A JSON answer; HTML or other non-JSON where JSON was due is an integration error, not a crash. */
  async json<T = unknown>(req: UpstreamRequest): Promise<{ status: number; headers: UpstreamResponse['headers']; data: T }> {
    const r = await this.text({ ...req, headers: { accept: 'application/json', ...req.headers } });
    const what = req.what ?? `${req.method} ${new URL(req.url).pathname}`;
    const ct = String(r.headers['content-type'] ?? '');
    if (!/\bjson\b/i.test(ct)) throw malformed(this.providerId, what, `expected JSON but the answer is ${ct || 'untyped'}`, r.text);
    try {
      return { status: r.status, headers: r.headers, data: JSON.parse(r.text) as T };
    } catch {
      throw malformed(this.providerId, what, 'the answer is not valid JSON', r.text);
    }
  }

  private checkAddress(url: URL, what: string): void {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw malformed(this.providerId, what, `unsupported URL scheme ${url.protocol}`);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (this.policy.hostAllowed(host)) return;
    // An IP literal never goes through DNS lookup, so the policy is applied here.
    if (/^[\d.]+$|:/.test(host)) {
      const refused = this.policy.refusal(host);
      if (refused) throw addressRefused(this.providerId, what, host, refused);
    }
  }

  private async attempt(url: URL, req: UpstreamRequest, what: string): Promise<UpstreamResponse> {
    const key = `${this.providerId} ${url.host}`;
    const admitted = this.breakers.admit(key);
    if (!admitted.ok) {
      throw unavailable(this.providerId, `${what}: ${url.host} failed repeatedly; calls are paused for a moment`, { retryAfterSec: Math.max(1, Math.ceil(admitted.retryAfterMs / 1000)) });
    }
    // The deadline covers the answer's head only; a streamed body (a download) may take longer,
    // bounded by the idle bodyTimeout between chunks.
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(Object.assign(new Error('deadline'), { name: 'TimeoutError' })), this.settings.timeoutMs);
    timer.unref();
    const call = this.callSignal;
    const abandon = () => ac.abort(call!.reason);
    call?.addEventListener('abort', abandon, { once: true });
    // undici reads async iterables (its types name only streams): no stream in between to buffer ahead.
    const sent = isStream(req.body) ? relay(req.body, () => timer.refresh()) : null;
    let res;
    try {
      const undici = await loadUndici();
      this.pool.agent ??= new undici.Agent(this.agentOptions);
      // undici's own head timer runs from the request's start and is refreshed only when the socket
      // pushes back: a client uploading slowly would hit it mid-body. Off for a stream: `timer`,
      // refreshed by every chunk, bounds a stalled body and then the answer's head.
      res = await undici.request(url, { dispatcher: this.pool.agent, method: req.method as 'GET', headers: req.headers, body: sent ? (sent.body as unknown as Readable) : (req.body as string | Buffer | undefined), signal: ac.signal, ...(sent ? { headersTimeout: 0 } : {}) });
    } catch (e) {
      if (call?.aborted) throw this.abandoned(what);
      // The body's own stream failed: the upstream did nothing wrong (no breaker failure, no retry).
      if (sent?.failure) throw sent.failure.error;
      // The address policy refused the resolved address: no connection was made, the host did not
      // fail, and asking again gives the same answer.
      if (refusalOf(e)) throw networkError(this.providerId, what, e, this.settings.timeoutMs);
      this.breakers.failure(key);
      const retry = new Retryable(networkError(this.providerId, what, e, this.settings.timeoutMs), null);
      retry.network = e;
      throw retry;
    } finally {
      clearTimeout(timer);
      call?.removeEventListener('abort', abandon);
    }
    const status = res.statusCode;
    const ok = (status >= 200 && status < 300) || req.accept?.includes(status) === true;
    if (ok) {
      this.breakers.success(key);
      return { status, headers: res.headers, body: res.body };
    }
    if (status >= 500 && status !== 501) this.breakers.failure(key);
    else if (status === 429) this.breakers.neutral(key);
    else this.breakers.success(key);
    const text = await readSome(res.body, 8192).catch(() => '');
    const ct = String(res.headers['content-type'] ?? '');
    const message = upstreamText(this.deps.errorMessage?.(text, ct) || text, ct);
    const retryAfterSec = parseRetryAfter(res.headers['retry-after'], this.deps.clock.now());
    const error = statusError(this.providerId, what, status, message, status === 429 || status === 503 ? retryAfterSec : undefined);
    if (!RETRY_STATUSES.has(status)) throw error;
    if (retryAfterSec !== undefined && retryAfterSec * 1000 > this.settings.maxRetryAfterMs) throw error;
    throw new Retryable(error, retryAfterSec !== undefined ? retryAfterSec * 1000 : null);
  }

  private async readCapped(res: UpstreamResponse, what: string, url: URL): Promise<string> {
    const declared = Number(res.headers['content-length']);
    if (declared > this.settings.maxBodyBytes) {
      discard(res.body);
      throw tooLarge(this.providerId, what, this.settings.maxBodyBytes);
    }
    const chunks: Buffer[] = [];
    let n = 0;
    try {
      for await (const chunk of res.body) {
        n += (chunk as Buffer).length;
        if (n > this.settings.maxBodyBytes) {
          discard(res.body);
          throw tooLarge(this.providerId, what, this.settings.maxBodyBytes);
        }
        chunks.push(chunk as Buffer);
      }
    } catch (e) {
      if (isHubError(e)) throw e;
      if (!this.callSignal?.aborted) this.reportUnreachable(url, e, 1);
      throw networkError(this.providerId, what, e, this.settings.timeoutMs);
    }
    return Buffer.concat(chunks).toString('utf8');
  }

  /**
   * One warn line for a call that got no answer, naming the connector, the host (with its port,
   * never credentials, a path or a query) and the cause: the partner's user only reads "The asset
   * library is unavailable", so this line is where an operator learns why.
   */
  private reportUnreachable(url: URL, e: unknown, attempts: number): void {
    const cause = networkCause(e);
    this.deps.log?.warn({ connector: this.providerId, host: url.host, cause: cause.code, attempts, ...(cause.code === 'timeout' ? { timeoutMs: this.settings.timeoutMs } : {}) },
      `${this.providerId}: ${url.host} ${cause.text(this.settings.timeoutMs)}`);
  }
}

const isStream = (b: unknown): b is Readable => typeof (b as Readable | undefined)?.pipe === 'function';

/**
 * A request body read from `stream` chunk by chunk (undici pulls it: memory stays one chunk),
 * calling `progress` on each; `failure` holds the stream's own error once it failed.
 */
function relay(stream: Readable, progress: () => void): { body: AsyncIterable<Buffer>; failure: { error: unknown } | null } {
  const out: { body: AsyncIterable<Buffer>; failure: { error: unknown } | null } = { body: undefined as never, failure: null };
  out.body = (async function* () {
    try {
      for await (const chunk of stream) {
        progress();
        yield chunk as Buffer;
      }
    } catch (e) {
      out.failure = { error: e };
      throw e;
    }
  })();
  return out;
}

/** Drops an answer's body; the abort this causes is expected, not an error to report. */
export function discard(body: Readable): void {
  body.on('error', () => undefined);
  body.destroy();
}

function tooLarge(provider: string, what: string, max: number): HubError {
  return malformed(provider, what, `the answer is larger than ${max} bytes, more than the connector reads at once`);
}

async function readSome(body: Readable, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const chunk of body) {
    chunks.push(chunk as Buffer);
    n += (chunk as Buffer).length;
    if (n >= max) {
      discard(body);
      break;
    }
  }
  return Buffer.concat(chunks).toString('utf8').slice(0, max);
}

/**
 * The address policy refused the server (before any connection). Its message, not only its
 * details, names the rule: the connector sign-in form shows the message to the person who typed
 * the server URL, and "unavailable" would send them looking for an outage.
 */
function addressRefused(provider: string, what: string, host: string, why: string): HubError {
  // Named by its environment variable, the way an operator sets it (the config key is allowHosts).
  return integrationError('integration-unavailable', provider, `${what}: refused to connect to ${host}: ${why} (allow it with DAMHUB_CONNECTOR_ALLOW_HOSTS)`, {
    status: 502,
    message: `The server address is not allowed: ${why}. An administrator can allow it with DAMHUB_CONNECTOR_ALLOW_HOSTS.`,
  });
}

/** The address policy's refusal carried by a connection error (from the lookup), if that is what it is. */
function refusalOf(e: unknown): { host: string; why: string } | undefined {
  const err = e as { refusal?: { host: string; why: string }; cause?: { refusal?: { host: string; why: string } } } | null;
  return err?.refusal ?? err?.cause?.refusal;
}

type NetworkFailure = { name?: string; code?: string; message?: string; cause?: { code?: string; message?: string } };

function timedOut(err: NetworkFailure): boolean {
  return err.name === 'TimeoutError' || err.name === 'AbortError'
    || err.code === 'UND_ERR_HEADERS_TIMEOUT' || err.code === 'UND_ERR_BODY_TIMEOUT' || err.code === 'UND_ERR_CONNECT_TIMEOUT';
}

/** Why no answer came, as a code for the log (`timeout`, or the system's: ECONNREFUSED, ENOTFOUND, a TLS code) and in words. */
export function networkCause(e: unknown): { code: string; text(timeoutMs: number): string } {
  const err = (e ?? {}) as NetworkFailure;
  if (timedOut(err)) return { code: 'timeout', text: (ms) => `gave no answer within ${ms} ms` };
  const code = err.code ?? err.cause?.code ?? 'unknown';
  const said = err.cause?.message ?? err.message ?? String(e);
  if (code === 'ECONNREFUSED') return { code, text: () => 'refused the connection (ECONNREFUSED): nothing listens there' };
  if (code === 'ENOTFOUND' || code.startsWith('EAI_')) return { code, text: () => `could not be resolved in DNS (${code})` };
  if (/^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_)/.test(code)) return { code, text: () => `failed the TLS handshake (${code}: ${said})` };
  return { code, text: () => `could not be reached (${code}: ${said})` };
}

function networkError(provider: string, what: string, e: unknown, timeoutMs: number): HubError {
  if (isHubError(e)) return e;
  const err = e as NetworkFailure;
  if (timedOut(err)) return unavailable(provider, `${what}: no answer within ${timeoutMs} ms`, { timeout: true });
  const code = err.code ?? err.cause?.code;
  const refused = refusalOf(e);
  if (refused) return addressRefused(provider, what, refused.host, refused.why);
  const msg = err.cause?.message ?? err.message ?? String(e);
  return unavailable(provider, `${what}: ${code ? `${code} ` : ''}${msg}`, { unreachable: true });
}
