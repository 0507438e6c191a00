/**
 * The Frontify replay held to Frontify's published GraphQL schema. Frontify publishes no schema or
 * types package on the npm registry (its @frontify packages are the Finder, the Authenticator,
 * the Brand SDK and the design system), so the types this connector reads are transcribed here
 * from the published SDL pages (https://frontify.github.io/graphql-api-reference/, one link per
 * type) and every fixture body, and every answer the replay gives to the connector's operations,
 * is checked against them: a field the type does not declare fails, a null where the SDL says
 * non-null fails, a value of the wrong scalar kind fails, naming the path. (A GraphQL answer holds
 * only the fields selected, so a declared field may be absent.) The OAuth bodies are checked
 * against RFC 6749 sections 5.1 and 5.2, the error bodies against the GraphQL specification's
 * response format. test/fixtures/frontify/README.md lists the bindings.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { QUERIES, type Operation } from '../../../src/providers/frontify/api.js';
import { frontifyFixture, startFrontifyReplay, type FrontifyReplay } from '../../helpers/frontify-replay.js';

type T = string;
/** Type name → field → SDL type (`String!`, `[Tag]`, `Page<Folder>`...), transcribed from the reference. */
const REF = 'https://frontify.github.io/graphql-api-reference';
const ASSET_COMMON: Record<string, T> = {
  id: 'ID!', title: 'String!', description: 'String', createdAt: 'DateTime!', modifiedAt: 'DateTime', alternativeText: 'String',
  externalId: 'ID', tags: '[Tag]', copyright: 'Copyright', expiresAt: 'DateTime', author: 'String', status: 'AssetStatusType!',
  customMetadata: '[CustomMetadata!]!', location: 'AssetLocation!', thumbnailUrl: 'Url', revisions: 'AssetRevisionItems!',
};
const FILE_FIELDS: Record<string, T> = { filename: 'String', size: 'BigInt', extension: 'String!', fileCreatedAt: 'DateTime', downloadUrl: 'Url' };
export const SDL: Record<string, Record<string, T>> = {
  // `${REF}/type/Image.md`, Document.md, Video.md, Audio.md, File.md, EmbeddedContent.md
  Image: { ...ASSET_COMMON, ...FILE_FIELDS, previewUrl: 'Url!', width: 'Int!', height: 'Int!', focalPoint: '[Float]' },
  Document: { ...ASSET_COMMON, ...FILE_FIELDS, previewUrl: 'Url!', width: 'Int!', height: 'Int!', pageCount: 'Int', focalPoint: '[Float]' },
  Video: { ...ASSET_COMMON, ...FILE_FIELDS, previewUrl: 'Url!', width: 'Int!', height: 'Int!', duration: 'Float!', bitrate: 'Int!' },
  Audio: { ...ASSET_COMMON, ...FILE_FIELDS, previewUrl: 'Url!' },
  File: { ...ASSET_COMMON, ...FILE_FIELDS, previewUrl: 'Url!' },
  EmbeddedContent: { ...ASSET_COMMON, previewUrl: 'Url!' },
  // `${REF}/type/Tag.md`, Copyright.md, CustomMetadataValue.md, CustomMetadataValues.md, CustomMetadataProperty.md
  Tag: { value: 'String!', source: 'TagSource' },
  Copyright: { status: 'CopyrightStatus!', notice: 'String' },
  CustomMetadataValue: { property: 'CustomMetadataProperty!', value: 'Any' },
  CustomMetadataValues: { property: 'CustomMetadataProperty!', values: '[Any]!' },
  CustomMetadataProperty: { id: 'ID!', name: 'String!', type: 'CustomMetadataPropertyType!', helpText: 'String', isRequired: 'Boolean!' },
  CustomMetadataPropertyType: { name: 'String!' },
  // `${REF}/type/AssetLocation.md` and its parts
  AssetLocation: { brand: 'AssetLocationBrand', library: 'AssetLocationLibrary', workspaceProject: 'AssetLocationLibrary', folder: 'AssetLocationFolder' },
  AssetLocationBrand: { id: 'ID!', name: 'String!' },
  AssetLocationLibrary: { id: 'ID!', name: 'String' },
  AssetLocationFolder: { id: 'ID!', name: 'String!', breadcrumbs: '[Breadcrumb!]!' },
  Breadcrumb: { id: 'ID', name: 'String' },
  // `${REF}/type/AssetRevision.md`, `${REF}/interface/User.md`
  AssetRevision: { id: 'ID!', createdAt: 'DateTime!', creator: 'User!' },
  User: { __typename: 'String!', id: 'ID!', email: 'Email!', name: 'String', avatar: 'Url' },
  // `${REF}/type/Brand.md`, MediaLibrary.md (Library interface), LibraryRootFolder.md, SubFolder.md (Folder interface)
  Brand: { id: 'ID!', name: 'String!', slug: 'String', avatar: 'Url', libraries: 'LibraryItems' },
  Library: { __typename: 'String!', id: 'ID!', name: 'String!', browse: 'LibraryRootFolder!', assets: 'AssetItems!' },
  LibraryRootFolder: { folders: 'FolderItems!', assets: 'AssetItems!' },
  Folder: { __typename: 'String!', id: 'ID!', name: 'String!', createdAt: 'DateTime!', modifiedAt: 'DateTime', breadcrumbs: '[Breadcrumb!]!', folders: 'FolderItems!', assets: 'AssetItems!' },
  // `${REF}/type/AssetItems.md`, FolderItems.md, LibraryItems.md, AssetRevisionItems.md
  AssetItems: { total: 'Int!', page: 'Int!', limit: 'Int!', hasNextPage: 'Boolean!', items: '[Asset]' },
  FolderItems: { total: 'Int!', page: 'Int!', limit: 'Int!', hasNextPage: 'Boolean!', items: '[Folder]' },
  LibraryItems: { total: 'Int!', page: 'Int!', limit: 'Int!', hasNextPage: 'Boolean!', items: '[Library]' },
  AssetRevisionItems: { total: 'Int!', page: 'Int!', limit: 'Int!', hasNextPage: 'Boolean!', items: '[AssetRevision!]!' },
  // The root query type (`schema { query: RootQuery }`): the fields the connector asks for.
  RootQuery: { __typename: 'String!', currentUser: 'User!', brands: '[Brand]', brand: 'Brand', library: 'Library', node: 'Folder', asset: 'Asset' },
};
const ENUMS: Record<string, string[]> = {
  TagSource: ['MANUAL', 'AUTO'], CopyrightStatus: ['UNKNOWN', 'COPYRIGHTED', 'PUBLIC'], AssetStatusType: ['FINISHED', 'PROCESSING', 'PROCESSING_FAILED'],
};
/** Interfaces and unions resolved by the answer's own shape (`__typename`, or the field that tells them apart). */
const ABSTRACT: Record<string, (v: any) => string> = {
  Asset: (v) => v.__typename,
  CustomMetadata: (v) => ('values' in v ? 'CustomMetadataValues' : 'CustomMetadataValue'),
};
const isoDateTime = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

