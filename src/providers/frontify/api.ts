/**
 * Frontify's public GraphQL API (`https://<tenant>/graphql`, reference:
 * https://frontify.github.io/graphql-api-reference/). Every call is a POST of a named, read-only
 * operation with variables; GraphQL reports failures with HTTP 200 and an `errors` array, which
 * are mapped here to the hub's integration-* codes with Frontify's message in `details`. Only the
 * fields this connector reads are typed; mapping to the hub's shape is mapping.ts.
 */
import { integrationError, type HubError } from '../../errors.js';
import type { UpstreamClient } from '../kit/http.js';

export const ID = 'frontify';

/** Fields every listed asset carries (the Asset interface and the concrete types' file fields). */
const LIST_FIELDS = `
  __typename id title description createdAt modifiedAt
  tags { value }
  ... on Image { filename extension size width height }
  ... on Document { filename extension size width height }
  ... on Video { filename extension size width height }
  ... on Audio { filename extension size }
  ... on File { filename extension size }
  ... on Image { thumbnailUrl }
  ... on Document { thumbnailUrl }
  ... on Video { thumbnailUrl }
  ... on Audio { thumbnailUrl }
  ... on File { thumbnailUrl }
  ... on EmbeddedContent { thumbnailUrl }`;

/** The detail adds copyright, author, custom metadata, the location (parent path), the signed download URL and a preview rendition. */
const DETAIL_FIELDS = `${LIST_FIELDS}
  copyright { status notice }
  author
  customMetadata {
    property { id name type { name } }
    ... on CustomMetadataValue { value }
    ... on CustomMetadataValues { values }
  }
  location { brand { id name } library { id name } folder { id name breadcrumbs { id name } } }
  ... on Image { downloadUrl previewUrl }
  ... on Document { downloadUrl previewUrl }
  ... on Video { downloadUrl previewUrl }
  ... on Audio { downloadUrl previewUrl }
  ... on File { downloadUrl }`;

const PAGE = 'total page limit hasNextPage';

export const QUERIES = {
  /** Unauthenticated: Frontify's root query type is named RootQuery (the schema's `schema { query: RootQuery }`). */
  DamhubProbe: 'query DamhubProbe { __typename }',
  DamhubCurrentUser: 'query DamhubCurrentUser { currentUser { id name } }',
  DamhubBrands: 'query DamhubBrands { brands { id name } }',
  DamhubBrandLibraries: `query DamhubBrandLibraries($id: ID!, $limit: Int!, $page: Int!) {
  brand(id: $id) { id name libraries(limit: $limit, page: $page) { ${PAGE} items { __typename id name } } } }`,
  DamhubLibraryBrowse: `query DamhubLibraryBrowse($id: ID!, $limit: Int!, $page: Int!, $folderLimit: Int!, $folderPage: Int!, $withFolders: Boolean!, $withAssets: Boolean!) {
  library(id: $id) { __typename id name browse {
    folders(limit: $folderLimit, page: $folderPage) @include(if: $withFolders) { ${PAGE} items { id name } }
    assets(limit: $limit, page: $page) @include(if: $withAssets) { ${PAGE} items { ${LIST_FIELDS} } } } } }`,
  DamhubFolderBrowse: `query DamhubFolderBrowse($id: ID!, $limit: Int!, $page: Int!, $folderLimit: Int!, $folderPage: Int!, $withFolders: Boolean!, $withAssets: Boolean!) {
  node(id: $id) { __typename ... on Folder { id name
    folders(limit: $folderLimit, page: $folderPage) @include(if: $withFolders) { ${PAGE} items { id name } }
    assets(limit: $limit, page: $page) @include(if: $withAssets) { ${PAGE} items { ${LIST_FIELDS} } } } } }`,
  DamhubLibrarySearch: `query DamhubLibrarySearch($id: ID!, $limit: Int!, $page: Int!, $query: AssetQueryInput!) {
  library(id: $id) { __typename id name assets(limit: $limit, page: $page, query: $query) { ${PAGE} items { ${LIST_FIELDS} } } } }`,
  DamhubAsset: `query DamhubAsset($id: ID!) { asset(id: $id) { ${DETAIL_FIELDS} } }`,
  DamhubAssetPreview: `query DamhubAssetPreview($id: ID!, $size: Int!) { asset(id: $id) { __typename id
  ... on Image { previewUrl(width: $size, height: $size) }
  ... on Document { previewUrl(width: $size, height: $size) }
  ... on Video { thumbnailUrl } ... on Audio { thumbnailUrl } ... on File { thumbnailUrl } ... on EmbeddedContent { thumbnailUrl } } }`,
  DamhubRevisions: `query DamhubRevisions($id: ID!, $limit: Int!, $page: Int!) { asset(id: $id) { ${DETAIL_FIELDS}
  revisions(limit: $limit, page: $page) { ${PAGE} items { id createdAt creator { id name } } } } }`,
} as const;

export type Operation = keyof typeof QUERIES;

