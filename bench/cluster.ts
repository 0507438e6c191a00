/**
 * Folder browse and keyword search through one and two hub nodes, on the embedded store (SQLite)
 * and on the shared stores (PostgreSQL + Redis): what the shared stores cost per request and
 * what a second node adds on this machine. Every side is real `damhub serve` processes; the
 * per-user content rate limit is on (set very high) so each content request pays its rate-limit
 * step, as in production.
 *
 * Run: flock /tmp/damhub-cpu.lock npm run bench:cluster [-- --rounds 3 --duration 5 --connections 40 --assets 220]
 * Needs PostgreSQL on 127.0.0.1:5432 and Redis on 127.0.0.1:6379 (DAMHUB_TEST_DATABASE_URL /
 * DAMHUB_TEST_REDIS_URL elsewhere); it creates database damhub_bench_cluster_<random> and uses
 * Redis DB 0 under a random key prefix, and removes both at the end. Smoke check: --rounds 1
 * --duration 1 --connections 4 --assets 20.
 *
 * Ends with RESULT lines (bench/lib.ts) per workload and configuration: req/s, p99, and req/s
 * relative to the embedded single node, without targets (docs/benchmarks.md records none for this
 * benchmark). Its library and data dirs are in the run's temp root, removed however the run ends.
 */
import { load, median, onInterrupt, REPO_ROOT, reportResults, result, startChild, table, type LoadResult } from './lib.js';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import pg from 'pg';
import { Redis } from 'ioredis';
import sharp from 'sharp';
import { runCli, freePort } from '../test/helpers/process.js';
import { libraryLoginOverHttp } from '../test/helpers/library.js';

const { values } = parseArgs({ options: {
  rounds: { type: 'string', default: '3' },
  duration: { type: 'string', default: '5' },
  connections: { type: 'string', default: '40' },
  assets: { type: 'string', default: '220' },
} });
const ROUNDS = Number(values.rounds);
const DURATION = Number(values.duration);
const CONNECTIONS = Number(values.connections);
const COUNT = Number(values.assets);

const PG_ADMIN = process.env.DAMHUB_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS = process.env.DAMHUB_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/0';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'damhub-bench-cluster-'));
const lib = path.join(dir, 'library');

// The library: COUNT small JPEGs with XMP keywords in one folder (as bench/browse.ts).
const words = ['sunset', 'beach', 'city', 'forest', 'mountain', 'river', 'portrait', 'studio', 'night', 'snow'];
fs.mkdirSync(path.join(lib, 'Shoot'), { recursive: true });
for (let i = 0; i < COUNT; i++) {
  const kw = [words[i % 10]!, words[(i * 7 + 3) % 10]!];
  const xmp = `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/">`
    + `<dc:title><rdf:Alt><rdf:li xml:lang="x-default">Frame ${i}</rdf:li></rdf:Alt></dc:title>`
    + `<dc:subject><rdf:Bag>${kw.map((k) => `<rdf:li>${k}</rdf:li>`).join('')}</rdf:Bag></dc:subject></rdf:Description></rdf:RDF></x:xmpmeta>`;
  await sharp({ create: { width: 48, height: 32, channels: 3, background: { r: (i * 37) % 256, g: (i * 91) % 256, b: (i * 13) % 256 } } })
    .withXmp(xmp).jpeg({ quality: 80 }).toFile(path.join(lib, 'Shoot', `frame ${String(i).padStart(4, '0')}.jpg`));
}

// One partner key for every configuration.
const { privateKey, publicKey } = await generateKeyPair('RS256');
const jwksFile = path.join(dir, 'jwks.json');
fs.writeFileSync(jwksFile, JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'bench', alg: 'RS256', use: 'sig' }] }));
const ISSUER = 'https://bench.example/';
const partnerJwt = () => new SignJWT({ email: 'bench@example.com' }).setProtectedHeader({ alg: 'RS256', kid: 'bench' })
  .setIssuer(ISSUER).setAudience('urn:damhub').setSubject('bench-user').setIssuedAt().setExpirationTime('5m').setJti(randomUUID()).sign(privateKey);

