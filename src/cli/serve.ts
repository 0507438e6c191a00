import net from 'node:net';
import path from 'node:path';
import { buildApp } from '../app.js';
import { uploadsOf } from '../routes/uploads.js';
import { ensureDemoLibrary } from '../demo/library.js';
import { defaultPublicUrl, type HubConfig } from '../config.js';
import { openHub, type Hub } from '../hub.js';
import { demoCleanCommand, ephemeralDemo, findDemoLeftovers, removeDemoLeftovers, type DemoState } from '../demo/leftovers.js';
import { UsageError } from './args.js';
import { DEMO_LIBRARY_ACCOUNT, embeddedLibrary } from '../catalog.js';
import { ensurePrivateDir } from '../stores/private-files.js';
import { claimLibraryRoot, libraryFolder } from '../providers/library/root-marker.js';
import { sweepStores } from '../stores/sweep.js';

/** Runs a hub node until SIGTERM/SIGINT, then drains in-flight requests and exits. */
export async function serve(config: HubConfig): Promise<number> {
  // --port 0: the port is chosen now and held until the hub listens on it, so that the hub (its
  // redirect URIs, media links, the demo page) and the start lines name the real port, not 0.
  const reserved = config.port === 0 ? await reservePort(config.host).catch((e: unknown) => { throw listenError(e, config); }) : null;
  if (reserved) {
    const derived = config.publicUrl === defaultPublicUrl(config.host, 0);
    config = { ...config, port: reserved.port, ...(derived ? { publicUrl: defaultPublicUrl(config.host, reserved.port) } : {}) };
  }
  try {
    return await serveOn(config, reserved);
  } finally {
    await reserved?.release();
  }
}

