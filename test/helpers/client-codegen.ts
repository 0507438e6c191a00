/**
 * Generates packages/client/src/generated/types.ts from the hub's own OpenAPI document (the one
 * served at /api/v1/openapi.json, built from the route schemas), so the client's types cannot
 * drift from what the hub validates and serialises. test/client/client-types.test.ts fails when the
 * committed file is stale; `npm run gen:client-types` rewrites it.
 *
 *   node dist/test/helpers/client-codegen.js --write
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTestHub } from './hub.js';
import { REPO_ROOT } from './process.js';

type Schema = Record<string, any>;

export const GENERATED_FILE = path.join(REPO_ROOT, 'packages/client/src/generated/types.ts');

/** Named response and parameter types: the operation (method + path under /api/v1) → type name. */
const RESPONSES: [string, string][] = [
  ['post /auth/exchangeToken', 'TokenPair'],
  ['get /auth/checkToken', 'CheckTokenResult'],
  ['get /auth/providers', 'ProviderList'], // items: ProviderListItem
  ['post /auth/login', 'LoginStart'],
  ['get /auth/login', 'LoginPoll'],
  ['get /system/providerInfo', 'ProviderInfoResult'],
];
const PARAMS: [string, string][] = [
  ['get /assets/folder/{folderId}', 'FolderQuery'],
  ['get /assets/search', 'SearchQuery'],
  ['post /assets/search', 'ImageSearchQuery'],
  ['get /assets/asset/{assetId}', 'AssetQuery'],
  ['get /assets/assetversions/{assetId}', 'VersionsQuery'],
  ['post /auth/login', 'LoginStartQuery'],
];
const BODIES: [string, string][] = [['post /assets/search', 'ImageSearchBody']];

const upper = (key: string) => key.replace(/^\w+/, (m) => m.toUpperCase());
const ident = (k: string) => (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(k) ? k : JSON.stringify(k));

function tsType(s: Schema, indent: string): string {
  if (s.$ref) return String(s.$ref).split('/').pop()!;
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (Array.isArray(s.enum)) return s.enum.map((v: unknown) => JSON.stringify(v)).join(' | ');
  if (s.anyOf || s.oneOf) return [...new Set((s.anyOf ?? s.oneOf).map((x: Schema) => tsType(x, indent)))].join(' | ');
  if (Array.isArray(s.type)) return s.type.map((t: string) => tsType({ ...s, type: t }, indent)).join(' | ');
  switch (s.type) {
    case 'string': return 'string';
    case 'integer':
    case 'number': return 'number';
    case 'boolean': return 'boolean';
    case 'null': return 'null';
    case 'array': {
      const item = tsType(s.items ?? {}, indent);
      return /[|&]/.test(item) ? `Array<${item}>` : `${item}[]`;
    }
    case 'object': return objectType(s, indent);
    default: return 'unknown';
  }
}

function objectType(s: Schema, indent: string): string {
  const props = Object.entries((s.properties ?? {}) as Record<string, Schema>);
  const required = new Set<string>(s.required ?? []);
  const extra = s.additionalProperties;
  if (!props.length) {
    if (extra && typeof extra === 'object') return `Record<string, ${tsType(extra, indent)}>`;
    return 'Record<string, unknown>';
  }
  const inner = indent + '  ';
  const lines = props.map(([k, v]) => `${doc(v, inner)}${inner}${ident(k)}${required.has(k) ? '' : '?'}: ${tsType(v, inner)};`);
  if (extra === true) lines.push(`${inner}[key: string]: unknown;`);
  return `{\n${lines.join('\n')}\n${indent}}`;
}

function doc(s: Schema, indent: string): string {
  return s.description ? `${indent}/** ${String(s.description).replace(/\*\//g, '*\\/')} */\n` : '';
}

function named(name: string, s: Schema): string {
  const t = tsType(s, '');
  if (s.type === 'array' && s.items?.type === 'object') return named(`${name}Item`, s.items) + `\n${doc(s, '')}export type ${name} = ${name}Item[];\n`;
  return `${doc(s, '')}export ${s.type === 'object' && t.startsWith('{') ? `interface ${name} ${t}` : `type ${name} = ${t};`}\n`;
}

/** The generated module's text for an OpenAPI document. */
export function generateTypes(openapi: Schema): string {
  const out: string[] = [
    '// Generated from the hub\'s OpenAPI document by test/helpers/client-codegen.ts. Do not edit by hand:',
    '// run `npm run gen:client-types`. test/client/client-types.test.ts fails when this file is stale.',
    '/* eslint-disable */',
    '',
  ];
  for (const [name, s] of Object.entries((openapi.components?.schemas ?? {}) as Record<string, Schema>)) out.push(named(name, s));
  const op = (key: string) => {
    const [method, p] = key.split(' ');
    const o = openapi.paths?.[`/api/v1${p}`]?.[method!];
    if (!o) throw new Error(`the OpenAPI document has no operation ${key}`);
    return o as Schema;
  };
  for (const [key, name] of RESPONSES) {
    const s = op(key).responses?.['200']?.content?.['application/json']?.schema;
    if (!s) throw new Error(`${key} has no 200 JSON response schema`);
    out.push(`/** Response of ${upper(key)}. */\n` + named(name, { ...s, description: undefined }));
  }
  for (const [key, name] of PARAMS) {
    const params = ((op(key).parameters ?? []) as Schema[]).filter((p) => p.in === 'query');
    const obj: Schema = { type: 'object', properties: {}, required: [] };
    for (const p of params) {
      obj.properties[p.name] = { ...p.schema, description: p.description ?? p.schema?.description };
      if (p.required) obj.required.push(p.name);
    }
    out.push(`/** Query parameters of ${upper(key)}. */\n` + named(name, obj));
  }
  for (const [key, name] of BODIES) {
    const s = op(key).requestBody?.content?.['application/json']?.schema;
    if (!s) throw new Error(`${key} has no JSON request body`);
    out.push(`/** Request body of ${upper(key)}. */\n` + named(name, s));
  }
  return out.join('\n');
}

/** The OpenAPI document of a freshly built hub (no providers needed: schemas are static). */
export async function hubOpenApi(): Promise<Schema> {
  const t = await startTestHub();
  try {
    await t.app.ready();
    return JSON.parse(JSON.stringify(t.app.swagger()));
  } finally {
    await t.close();
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const text = generateTypes(await hubOpenApi());
  if (process.argv.includes('--write')) {
    fs.mkdirSync(path.dirname(GENERATED_FILE), { recursive: true });
    fs.writeFileSync(GENERATED_FILE, text);
    console.log(`wrote ${path.relative(process.cwd(), GENERATED_FILE)}`);
  } else process.stdout.write(text);
}