export interface Page<T> { total: number; page: number; limit: number; hasNextPage: boolean; items: (T | null)[] | null }
export interface Named { __typename?: string; id: string; name: string }
export interface FyTag { value: string }
export interface FyCustomMetadata {
  property: { id: string; name: string; type?: { name?: string } | null };
  value?: unknown;
  values?: unknown[];
}
export interface FyAsset {
  __typename: string;
  id: string;
  title: string;
  description?: string | null;
  createdAt: string;
  modifiedAt?: string | null;
  tags?: (FyTag | null)[] | null;
  filename?: string | null;
  extension?: string | null;
  /** BigInt scalar: a number or a numeric string. */
  size?: number | string | null;
  width?: number | null;
  height?: number | null;
  thumbnailUrl?: string | null;
  previewUrl?: string | null;
  downloadUrl?: string | null;
  copyright?: { status: string; notice?: string | null } | null;
  author?: string | null;
  customMetadata?: FyCustomMetadata[] | null;
  location?: {
    brand?: { id: string; name: string } | null;
    library?: { id: string; name?: string | null } | null;
    folder?: { id: string; name: string; breadcrumbs: { id?: string | null; name?: string | null }[] } | null;
  } | null;
}
export interface FyRevision { id: string; createdAt: string; creator?: { id: string; name?: string | null } | null }
export interface FyFolderNode extends Named {
  folders?: Page<Named>;
  assets?: Page<FyAsset>;
}
export interface FyLibraryNode extends Named {
  browse?: { folders?: Page<Named>; assets?: Page<FyAsset> };
  assets?: Page<FyAsset>;
}

interface GraphQLError { message?: unknown; path?: unknown[]; extensions?: { category?: unknown; code?: unknown } }

/** Frontify's message of an error body (a GraphQL `errors` array, or the text of an HTML or plain page). */
export function frontifyErrorMessage(body: string): string {
  try {
    const j = JSON.parse(body) as { errors?: GraphQLError[]; error?: unknown; error_description?: unknown };
    if (Array.isArray(j.errors) && j.errors.length) return j.errors.map((e) => String(e?.message ?? '')).filter(Boolean).join('; ');
    if (typeof j.error === 'string') return typeof j.error_description === 'string' ? `${j.error}: ${j.error_description}` : j.error;
  } catch {
    // not JSON: the kit reduces an HTML page to its words
  }
  return body;
}

/**
 * A GraphQL error as an integration error. Frontify reports a missing or unusable token as a
 * `permission` error ("UserId not set in identity.", "policy 'authenticated' not fulfilled"): the
 * DAM rejected the forwarded credentials, so integration-auth-failed; other permission errors are
 * integration-forbidden; a not-found code or category is integration-not-found.
 */
export function graphqlError(what: string, errors: GraphQLError[]): HubError {
  const first = errors[0] ?? {};
  const message = errors.map((e) => String(e?.message ?? '')).filter(Boolean).join('; ').slice(0, 2000) || 'unspecified GraphQL error';
  const tag = `${String(first.extensions?.code ?? '')} ${String(first.extensions?.category ?? '')}`.toLowerCase();
  const details = `Frontify ${what}: ${message}`;
  if (/unauthori[sz]ed|unauthenticated|authentication/.test(tag) || /identity|'authenticated'|token/i.test(message)) {
    return integrationError('integration-auth-failed', ID, details);
  }
  if (/not_?found/.test(tag)) return integrationError('integration-not-found', ID, details);
  if (/permission|forbidden/.test(tag)) return integrationError('integration-forbidden', ID, details);
  if (/rate|throttl|too_many/.test(tag)) return integrationError('integration-unavailable', ID, details, { status: 503 });
  if (/internal/.test(tag)) return integrationError('integration-unavailable', ID, details, { status: 502 });
  return integrationError('integration-operation-failed', ID, details);
}

function shapeError(what: string): HubError {
  return integrationError('integration-unavailable', ID, `Frontify ${what}: the answer has no data`, { status: 502, message: 'Frontify answered in an unexpected format' });
}

/** Frontify's GraphQL endpoint of one tenant over the kit's upstream client (timeouts, retries, Retry-After, circuit breaker, byte caps). */
export class FrontifyApi {
  constructor(private readonly http: UpstreamClient, readonly tenant: string, private readonly token: string | null) {}

  async run<T>(op: Operation, variables: Record<string, unknown> = {}): Promise<T> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    const r = await this.http.json<{ data?: T | null; errors?: GraphQLError[] }>({
      method: 'POST', url: `${this.tenant}/graphql`, what: `Frontify ${op}`, headers,
      body: JSON.stringify({ operationName: op, query: QUERIES[op], variables }),
      // Every operation here is a query (a read): repeating it after a timeout or a 503 is harmless.
      idempotent: true,
    });
    const body = r.data;
    if (!body || typeof body !== 'object') throw shapeError(op);
    if (Array.isArray(body.errors) && body.errors.length) {
      // GraphQL answers what it could: an error below the root field (a custom metadata property
      // the user may not see) leaves that part null and the rest usable. An error of the request or
      // of a root field (`asset`, `library`, ...) is the answer.
      const fatal = body.errors.filter((e) => !Array.isArray(e?.path) || e.path.length <= 1);
      if (fatal.length || !body.data || typeof body.data !== 'object') throw graphqlError(op, fatal.length ? fatal : body.errors);
    }
    if (!body.data || typeof body.data !== 'object') throw shapeError(op);
    return body.data;
  }
}

/** The items of a page that are present (GraphQL lists may hold nulls where an item could not be resolved). */
export function itemsOf<T>(p: Page<T> | undefined | null): T[] {
  return (p?.items ?? []).filter((x): x is T => x !== null && x !== undefined);
}
