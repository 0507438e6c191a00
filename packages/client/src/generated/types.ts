// Generated from the hub's OpenAPI document by test/helpers/client-codegen.ts. Do not edit by hand:
// run `npm run gen:client-types`. test/client/client-types.test.ts fails when this file is stale.
/* eslint-disable */

/** Every error: status == error.status (SPEC.md section 5). */
export interface ErrorEnvelope {
  message: string;
  details: string;
  errorCode: string;
  error: {
    code: string;
    source: "hub" | "integration";
    status: number;
    message: string;
    details?: string;
    provider?: string;
    requestId: string;
  };
}

export interface Conversion {
  id: string;
  name: string;
  url: string;
  extension?: string;
  disabled?: boolean;
  description?: string;
}

export interface Exif {
  cameraModel?: string;
  orientation?: string;
  exposureTime?: number;
  apertureValue?: string;
  isoSpeedRatings?: string;
  width?: number;
  height?: number;
  resolution?: string;
  dateTimeOriginal?: number;
}

export interface Iptc {
  headline?: string;
  caption?: string;
  captionWriter?: string;
  instructions?: string;
  copyrightNotice?: string;
  credit?: string;
  city?: string;
  provinceState?: string;
  countryName?: string;
}

export interface Xmp {
  headline?: string;
  credit?: string;
  city?: string;
  provinceState?: string;
  countryName?: string;
  originalDocumentId?: string;
  documentId?: string;
  instanceId?: string;
  iccProfileDescription?: string;
}

export interface Value {
  id: string;
  type: "TEXT" | "DATE" | "DATETIME" | "TIME" | "NUMBER" | "BOOLEAN" | "DRAFT_JS";
  value: string;
  name: string;
  i18nName?: Record<string, string>;
}

export interface Asset {
  id: string;
  name: string;
  parentPath?: string;
  fileSize?: number;
  xSizePx?: number;
  ySizePx?: number;
  created?: number;
  modified?: number;
  mimeType?: string;
  version?: number;
  versionComment?: string;
  displayVersion?: number;
  downloadHashMd5?: string;
  downloadHashSha1?: string;
  downloadHashSha256Split4MB?: string;
  downloadHashSha256First16MB?: string;
  downloadHashSha256?: string;
  downloadHashSha512?: string;
  downloadHashFileAttributes?: string;
  downloadHashCrc32?: string;
  thumbnailUrl?: string;
  downloadUrl?: string;
  assetDetailsExternalUrl?: string;
  lockedBy?: string;
  capabilities?: {
    canDeleteAsset: boolean;
    canUpdateAsset: boolean;
    canLockAsset: boolean;
    canUnlockAsset: boolean;
    canRenameAsset: boolean;
    uploadExtensions: string[];
  };
  type?: string;
  conversions?: Conversion[];
  title?: string;
  caption?: string;
  copyright?: string;
  termsOfUse?: string;
  instructions?: string;
  colorSpace?: string;
  releasedBy?: string;
  releasedDate?: number;
  released?: string;
  keywords?: string[];
  categories?: string[];
  states?: string[];
  exif?: Exif;
  iptc?: Iptc;
  xmp?: Xmp;
  values?: Value[];
  relatedFolderId?: string;
  masterId?: string;
}

export interface Folder {
  id: string;
  name: string;
  relatedAssetId?: string;
}

export interface FolderCapabilities {
  canDeleteFolder: boolean;
  canAddFolder: boolean;
  canAddAsset: boolean;
  canRenameFolder: boolean;
  uploadExtensions?: string[];
}

export interface Filter {
  id: string;
  name: string;
  options: {
    id: string;
    isActive: boolean;
    name: string;
    count: number;
  }[];
}

export interface SearchResult {
  assets: Asset[];
  folders: Folder[];
  filters: Filter[];
  more?: string | number;
  totalAssetsCount: number;
  capabilities: {
    canAddAsset: boolean;
  };
}

export interface FolderResult {
  id: string;
  name: string;
  assets: Asset[];
  folders: Folder[];
  filters: Filter[];
  more?: string | number;
  totalAssetsCount: number;
  capabilities: FolderCapabilities;
}

export interface VersionsResult {
  id: string;
  name: string;
  versions: Asset[];
}

/** Response of POST /auth/exchangeToken. */
export interface TokenPair {
  access_token: string;
  refresh_token?: string;
  expires_in: number;
  token_type: "Bearer";
}

/** Response of GET /auth/checkToken. */
export interface CheckTokenResult {
  adapter: string;
  source: string;
  user: {
    id: string;
    name: string | null;
    email: string;
    givenName: string | null;
    familyName: string | null;
  };
  account: {
    id: string;
    name: string;
    issuer: string;
  };
  userHash: string;
  /** epoch milliseconds when the access token expires */
  expiresAt: number;
}

