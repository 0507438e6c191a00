/**
 * The reference document (/api/v1/openapi.json) beyond what the route schemas say: the names of
 * wildcard path parameters, and per operation an operationId, a description, the response headers
 * clients rely on, examples, and the media routes' statuses and content types. Route schemas stay
 * about validation and serialisation; what only a reader needs lives here, in one table, and
 * test/http/openapi-lint.test.ts fails when an operation is missing from it (no operationId).
 */
type Json = Record<string, any>;

/**
 * Folder and asset ids contain slashes, so their routes are wildcards (`/assets/folder/*`) and
 * the generated document said `{*}`. The document names them; routing is unchanged.
 */
const WILDCARDS: Record<string, { name: string; description: string }> = {
  '/api/v1/assets/folder/*': { name: 'folderId', description: 'folder id from a previous answer ("root" for the top); URL-encoded, it may contain slashes' },
  '/api/v1/assets/asset/*': { name: 'assetId', description: 'asset id from a browse or search answer; URL-encoded, it may contain slashes' },
  '/api/v1/assets/assetversions/*': { name: 'assetId', description: 'asset id from a browse or search answer; URL-encoded, it may contain slashes' },
  '/api/v1/assets/update/*': { name: 'assetId', description: 'asset id from a browse or search answer; URL-encoded, it may contain slashes' },
  '/api/v1/assets/lock/*': { name: 'assetId', description: 'asset id from a browse or search answer; URL-encoded, it may contain slashes' },
};

/** @fastify/swagger's per-route transform: a wildcard route's path and parameter get their real name. */
export function transformRoute({ schema, url }: { schema: Json; url: string }): { schema: Json; url: string } {
  const w = WILDCARDS[url];
  const star = schema?.params?.properties?.['*'];
  if (!w || !star) return { schema, url };
  const params = { type: 'object', properties: { [w.name]: { ...star, description: w.description } }, required: [w.name] };
  return { url: url.replace('*', `:${w.name}`), schema: { ...schema, params } };
}

const envelope = (status: number, code: string, message: string, details: string, method = 'GET', path = '/api/v1/…') => ({
  message: 'Error',
  details: `${method} ${path} failed: ${message}`,
  errorCode: code,
  error: { code, source: code.startsWith('integration-') ? 'integration' : 'hub', status, message, details: `${details} (request 5f0c2a9e1b7d4c3a)`, ...(code.startsWith('integration-') ? { provider: 'library' } : {}), requestId: '5f0c2a9e1b7d4c3a' },
});