export function check(value: unknown, type: T, at: string, problems: string[]): void {
  const nonNull = type.endsWith('!');
  const t = nonNull ? type.slice(0, -1) : type;
  if (value === null || value === undefined) {
    if (nonNull) problems.push(`${at}: null where the SDL says ${type}`);
    return;
  }
  if (t.startsWith('[')) {
    if (!Array.isArray(value)) return void problems.push(`${at}: not a list (${type})`);
    value.forEach((v, i) => check(v, t.slice(1, -1), `${at}[${i}]`, problems));
    return;
  }
  const scalar = (ok: boolean) => { if (!ok) problems.push(`${at}: ${JSON.stringify(value)} is not a ${t}`); };
  switch (t) {
    case 'ID': case 'String': case 'Email': return scalar(typeof value === 'string');
    case 'Int': return scalar(Number.isInteger(value));
    case 'Float': return scalar(typeof value === 'number');
    case 'Boolean': return scalar(typeof value === 'boolean');
    case 'BigInt': return scalar(Number.isInteger(value) || (typeof value === 'string' && /^-?\d+$/.test(value)));
    case 'DateTime': return scalar(typeof value === 'string' && isoDateTime.test(value));
    case 'Url': return scalar(typeof value === 'string' && /^https?:\/\/[^/]/.test(value));
    case 'Any': return;
  }
  if (ENUMS[t]) return scalar(ENUMS[t]!.includes(value as string));
  const concrete = ABSTRACT[t] ? ABSTRACT[t]!(value) : t;
  const fields = SDL[concrete];
  if (!fields) return void problems.push(`${at}: ${JSON.stringify(concrete)} is no type of the transcribed SDL (as ${t})`);
  if (typeof value !== 'object') return void problems.push(`${at}: not an object (${t})`);
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (k === '__typename') {
      if (ABSTRACT[t] && !SDL[v as string]) problems.push(`${at}.__typename: ${JSON.stringify(v)} implements no ${t}`);
      continue;
    }
    const ft = fields[k];
    if (!ft) problems.push(`${at}.${k}: ${concrete} declares no field ${k}`);
    else check(v, ft, `${at}.${k}`, problems);
  }
}

