/**
 * The damhub client: one object per hub user that holds the hub session (token manager), the DAM
 * connections (one per provider) and makes every call of the contract. Runs on `fetch` alone, in
 * browsers and Node 20.
 */
import { defaultProvider } from './capabilities.js';
import { abortReason, clientError, DamhubError, errorFromResponse, isRetryable, needsDamLogin, needsExchange, networkError, type Operation } from './errors.js';
import type {
  Asset, AssetQuery, CheckTokenResult, Folder, FolderQuery, FolderResult, ImageSearchQuery, LoginPoll, LoginStart, LoginStartQuery, ProviderInfoResult,
  ProviderList, SearchQuery, SearchResult, TokenPair, VersionsQuery, VersionsResult,
} from './generated/types.js';
import { assetsOf, paginate, type Paged } from './paging.js';
import { tusUpload } from './tus.js';
import { countingStream, nameOf, replayable, sizeOf, typeOf, type UploadSource } from './upload-source.js';
import type { ConditionalWriteOptions, RemoveFolderOptions, UpdateOptions, UploadOptions, WriteOptions } from './writes.js';

/** The hub session. `expiresAt` is epoch milliseconds on the client's clock. */
export interface HubTokens {
  accessToken: string;
  refreshToken?: string;
  expiresAt: number;
}

/** A DAM connection (the `provider-authorization` token) for one provider. */
export interface DamConnection {
  providerId: string;
  accessToken: string;
  refreshToken?: string;
  /** Epoch milliseconds on the client's clock; undefined when unknown. */
  expiresAt?: number;
  /** Identifies the DAM account (differs when the user signed in as someone else). */
  userHash?: string;
}

/** Everything the client persists through its storage hook. */
export interface ClientState {
  hub?: HubTokens | null;
  dam?: Record<string, DamConnection>;
}

/** Persistence hooks: load once before the first call, save after every token change. */
export interface StateStorage {
  load(): ClientState | null | undefined | Promise<ClientState | null | undefined>;
  save(state: ClientState): void | Promise<void>;
}

/** What an opener returns: anything with `closed` (a Window does); `close()` is called when the login ends. */
export interface LoginWindow {
  readonly closed?: boolean;
  close?(): void;
}

export type LoginOpener = (url: string, ctx: { state: string; providerId: string; signal: AbortSignal }) => LoginWindow | void | null | Promise<LoginWindow | void | null>;

export interface DamhubClientOptions {
  /** The hub's API base, e.g. `https://hub.example.com/api/v1` (a base without `/api/vN` gets `/api/v1`). */
  baseUrl: string;
  /** Mints a fresh partner JWT (new iat and jti) for every token exchange; usually a call to the partner's backend. */
  getPartnerJwt?: (ctx: { signal?: AbortSignal }) => string | Promise<string>;
  /** Sent as the exchange body `{email}` when the partner JWT carries no email claim. */
  email?: string;
  /** Initial tokens (e.g. from an exchange done elsewhere). */
  tokens?: HubTokens;
  storage?: StateStorage;
  /** Default provider for content calls; set by `loginToDam` when absent. */
  provider?: string;
  fetch?: typeof fetch;
  /** Epoch milliseconds; inject for tests. */
  now?: () => number;
  /** Refresh this long before the access token expires (default 60 s). */
  refreshMarginMs?: number;
  /** How the DAM login's redirect_uri is opened; in browsers the default is a popup. */
  openLoginWindow?: LoginOpener;
  /** Waits between login polls; inject for tests. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Run the DAM login automatically when a content call finds the connection gone (default false). */
  autoDamLogin?: boolean;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /**
   * Files larger than this go through the resumable tus upload (default 8 MiB); smaller ones in one
   * plain POST. 0 sends every file through tus, Infinity none.
   */
  uploadThreshold?: number;
  /** The size of one tus PATCH (default: a browser sends a Blob in one, resuming at the hub's offset; 8 MiB otherwise, which bounds memory). */
  tusChunkSize?: number;
  /** Waits before each retry of a tus request after a dropped connection or a 5xx (default 0, 1, 3, 5, 10 s). */
  tusRetryDelays?: number[];
  /** How often a write is sent again after a network error, 429, 502-504 or hub-idempotency-in-progress (default 3), with the same Idempotency-Key. */
  writeRetries?: number;
}

export interface CallOptions {
  signal?: AbortSignal;
}

export interface ContentOptions extends CallOptions {
  /** Provider id; defaults to the client's current provider. */
  provider?: string;
}

export interface LoginOptions extends CallOptions {
  open?: LoginOpener;
  serverUrl?: string;
  /**
   * The language of the hub's sign-in pages (one of the `uiLocale`s: en, de, fr, es, ja, zh);
   * absent: the browser's Accept-Language, else English.
   */
  uiLocale?: LoginStartQuery['uiLocale'];
  /** First poll interval (default 1000 ms), growing ×1.5 up to `maxPollIntervalMs` (default 5000 ms). */
  pollIntervalMs?: number;
  maxPollIntervalMs?: number;
  /** Give up after this long (default and hub maximum: 5 minutes). */
  timeoutMs?: number;
}

/**
 * A form sign-in without a person (`signInWithPassword`): the library's accounts, or a form
 * connector's credentials (WebDAV: `serverUrl`, `username`, `password`; S3 and Cloudinary: their
 * form's fields by name in `fields`).
 */
export interface PasswordSignInOptions extends CallOptions {
  /** A provider that signs in with the hub's form (library, webdav, s3, cloudinary); default `library`. */
  provider?: string;
  /** The form's `username` field. */
  username?: string;
  /** The form's `password` field. */
  password?: string;
  /** Other fields of the provider's form, by name. */
  fields?: Record<string, string>;
  /** Sent as POST /auth/login's serverUrl; the form's server field holds it, and is sent with it (WebDAV, S3). */
  serverUrl?: string;
  /** The language of the form's messages (an error's `message` is the form's text); absent: English. */
  uiLocale?: LoginStartQuery['uiLocale'];
}

export type FolderOptions = Omit<FolderQuery, 'more'> & ContentOptions;
export type SearchOptions = Omit<SearchQuery, 'more'> & ContentOptions;
export type ImageSearchOptions = Omit<ImageSearchQuery, 'more'> & ContentOptions;
export type PageOptions<T> = T & { more?: string | number };
/** A reference image: a data URI, an http(s) URL, a result's downloadUrl, or bytes (turned into a data URI). */
export type ImageInput = string | { dataBase64: string } | { bytes: Uint8Array | ArrayBuffer; mimeType: string } | Blob;

type Query = Record<string, string | number | boolean | string[] | undefined | null>;