/** The errors an operation's clients meet most, as examples of its 4XX answer (`code#case`: a second example of one code). */
const ERRORS: Record<string, [number, string, string]> = {
  'hub-validation-error': [400, 'The request is invalid.', 'querystring/size must be integer'],
  'hub-sdk-token-missing': [401, 'The partner token is missing.', 'send the partner JWT as "Authorization: Bearer <jwt>"'],
  'hub-sdk-token-invalid': [401, 'The partner token is invalid.', 'the token was already used (replay)'],
  'hub-sdk-partner-unknown': [403, 'The partner is unknown.', 'no enabled partner has the issuer https://partner.example/'],
  'hub-access-token-missing': [401, 'The access token is missing.', 'send "Authorization: Bearer <access token>" from /auth/exchangeToken'],
  'hub-access-token-invalid': [401, 'The access token is invalid.', 'the access token has expired'],
  'provider-access-token-missing': [403, 'The DAM connection token is missing.', 'send "provider-authorization: Bearer <token>" from the DAM login'],
  'provider-access-token-invalid': [403, 'The DAM connection token is invalid.', 'the refresh token was rotated out and reused'],
  'hub-access-denied': [403, 'Access denied.', 'media URL check failed: the signature does not match'],
  'hub-not-found': [404, 'Not found.', 'no partner with id p1'],
  'integration-not-found': [404, 'Not found.', 'no folder /Brand/Old'],
  'integration-not-supported': [501, 'Not supported by the DAM.', 'the DAM has no search by image'],
  'hub-rate-limited': [429, 'Too many requests.', 'retry in 2 s'],
  'upload-expired': [410, 'This upload has expired; start it again.', 'the upload expired at 2026-06-02T12:00:00.000Z; its parts are removed'],
  'hub-validation-error#checksum': [460, 'The uploaded chunk was damaged in transit; send it again.', 'Upload-Checksum: the sha256 of the 1048576 bytes received does not match; the chunk was discarded'],
  'hub-payload-too-large#upload': [413, 'The request body is too large.', 'Upload-Length is over the limit of 5368709120 bytes (DAMHUB_MAX_UPLOAD_BYTES)'],
  'hub-not-found#upload': [404, 'This upload does not exist.', 'no such upload'],
  'writes-disabled': [403, 'Saving to the asset library is not enabled for this application.', 'partner p1 may not write; the operator allows it with "damhub partners writes p1 on"'],
  'asset-name-invalid': [400, 'This name cannot be used.', 'name "a/b.png" contains a path separator (/ or \\) (rule: separator)'],
  'asset-exists': [409, 'Something with this name is already there.', 'logo-blue.png exists in /Brand'],
  'asset-version-conflict': [412, 'Someone saved this asset since you opened it; reload it and try again.', 'If-Match "a1" does not match the current ETag "b2": someone saved this asset since it was read'],
  'hub-precondition-required': [428, 'This change needs the version you read (If-Match).', 'send If-Match with the ETag of GET /assets/asset/{assetId}'],
  'asset-locked': [423, 'This asset is locked by ada.', '"logo-blue.png" is locked by ada'],
  'folder-not-empty': [409, 'The folder is not empty.', '/Brand/Old holds 3 assets; delete with recursive=true'],
  'hub-payload-too-large': [413, 'The request body is too large.', 'the upload is 6442450944 bytes; the limit is 5368709120 bytes (DAMHUB_MAX_UPLOAD_BYTES)'],
  'hub-unsupported-media-type': [415, 'This type of file cannot be uploaded here.', 'the content is application/pdf (.pdf), not image/png as the name "logo.png" says'],
  'hub-idempotency-key-reused': [422, 'This Idempotency-Key was already used for a different request.', 'Idempotency-Key "8e03…" was used for a different request; use a new key for a new request'],
  'hub-idempotency-in-progress': [409, 'A request with this Idempotency-Key is still being processed; retry shortly.', 'a request with Idempotency-Key "8e03…" is still running'],
};

type Limit = 'exchange' | 'user' | null;
interface OpDoc { id: string; description: string; errors: string[]; limit?: Limit; example?: unknown; summary?: string }

const TOKENS = { access_token: 'eyJhbGciOiJIUzI1NiIsInR5cCI6ImRhbWh1Yi1hY2Nlc3Mrand0In0.…', refresh_token: 'eyJhbGciOiJIUzI1NiIsInR5cCI6ImRhbWh1Yi1yZWZyZXNoK2p3dCJ9.…', expires_in: 3600, token_type: 'Bearer' };
const PARTNER = { id: 'p1', name: 'Partner One', issuer: 'https://partner.example/', audience: 'urn:damhub', jwksUrl: 'https://partner.example/.well-known/jwks.json', jwks: null, maxTokenAge: 3600, rateLimit: 60, allowedOrigins: ['https://app.partner.example'], enabled: true, writes: false, createdAt: 1780315200000, updatedAt: 1780315200000 };
const AUDIT_ENTRY = { at: 1780315200000, requestId: '5f0c2a9e1b7d4c3a', partnerId: 'p1', userId: 'u_3kq9', providerId: 'library', accountId: 'ada', operation: 'rename', targetId: '/Brand/logo.png', targetIdAfter: '/Brand/logo-blue.png', nameBefore: 'logo.png', nameAfter: 'logo-blue.png', bytes: null, result: 'ok' };
const ASSET = {
  id: '/Brand/logo-blue.png', name: 'logo-blue.png', parentPath: '/Brand', fileSize: 48213, xSizePx: 1200, ySizePx: 800, created: 1780315200000, modified: 1780315200000,
  mimeType: 'image/png', version: 2, displayVersion: 2, type: 'image', downloadHashSha256: '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
  thumbnailUrl: 'https://hub.example/api/v1/assets/thumbnail/library/a1b2/2/thumbnail?exp=1780322400&p=p1&a=acc1&k=s1&sig=Qm…',
  downloadUrl: 'https://hub.example/api/v1/assets/download/library/a1b2/2?exp=1780322400&p=p1&a=acc1&k=s1&sig=Qm…',
};
const CAPABILITIES = { browse: true, search: true, similarSearch: true, versions: true, refresh: false, upload: true, update: true, rename: true, move: true, delete: true, folders: true, lock: true, filters: true, dataLocalization: false, timeZone: true, serverUrl: false, foldersOnEveryPage: false, assetHashAlgorithm: 'Sha256' };
const PAGE = { assets: [ASSET], folders: [{ id: '/Brand/Archive', name: 'Archive' }], filters: [], more: 'eyJ2IjoxLCJjIjoi…', totalAssetsCount: 42 };
const CONTENT_ERRORS = ['hub-validation-error', 'hub-access-token-invalid', 'provider-access-token-missing', 'integration-not-found', 'hub-rate-limited'];
const ADMIN_ERRORS = ['hub-validation-error', 'hub-access-denied', 'hub-not-found'];
const WRITE_ERRORS = ['hub-validation-error', 'hub-access-token-invalid', 'provider-access-token-missing', 'writes-disabled', 'integration-not-found', 'asset-locked', 'hub-idempotency-key-reused', 'hub-rate-limited'];
const WRITABLE = { capabilities: { canDeleteAsset: true, canUpdateAsset: true, canLockAsset: true, canUnlockAsset: false, canRenameAsset: true, uploadExtensions: ['png'] } };
const FOLDER = { id: '/Brand/Campaign', name: 'Campaign' };
const IDEMPOTENCY = ' Send an `Idempotency-Key` (a new random key per write) to retry it safely: a retry with the same key and request answers the first answer (`Idempotent-Replayed: true`) and writes nothing; the same key with another request answers 422.';