const gql = frontifyFixture('graphql');
const oauth = frontifyFixture('oauth');
const errors = frontifyFixture('errors');

/** Fixture body → its type. Every top-level entry of the three files is bound here or listed below. */
const BINDINGS: [string, unknown, T][] = [
  ['graphql.json#probe', gql.probe.data, 'RootQuery'],
  ['graphql.json#currentUser', gql.currentUser.value, 'User!'],
  ['graphql.json#brand', gql.brand.value, 'Brand!'],
  ['graphql.json#library', gql.library.value, 'Library!'],
  ['graphql.json#folder', gql.folder.value, 'Folder!'],
  ['graphql.json#page', gql.page.value, 'AssetItems!'],
  ['graphql.json#image', gql.image.value, 'Asset!'],
  ['graphql.json#document', gql.document.value, 'Asset!'],
  ['graphql.json#file', gql.file.value, 'Asset!'],
  ['graphql.json#revision', gql.revision.value, 'AssetRevision!'],
];

test('every Frontify fixture body is bound to a check', () => {
  const bound = new Set(BINDINGS.map(([n]) => n));
  const rfc = ['oauth.json#code', 'oauth.json#refresh', 'oauth.json#invalid_grant'];
  const spec = ['errors.json#unauthenticated', 'errors.json#policy', 'errors.json#invalid_query'];
  for (const [file, body] of [['graphql.json', gql], ['oauth.json', oauth], ['errors.json', errors]] as const) {
    for (const k of Object.keys(body).filter((k) => k !== 'source')) {
      const n = `${file}#${k}`;
      assert.ok(bound.has(n) || rfc.includes(n) || spec.includes(n), `${n} is checked by nothing`);
    }
  }
});

test('the GraphQL fixture bodies hold to the published SDL', () => {
  const problems: string[] = [];
  for (const [name, body, type] of BINDINGS) check(body, type, name, problems);
  assert.deepEqual(problems, []);
});

test('a value the SDL does not allow is caught (the check checks)', () => {
  const problems: string[] = [];
  check({ ...gql.image.value, fileSize: 1, width: '1920', title: null, copyright: { status: 'MAYBE' } }, 'Asset!', 'x', problems);
  assert.deepEqual(problems.sort(), ['x.copyright.status: "MAYBE" is not a CopyrightStatus', 'x.fileSize: Image declares no field fileSize', 'x.title: null where the SDL says String!', 'x.width: "1920" is not a Int'].sort());
});

