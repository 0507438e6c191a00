/**
 * The Box replay fixtures held to Box's official SDK (`box-node-sdk` v10, whose schemas are
 * generated from Box's OpenAPI description). Its TypeScript types name fields in camelCase and
 * carry separate (de)serializers for the JSON on the wire, so the compile-time check of
 * test/helpers/fixture-contract.ts cannot apply to the raw bodies. Instead each body goes through
 * the SDK's own `deserializeXxx` (which throws on a wrong type or a missing required field) and
 * back through `serializeXxx`; the round trip must give the body again (dates compared as
 * instants, nulls as absent). The serializers write only fields the schema knows, so a renamed or
 * invented field comes back missing and fails, naming the fixture and the field's path.
 *
 * Every top-level body of every fixture file is bound or listed as unchecked with a reason; where
 * the SDK disagrees with the published page, the page wins and the disagreement is named (a stale
 * exception fails). test/fixtures/box/README.md lists the bindings.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deserializeAccessToken, serializeAccessToken } from 'box-node-sdk/lib/schemas/accessToken';
import { deserializeClientError, serializeClientError } from 'box-node-sdk/lib/schemas/clientError';
import { deserializeFileFull, serializeFileFull } from 'box-node-sdk/lib/schemas/fileFull';
import { deserializeFileVersions, serializeFileVersions } from 'box-node-sdk/lib/schemas/fileVersions';
import { deserializeFolderFull, serializeFolderFull } from 'box-node-sdk/lib/schemas/folderFull';
import { deserializeItems, serializeItems } from 'box-node-sdk/lib/schemas/items';
import { deserializeOAuth2Error, serializeOAuth2Error } from 'box-node-sdk/lib/schemas/oAuth2Error';
import { deserializeSearchResults, serializeSearchResults } from 'box-node-sdk/lib/schemas/searchResults';
import { deserializeUserFull, serializeUserFull } from 'box-node-sdk/lib/schemas/userFull';
import { fixtureBodies } from '../../helpers/fixture-contract.js';

interface Schema { name: string; de(v: any): any; ser(v: any): any }
const S = {
  AccessToken: { name: 'AccessToken', de: deserializeAccessToken, ser: serializeAccessToken },
  UserFull: { name: 'UserFull', de: deserializeUserFull, ser: serializeUserFull },
  FolderFull: { name: 'FolderFull', de: deserializeFolderFull, ser: serializeFolderFull },
  FileFull: { name: 'FileFull', de: deserializeFileFull, ser: serializeFileFull },
  Items: { name: 'Items', de: deserializeItems, ser: serializeItems },
  SearchResults: { name: 'SearchResults', de: deserializeSearchResults, ser: serializeSearchResults },
  FileVersions: { name: 'FileVersions', de: deserializeFileVersions, ser: serializeFileVersions },
  ClientError: { name: 'ClientError', de: deserializeClientError, ser: serializeClientError },
  OAuth2Error: { name: 'OAuth2Error', de: deserializeOAuth2Error, ser: serializeOAuth2Error },
} satisfies Record<string, Schema>;

interface Binding {
  body: string;
  schema: Schema;
  /** Where the SDK disagrees with the published page (the page wins): field path → why. */
  pageWins?: Record<string, string>;
}

export const BOX_BINDINGS: Binding[] = [
  { body: 'oauth2_token.json#code', schema: S.AccessToken },
  { body: 'oauth2_token.json#refresh', schema: S.AccessToken },
  { body: 'users_me.json#response', schema: S.UserFull },
  { body: 'folder.json#response', schema: S.FolderFull },
  { body: 'folder.json#root', schema: S.FolderFull },
  { body: 'file.json#response', schema: S.FileFull },
  { body: 'items.json#response', schema: S.Items },
  { body: 'search.json#response', schema: S.SearchResults },
  { body: 'versions.json#response', schema: S.FileVersions },
  { body: 'errors.json#not_found', schema: S.ClientError },
  { body: 'errors.json#unauthorized', schema: S.ClientError },
  { body: 'errors.json#too_many_requests', schema: S.ClientError },
  // context_info is free-form in the schema ("possible fields are defined on a per-endpoint basis"): its `errors` list round-trips.
  { body: 'errors.json#bad_marker', schema: S.ClientError },
  { body: 'errors.json#invalid_grant', schema: S.OAuth2Error },
];

/** Bodies with no SDK schema to check against: body → why. */
export const BOX_UNCHECKED: Record<string, string> = {};