/** Keyed by method and path as the document has them. */
const OPERATIONS: Record<string, OpDoc> = {
  'post /api/v1/auth/exchangeToken': { id: 'exchangeToken', limit: 'exchange', errors: ['hub-sdk-token-missing', 'hub-sdk-token-invalid', 'hub-sdk-partner-unknown', 'hub-rate-limited'], example: TOKENS,
    description: 'The partner\'s backend signs a short-lived RS256 JWT (`iss`, `aud`, `sub`, `iat`, `exp`, `jti`, `email`) and the browser sends it as `Authorization: Bearer <jwt>`. The body is optional: `{"email": "…"}` when the JWT carries no email. Each JWT works once. Answers a hub access token (1 hour) and refresh token (30 days).' },
  'get /api/v1/auth/checkToken': { id: 'checkToken', limit: 'user', example: { adapter: 'p1', source: 'damhub', user: { id: 'u_3kq9', name: 'Ada Lovelace', email: 'ada@example.com', givenName: 'Ada', familyName: 'Lovelace' }, account: { id: 'p1', name: 'Partner One', issuer: 'https://partner.example/' }, userHash: 'c2b1f0…', expiresAt: 1780318800000 }, errors: ['hub-access-token-missing', 'hub-access-token-invalid'],
    description: 'Verifies the access token and answers the user, the partner account and a stable opaque `userHash`.' },
  'get /api/v1/auth/refreshToken': { id: 'refreshToken', errors: ['hub-access-token-missing', 'provider-access-token-invalid'], example: TOKENS,
    description: '`provider-authorization: Bearer <refresh token>` with the current (possibly expired) access token in `Authorization`. A hub refresh token answers new hub tokens (rotation; the previous one stays usable for 60 s); a DAM refresh token answers a new DAM connection token.' },
  'get /api/v1/auth/logout': { id: 'logout', errors: ['hub-access-token-missing', 'hub-access-token-invalid'], example: 'OK',
    description: 'Ends the session: its refresh tokens are revoked on the server. Answers `OK` as `text/plain`.' },
  'get /api/v1/auth/providers': { id: 'listProviders', limit: 'user', example: [{ id: 'library', name: 'Library', version: '1.0.0', logo: 'https://hub.example/api/v1/auth/library/logo.svg', glyph: 'L', capabilities: CAPABILITIES, loginUrl: 'https://hub.example/api/v1/auth/login?provider=library', isDefault: true, paging: { defaultSize: 50, maxSize: 200 } }], errors: ['hub-access-token-missing', 'hub-access-token-invalid'],
    description: 'The DAM providers the user can connect to, with their declared capabilities (what the picker may offer) and paging limits.' },
  'post /api/v1/auth/login': { id: 'startDamLogin', limit: 'user', errors: ['hub-validation-error', 'hub-access-token-invalid', 'hub-rate-limited'], example: { redirect_uri: 'https://hub.example/api/v1/auth/library/signin?state=9kq…', state: '9kq…' },
    description: 'Starts a DAM login for `provider`: open `redirect_uri` in a popup, then poll `GET /auth/login?state=…&polling=true` until it answers tokens or an error. A login state lives 5 minutes.' },
  'get /api/v1/auth/login': { id: 'pollDamLogin', errors: ['hub-validation-error'], example: {},
    description: 'Polls a DAM login by its state (the state is the credential): `{}` while pending, `{access_token, refresh_token, userHash}` once, then `{error}`; also `{error}` when unknown, expired, failed or cancelled. Always 200.' },
  'get /api/v1/system/providerInfo': { id: 'providerInfo', limit: 'user', example: { dataLocales: [{ id: 'en', name: 'English', displayName: 'English', default: true }] }, errors: CONTENT_ERRORS,
    description: 'Runtime details of the connected DAM: its remote system prefix, data locales and filters, where it has them; `{}` when it has none.' },
  'get /api/v1/assets/folder/{folderId}': { id: 'browseFolder', limit: 'user', example: { id: '/Brand', name: 'Brand', ...PAGE, capabilities: { canDeleteFolder: false, canAddFolder: false, canAddAsset: false, canRenameFolder: false } }, errors: CONTENT_ERRORS,
    description: 'A folder\'s subfolders and a page of its assets. Page on with the opaque `more` of the previous answer; `size` is clamped to the provider\'s maximum.' },
  'get /api/v1/assets/search': { id: 'searchAssets', limit: 'user', example: { ...PAGE, capabilities: { canAddAsset: false } }, errors: CONTENT_ERRORS,
    description: 'Keyword search, optionally under `parentId`, with `filters` from a previous answer\'s facets. Paged with `more`.' },
  'post /api/v1/assets/search': { id: 'searchByImage', limit: 'user', example: { ...PAGE, folders: [], capabilities: { canAddAsset: false } }, errors: [...CONTENT_ERRORS, 'integration-not-supported'],
    description: 'Search by image. `dataBase64` holds a data URI, an http(s) URL (fetched with SSRF protection) or a `downloadUrl` from a result. 413 when the image is too large to fetch or decode.' },
  'get /api/v1/assets/asset/{assetId}': { id: 'getAsset', limit: 'user', example: ASSET, errors: CONTENT_ERRORS,
    description: 'One asset with its metadata, renditions, hashes and signed media URLs.' },
  'get /api/v1/assets/assetversions/{assetId}': { id: 'getAssetVersions', limit: 'user', example: { id: ASSET.id, name: ASSET.name, versions: [{ ...ASSET, version: 1, displayVersion: 1 }] }, errors: CONTENT_ERRORS,
    description: 'The version history of an asset, newest first; `withMaster=true` includes the current version.' },
  'get /api/v1/assets/download/{provider}/{assetId}/{version}': { id: 'downloadOriginal', errors: ['hub-access-denied', 'integration-not-found'],
    description: 'The original file of an asset version, through the signed `downloadUrl` an asset carries (the URL is the credential: an `<img>` cannot send headers). Single byte ranges (206, 416), `ETag` and `If-None-Match` (304).' },
  'get /api/v1/assets/thumbnail/{provider}/{assetId}/{version}/{rendition}': { id: 'downloadRendition', errors: ['hub-access-denied', 'integration-not-found'],
    description: 'A rendition (thumbnail, preview, conversion) of an asset version, through the signed `thumbnailUrl` or `conversions[].url`. Ranges, `ETag` and 304 as for the original.' },
  'get /api/v1/connectors/{connectorId}/download/{name}': { id: 'connectorDownload', errors: ['hub-access-denied', 'integration-not-found'], summary: 'Bytes of a connector\'s file (download link from downloadUrl)',
    description: 'A file of a remote DAM (WebDAV, S3, …), streamed through the hub from the `downloadUrl` its connector put on the asset; the `g` grant is the credential and works 4 hours. Ranges, `ETag` and 304 as the DAM answers them.' },
  // Resumable uploads (tus 1.0; src/routes/uploads.ts).
  'post /api/v1/uploads': { id: 'createUpload', limit: 'user', example: ASSET, errors: ['hub-validation-error', 'hub-access-token-invalid', 'provider-access-token-missing', 'writes-disabled', 'asset-name-invalid', 'hub-precondition-required', 'hub-payload-too-large#upload', 'hub-unsupported-media-type', 'hub-rate-limited'],
    description: 'Creates a resumable upload (tus 1.0 creation): `Upload-Length` and `Upload-Metadata` (base64 values) naming `parentId`, `name` and `onConflict` (`fail`, `rename`, `version`) for a new asset, or `assetId` and `ifMatch` for a new version. The write engine checks them (writes allowed, name, type, size) before any byte is stored. Answers 201 with `Location`, the upload\'s URL, and `Upload-Expires`. With a body (`Content-Type: application/offset+octet-stream`, creation-with-upload) the bytes are stored at once (`Upload-Offset`); when they are all of them, the 201 carries the Asset as for the final PATCH. `HEAD` on the upload\'s URL (tus) answers its `Upload-Offset` to resume from, `Upload-Length`, `Upload-Metadata` and `Upload-Expires`, and once finished `Damhub-Asset-Id` and `ETag`; 404 for an upload of another user, partner or provider, 410 after its expiry.' },
  'patch /api/v1/uploads/{id}': { id: 'appendUpload', limit: 'user', example: ASSET, errors: ['hub-validation-error', 'hub-access-token-invalid', 'hub-not-found#upload', 'upload-expired', 'hub-validation-error#checksum', 'asset-exists', 'asset-version-conflict', 'hub-rate-limited'],
    description: 'Appends the body at `Upload-Offset` (409 when it is not the upload\'s offset). `Upload-Checksum` (`sha1` or `sha256`, base64) is checked: a mismatch answers 460 and the chunk is discarded. Answers 204 with the new `Upload-Offset`; the request that brings the last byte stores the asset and answers **200** with the Asset, `Damhub-Asset-Id` and its `ETag` (tus clients accept any 2xx); a repeated final PATCH answers the same.' },
  'delete /api/v1/uploads/{id}': { id: 'terminateUpload', limit: 'user', errors: ['hub-access-token-invalid', 'hub-not-found#upload', 'hub-rate-limited'],
    description: 'Terminates the upload (tus termination): its parts are removed; 204.' },
  'post /api/v1/assets/upload': { id: 'uploadAsset', limit: 'user', example: { ...ASSET, version: 1, displayVersion: 1, ...WRITABLE }, errors: [...WRITE_ERRORS, 'asset-name-invalid', 'asset-exists', 'hub-payload-too-large', 'hub-unsupported-media-type'],
    description: `A new asset named \`name\` in the folder \`parentId\`; the body is the file (any \`Content-Type\`, streamed; \`Content-Length\` lets a too-large file be refused before it is sent). 201 with the asset, its \`ETag\` and \`Damhub-Asset-Id\`. When the name is taken: \`onConflict=fail\` (default) answers 409 \`asset-exists\`, \`rename\` keeps both (\`name (2).ext\`), \`version\` saves a new version of that asset (200). Names are checked for every DAM alike (400 \`asset-name-invalid\` names the rule); size and type against \`DAMHUB_MAX_UPLOAD_BYTES\` (413) and the allowed extensions and the bytes themselves (415). Large files: tus at \`/api/v1/uploads\`.\${IDEMPOTENCY}` },
  'post /api/v1/assets/update/{assetId}': { id: 'updateAsset', limit: 'user', example: { ...ASSET, version: 3, displayVersion: 3, ...WRITABLE }, errors: [...WRITE_ERRORS, 'asset-version-conflict', 'hub-precondition-required', 'hub-payload-too-large', 'hub-unsupported-media-type'],
    description: `Saves the body as a new version of the asset (same id). \`If-Match\` must carry the \`ETag\` of the version it replaces (from \`GET /assets/asset/{assetId}\` or the last write): without it 428, and 412 \`asset-version-conflict\` when someone saved in between (the answer's \`ETag\` is the current one). Of concurrent saves with the same \`If-Match\` exactly one wins, on every DAM.\${IDEMPOTENCY}` },
  'patch /api/v1/assets/asset/{assetId}': { id: 'relocateAsset', limit: 'user', example: { ...ASSET, name: 'logo-navy.png', id: '/Brand/logo-navy.png', ...WRITABLE }, errors: [...WRITE_ERRORS, 'asset-name-invalid', 'asset-exists', 'asset-version-conflict'],
    description: `Renames (\`name\`) and/or moves (\`parentId\`) an asset; \`If-Match\` optional. Path-based DAMs (WebDAV, S3, the library) answer the asset under its new id.\${IDEMPOTENCY}` },
  'delete /api/v1/assets/asset/{assetId}': { id: 'deleteAsset', limit: 'user', errors: [...WRITE_ERRORS, 'asset-version-conflict'],
    description: `Deletes an asset (204); \`If-Match\` optional.\${IDEMPOTENCY}` },
  'post /api/v1/assets/folder': { id: 'createFolder', limit: 'user', example: FOLDER, errors: [...WRITE_ERRORS, 'asset-name-invalid', 'asset-exists'],
    description: `Creates the folder \`name\` in \`parentId\` (201).\${IDEMPOTENCY}` },
  'patch /api/v1/assets/folder/{folderId}': { id: 'updateFolder', limit: 'user', example: { ...FOLDER, name: 'Campaign 2027', id: '/Brand/Campaign 2027' }, errors: [...WRITE_ERRORS, 'asset-name-invalid', 'asset-exists'],
    description: `Renames (\`name\`) and/or moves (\`parentId\`) a folder.\${IDEMPOTENCY}` },
  'delete /api/v1/assets/folder/{folderId}': { id: 'deleteFolder', limit: 'user', errors: [...WRITE_ERRORS, 'folder-not-empty'],
    description: `Deletes a folder (204): 409 \`folder-not-empty\` while it holds anything, unless \`recursive=true\`.\${IDEMPOTENCY}` },
  'post /api/v1/assets/lock/{assetId}': { id: 'lockAsset', limit: 'user', example: { ...ASSET, lockedBy: 'ada', ...WRITABLE, capabilities: { ...WRITABLE.capabilities, canLockAsset: false, canUnlockAsset: true } }, errors: WRITE_ERRORS,
    description: `Locks the asset for this account: until it is unlocked, other accounts' writes answer 423 \`asset-locked\` naming \`lockedBy\`.\${IDEMPOTENCY}` },
  'delete /api/v1/assets/lock/{assetId}': { id: 'unlockAsset', limit: 'user', example: { ...ASSET, ...WRITABLE }, errors: WRITE_ERRORS,
    description: `Unlocks an asset this account locked (423 when another account holds the lock).\${IDEMPOTENCY}` },
  'get /api/v1/admin/partners': { id: 'listPartners', errors: ADMIN_ERRORS, summary: 'List registered partners', example: [PARTNER],
    description: 'Every registered partner. Admin key as bearer token.' },
  'post /api/v1/admin/partners': { id: 'createPartner', errors: ADMIN_ERRORS, summary: 'Register a partner', example: PARTNER,
    description: 'Registers a partner: issuer, audience (default `urn:damhub`), JWKS URL or inline JWKS, max token age, exchange rate limit and allowed browser origins. 409 when the issuer or id is taken.' },
  'get /api/v1/admin/partners/{id}': { id: 'getPartner', errors: ADMIN_ERRORS, summary: 'Read a partner', example: PARTNER, description: 'One partner by id.' },
  'patch /api/v1/admin/partners/{id}': { id: 'updatePartner', errors: ADMIN_ERRORS, summary: 'Change a partner', example: PARTNER,
    description: 'Changes the fields given, e.g. `{"enabled": false}`: a disabled partner\'s tokens and media URLs stop working at once. `{"writes": true}` lets the partner\'s users upload, change and delete (docs/writes.md); `false` turns that off again at once.' },
  'delete /api/v1/admin/partners/{id}': { id: 'deletePartner', errors: ADMIN_ERRORS, summary: 'Remove a partner', description: 'Removes a partner; its tokens and media URLs stop working at once.' },
  'get /api/v1/admin/audit': { id: 'listAudit', errors: ['hub-validation-error', 'hub-access-denied'], summary: 'List the write audit', example: { entries: [AUDIT_ENTRY], more: 'WzE3ODAzMTUyMDAwMDAsIjVmMGMyYTllMWI3ZDRjM2EiXQ' },
    description: 'Every write through the hub (upload, update, rename, move, delete, folders, locks), newest first: who (partner, hub user, DAM account), what (operation, ids and names before and after, bytes), the result and the request id. Filter by `since`, `until` and `partnerId`; page on with the `more` of the previous answer as `before` (a page may hold a few more than `limit` entries: the writes one request made in one millisecond, an MCP batch, are never split). Entries are kept for `DAMHUB_AUDIT_RETENTION` days (default 90). Admin key as bearer token.' },
};