/** Response of GET /auth/providers. */
export interface ProviderListItem {
  id: string;
  name: string;
  version: string;
  logo: string;
  glyph: string;
  capabilities: {
    /** folders can be browsed */
    browse: boolean;
    /** keyword search */
    search: boolean;
    /** search by image (POST /assets/search) */
    similarSearch: boolean;
    /** version history (/assets/assetversions) */
    versions: boolean;
    /** the DAM connection can be renewed without a new login */
    refresh: boolean;
    /** new assets can be uploaded (POST /assets/upload, tus at /uploads) */
    upload: boolean;
    /** new versions of an asset can be saved (POST /assets/update/{assetId}) */
    update: boolean;
    /** assets can be renamed (PATCH /assets/asset/{assetId} with name) */
    rename: boolean;
    /** assets can be moved to another folder (PATCH /assets/asset/{assetId} with parentId) */
    move: boolean;
    /** assets can be deleted */
    delete: boolean;
    /** folders can be created, renamed and deleted */
    folders: boolean;
    /** assets can be locked and unlocked */
    lock: boolean;
    /** facet filters on browse and search */
    filters: boolean;
    /** metadata in several data locales */
    dataLocalization: boolean;
    /** dates follow the timeZone parameter */
    timeZone: boolean;
    /** the sign-in asks for a server URL */
    serverUrl: boolean;
    /** subfolders are repeated on every page of a browse */
    foldersOnEveryPage: boolean;
    /** the hash field the provider always reports, or null */
    assetHashAlgorithm: string | null;
  };
  loginUrl: string;
  isDefault: boolean;
  paging: {
    defaultSize: number;
    maxSize: number;
  };
}

export type ProviderList = ProviderListItem[];

/** Response of POST /auth/login. */
export interface LoginStart {
  redirect_uri: string;
  state: string;
}

/** Response of GET /auth/login. */
export interface LoginPoll {
  access_token?: string;
  refresh_token?: string;
  expires_in?: number;
  userHash?: string;
  error?: string;
}

/** Response of GET /system/providerInfo. */
export interface ProviderInfoResult {
  /** prefix of the remote system's ids or URLs */
  remoteSystemPrefix?: string;
  /** locales of the data (metadata values) */
  dataLocales?: {
    /** what the dataLocale parameter takes */
    id: string;
    name: string;
    displayName: string;
    default: boolean;
  }[];
  /** filters the provider offers */
  filters?: {
    id: string;
    /** label in the requested uiLocale */
    name: string;
  }[];
  /** named renditions (conversions) the provider can serve */
  renditions?: string[];
}

/** Query parameters of GET /assets/folder/{folderId}. */
export interface FolderQuery {
  /** assets per page; clamped to the provider maximum; 0 = provider default */
  size?: number;
  /** opaque cursor from the previous page */
  more?: string;
  filters?: string[];
  timeZone?: string;
  dataLocale?: string;
  /** locale of interface labels */
  uiLocale?: "en" | "de" | "fr" | "es" | "ja" | "zh";
}

/** Query parameters of GET /assets/search. */
export interface SearchQuery {
  /** assets per page; clamped to the provider maximum; 0 = provider default */
  size?: number;
  /** opaque cursor from the previous page */
  more?: string;
  filters?: string[];
  timeZone?: string;
  dataLocale?: string;
  /** locale of interface labels */
  uiLocale?: "en" | "de" | "fr" | "es" | "ja" | "zh";
  query?: string;
  parentId?: string;
}

/** Query parameters of POST /assets/search. */
export interface ImageSearchQuery {
  /** assets per page; clamped to the provider maximum; 0 = provider default */
  size?: number;
  /** opaque cursor from the previous page */
  more?: string;
  filters?: string[];
  timeZone?: string;
  dataLocale?: string;
  /** locale of interface labels */
  uiLocale?: "en" | "de" | "fr" | "es" | "ja" | "zh";
}

/** Query parameters of GET /assets/asset/{assetId}. */
export interface AssetQuery {
  /** locale of interface labels */
  uiLocale?: "en" | "de" | "fr" | "es" | "ja" | "zh";
  timeZone?: string;
}

/** Query parameters of GET /assets/assetversions/{assetId}. */
export interface VersionsQuery {
  withMaster?: boolean;
  /** locale of interface labels */
  uiLocale?: "en" | "de" | "fr" | "es" | "ja" | "zh";
}

/** Query parameters of POST /auth/login. */
export interface LoginStartQuery {
  provider: string;
  polling?: boolean;
  serverUrl?: string;
  /** language of the sign-in pages (as the content calls' uiLocale); absent: the browser's Accept-Language, else English */
  uiLocale?: "en" | "de" | "fr" | "es" | "ja" | "zh";
}

/** Request body of POST /assets/search. */
export interface ImageSearchBody {
  dataBase64: string;
}
