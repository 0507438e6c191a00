/**
 * The provider interface: what every DAM behind the hub declares and implements. Its operations
 * are optional methods; what it can do is derived from which ones it implements plus the features
 * it declares (capabilities.ts), so capability has one source of truth.
 */
import type { OutputSpec, ReferenceImage } from '../images/jobs.js';
import type { FastifyInstance } from 'fastify';
import type { ProviderCredentials } from '../auth/provider-tokens.js';
import type { Readable } from 'node:stream';
import type { Asset, AssetPage, Folder, FolderPage, VersionList } from './model.js';
import type { SignInReservation, SignInSubject } from '../auth/signin-throttle.js';

/**
 * GET /system/providerInfo (SPEC.md section 2): every field a provider may report. The route's
 * schema is closed on exactly these, so a client generated from the OpenAPI document knows each.
 */
export interface ProviderInfo {
  /** Prefix of the remote system's ids or URLs. */
  remoteSystemPrefix?: string;
  /** Locales of the data (metadata values); `dataLocale` takes one of their ids. */
  dataLocales?: { id: string; name: string; displayName: string; default: boolean }[];
  /** Filters the provider offers, labelled in the requested uiLocale. */
  filters?: { id: string; name: string }[];
  /** Named renditions (conversions) the provider can serve. */
  renditions?: string[];
}

/** What a provider declares beyond its operations; undeclared: false (null for the hash). */
export interface ProviderFeatures {
  filters: boolean;
  dataLocalization: boolean;
  timeZone: boolean;
  /** Whether the sign-in asks for a server URL (multi-tenant systems). */
  serverUrl: boolean;
  /** Subfolders are repeated on every page of a folder browse. */
  foldersOnEveryPage: boolean;
  /** The hash field this provider always reports (SPEC.md section 6), or null. */
  assetHashAlgorithm: string | null;
}

/** GET /auth/providers' capabilities: the features plus one flag per implemented operation (capabilities.ts). */
export interface ProviderCapabilities extends ProviderFeatures {
  browse: boolean;
  search: boolean;
  /** Search by reference image (POST /assets/search). */
  similarSearch: boolean;
  versions: boolean;
  /** The DAM connection can be renewed without a new login. */
  refresh: boolean;
  // Writes (docs/writes.md): each true when the provider implements the operation.
  /** New assets (POST /assets/upload, tus). */
  upload: boolean;
  /** New versions of an asset (POST /assets/update/{id}). */
  update: boolean;
  rename: boolean;
  move: boolean;
  delete: boolean;
  /** Create, rename and delete folders. */
  folders: boolean;
  /** Lock and unlock assets. */
  lock: boolean;
}

export interface ProviderDescriptor {
  id: string;
  name: string;
  version: string;
  /** URL of a logo image (absolute or relative to the hub's public URL). */
  logo: string;
  /** A single-character or short glyph for compact pickers. */
  glyph: string;
  /** Declared features; operation capabilities are derived from the methods (capabilities.ts). */
  features: Partial<ProviderFeatures>;
  paging: { defaultSize: number; maxSize: number };
  isDefault?: boolean;
}

/**
 * The interface languages (`uiLocale`) the hub speaks (SPEC section 2): labels of content calls,
 * the sign-in pages (kit/signin-messages.ts) and the picker (packages/picker/src/i18n.ts) alike.
 */
export const UI_LOCALES = ['en', 'de', 'fr', 'es', 'ja', 'zh'] as const;
export type UiLocale = (typeof UI_LOCALES)[number];

/** The signed-in connection a content call runs under. */
export interface ProviderSession {
  providerId: string;
  /** Hub user id and partner id the connection is bound to. */
  userId: string;
  partnerId: string;
  credentials: ProviderCredentials;
  /**
   * Aborted when the hub stops waiting for this call (its deadline passed): a connector that
   * talks to a remote DAM ends its requests then. The kit's connectors get it on `ctx.http`.
   */
  signal?: AbortSignal;
  /**
   * Whether the connection's partner may write (the operator's opt-in, docs/writes.md): the write
   * engine refuses writes without it, and every capability field answers false.
   */
  writes?: boolean;
}