interface RawRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  query?: Query;
  /** A JSON body. */
  body?: unknown;
  /** A raw body (the bytes of an upload), sent with `contentType`. */
  bytes?: Blob | Uint8Array;
  contentType?: string;
  /** Upload progress of `bytes`. */
  onProgress?: (sent: number, total: number) => void;
  /** The answer's headers, read before the body is parsed (ETag, Damhub-Asset-Id). */
  onHeaders?: (headers: Headers, status: number) => void;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  operation: Operation;
}

const MiB = 1024 * 1024;

/** Damhub-Asset-Id carries the id URL-encoded (an id may hold any character, a header may not). */
function assetIdHeader(v: string | null): string | undefined {
  if (!v) return undefined;
  try {
    return decodeURIComponent(v);
  } catch {
    return v;
  }
}
/** How many ETags the client remembers (the last one it saw per asset id, for `etagOf` and update's default If-Match). */
const ETAG_MEMORY = 1000;

/** A v4 UUID for Idempotency-Key: crypto.randomUUID where it exists (secure contexts, Node), else from getRandomValues. */
export function newIdempotencyKey(): string {
  const c = globalThis.crypto;
  if (typeof c?.randomUUID === 'function') return c.randomUUID();
  const b = c.getRandomValues(new Uint8Array(16));
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const hex = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * One upload through XMLHttpRequest, the only browser API that reports upload progress (fetch
 * does not, and cannot stream a request body over HTTP/1.1). Answers a Response like fetch's.
 */
function xhrSend(url: URL, method: string, headers: Record<string, string>, body: Blob | Uint8Array, signal: AbortSignal | undefined, onProgress: (sent: number) => void): Promise<Response> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, url.href);
    for (const [k, v] of Object.entries(headers)) xhr.setRequestHeader(k, v);
    xhr.upload.onprogress = (e) => onProgress(e.loaded);
    const onAbort = () => xhr.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    const done = () => signal?.removeEventListener('abort', onAbort);
    xhr.onload = () => {
      done();
      const h = new Headers();
      for (const line of xhr.getAllResponseHeaders().trim().split(/[\r\n]+/)) {
        const i = line.indexOf(':');
        if (i > 0) h.append(line.slice(0, i).trim(), line.slice(i + 1).trim());
      }
      // A 204 cannot carry a body in a Response.
      resolve(new Response(xhr.status === 204 || xhr.status === 205 ? null : xhr.responseText, { status: xhr.status, headers: h }));
    };
    xhr.onerror = () => {
      done();
      reject(new TypeError('the upload request failed'));
    };
    xhr.onabort = () => {
      done();
      reject(signal ? abortReason(signal) : new TypeError('the upload was aborted'));
    };
    xhr.send(body as XMLHttpRequestBodyInit);
  });
}

const LOGIN_HORIZON_MS = 5 * 60_000;

const defaultSleep = (ms: number, signal?: AbortSignal) => new Promise<void>((resolve, reject) => {
  if (signal?.aborted) return reject(abortReason(signal));
  const t = setTimeout(() => {
    signal?.removeEventListener('abort', onAbort);
    resolve();
  }, ms);
  const onAbort = () => {
    clearTimeout(t);
    reject(abortReason(signal!));
  };
  signal?.addEventListener('abort', onAbort, { once: true });
});

/** Resolves with `p` unless `signal` aborts first (p keeps running for other waiters). */
function race<T>(p: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then((v) => {
      signal.removeEventListener('abort', onAbort);
      resolve(v);
    }, (e) => {
      signal.removeEventListener('abort', onAbort);
      reject(e);
    });
  });
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" };
const unescapeHtml = (s: string) => s.replace(/&(amp|lt|gt|quot|#39);/g, (_, e: string) => ENTITIES[e]!);

/**
 * The hub's sign-in form on a page, if it asks for a password: where it posts (absolute) and the
 * values its fields hold already (a browser submits them too: the server URL the login started with).
 */
function signInForm(html: string, pageUrl: string): { action: string; values: Record<string, string> } | null {
  const action = /<form\b[^>]*\baction="([^"]*)"/i.exec(html)?.[1];
  if (action === undefined || !/<input\b[^>]*\btype="password"/i.test(html)) return null;
  const values: Record<string, string> = {};
  for (const [, attrs] of html.matchAll(/<input\b([^>]*)>/gi)) {
    const name = /\bname="([^"]*)"/.exec(attrs!)?.[1];
    const value = /\bvalue="([^"]*)"/.exec(attrs!)?.[1];
    if (name && value !== undefined) values[unescapeHtml(name)] = unescapeHtml(value);
  }
  return { action: new URL(unescapeHtml(action), pageUrl).href, values };
}

/** The message a sign-in page shows in its alert (the form's own error text), as plain text. */
function pageMessage(html: string): string | undefined {
  const m = /<p class="error" role="alert">([^<]*)<\/p>/.exec(html)?.[1];
  return m ? unescapeHtml(m) : undefined;
}

function browserPopup(): ((url: string) => LoginWindow | null) | undefined {
  const w = (globalThis as { window?: { open?: (url: string, target: string, features: string) => LoginWindow | null } }).window;
  if (!w || typeof w.open !== 'function') return undefined;
  return (url) => w.open!(url, 'damhub-login', 'popup,width=480,height=640');
}

/**
 * The token manager: holds the hub's access and refresh tokens, refreshes proactively before
 * `expires_in` runs out and reactively when the hub says `hub-access-token-invalid`, falls back to
 * a fresh exchange through `getPartnerJwt` when the refresh fails, and lets concurrent callers
 * share one refresh (single flight).
 */
export class TokenManager {
  private tokens: HubTokens | null;
  private inflight: Promise<HubTokens> | null = null;
  /** Counters, for tests and diagnostics. */
  readonly stats = { exchanges: 0, refreshes: 0 };

  constructor(private readonly client: DamhubClient, private readonly opts: DamhubClientOptions, initial: HubTokens | null) {
    this.tokens = initial;
  }

  current(): HubTokens | null {
    return this.tokens;
  }

  set(tokens: HubTokens | null): void {
    this.tokens = tokens;
  }

  private get margin(): number {
    return this.opts.refreshMarginMs ?? 60_000;
  }

  private fresh(t: HubTokens | null): boolean {
    return !!t && this.client.now() < t.expiresAt - this.margin;
  }

  /** A valid access token: the current one, or one from a (shared) refresh or exchange. */
  async accessToken(signal?: AbortSignal): Promise<string> {
    await this.client.ready();
    const t = this.tokens;
    if (t && this.fresh(t)) return t.accessToken;
    return (await this.renew(t?.accessToken ?? null, signal)).accessToken;
  }

  /**
   * Replaces `stale` (the access token a caller saw fail or expire). When another caller already
   * replaced it, the new tokens are returned without another round trip; a refresh in flight is
   * shared by everyone who asks meanwhile.
   */
  renew(stale: string | null, signal?: AbortSignal): Promise<HubTokens> {
    const t = this.tokens;
    if (t && t.accessToken !== stale && this.fresh(t)) return Promise.resolve(t);
    if (!this.inflight) this.inflight = this.refreshOrExchange().finally(() => { this.inflight = null; });
    return race(this.inflight, signal);
  }

