/**
 * @damhub/client: the partner side of damhub's contract, on `fetch` alone (browsers, Node 20+).
 * See docs/client.md in the damhub repository.
 */
export * from './generated/types.js';
export {
  DamhubClient, TokenManager, imageReference, memoryStorage, newIdempotencyKey, webStorage,
  type CallOptions, type ClientState, type ContentOptions, type DamConnection, type DamhubClientOptions, type FolderOptions,
  type HubTokens, type ImageInput, type ImageSearchOptions, type LoginOpener, type LoginOptions, type LoginWindow, type PageOptions, type PasswordSignInOptions,
  type SearchOptions, type StateStorage,
} from './client.js';
export {
  DamhubError, errorFromResponse, isNotSupported, isRetryable, needsDamLogin, needsExchange,
  AssetExistsError, AssetLockedError, AssetNameInvalidError, AssetVersionConflictError, FolderNotEmptyError, IdempotencyError,
  PreconditionRequiredError, UploadExpiredError, UploadRefusedError, WritesDisabledError,
  type ClientErrorCode, type DamhubErrorInit, type ErrorKind, type Operation, type WriteErrorCode,
} from './errors.js';
export type { ConditionalWriteOptions, ConflictMode, RemoveFolderOptions, UpdateOptions, UploadOptions, WriteOptions } from './writes.js';
export type { StreamSource, UploadSource } from './upload-source.js';
export {
  capabilitiesOf, dataLocalesOf, defaultDataLocale, defaultProvider, hasPlaceholders, pageSizeFor, placeholdersIn, resolvePlaceholders, supports,
  type Capability, type DataLocale, type ProviderCapabilities, type ProviderInfo,
} from './capabilities.js';
export { assetsOf, paginate, type ListPage, type Paged } from './paging.js';