/** What a finished sign-in yields: credentials to wrap into the DAM connection token. */
export interface LoginIdentity {
  credentials: ProviderCredentials;
  /** Stable id of the DAM account, hashed into the poll's userHash. */
  accountId: string;
}

export interface LoginStart {
  state: string;
  serverUrl: string | null;
}

/**
 * Who receives access through a pending login, as its start page states it before anything else
 * (issue 28): the partner by its registered name, the hub user by the email of the exchange, the
 * system (the provider's name, and the server URL when there is one).
 */
export interface LoginDescription {
  providerId: string;
  userId: string;
  partnerId: string;
  providerName: string;
  serverUrl: string | null;
  partnerName: string;
  /** The hub user's email from the exchange (their name, else their subject, when the partner sent none). */
  userEmail: string;
  /** The `uiLocale` the login was started with (its pages speak it), or null: the browser's Accept-Language decides. */
  uiLocale: string | null;
}

/**
 * Why a login state cannot be used by its page: unknown (`invalid`), settled already (`finished`),
 * past its 5 minutes (`expired`), or its partner or user removed since (`gone`). The page says it
 * in its own language (kit/signin-messages.ts); `error` says it in English for logs and the API.
 */
export type LoginProblem = 'invalid' | 'finished' | 'expired' | 'gone';
export type LoginUnusable = { error: string; problem: LoginProblem };

/**
 * The cookie that binds a login state to the browser that opened its start page
 * (src/auth/login-browser.ts). A provider's start page sends `setCookie(state)`; its callback or
 * form POST acts only when `holds(state, req.headers.cookie)`, and otherwise changes nothing.
 */
export interface LoginBrowserBinding {
  setCookie(state: string): string;
  clearCookie(state: string): string;
  holds(state: string, cookieHeader: string | string[] | undefined): boolean;
}

/** What the hub offers providers for their sign-in pages and callbacks. */
export interface LoginHost {
  /** The pending login for `state`, or why it cannot be used. */
  pending(state: string): Promise<{ providerId: string; serverUrl: string | null; userId: string; partnerId: string; uiLocale: string | null } | LoginUnusable>;
  /** The pending login with the names its start page shows, or why it cannot be used. */
  describe(state: string): Promise<LoginDescription | LoginUnusable>;
  /** Binds the login to one browser: every provider's start page sets it, every step after checks it. */
  browser: LoginBrowserBinding;
  complete(state: string, identity: LoginIdentity): Promise<void>;
  fail(state: string, error: string): Promise<void>;
  /**
   * A failed attempt of the right browser (a callback whose code the DAM refused): the state stays
   * pending, so the user can try again from its start page, until the state's attempt budget
   * (signInStateAttempts) is spent; the last failure ends it with `error`. `ended` says which.
   */
  failedAttempt(state: string, error: string): Promise<{ ended: boolean }>;
  cancel(state: string): Promise<void>;
  /**
   * Sign-in forms call this before checking typed credentials (src/auth/signin-throttle.ts): one
   * attempt is reserved against the account name, the hub user and the state. Refused: answer
   * 429 with Retry-After whatever the credentials were, without checking them.
   */
  reserveSignIn(subject: SignInSubject): Promise<SignInReservation>;
  /** The hub's public base URL, without trailing slash. */
  publicUrl: string;
}

/** Options common to every listing call, already validated and clamped by the hub. */
export interface ListOptions {
  /** Page size, within 1..paging.maxSize. */
  size: number;
  /** The provider's own cursor from its previous page (the hub seals and unseals it). */
  more: string | null;
  /** Active filter option ids. */
  filters: string[];
  timeZone: string | null;
  dataLocale: string | null;
  uiLocale: string;
}