  /** Forces a refresh (rotating the refresh token), sharing any refresh in flight. */
  refresh(signal?: AbortSignal): Promise<HubTokens> {
    return this.renew(this.tokens?.accessToken ?? null, signal);
  }

  /** @internal A refresh without the exchange fallback (used by logout). */
  refreshOnly(): Promise<HubTokens> {
    const t = this.tokens;
    if (!t?.refreshToken) return Promise.reject(clientError('client-no-exchange', 'no refresh token'));
    return this.refreshWith(t);
  }

  private async refreshOrExchange(): Promise<HubTokens> {
    const t = this.tokens;
    if (t?.refreshToken) {
      try {
        return await this.refreshWith(t);
      } catch (e) {
        // Network trouble or an unavailable hub is not a dead session: do not burn an exchange on it.
        if (isRetryable(e) || !(e instanceof DamhubError)) throw e;
        if (!this.opts.getPartnerJwt) throw e;
      }
    }
    return this.exchange();
  }

  private async refreshWith(t: HubTokens): Promise<HubTokens> {
    this.stats.refreshes++;
    const pair = await this.client.raw<TokenPair>({
      method: 'GET', path: '/auth/refreshToken', operation: 'hubRefresh',
      headers: { authorization: `Bearer ${t.accessToken}`, 'provider-authorization': `Bearer ${t.refreshToken}` },
    });
    return this.accept(pair, t.refreshToken);
  }

  /** A fresh token exchange with a new partner JWT. */
  async exchange(signal?: AbortSignal): Promise<HubTokens> {
    const get = this.opts.getPartnerJwt;
    if (!get) throw clientError('client-no-exchange', 'the hub session cannot be renewed: no getPartnerJwt callback was given', { operation: 'exchange' });
    const jwt = await get({ signal });
    this.stats.exchanges++;
    const pair = await this.client.raw<TokenPair>({
      method: 'POST', path: '/auth/exchangeToken', operation: 'exchange', signal,
      headers: { authorization: `Bearer ${jwt}` },
      body: this.opts.email ? { email: this.opts.email } : undefined,
    });
    return this.accept(pair, undefined);
  }

  private async accept(pair: TokenPair, previousRefresh: string | undefined): Promise<HubTokens> {
    const tokens: HubTokens = { accessToken: pair.access_token, refreshToken: pair.refresh_token ?? previousRefresh, expiresAt: this.client.now() + pair.expires_in * 1000 };
    this.tokens = tokens;
    await this.client.persist();
    return tokens;
  }
}

export class DamhubClient {
  readonly baseUrl: string;
  readonly tokens: TokenManager;
  /** The provider content calls use when none is given. */
  provider: string | undefined;
  private readonly fetchImpl: typeof fetch;
  private readonly dam = new Map<string, DamConnection>();
  private readonly damInflight = new Map<string, Promise<DamConnection>>();
  private loading: Promise<void> | null = null;
  /** The last ETag seen per asset id, oldest first (see etagOf). */
  private readonly etags = new Map<string, string>();

  constructor(private readonly opts: DamhubClientOptions) {
    const base = opts.baseUrl.replace(/\/+$/, '');
    this.baseUrl = /\/api\/v\d+$/.test(base) ? base : `${base}/api/v1`;
    this.fetchImpl = opts.fetch ?? ((...a: Parameters<typeof fetch>) => fetch(...a));
    this.tokens = new TokenManager(this, opts, opts.tokens ?? null);
    this.provider = opts.provider;
  }

  now(): number {
    return this.opts.now ? this.opts.now() : Date.now();
  }

  // ── state ─────────────────────────────────────────────────────────────────────────────────
  /** Loads persisted state once (called before the first request). */
  ready(): Promise<void> {
    if (!this.loading) {
      this.loading = (async () => {
        const s = this.opts.storage ? await this.opts.storage.load() : null;
        if (!s) return;
        if (s.hub && !this.tokens.current()) this.tokens.set(s.hub);
        for (const [id, c] of Object.entries(s.dam ?? {})) if (!this.dam.has(id)) this.dam.set(id, c);
        if (!this.provider) this.provider = Object.keys(s.dam ?? {})[0];
      })();
    }
    return this.loading;
  }

  state(): ClientState {
    return { hub: this.tokens.current(), dam: Object.fromEntries(this.dam) };
  }

  /** @internal */
  async persist(): Promise<void> {
    try {
      await this.opts.storage?.save(this.state());
    } catch {
      /* a failing store (quota, private mode) must not fail the call that changed the tokens */
    }
  }

  damConnection(providerId = this.provider): DamConnection | undefined {
    return providerId ? this.dam.get(providerId) : undefined;
  }

  /** Stores a DAM connection obtained elsewhere (or removes it with null). */
  async setDamConnection(providerId: string, c: Omit<DamConnection, 'providerId'> | null): Promise<void> {
    if (c) this.dam.set(providerId, { ...c, providerId });
    else this.dam.delete(providerId);
    await this.persist();
  }

  // ── transport ─────────────────────────────────────────────────────────────────────────────
  /** @internal One HTTP round trip: JSON (or text) on 2xx, a DamhubError otherwise. */
  async raw<T>(r: RawRequest): Promise<T> {
    const url = new URL(this.baseUrl + r.path);
    for (const [k, v] of Object.entries(r.query ?? {})) {
      if (v === undefined || v === null) continue;
      if (Array.isArray(v)) for (const x of v) url.searchParams.append(k, x);
      else url.searchParams.set(k, String(v));
    }
    const headers: Record<string, string> = { accept: 'application/json', ...this.opts.headers, ...r.headers };
    let body: BodyInit | undefined;
    if (r.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(r.body);
    }
    if (r.signal?.aborted) throw abortReason(r.signal);
    let res: Response;
    try {
      if (r.bytes) {
        headers['content-type'] = r.contentType ?? 'application/octet-stream';
        res = await this.sendBytes(url, r.method, headers, r.bytes, r.signal, r.onProgress);
      } else {
        res = await this.fetchImpl(url, { method: r.method, headers, body, signal: r.signal });
      }
    } catch (e) {
      if (r.signal?.aborted) throw abortReason(r.signal);
      throw networkError(e, r.operation);
    }
    let text: string;
    try {
      text = await res.text();
    } catch (e) {
      if (r.signal?.aborted) throw abortReason(r.signal);
      throw networkError(e, r.operation);
    }
    if (!res.ok) throw errorFromResponse(res.status, text, res.headers, r.operation);
    r.onHeaders?.(res.headers, res.status);
    if (!text) return undefined as T;
    const type = res.headers.get('content-type') ?? '';
    if (!/json/i.test(type)) return text as T;
    try {
      return JSON.parse(text) as T;
    } catch (e) {
      throw new DamhubError({ status: res.status, kind: 'text', message: 'the hub answered malformed JSON', operation: r.operation, body: text, cause: e });
    }
  }