interface Problem { body: string; path: string; message: string }

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** Differences between the body and its round trip, as paths: a field lost (unknown to the schema) or changed. */
function diff(body: unknown, back: unknown, at: string, out: { path: string; message: string }[]): void {
  if (body === null || body === undefined) return; // null and absent are the same on the wire
  if (Array.isArray(body)) {
    if (!Array.isArray(back)) return void out.push({ path: at, message: 'an array came back as something else' });
    body.forEach((v, i) => diff(v, back[i], `${at}[${i}]`, out));
    return;
  }
  if (typeof body === 'object') {
    if (back === null || typeof back !== 'object') return void out.push({ path: at, message: 'unknown to the schema (not written back)' });
    for (const [k, v] of Object.entries(body)) {
      const p = at ? `${at}.${k}` : k;
      if (v !== null && (back as Record<string, unknown>)[k] === undefined) out.push({ path: p, message: 'unknown to the schema (not written back)' });
      else diff(v, (back as Record<string, unknown>)[k], p, out);
    }
    return;
  }
  if (typeof body === 'string' && ISO.test(body) && typeof back === 'string' && Date.parse(body) === Date.parse(back)) return;
  if (body !== back) out.push({ path: at, message: `came back as ${JSON.stringify(back)}` });
}

export function checkBox(bindings = BOX_BINDINGS, bodies: Map<string, unknown> = fixtureBodies('box')) {
  const problems: Problem[] = [];
  const stale: { body: string; path: string }[] = [];
  for (const b of bindings) {
    if (!bodies.has(b.body)) {
      problems.push({ body: b.body, path: '', message: 'bound, but no such fixture body' });
      continue;
    }
    const found: { path: string; message: string }[] = [];
    try {
      diff(bodies.get(b.body), JSON.parse(JSON.stringify(b.schema.ser(b.schema.de(bodies.get(b.body))))), '', found);
    } catch (e) {
      found.push({ path: '', message: `deserialize${b.schema.name} refused it: ${(e as Error).message}` });
    }
    for (const f of found) if (!(b.pageWins && f.path in b.pageWins)) problems.push({ body: b.body, ...f });
    for (const p of Object.keys(b.pageWins ?? {})) if (!found.some((f) => f.path === p)) stale.push({ body: b.body, path: p });
  }
  const covered = new Set([...bindings.map((b) => b.body), ...Object.keys(BOX_UNCHECKED)]);
  const unbound = [...bodies.keys()].filter((k) => !covered.has(k));
  return { problems, stale, unbound };
}

function describe(r: ReturnType<typeof checkBox>): string {
  return [
    ...r.problems.map((p) => `${p.body} at ${p.path || '(body)'}: ${p.message}`),
    ...r.stale.map((s) => `${s.body} at ${s.path}: listed as a disagreement with the SDK, but the SDK accepts it now; remove the exception`),
    ...r.unbound.map((b) => `${b}: no schema checks this body; bind it or list it as unchecked with a reason`),
  ].join('\n');
}

function drifted(body: string, edit: (b: any) => void): Map<string, unknown> {
  const bodies = fixtureBodies('box');
  const copy = structuredClone(bodies.get(body));
  edit(copy);
  bodies.set(body, copy);
  return bodies;
}

test('every Box fixture body survives the SDK\'s deserialize/serialize round trip (or is a named exception)', () => {
  assert.equal(describe(checkBox()), '');
});

test('a renamed field fails, naming the fixture and the field', () => {
  const r = checkBox(BOX_BINDINGS, drifted('items.json#response', (b) => {
    b.entries[0].sha_1 = b.entries[0].sha1;
    delete b.entries[0].sha1;
  }));
  assert.deepEqual(r.problems.map((p) => [p.body, p.path]), [['items.json#response', 'entries[0].sha_1']]);
});

test('a wrong type or a missing required field fails in the SDK\'s deserializer', () => {
  const wrong = describe(checkBox(BOX_BINDINGS, drifted('file.json#response', (b) => { b.size = String(b.size); })));
  assert.match(wrong, /^file\.json#response at \(body\): deserializeFileFull refused it: .*size/);
  const missing = describe(checkBox(BOX_BINDINGS, drifted('versions.json#response', (b) => { delete b.entries[0].id; })));
  assert.match(missing, /^versions\.json#response at \(body\): deserializeFileVersions refused it/);
});

test('a body no schema checks fails, and so does an exception the SDK no longer needs', () => {
  const bodies = fixtureBodies('box');
  bodies.set('file.json#trashed', { type: 'file', id: '1' });
  assert.deepEqual(checkBox(BOX_BINDINGS, bodies).unbound, ['file.json#trashed']);
  const stale = checkBox(BOX_BINDINGS.map((b) => (b.body === 'file.json#response' ? { ...b, pageWins: { sha1: 'no longer true' } } : b)));
  assert.deepEqual(stale.stale, [{ body: 'file.json#response', path: 'sha1' }]);
});
