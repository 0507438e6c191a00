/** The connector kit: what a connector imports (docs/connectors.md). */
export { defineProvider, type CallContext, type ConnectorDeps, type ConnectorsConfig, type LinkAccess, type ConnectorHooks, type ConnectorSpec, type DefinedConnector, type DownloadRequest, type ThumbnailDeps, type ThumbnailRequest, DEFAULT_THUMBNAILS } from './define.js';
export { UpstreamClient, DEFAULT_UPSTREAM, type UpstreamRequest, type UpstreamResponse, type UpstreamSettings } from './http.js';
export { LogRelay, type UpstreamLog } from './upstream-log.js';
export { CircuitBreakers, type BreakerOptions, type BreakerState } from './breaker.js';
export { codeForStatus, malformed, parseRetryAfter, statusError, unavailable } from './upstream-errors.js';
export { MediaGrants } from './media-grants.js';
export { FormValueError, formSignInRoutes, signInPath, type FormField, type FormSignIn, type SignInResult } from './signin-form.js';
export { ThumbCache } from './thumb-cache.js';