  /**
   * The bytes of an upload, with progress where the runtime can tell it: XMLHttpRequest in a
   * browser (unless a `fetch` was given), a counting stream with Node's fetch (it pulls the body
   * as it sends), else one report at the end.
   */
  private async sendBytes(url: URL, method: string, headers: Record<string, string>, bytes: Blob | Uint8Array, signal: AbortSignal | undefined, onProgress?: (sent: number, total: number) => void): Promise<Response> {
    const total = bytes instanceof Uint8Array ? bytes.byteLength : bytes.size;
    const report = (n: number) => onProgress?.(Math.min(n, total), total);
    report(0);
    let res: Response;
    if (typeof XMLHttpRequest === 'function') {
      res = onProgress && !this.opts.fetch
        ? await xhrSend(url, method, headers, bytes, signal, report)
        : await this.fetchImpl(url, { method, headers, body: bytes as BodyInit, signal });
    } else {
      // Node: the declared length goes with the stream (the hub checks it before reading).
      const body = onProgress ? countingStream(bytes, report) : (bytes as BodyInit);
      res = await this.fetchImpl(url, { method, headers: { ...headers, 'content-length': String(total) }, body, signal, duplex: 'half' } as RequestInit);
    }
    if (res.ok) report(total);
    return res;
  }

  /**
   * A call with the hub session (and for content calls the DAM connection): renews the access
   * token once on `hub-access-token-invalid`, refreshes the DAM connection once when the hub or
   * the DAM rejects it, and runs the DAM login when `autoDamLogin` is on.
   */
  private async call<T>(r: RawRequest, content: false | { provider?: string }): Promise<T> {
    let hubRetried = false;
    let damRefreshed = false;
    let damLoggedIn = false;
    if (content) await this.ready(); // the current provider may come from storage
    const providerId = content ? (content.provider ?? this.provider) : undefined;
    if (content && !providerId) throw clientError('client-no-dam-connection', 'no provider selected: run loginToDam(provider) first or pass {provider}', { operation: r.operation });
    for (;;) {
      const access = await this.tokens.accessToken(r.signal);
      const headers: Record<string, string> = { ...r.headers, authorization: `Bearer ${access}` };
      let conn: DamConnection | undefined;
      if (providerId) {
        try {
          conn = await this.usableDam(providerId, r.signal);
        } catch (e) {
          if (!needsDamLogin(e) || !this.opts.autoDamLogin || damLoggedIn) throw e;
          damLoggedIn = true;
          conn = await this.loginToDam(providerId, { signal: r.signal });
        }
        headers['provider-authorization'] = `Bearer ${conn.accessToken}`;
      }
      try {
        return await this.raw<T>({ ...r, headers });
      } catch (e) {
        if (!(e instanceof DamhubError)) throw e;
        if (!hubRetried && (e.code === 'hub-access-token-invalid' || e.code === 'hub-access-token-missing')) {
          hubRetried = true;
          await this.tokens.renew(access, r.signal);
          continue;
        }
        if (providerId && conn && needsDamLogin(e)) {
          if (!damRefreshed && conn.refreshToken) {
            damRefreshed = true;
            try {
              await this.renewDam(providerId, conn.accessToken, r.signal);
              continue;
            } catch (re) {
              if (isRetryable(re) || !(re instanceof DamhubError)) throw re;
            }
          }
          if (this.dam.get(providerId) === conn) await this.setDamConnection(providerId, null);
          if (this.opts.autoDamLogin && !damLoggedIn) {
            damLoggedIn = true;
            await this.loginToDam(providerId, { signal: r.signal });
            continue;
          }
        }
        throw e;
      }
    }
  }

  /**
   * The provider's connection, refreshed first when it is about to expire. A connection that is
   * missing or cannot be renewed throws an error for which needsDamLogin() is true.
   */
  private async usableDam(providerId: string, signal: AbortSignal | undefined): Promise<DamConnection> {
    await this.ready();
    const c = this.dam.get(providerId);
    if (!c) throw clientError('client-no-dam-connection', `not signed in to ${providerId}: run the DAM login`, { provider: providerId });
    const margin = this.opts.refreshMarginMs ?? 60_000;
    if (c.expiresAt === undefined || this.now() < c.expiresAt - margin) return c;
    if (!c.refreshToken) {
      // Expired without a way to renew: let the hub judge it (the client's clock may be off).
      if (this.now() < c.expiresAt) return c;
      await this.setDamConnection(providerId, null);
      throw clientError('client-no-dam-connection', `the ${providerId} connection expired: run the DAM login`, { provider: providerId });
    }
    try {
      return await this.renewDam(providerId, c.accessToken, signal);
    } catch (e) {
      if (isRetryable(e) || !(e instanceof DamhubError)) throw e;
      await this.setDamConnection(providerId, null);
      if (needsDamLogin(e)) throw e;
      throw clientError('client-no-dam-connection', `the ${providerId} connection could not be renewed: run the DAM login`, { provider: providerId, cause: e });
    }
  }

  /** Single-flight DAM refresh per provider. */
  private renewDam(providerId: string, stale: string, signal?: AbortSignal): Promise<DamConnection> {
    const c = this.dam.get(providerId);
    if (c && c.accessToken !== stale) return Promise.resolve(c);
    let p = this.damInflight.get(providerId);
    if (!p) {
      p = this.refreshDamNow(providerId).finally(() => this.damInflight.delete(providerId));
      this.damInflight.set(providerId, p);
    }
    return race(p, signal);
  }

  private async refreshDamNow(providerId: string): Promise<DamConnection> {
    const c = this.dam.get(providerId);
    if (!c?.refreshToken) throw clientError('client-no-dam-connection', `the ${providerId} connection cannot be refreshed`, { provider: providerId, operation: 'damRefresh' });
    let retried = false;
    for (;;) {
      const access = await this.tokens.accessToken();
      try {
        const pair = await this.raw<TokenPair>({
          method: 'GET', path: '/auth/refreshToken', operation: 'damRefresh',
          headers: { authorization: `Bearer ${access}`, 'provider-authorization': `Bearer ${c.refreshToken}` },
        });
        const next: DamConnection = { ...c, accessToken: pair.access_token, refreshToken: pair.refresh_token ?? c.refreshToken, expiresAt: this.now() + pair.expires_in * 1000 };
        this.dam.set(providerId, next);
        await this.persist();
        return next;
      } catch (e) {
        if (!retried && e instanceof DamhubError && (e.code === 'hub-access-token-invalid' || e.code === 'hub-access-token-missing')) {
          retried = true;
          await this.tokens.renew(access);
          continue;
        }
        throw e;
      }
    }
  }