test('the OAuth bodies have the fields of RFC 6749 5.1 (token) and 5.2 (error)', () => {
  for (const t of [oauth.code, oauth.refresh]) {
    assert.equal(typeof t.access_token, 'string');
    assert.match(t.token_type, /^bearer$/i);
    assert.ok(Number.isInteger(t.expires_in) && t.expires_in > 0);
    assert.equal(typeof t.refresh_token, 'string');
  }
  assert.ok(['invalid_request', 'invalid_client', 'invalid_grant', 'unauthorized_client', 'unsupported_grant_type', 'invalid_scope'].includes(oauth.invalid_grant.error));
});

test('the error bodies have the GraphQL response format (errors: [{message, locations?, path?, extensions?}])', () => {
  for (const e of [errors.unauthenticated, errors.policy, errors.invalid_query]) {
    assert.ok(Array.isArray(e.errors) && e.errors.length > 0);
    for (const x of e.errors) {
      assert.equal(typeof x.message, 'string');
      for (const k of Object.keys(x)) assert.ok(['message', 'locations', 'path', 'extensions'].includes(k), k);
      if (x.locations) for (const l of x.locations) assert.ok(Number.isInteger(l.line) && Number.isInteger(l.column));
    }
  }
});

describeReplay();

/** Every answer the replay gives to each of the connector's operations holds to the SDL too. */
function describeReplay() {
  let r: FrontifyReplay;
  let token: string;
  before(async () => {
    r = await startFrontifyReplay(['A/hero.jpg', 'A/guide.pdf', 'A/B/notes.txt'], { 'A/hero.jpg': 1 });
    const verifier = 'v'.repeat(43);
    const { createHash } = await import('node:crypto');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const auth = await fetch(`${r.url}/api/oauth/authorize?response_type=code&client_id=x&redirect_uri=${encodeURIComponent('http://hub.test/cb')}&state=s&code_challenge=${challenge}&code_challenge_method=S256`, { redirect: 'manual' });
    const code = new URL(auth.headers.get('location')!).searchParams.get('code')!;
    const tok = await fetch(`${r.url}/api/oauth/accesstoken`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ grant_type: 'authorization_code', code, code_verifier: verifier, client_id: 'x', redirect_uri: 'http://hub.test/cb' }) });
    token = (await tok.json()).access_token;
  });
  after(() => r?.close());

  test('every answer of the replay to the connector\'s operations holds to the SDL', async () => {
    const lib = r.ids['']!.slice(2);
    const folder = r.ids['A']!.split(':')[2]!;
    const brand = r.ids['#brand']!.slice(2);
    const calls: [Operation, Record<string, unknown>][] = [
      ['DamhubProbe', {}], ['DamhubCurrentUser', {}], ['DamhubBrands', {}],
      ['DamhubBrandLibraries', { id: brand, limit: 100, page: 1 }],
      ['DamhubLibraryBrowse', { id: lib, limit: 2, page: 1, folderLimit: 100, folderPage: 1, withFolders: true, withAssets: true }],
      ['DamhubFolderBrowse', { id: folder, limit: 2, page: 1, folderLimit: 100, folderPage: 1, withFolders: true, withAssets: true }],
      ['DamhubLibrarySearch', { id: lib, limit: 10, page: 1, query: { search: 'e', inFolder: { id: folder } } }],
      ['DamhubAsset', { id: r.ids['A/hero.jpg'] }], ['DamhubAsset', { id: r.ids['A/B/notes.txt'] }],
      ['DamhubAssetPreview', { id: r.ids['A/hero.jpg'], size: 256 }],
      ['DamhubRevisions', { id: r.ids['A/hero.jpg'], limit: 100, page: 1 }],
    ];
    const problems: string[] = [];
    for (const [op, variables] of calls) {
      const res = await fetch(`${r.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ operationName: op, query: QUERIES[op], variables }) });
      const body = await res.json();
      assert.equal(body.errors, undefined, `${op}: ${JSON.stringify(body.errors)}`);
      // The node of DamhubFolderBrowse is asked for `... on Folder`: checked as the Folder it is.
      check(body.data, 'RootQuery!', op, problems);
    }
    assert.deepEqual(problems, []);
  });
}