const REQUEST_ID = { description: 'The request id: the caller\'s `x-request-id` when it is a sane token, else a generated one; error details and logs carry it too.', schema: { type: 'string' } };
const RATE_HEADERS = {
  'RateLimit-Limit': { description: 'Requests allowed in a burst for this key.', schema: { type: 'integer' } },
  'RateLimit-Remaining': { description: 'Requests left before the limit.', schema: { type: 'integer' } },
  'RateLimit-Reset': { description: 'Seconds until the burst is fully available again.', schema: { type: 'integer' } },
};
const RETRY_AFTER = { 'Retry-After': { description: 'On 429: seconds to wait before retrying.', schema: { type: 'integer' } } };
const ERROR_REF = { $ref: '#/components/schemas/ErrorEnvelope' };
const BYTES = { '*/*': { schema: { type: 'string', contentMediaType: 'application/octet-stream', description: 'the file\'s bytes, with its own content type' } } };

function mediaResponses(errors: string[]): Json {
  const media = {
    ETag: { description: 'Entity tag of the content; send it back in `If-None-Match`.', schema: { type: 'string' } },
    'Accept-Ranges': { description: '`bytes`', schema: { type: 'string' } },
    'Content-Disposition': { description: '`attachment` for originals, `inline` for renditions, with the file name.', schema: { type: 'string' } },
    'x-request-id': REQUEST_ID,
  };
  const err = (codes: string[]) => ({ 'application/json': { schema: ERROR_REF, examples: examplesOf(codes) } });
  return {
    200: { description: 'The whole file.', headers: media, content: BYTES },
    206: { description: 'The byte range asked for with `Range`.', headers: { ...media, 'Content-Range': { description: '`bytes start-end/size`', schema: { type: 'string' } } }, content: BYTES },
    304: { description: 'Not modified: `If-None-Match` matches the `ETag`.', headers: media },
    403: { description: 'The link\'s signature, expiry, partner or account no longer holds (`hub-access-denied`).', headers: { 'x-request-id': REQUEST_ID }, content: err(errors.filter((c) => ERRORS[c]![0] === 403)) },
    404: { description: 'No such asset, version or rendition (`integration-not-found`, `integration-not-available`).', headers: { 'x-request-id': REQUEST_ID }, content: err(errors.filter((c) => ERRORS[c]![0] === 404)) },
    416: { description: 'The range cannot be satisfied; `Content-Range: bytes */size`.', headers: { 'x-request-id': REQUEST_ID, 'Content-Range': { description: '`bytes */size`', schema: { type: 'string' } } }, content: err(['hub-validation-error']) },
  };
}