  // ── session ───────────────────────────────────────────────────────────────────────────────
  /** Runs a token exchange now (getPartnerJwt is called for a fresh JWT). */
  exchange(o: CallOptions = {}): Promise<HubTokens> {
    return this.ready().then(() => this.tokens.exchange(o.signal));
  }

  /** Rotates the hub tokens now (falls back to an exchange when the refresh fails). */
  refresh(o: CallOptions = {}): Promise<HubTokens> {
    return this.ready().then(() => this.tokens.refresh(o.signal));
  }

  checkToken(o: CallOptions = {}): Promise<CheckTokenResult> {
    return this.call({ method: 'GET', path: '/auth/checkToken', operation: 'checkToken', signal: o.signal }, false);
  }

  /**
   * Ends the hub session server-side (the hub revokes its refresh tokens) and forgets every
   * token. An access token that already expired is refreshed first so the revocation still
   * happens; a session that is already gone is not an error.
   */
  async logout(o: CallOptions = {}): Promise<void> {
    await this.ready();
    const send = (access: string) => this.raw({ method: 'GET', path: '/auth/logout', operation: 'logout', signal: o.signal, headers: { authorization: `Bearer ${access}` } });
    try {
      const t = this.tokens.current();
      if (t) {
        try {
          await send(t.accessToken);
        } catch (e) {
          if (!(e instanceof DamhubError) || e.code !== 'hub-access-token-invalid' || !t.refreshToken) throw e;
          await send((await this.tokens.refreshOnly()).accessToken);
        }
      }
    } catch (e) {
      if (!needsExchange(e)) throw e;
    } finally {
      this.tokens.set(null);
      this.dam.clear();
      await this.persist();
    }
  }

  providers(o: CallOptions = {}): Promise<ProviderList> {
    return this.call({ method: 'GET', path: '/auth/providers', operation: 'providers', signal: o.signal }, false);
  }

  /** The default provider from the listing (isDefault, else the first). */
  async defaultProvider(o: CallOptions = {}): Promise<ProviderList[number] | null> {
    return defaultProvider(await this.providers(o));
  }

  providerInfo(o: ContentOptions & { uiLocale?: AssetQuery['uiLocale'] } = {}): Promise<ProviderInfoResult> {
    return this.call({ method: 'GET', path: '/system/providerInfo', operation: 'providerInfo', signal: o.signal, query: { uiLocale: o.uiLocale } }, { provider: o.provider });
  }

  // ── DAM login ─────────────────────────────────────────────────────────────────────────────
  /**
   * The DAM login: POST /auth/login, open redirect_uri (popup by default in browsers; opened
   * before the first await so popup blockers allow it when called from a click), poll GET
   * /auth/login with backoff until tokens, `{error}`, the window closing, abort or 5 minutes.
   * The connection is stored and the provider becomes the current one.
   */
  async loginToDam(providerId: string, o: LoginOptions = {}): Promise<DamConnection> {
    if (o.signal?.aborted) throw abortReason(o.signal);
    const opener = o.open ?? this.opts.openLoginWindow;
    // A browser popup must be opened synchronously within the user's gesture: open it blank now.
    let win: LoginWindow | null | undefined = null;
    const popup = opener ? undefined : browserPopup();
    if (popup) win = popup('about:blank');
    const local = new AbortController();
    const onAbort = () => local.abort(o.signal!.reason);
    o.signal?.addEventListener('abort', onAbort, { once: true });
    const signal = local.signal;
    try {
      const start = await this.call<LoginStart>({
        method: 'POST', path: '/auth/login', operation: 'loginStart', signal,
        query: { provider: providerId, polling: true, serverUrl: o.serverUrl, uiLocale: o.uiLocale },
      }, false);
      if (win && 'location' in win) (win as unknown as { location: { href: string } }).location.href = start.redirect_uri;
      else if (opener) win = (await opener(start.redirect_uri, { state: start.state, providerId, signal })) ?? null;
      else throw clientError('client-login-failed', `no way to open the sign-in page: pass {open} (redirect_uri: ${start.redirect_uri})`, { operation: 'damLogin' });
      return await this.pollLogin(providerId, start.state, win, o, signal);
    } finally {
      o.signal?.removeEventListener('abort', onAbort);
      local.abort();
      try {
        if (win && !win.closed) win.close?.();
      } catch {
        /* cross-origin or already gone */
      }
    }
  }

  private async pollLogin(providerId: string, state: string, win: LoginWindow | null, o: LoginOptions, signal: AbortSignal): Promise<DamConnection> {
    const sleep = this.opts.sleep ?? defaultSleep;
    const deadline = this.now() + Math.min(o.timeoutMs ?? LOGIN_HORIZON_MS, LOGIN_HORIZON_MS);
    let interval = o.pollIntervalMs ?? 1000;
    const maxInterval = o.maxPollIntervalMs ?? 5000;
    let windowClosed = false;
    for (;;) {
      if (signal.aborted) throw abortReason(signal);
      let answer: LoginPoll | undefined;
      try {
        answer = await this.raw<LoginPoll>({ method: 'GET', path: '/auth/login', operation: 'loginPoll', signal, query: { state, polling: true } });
      } catch (e) {
        if (!isRetryable(e)) throw e;
      }
      if (answer?.access_token) {
        const c: DamConnection = {
          providerId, accessToken: answer.access_token, refreshToken: answer.refresh_token,
          expiresAt: answer.expires_in ? this.now() + answer.expires_in * 1000 : undefined, userHash: answer.userHash,
        };
        this.dam.set(providerId, c);
        this.provider = providerId;
        await this.persist();
        return c;
      }
      if (answer?.error) {
        const code = /cancel/i.test(answer.error) ? 'client-login-cancelled' : /expired/i.test(answer.error) ? 'client-login-timeout' : 'client-login-failed';
        throw clientError(code, answer.error, { operation: 'damLogin', provider: providerId, body: answer });
      }
      if (windowClosed) throw clientError('client-login-cancelled', 'the sign-in window was closed', { operation: 'damLogin', provider: providerId });
      if (win?.closed) {
        windowClosed = true; // one more poll: the sign-in may have completed just before the window closed
        continue;
      }
      const left = deadline - this.now();
      if (left <= 0) throw clientError('client-login-timeout', 'the sign-in did not finish within 5 minutes', { operation: 'damLogin', provider: providerId });
      await sleep(Math.min(interval, left), signal);
      interval = Math.min(Math.round(interval * 1.5), maxInterval);
    }
  }

