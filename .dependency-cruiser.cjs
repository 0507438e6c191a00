/**
 * damhub's import rules, written down once (docs/architecture.md draws the same picture).
 *
 * Layers only point down:
 *
 *   entry        src/cli/, src/app.ts                       the processes: CLI, the Fastify app
 *   surfaces     src/routes/, src/http/, src/mcp/, src/demo/ what clients talk to
 *   composition  src/hub.ts, src/catalog.ts, src/config.ts  builds one node from its configuration
 *   content      src/content/                               the hub's operations over providers
 *   providers    src/providers/                             the contract, the kit, one folder per provider
 *   auth         src/auth/                                  tokens, keys, sessions, partners
 *   stores       src/stores/                                persistence (SQLite, PostgreSQL, Redis)
 *   leaf         src/errors.ts, src/clock.ts, src/net/, src/images/, src/http/html.ts
 *
 * `npm test` runs `depcruise` first (npm run lint:imports); a violation fails the run.
 */
const LEAF = '^src/(errors\\.ts|clock\\.ts|net/|images/|http/html\\.ts)';
const STORES = '^src/stores/';
const AUTH = '^src/auth/';
const PROVIDERS = '^src/providers/';
const CONTENT = '^src/content/';
const COMPOSITION = '^src/(hub|catalog|config)\\.ts$';
const SURFACES = '^src/(routes|mcp|demo)/|^src/http/(?!html\\.ts$)';
const ENTRY = '^src/(cli/|app\\.ts$)';

const above = (...layers) => ({ path: layers.join('|') });

module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      severity: 'error',
      comment: 'No import cycle anywhere in src/, type-only imports included.',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'leaf-imports-no-layer',
      severity: 'error',
      comment: 'Leaf utilities depend on nothing of the hub but other leaves.',
      from: { path: LEAF },
      to: { path: '^src/', pathNot: LEAF },
    },
    {
      name: 'stores-point-down',
      severity: 'error',
      comment: 'Stores persist rows; they know no tokens, providers or routes.',
      from: { path: STORES },
      to: above(AUTH, PROVIDERS, CONTENT, COMPOSITION, SURFACES, ENTRY),
    },
    {
      name: 'auth-points-down',
      severity: 'error',
      comment: 'Tokens, keys and sessions sit below the providers that use them.',
      from: { path: AUTH },
      to: above(PROVIDERS, CONTENT, COMPOSITION, SURFACES, ENTRY),
    },
    {
      name: 'providers-point-down',
      severity: 'error',
      comment: 'A provider sees the contract, the kit, auth, stores and leaves; never the hub above it.',
      from: { path: PROVIDERS },
      to: above(CONTENT, COMPOSITION, SURFACES, ENTRY),
    },
    {
      name: 'content-points-down',
      severity: 'error',
      comment: 'The content operations take what they need as arguments, not the Hub.',
      from: { path: CONTENT },
      to: above(COMPOSITION, SURFACES, ENTRY),
    },
    {
      name: 'composition-points-down',
      severity: 'error',
      from: { path: COMPOSITION },
      to: above(SURFACES, ENTRY),
    },
    {
      name: 'surfaces-point-down',
      severity: 'error',
      from: { path: SURFACES },
      to: above(ENTRY),
    },
    {
      name: 'providers-stay-in-their-folder',
      severity: 'error',
      comment: 'One folder per provider: a provider reaches another only through the shared kit (kit/, oauth/, saas/, metadata/) and the contract.',
      from: { path: '^src/providers/([^/]+)/' },
      to: { path: '^src/providers/[^/]+/', pathNot: '^src/providers/($1|kit|oauth|saas|metadata)/' },
    },
    {
      name: 'shared-kit-knows-no-provider',
      severity: 'error',
      comment: 'The kit serves providers; a provider registers in src/catalog.ts, never in the kit.',
      from: { path: '^src/providers/(kit|oauth|saas|metadata)/|^src/providers/[^/]+\\.ts$' },
      to: { path: '^src/providers/[^/]+/', pathNot: '^src/providers/(kit|oauth|saas|metadata)/' },
    },
    {
      name: 'src-not-to-tests',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|bench)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