function examplesOf(codes: string[]): Json {
  return Object.fromEntries(codes.map((c) => {
    const [status, message, details] = ERRORS[c]!;
    const code = c.split('#')[0]!;
    return [c, { summary: `${status} ${code}`, value: envelope(status, code, message, details) }];
  }));
}

/**
 * Descriptions are Markdown, and the reference page drops what looks like an HTML tag: "Bearer
 * <access token>" showed as "Bearer ". Angle-bracket text outside code spans becomes a code span.
 */
export function codeAngleBrackets(text: string): string {
  return text.replace(/(`[^`]*`)|<([^<>\n]+)>/g, (m, code: string | undefined) => code ?? `\`${m}\``);
}

function escapeDescriptions(node: unknown, key = ''): void {
  if (Array.isArray(node)) for (const n of node) escapeDescriptions(n);
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node as Json)) {
      // Examples are data, not prose.
      if (k === 'example' || k === 'examples' && key !== 'properties') continue;
      if (k === 'description' && typeof v === 'string') (node as Json)[k] = codeAngleBrackets(v);
      else escapeDescriptions(v, k);
    }
  }
}

/** Operations answering an asset with its ETag. */
const ETAGGED = new Set(['getAsset', 'uploadAsset', 'updateAsset', 'relocateAsset', 'lockAsset', 'unlockAsset']);