  /**
   * Signs in to a form provider without a person, for scripts and tests: it does what a browser
   * does with the sign-in popup. It starts the DAM login (POST /auth/login), opens the form page
   * (which sets the cookie that binds the login to its browser), posts the form with that cookie
   * and the state, then polls the login for the connection, which it stores like `loginToDam`.
   * The hub's rules all apply: the cookie binding, the sign-in throttle, the five attempts of a
   * state. It needs a runtime that lets a script read `Set-Cookie` (Node, Deno, Bun; not a
   * browser page, where the popup of `loginToDam` is the way). A refused sign-in throws
   * `client-login-failed` with the form's own message (`Wrong user name or password.`), the
   * form's HTTP status and, when throttled, `retryAfterSec`; the login it started is cancelled.
   */
  async signInWithPassword(o: PasswordSignInOptions): Promise<DamConnection> {
    const providerId = o.provider ?? 'library';
    if (o.signal?.aborted) throw abortReason(o.signal);
    const local = new AbortController();
    const onAbort = () => local.abort(o.signal!.reason);
    o.signal?.addEventListener('abort', onAbort, { once: true });
    const signal = local.signal;
    const failed = (message: string, extra: Partial<ConstructorParameters<typeof DamhubError>[0]> = {}) =>
      clientError('client-login-failed', message, { operation: 'damLogin', provider: providerId, ...extra });
    try {
      const start = await this.call<LoginStart>({
        method: 'POST', path: '/auth/login', operation: 'loginStart', signal,
        query: { provider: providerId, polling: true, serverUrl: o.serverUrl, uiLocale: o.uiLocale },
      }, false);
      const page = await this.formRequest('GET', start.redirect_uri, null, '', signal);
      if (page.status !== 200) throw failed(pageMessage(page.text) ?? `the sign-in page answered ${page.status}`, { status: page.status });
      const form = signInForm(page.text, start.redirect_uri);
      // Where the browser would send the password: the page's own origin, nowhere else.
      if (!form || new URL(form.action).origin !== new URL(start.redirect_uri).origin) {
        throw failed(`${providerId} does not sign in with the hub's form (its sign-in goes on at the vendor's page): use loginToDam`);
      }
      if (!page.cookie) {
        throw failed('the sign-in page set no cookie this runtime can read: signInWithPassword needs access to Set-Cookie (Node, Deno, Bun), which a browser page does not have');
      }
      const values: Record<string, string> = { ...form.values, ...o.fields };
      if (o.username !== undefined) values.username = o.username;
      if (o.password !== undefined) values.password = o.password;
      const submit = await this.formRequest('POST', form.action, new URLSearchParams({ ...values, state: start.state }), page.cookie, signal);
      if (submit.status !== 200) {
        // The login stays pending after a refusal (a person could type again): end it, so it
        // does not hold one of the user's pending sign-ins for its five minutes.
        await this.formRequest('POST', form.action, new URLSearchParams({ state: start.state, cancel: '1' }), page.cookie, signal).catch(() => undefined);
        const retry = Number(submit.headers.get('retry-after'));
        throw failed(pageMessage(submit.text) ?? `the sign-in form answered ${submit.status}`, {
          status: submit.status, retryAfterSec: Number.isFinite(retry) && retry > 0 ? retry : undefined,
        });
      }
      // The form settles the login before it answers: the first poll has the connection.
      return await this.pollLogin(providerId, start.state, { closed: true }, {}, signal);
    } finally {
      o.signal?.removeEventListener('abort', onAbort);
      local.abort();
    }
  }

  /** One request of a sign-in page, as a browser makes it: form-encoded, its cookie, redirects not followed. */
  private async formRequest(method: 'GET' | 'POST', url: string, body: URLSearchParams | null, cookie: string, signal: AbortSignal): Promise<{ status: number; text: string; headers: Headers; cookie: string }> {
    const headers: Record<string, string> = { ...this.opts.headers, accept: 'text/html' };
    if (cookie) headers.cookie = cookie;
    if (body) headers['content-type'] = 'application/x-www-form-urlencoded';
    let res: Response;
    let text: string;
    try {
      res = await this.fetchImpl(url, { method, headers, body: body?.toString(), redirect: 'manual', signal });
      text = await res.text();
    } catch (e) {
      if (signal.aborted) throw abortReason(signal);
      throw networkError(e, 'damLogin');
    }
    const set = typeof res.headers.getSetCookie === 'function' ? res.headers.getSetCookie() : [];
    return { status: res.status, text, headers: res.headers, cookie: set.map((c) => c.split(';')[0]!.trim()).filter((c) => c.includes('=')).join('; ') };
  }

  /** Renews the provider's DAM connection with its DAM refresh token. */
  refreshDam(providerId = this.provider, o: CallOptions = {}): Promise<DamConnection> {
    if (!providerId) return Promise.reject(clientError('client-no-dam-connection', 'no provider selected'));
    return this.ready().then(() => this.renewDam(providerId, this.dam.get(providerId)?.accessToken ?? '', o.signal));
  }

  /**
   * A usable connection for the provider: the stored one, else a refreshed one, else a new DAM
   * login (which opens the sign-in window).
   */
  async ensureDamConnection(providerId: string, o: LoginOptions = {}): Promise<DamConnection> {
    try {
      return await this.usableDam(providerId, o.signal);
    } catch (e) {
      if (!needsDamLogin(e)) throw e;
    }
    return this.loginToDam(providerId, o);
  }

  // ── content: single pages ─────────────────────────────────────────────────────────────────
  folder(folderId: string, o: PageOptions<FolderOptions> = {}): Promise<FolderResult> {
    const { signal, provider, ...q } = o;
    return this.call({ method: 'GET', path: `/assets/folder/${encodeURIComponent(folderId)}`, operation: 'browse', signal, query: q as Query }, { provider });
  }

  search(o: PageOptions<SearchOptions> = {}): Promise<SearchResult> {
    const { signal, provider, ...q } = o;
    return this.call({ method: 'GET', path: '/assets/search', operation: 'search', signal, query: q as Query }, { provider });
  }

  async searchByImage(image: ImageInput, o: PageOptions<ImageSearchOptions> = {}): Promise<SearchResult> {
    const { signal, provider, ...q } = o;
    const dataBase64 = await imageReference(image);
    return this.call({ method: 'POST', path: '/assets/search', operation: 'searchByImage', signal, query: q as Query, body: { dataBase64 } }, { provider });
  }

  /** The asset's details. Its ETag (the answer's header) is remembered for `etagOf` and `update`. */
  asset(assetId: string, o: AssetQuery & ContentOptions = {}): Promise<Asset> {
    const { signal, provider, ...q } = o;
    return this.call({
      method: 'GET', path: `/assets/asset/${encodeURIComponent(assetId)}`, operation: 'asset', signal, query: q,
      onHeaders: (h) => this.rememberEtag(assetId, h.get('etag')),
    }, { provider });
  }

  versions(assetId: string, o: VersionsQuery & ContentOptions = {}): Promise<VersionsResult> {
    const { signal, provider, ...q } = o;
    return this.call({ method: 'GET', path: `/assets/assetversions/${encodeURIComponent(assetId)}`, operation: 'versions', signal, query: q }, { provider });
  }

