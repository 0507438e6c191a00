/**
 * compose.yaml, checked against the hub it runs. No compose binary and no container runtime work
 * on the CI machine, so the file is parsed (YAML 1.2 with merge keys, as Compose reads it) and its
 * parts are held to what the hub, the image and the nginx configuration expect: every DAMHUB_*
 * variable is one the hub reads; both nodes have the same configuration and both stores
 * (docs/scaling.md: both or neither); the store URLs name the store services and their
 * credentials; each node has its own data volume at the image's data directory and shares the
 * library's renditions; every volume, network and dependency is declared and used; nginx's
 * upstream file names the hub services on the image's port; every variable the file interpolates
 * has a line in deploy/compose.env.example.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import YAML from 'yaml';
import { knownEnvNames, TOOLING_ENV } from '../../src/cli/env-vars.js';
import { REPO_ROOT } from '../helpers/process.js';

type Service = {
  build?: string;
  image?: string;
  environment?: Record<string, string>;
  volumes?: string[];
  networks?: string[] | Record<string, { ipv4_address?: string } | null>;
  depends_on?: Record<string, { condition: string }>;
  command?: string[];
  healthcheck?: Record<string, unknown>;
  ports?: string[];
};
type Compose = {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
  networks: Record<string, { internal?: boolean; ipam?: { config: { subnet: string }[] } }>;
};

const read = (rel: string) => fs.readFileSync(path.join(REPO_ROOT, rel), 'utf8');
const text = read('compose.yaml');
const doc = YAML.parseDocument(text, { merge: true });
const compose = doc.toJS() as Compose;
const services = compose.services;
const hubs = Object.keys(services).filter((s) => services[s]!.build === '.');

/** What the Dockerfile's final stage sets: its ENV values and VOLUME. */
function dockerfile(): { env: Record<string, string>; volume: string; expose: string } {
  const final = read('Dockerfile').replace(/^\s*#.*\n/gm, '').replace(/\\\n\s*/g, ' ').split(/^FROM /m).pop()!;
  const line = (k: string) => new RegExp(`^${k} (.*)$`, 'm').exec(final)![1]!;
  return {
    env: Object.fromEntries([...line('ENV').matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1]!, m[2]!])),
    volume: (JSON.parse(line('VOLUME')) as string[])[0]!,
    expose: line('EXPOSE'),
  };
}

/** `${NAME}`, `${NAME:-default}`, `${NAME:?message}`: the names. */
function interpolated(s: string): string[] {
  return [...s.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?[-?][^}]*)?\}/g)].map((m) => m[1]!);
}

const networksOf = (s: Service) => (Array.isArray(s.networks) ? s.networks : Object.keys(s.networks ?? {}));
/** `SOURCE:TARGET[:MODE]`, where SOURCE may be `${NAME:-default}` (colons inside). */
const volumeParts = (v: string) => {
  const m = /^((?:\$\{[^}]*\}|[^:])+):([^:]+)(?::(\w+))?$/.exec(v);
  assert.ok(m, `a volume entry: ${v}`);
  return { source: m[1]!, target: m[2]!, mode: m[3] };
};