export interface SearchQuery {
  query: string;
  /** Folder id to scope to, including sub-folders; null = everywhere. */
  parentId: string | null;
}

/** A file the hub streams for a signed media URL. */
export type MediaFile =
  | { kind: 'file'; path: string; mimeType: string; size: number; etag: string; fileName: string; lastModified: number }
  | { kind: 'inline'; body: Buffer; mimeType: string; etag: string; fileName: string };

export interface MediaRef {
  assetId: string;
  version: number;
  /** 'original' or a rendition name. */
  rendition: string;
}

/**
 * Who a signed media URL was made for: the partner of the hub user and the provider's account
 * (the library account). The signature covers both, and the hub refuses the URL once the partner
 * is disabled or removed or the account removed (src/content/media-access.ts).
 */
export interface MediaBinding {
  partnerId: string;
  accountId: string;
}

/** What the hub lends providers to build asset URLs. */
export interface MediaUrls {
  /** A signed, expiring absolute URL the hub serves through `Provider.media`, bound to `bind`. */
  url(providerId: string, ref: MediaRef, bind: MediaBinding): string;
}

/**
 * The bytes of a new asset or version, streamed: read once, in order, to the end or until the
 * provider fails. The hub has checked the name, the declared length and the sniffed type against
 * the limits before the provider sees it, and counts the bytes as they pass (a body longer than
 * declared or than the limit errors the stream). A provider must not leave partial content
 * visible when the stream errors (temp name then rename, an aborted multipart upload).
 */
export interface UploadBody {
  stream: Readable;
  /** The declared length (Content-Length, Upload-Length) when the client gave one. */
  length: number | null;
  /** The type from the file name (the hub's one MIME table, kit/mime.ts), else application/octet-stream. */
  mimeType: string;
}

/** What to do when an upload's name is taken in its folder: refuse (409 asset-exists), keep both (a free name), or add a version. */
export type ConflictMode = 'fail' | 'rename' | 'version';

/**
 * The client's precondition on a write. The hub has already compared `ifMatch` with the asset it
 * read under the asset's write lock (src/content/asset-writes.ts), so of concurrent writers exactly
 * one passes; `upstreamTag` is the DAM's own tag of that read (CONTENT_TAG), for a provider whose
 * server has conditional writes, so that a change made outside the hub also fails the write.
 */
export interface WriteCondition {
  ifMatch: string | null;
  upstreamTag: string | null;
}

/** Where an asset or folder goes: a folder, and the name there (null: keep its name). */
export interface WriteDestination {
  parentId: string;
  name: string | null;
}

export interface Provider {
  descriptor: ProviderDescriptor;
  /** Where the user's browser goes to sign in for this login state. */
  beginLogin(start: LoginStart, host: LoginHost): Promise<{ redirectUri: string }>;
  /** Routes the provider serves (sign-in forms, OAuth callbacks); mounted with the hub's hooks. */
  routes?(app: FastifyInstance, host: LoginHost): void | Promise<void>;
  /**
   * Work before serving (the library's rescan and watcher) and on shutdown; the hub calls every
   * registered provider's, in registration order and in reverse.
   */
  start?(): Promise<unknown>;
  close?(): Promise<void>;
  /** Renews DAM credentials (capability refresh). */
  refresh?(credentials: ProviderCredentials): Promise<ProviderCredentials>;
  /** Runtime details for GET /system/providerInfo. */
  providerInfo?(session: ProviderSession, opts: { uiLocale: string }): Promise<ProviderInfo>;
  /** Checks the credentials are still good (account removed at the DAM → integration-auth-failed). */
  validate?(session: ProviderSession): Promise<void>;