  // ── writes (docs/writes.md) ─────────────────────────────────────────────────────────────────
  /**
   * The ETag of an asset as this client last saw it (from `asset()`, an upload, an update, a
   * rename, move, lock or unlock answer), else read now with `asset()`; `{refresh: true}` always
   * reads it now. For If-Match, the ETag that matters is the one of the content the user edited:
   * the remembered one, not a fresh one (a fresh one would overwrite what someone saved meanwhile).
   */
  async etagOf(assetId: string, o: ContentOptions & { refresh?: boolean } = {}): Promise<string | undefined> {
    if (!o.refresh && this.etags.has(assetId)) return this.etags.get(assetId);
    await this.asset(assetId, { signal: o.signal, provider: o.provider });
    return this.etags.get(assetId);
  }

  private rememberEtag(assetId: string | null | undefined, etag: string | null | undefined): void {
    if (!assetId || !etag) return;
    this.etags.delete(assetId);
    this.etags.set(assetId, etag);
    if (this.etags.size > ETAG_MEMORY) this.etags.delete(this.etags.keys().next().value!);
  }

  /**
   * A write call: one Idempotency-Key for every attempt; network errors, 429, 502-504 and
   * hub-idempotency-in-progress are retried (the hub answers a repeated key with the first
   * result, so a retry never writes twice). The answer's ETag is remembered for the asset.
   */
  private async write<T>(r: RawRequest, o: WriteOptions, assetId?: string): Promise<T> {
    const key = o.idempotencyKey ?? newIdempotencyKey();
    const retries = this.opts.writeRetries ?? 3;
    const sleep = this.opts.sleep ?? defaultSleep;
    for (let attempt = 0; ; attempt++) {
      try {
        let etag: string | null = null;
        const value = await this.call<T>({
          ...r, signal: o.signal, headers: { ...r.headers, 'idempotency-key': key },
          onHeaders: (h, status) => {
            etag = h.get('etag');
            r.onHeaders?.(h, status);
          },
        }, { provider: o.provider });
        // The asset the answer describes: an upload's new id is in its body, and a rename or move
        // may change the id (a library asset's id is its path), so the body's id wins.
        const answered = (value as { id?: unknown } | undefined)?.id;
        const id = typeof answered === 'string' ? answered : assetId;
        if (assetId && id !== assetId) this.etags.delete(assetId);
        this.rememberEtag(id, etag);
        return value;
      } catch (e) {
        const again = isRetryable(e) || (e instanceof DamhubError && e.code === 'hub-idempotency-in-progress');
        if (!again || attempt >= retries || o.signal?.aborted) throw e;
        const wait = e instanceof DamhubError && e.retryAfterSec !== undefined ? e.retryAfterSec * 1000 : 250 * 2 ** attempt;
        await sleep(Math.min(wait, 10_000), o.signal);
      }
    }
  }

  /**
   * The bytes of an upload or update: one POST (raw body, any Content-Type) up to the client's
   * `uploadThreshold`, tus above it (resumable; tus-js-client is loaded then, not before).
   */
  private async transfer(file: UploadSource, o: UploadOptions | UpdateOptions, plain: { path: string; query?: Query; headers?: Record<string, string>; operation: Operation; assetId?: string }, metadata: Record<string, string>): Promise<Asset> {
    const size = sizeOf(file);
    const threshold = this.opts.uploadThreshold ?? 8 * MiB;
    if (!(o.resumable ?? size > threshold)) {
      const bytes = await replayable(file);
      return this.write<Asset>({ method: 'POST', path: plain.path, query: plain.query, headers: plain.headers, operation: plain.operation, bytes, contentType: typeOf(file), onProgress: o.onProgress }, o, plain.assetId);
    }
    await this.ready();
    const providerId = o.provider ?? this.provider;
    if (!providerId) throw clientError('client-no-dam-connection', 'no provider selected: run loginToDam(provider) first or pass {provider}', { operation: plain.operation });
    let stale = '';
    const browser = typeof XMLHttpRequest === 'function';
    const done = await tusUpload({
      endpoint: `${this.baseUrl}/uploads`,
      source: file,
      metadata,
      operation: plain.operation,
      headers: async () => {
        const access = (stale = await this.tokens.accessToken(o.signal));
        const conn = await this.usableDam(providerId, o.signal);
        return { ...this.opts.headers, authorization: `Bearer ${access}`, 'provider-authorization': `Bearer ${conn.accessToken}` };
      },
      renew: async (e) => {
        if (e.code === 'hub-access-token-invalid' || e.code === 'hub-access-token-missing') await this.tokens.renew(stale, o.signal);
        else if (needsDamLogin(e)) await this.renewDam(providerId, this.dam.get(providerId)?.accessToken ?? '', o.signal);
        return true;
      },
      onProgress: o.onProgress,
      signal: o.signal,
      // A browser sends a Blob from disk in one PATCH; bytes held in memory, streams and Node go in chunks.
      chunkSize: this.opts.tusChunkSize ?? (browser && typeof Blob !== 'undefined' && file instanceof Blob ? Infinity : 8 * MiB),
      retryDelays: this.opts.tusRetryDelays ?? [0, 1000, 3000, 5000, 10_000],
    });
    if (done.body.trim()) {
      const asset = JSON.parse(done.body) as Asset;
      this.rememberEtag(asset.id, done.header('etag'));
      return asset;
    }
    // The final PATCH answers the Asset; should a server send only its id, read it (which remembers its ETag).
    const id = assetIdHeader(done.header('damhub-asset-id')) ?? plain.assetId;
    if (!id) throw new DamhubError({ status: 200, kind: 'text', message: 'the upload finished without naming its asset', operation: plain.operation });
    return this.asset(id, { signal: o.signal, provider: providerId });
  }

  /**
   * Uploads a new asset into a folder. `file`: a Blob or File, bytes (a Buffer in Node), or
   * `{stream, size}` (`fileSource(path)` of `@damhub/client/node`). The name is `name`, else the
   * File's own. Answers the new Asset (or, with `onConflict: 'version'` onto an existing name,
   * that asset one version later).
   */
  async upload(parentId: string, file: UploadSource, o: UploadOptions = {}): Promise<Asset> {
    const name = o.name ?? nameOf(file);
    if (!name) throw clientError('client-upload-name-missing', 'upload() needs {name}: only a File carries its own', { operation: 'upload' });
    const onConflict = o.onConflict ?? 'fail';
    return this.transfer(file, o, { path: '/assets/upload', query: { parentId, name, onConflict }, operation: 'upload' }, { parentId, name, onConflict });
  }