const check = async (r: Response) => {
  if (!r.ok) throw new Error(`${r.url}: ${r.status} ${await r.text()}`);
  return r.json() as Promise<any>;
};
const run = async (args: string[], env: NodeJS.ProcessEnv, input?: string) => {
  const r = await runCli(args, env, input);
  if (r.code !== 0) throw new Error(`damhub ${args.join(' ')}: ${r.stderr}`);
};

interface Config {
  name: string;
  nodes: number;
  shared: boolean;
}

interface Prepared {
  urls: string[];
  headers: Record<string, string>;
  folder: string;
  children: ChildProcess[];
}

/**
 * Starts the nodes of one configuration. The library account is created once and its data dir
 * copied to every node: with the embedded store each node has its own library index, and a DAM
 * token names the account by id (with the shared stores the account is in PostgreSQL already).
 */
async function prepare(c: Config, cluster: { databaseUrl: string; redisUrl: string; prefix: string }): Promise<Prepared> {
  const env: NodeJS.ProcessEnv = c.shared
    ? { DATABASE_URL: cluster.databaseUrl, REDIS_URL: cluster.redisUrl, DAMHUB_REDIS_PREFIX: cluster.prefix }
    : { DATABASE_URL: '', REDIS_URL: '' };
  const template = path.join(dir, `${c.name.replace(/\W+/g, '-')}-template`);
  await run(['users', 'add', 'bench', '--password-stdin', '--data', template], env, 'bench-password\n').catch((e: Error) => {
    if (!/already exists/.test(e.message)) throw e; // shared stores: created by the first configuration
  });
  await run(['partners', 'add', '--id', 'bench', '--issuer', ISSUER, '--jwks-file', jwksFile, '--rate-limit', '100000', '--data', template], env).catch(async (e: Error) => {
    if (!/already exists/.test(e.message)) throw e; // shared stores: registered by the first configuration
  });
  // With the shared stores the CLI writes nothing to --data (accounts and partners are in PostgreSQL).
  fs.mkdirSync(template, { recursive: true });
  const children: ChildProcess[] = [];
  const urls: string[] = [];
  for (let i = 0; i < c.nodes; i++) {
    const data = `${template}-node${i}`;
    fs.cpSync(template, data, { recursive: true });
    const port = await freePort();
    urls.push(`http://127.0.0.1:${port}`);
    children.push(await startChild([`${REPO_ROOT}bin/damhub.js`, 'serve', '--library', lib, '--port', String(port), '--data', data], 'damhub listening',
      { ...env, DAMHUB_LOG_LEVEL: 'warn', DAMHUB_USER_RATE_LIMIT: '100000000' }));
  }
  const api = `${urls[0]}/api/v1`;
  const { access_token } = await check(await fetch(`${api}/auth/exchangeToken`, { method: 'POST', headers: { authorization: `Bearer ${await partnerJwt()}` } }));
  const auth = { authorization: `Bearer ${access_token}` };
  const dam = { access_token: await libraryLoginOverHttp(urls[0]!, access_token, 'bench', 'bench-password') };
  const headers = { ...auth, 'provider-authorization': `Bearer ${dam.access_token}` };
  // Every node must have indexed the folder and accept the tokens before the load starts.
  let folder = '';
  for (const u of urls) {
    for (let tries = 0; ; tries++) {
      const root = await check(await fetch(`${u}/api/v1/assets/folder/root`, { headers }));
      folder = root.folders.find((f: { name: string }) => f.name === 'Shoot')?.id ?? '';
      const page = folder ? await check(await fetch(`${u}/api/v1/assets/folder/${encodeURIComponent(folder)}?size=50`, { headers })) : null;
      if (page?.totalAssetsCount === COUNT) break;
      if (tries > 100) throw new Error(`${u} did not index the library`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  return { urls, headers, folder, children };
}

// Shared stores: a fresh database and a random Redis key prefix.
const dbName = `damhub_bench_cluster_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
const admin = new pg.Client({ connectionString: PG_ADMIN });
await admin.connect();
await admin.query(`CREATE DATABASE ${dbName}`);
const dbUrl = new URL(PG_ADMIN);
dbUrl.pathname = `/${dbName}`;
const cluster = { databaseUrl: dbUrl.toString(), redisUrl: REDIS, prefix: `damhub-bench:${randomUUID()}:` };

const configs: Config[] = [
  { name: 'embedded, 1 node', nodes: 1, shared: false },
  { name: 'shared, 1 node', nodes: 1, shared: true },
  { name: 'shared, 2 nodes', nodes: 2, shared: true },
];
const prepared: Prepared[] = [];
const results = new Map<string, LoadResult[]>();
const removeStores = async () => {
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => undefined);
  await admin.end().catch(() => undefined);
  const r = new Redis(REDIS, { maxRetriesPerRequest: 1 });
  let cursor = '0';
  do {
    const [next, keys] = await r.scan(cursor, 'MATCH', `${cluster.prefix}*`, 'COUNT', 500);
    cursor = next;
    if (keys.length) await r.del(...keys);
  } while (cursor !== '0');
  r.disconnect();
};
onInterrupt(async () => {
  for (const p of prepared) for (const c of p.children) c.kill('SIGKILL');
  await removeStores();
});
try {
  for (const c of configs) prepared.push(await prepare(c, cluster));
  const workloads = (p: Prepared) => ({
    browse: p.urls.map((u) => `${u}/api/v1/assets/folder/${encodeURIComponent(p.folder)}?size=50`),
    search: p.urls.map((u) => `${u}/api/v1/assets/search?query=${encodeURIComponent('sunset beach')}&size=50`),
  });
  const drive = (urls: string[], headers: Record<string, string>, sec: number) => load(urls as unknown as string, headers, sec, CONNECTIONS);
  // Warm-up, then rounds alternating the order of the configurations.
  for (const p of prepared) for (const urls of Object.values(workloads(p))) await drive(urls, p.headers, 2);
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 ? [...configs.keys()].reverse() : [...configs.keys()];
    for (const i of order) {
      for (const [kind, urls] of Object.entries(workloads(prepared[i]!))) {
        const r = await drive(urls, prepared[i]!.headers, DURATION);
        if (r.errors || r.timeouts || r.non2xx) throw new Error(`${configs[i]!.name} ${kind}: ${r.timeouts} timeouts, ${r.errors} other errors, ${r.non2xx} non-2xx`);
        const key = `${kind}|${configs[i]!.name}`;
        results.set(key, [...(results.get(key) ?? []), r]);
      }
    }
  }
  console.log(`cluster benchmark: ${ROUNDS} alternating rounds × ${DURATION} s, ${CONNECTIONS} connections (spread over the nodes), ${os.cpus().length} cores, node ${process.version}, ${COUNT} assets, page of 50`);
  for (const kind of ['browse', 'search']) {
    const base = median(results.get(`${kind}|${configs[0]!.name}`)!.map((r) => r.rps));
    console.log(`\n${kind}`);
    console.log(table([
      ['configuration', 'req/s (median)', 'p50 ms', 'p99 ms', 'vs embedded'],
      ...configs.map((c) => {
        const rs = results.get(`${kind}|${c.name}`)!;
        const rps = median(rs.map((r) => r.rps));
        return [c.name, rps, median(rs.map((r) => r.p50)), median(rs.map((r) => r.p99)), (rps / base).toFixed(2)] as [string, ...(string | number)[]];
      }),
    ]));
    for (const c of configs) {
      const rs = results.get(`${kind}|${c.name}`)!;
      const tag = c.name.replace(/\W+/g, '-');
      result(`cluster-${kind}-rps-${tag}`, median(rs.map((r) => r.rps)), 'req/s');
      result(`cluster-${kind}-p99-${tag}`, median(rs.map((r) => r.p99)), 'ms');
      if (c !== configs[0]) result(`cluster-${kind}-${tag}-vs-embedded`, median(rs.map((r) => r.rps)) / base, 'x');
    }
  }
} finally {
  for (const p of prepared) for (const c of p.children) c.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 500));
  await removeStores();
  fs.rmSync(dir, { recursive: true, force: true });
}
reportResults();