describe('compose.yaml', () => {
  test('parses without an error or a warning', () => {
    assert.deepEqual(doc.errors.map(String), []);
    assert.deepEqual(doc.warnings.map(String), []);
    assert.deepEqual(hubs, ['hub1', 'hub2']);
  });

  test('every DAMHUB_* variable it sets or interpolates is one the hub reads', () => {
    const known = new Set(knownEnvNames());
    const tooling = new Set<string>(TOOLING_ENV);
    const names = [
      ...Object.values(services).flatMap((s) => Object.keys(s.environment ?? {})),
      ...interpolated(text),
    ].filter((n) => n.startsWith('DAMHUB_'));
    assert.ok(names.length > 0);
    for (const n of names) {
      assert.ok(known.has(n), `${n} is not in src/cli/env-vars.ts`);
      assert.ok(!tooling.has(n), `${n} is read by the repository's tooling, not by the hub`);
    }
  });

  test('both nodes: the same configuration, on both stores (cluster mode)', () => {
    const [a, b] = hubs.map((h) => services[h]!);
    assert.deepEqual(a!.environment, b!.environment);
    assert.ok(a!.environment!.DATABASE_URL && a!.environment!.REDIS_URL, 'DATABASE_URL and REDIS_URL, both or neither');
    assert.match(a!.environment!.DAMHUB_PUBLIC_URL!, /DAMHUB_PUBLIC_URL/);
    for (const h of hubs) {
      assert.equal(services[h]!.depends_on?.postgres?.condition, 'service_healthy');
      assert.equal(services[h]!.depends_on?.redis?.condition, 'service_healthy');
    }
  });

  test('the store URLs name the store services, their port and their credentials', () => {
    const env = services.hub1!.environment!;
    const db = new URL(env.DATABASE_URL!.replace(/\$\{[^}]*\}/, 'PASSWORD'));
    const pg = services[db.hostname];
    assert.ok(pg, `DATABASE_URL's host ${db.hostname} is a service`);
    assert.equal(db.port, '5432');
    assert.equal(db.username, pg.environment!.POSTGRES_USER);
    assert.equal(db.pathname, `/${pg.environment!.POSTGRES_DB}`);
    assert.deepEqual(interpolated(env.DATABASE_URL!), interpolated(pg.environment!.POSTGRES_PASSWORD!));
    const redis = new URL(env.REDIS_URL!);
    const rs = services[redis.hostname];
    assert.ok(rs, `REDIS_URL's host ${redis.hostname} is a service`);
    assert.equal(redis.port, '6379');
    // docs/scaling.md: without its append-only file a Redis restart forgets logins and replays.
    assert.deepEqual(rs.command?.slice(-2), ['--appendonly', 'yes']);
    for (const store of [db.hostname, redis.hostname]) {
      assert.ok(services[store]!.healthcheck, `${store} has a healthcheck (the hubs wait for it)`);
      assert.deepEqual(networksOf(services[store]!), ['backend']);
    }
    assert.equal(compose.networks.backend!.internal, true, 'the stores have no way out and no way in but the hubs');
  });

  test('each node its own data volume at the image\'s data directory; the library\'s renditions shared', () => {
    const image = dockerfile();
    assert.equal(image.volume, image.env.DAMHUB_DATA_DIR);
    const data = hubs.map((h) => services[h]!.volumes!.map(volumeParts).find((v) => v.target === image.volume)!);
    assert.ok(data.every(Boolean), 'every node mounts a volume at the data directory');
    assert.notEqual(data[0]!.source, data[1]!.source, 'not one data volume for both');
    for (const h of hubs) {
      const vols = services[h]!.volumes!.map(volumeParts);
      assert.ok(vols.some((v) => v.source === 'library-renditions' && v.target === `${image.volume}/library`), `${h} shares <data>/library`);
      const lib = vols.find((v) => v.target === services[h]!.environment!.DAMHUB_LIBRARY);
      assert.ok(lib, `${h} mounts DAMHUB_LIBRARY`);
      assert.equal(lib.mode, 'ro');
    }
  });

  test('every named volume, network and dependency is declared, and every declared one used', () => {
    const used = new Set<string>();
    const usedNetworks = new Set<string>();
    for (const [name, s] of Object.entries(services)) {
      for (const v of (s.volumes ?? []).map(volumeParts)) {
        if (/^[a-z][a-z0-9_-]*$/.test(v.source)) {
          assert.ok(v.source in compose.volumes, `${name}: volume ${v.source} is declared`);
          used.add(v.source);
        }
      }
      for (const n of networksOf(s)) {
        assert.ok(n in compose.networks, `${name}: network ${n} is declared`);
        usedNetworks.add(n);
      }
      for (const d of Object.keys(s.depends_on ?? {})) assert.ok(d in services, `${name} depends on ${d}, a service`);
    }
    assert.deepEqual([...used].sort(), Object.keys(compose.volumes).sort());
    assert.deepEqual([...usedNetworks].sort(), Object.keys(compose.networks).sort());
  });

  test('the files it mounts from the checkout exist', () => {
    const binds = Object.values(services).flatMap((s) => (s.volumes ?? []).map(volumeParts)).filter((v) => v.source.startsWith('./'));
    assert.ok(binds.length >= 2);
    for (const b of binds) assert.ok(fs.existsSync(path.join(REPO_ROOT, b.source)), `${b.source} exists`);
  });

  test('the proxy: in front of both nodes, at the image\'s port, from a fixed address in its network', () => {
    const proxy = services.proxy!;
    const upstream = proxy.volumes!.map(volumeParts).find((v) => v.target === '/etc/nginx/damhub-upstream.conf')!;
    const servers = [...read(upstream.source).matchAll(/^\s*server\s+([^\s;]+)/gm)].map((m) => m[1]);
    assert.deepEqual(servers, hubs.map((h) => `${h}:${dockerfile().expose}`));
    assert.deepEqual(proxy.ports, ['80:80', '443:443']);
    for (const h of hubs) {
      assert.equal(proxy.depends_on?.[h]?.condition, 'service_healthy');
      assert.ok(!services[h]!.ports, `${h} publishes no port: only the proxy is reached from outside`);
    }
    const [net, cfg] = Object.entries(proxy.networks as Record<string, { ipv4_address: string }>)[0]!;
    const subnet = compose.networks[net]!.ipam!.config[0]!.subnet;
    const prefix = subnet.replace(/\.0\/24$/, '.');
    assert.ok(subnet.endsWith('.0/24') && cfg.ipv4_address.startsWith(prefix), `${cfg.ipv4_address} in ${subnet}`);
    for (const h of hubs) assert.ok(networksOf(services[h]!).includes(net), `${h} is on the proxy's network`);
  });

  test('every variable it interpolates is in deploy/compose.env.example, and nothing else is', () => {
    const example = read('deploy/compose.env.example').split('\n').filter((l) => /^[A-Z_]+=/.test(l)).map((l) => l.split('=')[0]);
    assert.deepEqual([...new Set(interpolated(text))].sort(), [...example].sort());
  });

  test('.env, where those secrets go, is kept out of git and out of the image\'s build context', () => {
    assert.match(read('.gitignore'), /^\.env$/m);
    assert.match(read('.dockerignore'), /^\*\*\/\.env$/m);
  });
});