  /** A new version of an asset's content, if it is still at `ifMatch` (default: the ETag this client last saw for it). */
  async update(assetId: string, file: UploadSource, o: UpdateOptions = {}): Promise<Asset> {
    const ifMatch = o.ifMatch ?? this.etags.get(assetId);
    // Without an ETag the hub answers 428 hub-precondition-required, which is the right error to throw.
    const headers: Record<string, string> = ifMatch ? { 'if-match': ifMatch } : {};
    const metadata: Record<string, string> = ifMatch ? { assetId, ifMatch } : { assetId };
    return this.transfer(file, o, { path: `/assets/update/${encodeURIComponent(assetId)}`, headers, operation: 'update', assetId }, metadata);
  }

  private patchAsset(assetId: string, body: { name?: string; parentId?: string }, o: ConditionalWriteOptions, operation: Operation): Promise<Asset> {
    return this.write<Asset>({
      method: 'PATCH', path: `/assets/asset/${encodeURIComponent(assetId)}`, operation, body,
      headers: o.ifMatch ? { 'if-match': o.ifMatch } : undefined,
    }, o, assetId);
  }

  rename(assetId: string, name: string, o: ConditionalWriteOptions = {}): Promise<Asset> {
    return this.patchAsset(assetId, { name }, o, 'rename');
  }

  move(assetId: string, parentId: string, o: ConditionalWriteOptions = {}): Promise<Asset> {
    return this.patchAsset(assetId, { parentId }, o, 'move');
  }

  /** Deletes an asset (204). */
  async remove(assetId: string, o: ConditionalWriteOptions = {}): Promise<void> {
    await this.write<void>({
      method: 'DELETE', path: `/assets/asset/${encodeURIComponent(assetId)}`, operation: 'remove',
      headers: o.ifMatch ? { 'if-match': o.ifMatch } : undefined,
    }, o);
    this.etags.delete(assetId);
  }

  createFolder(parentId: string, name: string, o: WriteOptions = {}): Promise<Folder> {
    return this.write<Folder>({ method: 'POST', path: '/assets/folder', operation: 'createFolder', body: { parentId, name } }, o);
  }

  renameFolder(folderId: string, name: string, o: WriteOptions = {}): Promise<Folder> {
    return this.write<Folder>({ method: 'PATCH', path: `/assets/folder/${encodeURIComponent(folderId)}`, operation: 'renameFolder', body: { name } }, o);
  }

  moveFolder(folderId: string, parentId: string, o: WriteOptions = {}): Promise<Folder> {
    return this.write<Folder>({ method: 'PATCH', path: `/assets/folder/${encodeURIComponent(folderId)}`, operation: 'moveFolder', body: { parentId } }, o);
  }

  /** Deletes a folder (204); one that is not empty only with `{recursive: true}` (else FolderNotEmptyError). */
  async removeFolder(folderId: string, o: RemoveFolderOptions = {}): Promise<void> {
    await this.write<void>({ method: 'DELETE', path: `/assets/folder/${encodeURIComponent(folderId)}`, operation: 'removeFolder', query: { recursive: o.recursive || undefined } }, o);
  }

  /** Locks the asset for this user: others get AssetLockedError (423) on writes until unlock(). */
  lock(assetId: string, o: WriteOptions = {}): Promise<Asset> {
    return this.write<Asset>({ method: 'POST', path: `/assets/lock/${encodeURIComponent(assetId)}`, operation: 'lock' }, o, assetId);
  }

  unlock(assetId: string, o: WriteOptions = {}): Promise<Asset> {
    return this.write<Asset>({ method: 'DELETE', path: `/assets/lock/${encodeURIComponent(assetId)}`, operation: 'unlock' }, o, assetId);
  }

  // ── content: traversals ───────────────────────────────────────────────────────────────────
  /** Every page of a folder, following `more` to the end with the same size; `folders` on each page are the ones not seen before. */
  folderPages(folderId: string, o: FolderOptions = {}): AsyncGenerator<Paged<FolderResult>> {
    return paginate((more) => this.folder(folderId, { ...o, more }));
  }

  searchPages(o: SearchOptions = {}): AsyncGenerator<Paged<SearchResult>> {
    return paginate((more) => this.search({ ...o, more }));
  }

  imageSearchPages(image: ImageInput, o: ImageSearchOptions = {}): AsyncGenerator<Paged<SearchResult>> {
    let ref: Promise<string> | null = null;
    return paginate(async (more) => this.searchByImage({ dataBase64: await (ref ??= imageReference(image)) }, { ...o, more }));
  }

  /** Every asset of a folder (this folder only, all pages). */
  folderAssets(folderId: string, o: FolderOptions = {}): AsyncGenerator<Asset> {
    return assetsOf(this.folderPages(folderId, o));
  }

  searchAssets(o: SearchOptions = {}): AsyncGenerator<Asset> {
    return assetsOf(this.searchPages(o));
  }

  /** A whole folder in one object: all assets, the de-duplicated subfolders, the first page's filters. */
  async collectFolder(folderId: string, o: FolderOptions = {}): Promise<FolderResult> {
    let first: FolderResult | null = null;
    const assets: Asset[] = [];
    const folders: FolderResult['folders'] = [];
    for await (const page of this.folderPages(folderId, o)) {
      first ??= page;
      assets.push(...page.assets);
      folders.push(...page.folders);
    }
    const { more: _more, ...rest } = first!;
    return { ...rest, assets, folders };
  }
}


function bytesToBase64(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/** The `dataBase64` value for an image: strings pass through; bytes and Blobs become data URIs. */
export async function imageReference(image: ImageInput): Promise<string> {
  if (typeof image === 'string') return image;
  if ('dataBase64' in image) return image.dataBase64;
  if (typeof Blob !== 'undefined' && image instanceof Blob) {
    return `data:${image.type || 'application/octet-stream'};base64,${bytesToBase64(new Uint8Array(await image.arrayBuffer()))}`;
  }
  const { bytes, mimeType } = image as { bytes: Uint8Array | ArrayBuffer; mimeType: string };
  return `data:${mimeType};base64,${bytesToBase64(bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes))}`;
}

/** Persistence in a Web Storage (localStorage / sessionStorage) under one key. */
export function webStorage(store: { getItem(k: string): string | null; setItem(k: string, v: string): void }, key = 'damhub'): StateStorage {
  return {
    load() {
      const raw = store.getItem(key);
      if (!raw) return null;
      try {
        return JSON.parse(raw) as ClientState;
      } catch {
        return null;
      }
    },
    save(state) {
      store.setItem(key, JSON.stringify(state));
    },
  };
}

/** In-memory persistence (e.g. for tests, or to share state between client instances). */
export function memoryStorage(initial: ClientState | null = null): StateStorage & { value: ClientState | null } {
  const s = {
    value: initial,
    load: () => (s.value ? structuredClone(s.value) : null),
    save: (state: ClientState) => {
      s.value = structuredClone(state);
    },
  };
  return s;
}