  // Content operations: each one present is a capability (capabilities.ts OPERATIONS).
  browse?(session: ProviderSession, folderId: string, opts: ListOptions): Promise<FolderPage>;
  search?(session: ProviderSession, q: SearchQuery, opts: ListOptions): Promise<AssetPage>;
  /**
   * `image` was decoded once by the hub, in its image pool, under the decode budget; its
   * `outputs` are the raw decodes `referenceOutputs()` asked for (none: decode `image.bytes`
   * yourself only through the hub's pool, or forward the bytes).
   */
  searchByImage?(session: ProviderSession, image: ReferenceImage, opts: ListOptions): Promise<AssetPage>;
  /** The raw decodes of a reference image searchByImage needs (the descriptor's, a model's input). */
  referenceOutputs?(): OutputSpec[];
  asset?(session: ProviderSession, assetId: string, opts: { uiLocale: string; timeZone: string | null }): Promise<Asset>;
  versions?(session: ProviderSession, assetId: string, opts: { withMaster: boolean; uiLocale: string }): Promise<VersionList>;
  /** Bytes behind a signed media URL (already verified by the hub). */
  media?(ref: MediaRef): Promise<MediaFile>;
  /**
   * Whether the account a media URL was bound to (MediaBinding.accountId) still exists; asked
   * when such a URL is used, the answer cached for up to 30 s (src/content/media-access.ts).
   */
  accountLive?(accountId: string): Promise<boolean>;
  /**
   * A token that changes whenever what `browse` answers this session could change: the content
   * (an index generation) and the session's scope (account, allowed folders). When present the hub
   * may answer a repeated browse from its page cache (src/content/page-cache.ts) while the token is
   * unchanged; absent or null: every browse calls the provider.
   */
  viewVersion?(session: ProviderSession): string | null | Promise<string | null>;

  // Write operations (docs/writes.md): each one present is a capability (capabilities.ts
  // WRITE_OPERATIONS). The hub checks the partner's opt-in, names, limits, If-Match, locks and
  // idempotency, and serialises writes to one asset, before any of these is called
  // (src/content/asset-writes.ts); a provider reports what the account may do on each asset and
  // folder in their `capabilities` (its permissions) and the hub ANDs that with what it implements.
  /** A new asset in `parentId`; `created` false when `onConflict: 'version'` added a version to an existing one. */
  upload?(session: ProviderSession, target: { parentId: string; name: string; onConflict: ConflictMode }, body: UploadBody): Promise<{ asset: Asset; created: boolean }>;
  /** A new version of the asset's content (same id). */
  update?(session: ProviderSession, assetId: string, body: UploadBody, cond: WriteCondition): Promise<Asset>;
  renameAsset?(session: ProviderSession, assetId: string, name: string, cond: WriteCondition): Promise<Asset>;
  /** Into another folder, renamed on the way when `to.name` is given. The answer may carry a new id (path-based providers). */
  moveAsset?(session: ProviderSession, assetId: string, to: WriteDestination, cond: WriteCondition): Promise<Asset>;
  deleteAsset?(session: ProviderSession, assetId: string, cond: WriteCondition): Promise<void>;
  createFolder?(session: ProviderSession, parentId: string, name: string): Promise<Folder>;
  /** Renames a folder (`to.name`) and/or moves it (`to.parentId` differs from its parent). */
  updateFolder?(session: ProviderSession, folderId: string, to: { parentId: string | null; name: string | null }): Promise<Folder>;
  /** `recursive: false` on a folder with content: 409 folder-not-empty. */
  deleteFolder?(session: ProviderSession, folderId: string, opts: { recursive: boolean }): Promise<void>;
  /** Locks the asset for this account; the answer carries `lockedBy`. */
  lockAsset?(session: ProviderSession, assetId: string): Promise<Asset>;
  unlockAsset?(session: ProviderSession, assetId: string): Promise<Asset>;
  /**
   * File extensions (lower case, no dot) the provider accepts in `folderId` (null: the root, or an
   * asset's own folder), or null for any; the hub narrows them with DAMHUB_UPLOAD_EXTENSIONS.
   */
  uploadExtensions?(session: ProviderSession, folderId: string | null): string[] | null | Promise<string[] | null>;
  /** The DAM account of the session, as the write audit records it. */
  accountOf?(session: ProviderSession): string | null;
}