async function serveOn(config: HubConfig, reserved: Reservation | null): Promise<number> {
  // Before anything writes into it (the demo library below used to create it 0755).
  const note = ensurePrivateDir(config.dataDir);
  if (note) process.stderr.write(`damhub: ${note}\n`);
  if (config.libraryDir) {
    libraryFolder(config.libraryDir);
  } else if (config.demo) {
    // npm start: a generated demo library in the data dir, so there is something to browse.
    config = { ...config, libraryDir: path.join(config.dataDir, 'demo-library') };
    await ensureDemoLibrary(config.libraryDir!);
  }
  // One data directory, one library: refused here, before anything re-indexes another folder.
  if (config.libraryDir) claimLibraryRoot(config.dataDir, config.libraryDir);
  // Demo mode over one's own folder leaves nothing behind (src/demo/leftovers.ts): its account and
  // partner are removed at stop. In a cluster that would end the demo of every node at the first
  // one's stop, and a crashed node's leftovers would be every node's: one node (SQLite) only.
  const ephemeral = ephemeralDemo(config);
  if (ephemeral && config.databaseUrl) {
    throw new UsageError('--demo with your own --library runs on one node with its own data dir (SQLite), not in cluster mode: preview the folder without --database-url/--redis-url (README.md, "Preview your own folder")');
  }
  // SQLite in the data dir, or PostgreSQL + Redis with the cluster's shared keys (connected and
  // migrated here, before serving).
  const { hub, follower } = await openHub(config);
  try {
    await hub.start();
  } catch (e) {
    // e.g. an unusable image model: stop before listening, with the cause as the message.
    follower?.close();
    await hub.close().catch(() => undefined);
    throw e;
  }
  // A demo account, partner or key left by a crashed demo or an older version: said, with the command that removes them.
  const leftovers = config.demo ? [] : await findDemoLeftovers(demoState(hub)).catch(() => []);
  for (const l of leftovers) process.stderr.write(`damhub: warning: demo mode left ${l} in this data directory; remove it with: ${demoCleanCommand(config)}\n`);
  const app = await buildApp(hub);
  let address: string;
  // Fastify's own "Server listening at" line would be a raw JSON line among the start lines below,
  // which say the same for people and scripts: it is not logged.
  const level = app.log.level;
  if (['trace', 'debug', 'info'].includes(level)) app.log.level = 'warn';
  try {
    await reserved?.release();
    address = await app.listen({ host: config.host, port: config.port });
  } catch (e) {
    await app.close().catch(() => undefined);
    follower?.close();
    await hub.close().catch(() => undefined);
    throw listenError(e, config);
  } finally {
    app.log.level = level;
  }

  const sweepOnce = () => {
    sweepStores(hub.stores, hub.clock.now(), hub.config.auditRetentionDays).catch((e) => app.log.error({ err: e }, 'sweep failed'));
    // Unfinished resumable uploads past DAMHUB_UPLOAD_EXPIRY, with their part files.
    uploadsOf(hub).sweep().catch((e) => app.log.error({ err: e }, 'upload sweep failed'));
  };
  // Once at start too: a node restarted more often than the interval would otherwise never sweep.
  sweepOnce();
  const sweep = setInterval(sweepOnce, 60_000);
  sweep.unref();

  // The signal handlers are in place before anything says the hub is up: a supervisor (or a test)
  // that sends SIGTERM as soon as it reads the start lines used to find none on a busy machine,
  // when this process was descheduled between its write and the registration, and the hub died
  // by the signal instead of draining.
  const stopped = new Promise<number>((resolve) => {
    let closing = false;
    const stop = (signal: string) => {
      if (closing) return;
      closing = true;
      app.log.info({ signal }, 'shutting down: draining in-flight requests');
      clearInterval(sweep);
      follower?.close();
      const force = setTimeout(() => {
        app.log.error('drain timed out; exiting');
        resolve(1);
      }, config.shutdownGraceMs);
      force.unref();
      app.close()
        // After the last request, before the stores close: the demo's account, partner and key go.
        .then(() => (ephemeral ? removeDemoLeftovers(demoState(hub)).then(() => undefined, (e) => {
          app.log.error({ err: e }, `the demo account and partner could not be removed; remove them with: ${demoCleanCommand(config)}`);
        }) : undefined))
        .then(() => hub.close()).then(() => {
        clearTimeout(force);
        resolve(0);
      }, (e) => {
        app.log.error({ err: e }, 'shutdown failed');
        resolve(1);
      });
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });

  const base = config.publicUrl;
  const library = embeddedLibrary(hub.providers);
  process.stdout.write([
    `damhub listening on ${address}`,
    `  stores:         ${config.databaseUrl ? 'PostgreSQL + Redis (cluster mode)' : `SQLite in ${config.dataDir}`}`,
    config.demo ? `  demo page:      ${base}/demo` : null,
    config.libraryDir ? `  library:        ${config.libraryDir} (${(await library?.index.fileStates())?.size ?? 0} files indexed${library?.isIndexer === false ? ', another node is the indexer' : ''})` : null,
    config.demo && library ? `  library login:  ${DEMO_LIBRARY_ACCOUNT.name} / ${DEMO_LIBRARY_ACCOUNT.password}${ephemeral ? ' (removed with the demo partner when this hub stops)' : ''}` : null,
    `  connectors:     ${connectorList(hub)}`,
    `  API reference:  ${base}/api/v1/docs`,
    `  OpenAPI:        ${base}/api/v1/openapi.json`,
    `  health:         ${base}/healthz  ${base}/readyz  ${base}/metrics${config.metricsToken ? ' (bearer DAMHUB_METRICS_TOKEN)' : ' (open; set DAMHUB_METRICS_TOKEN to protect it)'}`,
    `  admin key:      ${config.adminKey ? '(from DAMHUB_ADMIN_KEY)' : follower ? "shared: SELECT value FROM hub_secrets WHERE name = 'admin.key'" : `${config.dataDir}/admin.key`}`,
    '',
  ].filter((l) => l !== null).join('\n'));
  return stopped;
}

/** The demo's state of this hub: its data dir, its partners and its library's accounts. */
function demoState(hub: Hub): DemoState {
  return { dataDir: hub.config.dataDir, partners: hub.stores.partners, library: embeddedLibrary(hub.providers)?.index ?? null };
}

/** The enabled connectors of the start lines: their ids, the embedded library first; what enables more when there is only the library. */
function connectorList(hub: Hub): string {
  const ids = hub.providers.list().map((p) => p.descriptor.id);
  if (!ids.length) return 'none (set DAMHUB_CONNECTORS, e.g. webdav,s3; docs/connectors.md)';
  return ids.length === 1 && ids[0] === 'library' ? 'library (more with DAMHUB_CONNECTORS, e.g. webdav,s3; docs/connectors.md)' : ids.join(', ');
}

/**
 * How to choose another port from where the hub was started. Under `npm start` (or another npm
 * script) a bare `--port` is taken by npm as its own config ("Unknown cli config"): the flag goes
 * after `--`, or the port in DAMHUB_PORT. `npx damhub` passes flags on, so `--port` is right there.
 */
export function portAdvice(port: number, env: NodeJS.ProcessEnv = process.env): string {
  const script = env.npm_lifecycle_event;
  if (script && script !== 'npx') {
    const run = script === 'start' ? 'npm start' : `npm run ${script}`;
    return `${run} -- --port ${port} (or DAMHUB_PORT=${port} ${run})`;
  }
  return `--port ${port}`;
}

/** What to do about a failed listen, in one line (Node's "listen EADDRINUSE: address already in use ::1:8080" says neither). */
function listenError(e: unknown, config: HubConfig): Error {
  const code = (e as NodeJS.ErrnoException).code;
  const where = `${config.host}:${config.port}`;
  if (code === 'EADDRINUSE') return new Error(`port ${config.port} on ${config.host} is in use (another damhub?): stop what listens on ${where} or choose another port with ${portAdvice(config.port === 65535 ? 8081 : config.port + 1)}`);
  if (code === 'EACCES') return new Error(`not allowed to listen on ${where}: choose a port above 1023 with ${portAdvice(8080)}`);
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') return new Error(`cannot listen on ${config.host}: it is not an address of this machine; choose another with --host`);
  return e as Error;
}

interface Reservation {
  port: number;
  /** Lets the port go, so that the hub can listen on it (again: a no-op). */
  release(): Promise<void>;
}

/** A port the system chooses on `host`, held by a listening socket until released. */
async function reservePort(host: string): Promise<Reservation> {
  const holder = net.createServer();
  await new Promise<void>((resolve, reject) => {
    holder.once('error', reject);
    holder.listen(0, host, () => resolve());
  });
  const port = (holder.address() as net.AddressInfo).port;
  let released: Promise<void> | null = null;
  return { port, release: () => (released ??= new Promise<void>((r) => holder.close(() => r()))) };
}