/** @fastify/swagger's transformObject: completes the generated document (see the file comment). */
export function polishDocument(doc: Json): Json {
  doc.info = { ...doc.info, contact: { name: 'damhub', url: `${doc.servers?.[0]?.url ?? ''}/api/v1/docs` }, license: { name: 'Apache-2.0', identifier: 'Apache-2.0' } };
  doc.tags = [
    { name: 'auth', description: 'Token exchange, sessions, DAM providers and the DAM login.' },
    { name: 'system', description: 'Runtime details of the connected DAM.' },
    { name: 'assets', description: 'Browse, search, assets, versions and their media.' },
    { name: 'uploads', description: 'Resumable uploads (tus 1.0: creation, creation-with-upload, termination, expiration, checksum).' },
    { name: 'writes', description: 'Upload, new versions, rename, move, delete, folders and locks (docs/writes.md); off until the operator allows the partner to write.' },
    { name: 'admin', description: 'Partner registration and the write audit (admin key).' },
  ];
  doc.components.securitySchemes.SignedUrl = { type: 'apiKey', in: 'query', name: 'sig', description: 'the signature of a hub media URL (with exp, p, a, k): the URL itself is the credential' };
  doc.components.securitySchemes.DownloadGrant = { type: 'apiKey', in: 'query', name: 'g', description: 'the grant of a connector download link: the URL itself is the credential' };
  doc.paths['/api/v1/connectors/{connectorId}/download/{name}'] = {
    get: {
      tags: ['assets'],
      security: [{ DownloadGrant: [] }],
      parameters: [
        { name: 'connectorId', in: 'path', required: true, description: 'the connector (e.g. webdav, s3)', schema: { type: 'string' } },
        { name: 'name', in: 'path', required: true, description: 'the file name, for the browser\'s save dialog', schema: { type: 'string' } },
        { name: 'g', in: 'query', required: true, description: 'the grant', schema: { type: 'string' } },
      ],
    },
  };
  for (const [path, item] of Object.entries<Json>(doc.paths)) {
    for (const [method, op] of Object.entries<Json>(item)) {
      const d = OPERATIONS[`${method} ${path}`];
      if (!d) continue; // no operationId then: test/http/openapi-lint.test.ts says which
      op.operationId = d.id;
      op.description = d.description;
      if (d.summary) op.summary = d.summary;
      if (path.includes('/download/') || path.includes('/thumbnail/')) {
        op.responses = mediaResponses(d.errors);
        if (!op.security) op.security = [{ SignedUrl: [] }];
        continue;
      }
      if (d.id === 'pollDamLogin') op.security = [];
      if (d.id === 'exchangeToken' && op.requestBody) op.requestBody.required = false;
      if (d.id === 'uploadAsset' || d.id === 'updateAsset') op.requestBody = { required: true, description: 'the file', content: BYTES };
      for (const [status, res] of Object.entries<Json>(op.responses ?? {})) {
        res.headers = { 'x-request-id': REQUEST_ID, ...(d.limit ? RATE_HEADERS : {}), ...(d.limit && status === '4XX' ? RETRY_AFTER : {}), ...res.headers };
        if (status === '4XX' || status === '5XX') {
          const codes = status === '4XX' ? d.errors.filter((c) => ERRORS[c]![0] < 500) : ['hub-internal-error'];
          const json = res.content?.['application/json'];
          if (json) json.examples = status === '4XX' ? examplesOf(codes) : { 'hub-internal-error': { summary: '500 hub-internal-error', value: envelope(500, 'hub-internal-error', 'Internal error.', 'unexpected failure') } };
          continue;
        }
        if (d.id === 'logout') {
          res.content = { 'text/plain': { schema: { type: 'string', const: 'OK' }, example: 'OK' } };
          continue;
        }
        if (ETAGGED.has(d.id) && (status === '200' || status === '201')) {
          res.headers = { ETag: { description: 'The asset\'s ETag: changes with every new content; send it in `If-Match` to write.', schema: { type: 'string' } }, ...res.headers };
          if (d.id !== 'getAsset') res.headers['Damhub-Asset-Id'] = { description: 'The asset\'s id, URL-encoded.', schema: { type: 'string' } };
        }
        if (status === '204') delete res.content;
        const json = res.content?.['application/json'];
        if (json && d.example !== undefined) json.example = d.example;
      }
    }
  }
  escapeDescriptions(doc);
  return doc;
}
