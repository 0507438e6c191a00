import path from 'node:path';
import { buildApp } from '../app.js';
import { ensureDemoLibrary } from '../demo/library.js';
import type { HubConfig } from '../config.js';
import { openHub, type Hub } from '../hub.js';
import { demoCleanCommand, ephemeralDemo, findDemoLeftovers, removeDemoLeftovers, type DemoState } from '../demo/leftovers.js';
import { UsageError } from './args.js';
import { DEMO_LIBRARY_ACCOUNT, embeddedLibrary } from '../catalog.js';
import { ensurePrivateDir } from '../stores/private-files.js';
import { claimLibraryRoot, libraryFolder } from '../providers/library/root-marker.js';

/** Runs a hub node until SIGTERM/SIGINT, then drains in-flight requests and exits. */
export async function serve(config: HubConfig): Promise<number> {
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
  try {
    address = await app.listen({ host: config.host, port: config.port });
  } catch (e) {
    await app.close().catch(() => undefined);
    follower?.close();
    await hub.close().catch(() => undefined);
    throw listenError(e, config);
  }
  // With --port 0 the real port is known only now; an unset public URL follows it.
  const actualPort = Number(new URL(address).port);
  if (config.port === 0 && actualPort) app.log.warn('listening on an ephemeral port; pass --public-url for correct redirect URIs');

  const sweep = setInterval(() => {
    hub.stores.sweep(hub.clock.now()).catch((e) => app.log.error({ err: e }, 'sweep failed'));
  }, 60_000);
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

/** What to do about a failed listen, in one line (Node's "listen EADDRINUSE: address already in use ::1:8080" says neither). */
function listenError(e: unknown, config: HubConfig): Error {
  const code = (e as NodeJS.ErrnoException).code;
  const where = `${config.host}:${config.port}`;
  if (code === 'EADDRINUSE') return new Error(`port ${config.port} on ${config.host} is in use (another damhub?): stop what listens on ${where} or choose another port with --port`);
  if (code === 'EACCES') return new Error(`not allowed to listen on ${where}: choose a port above 1023 with --port`);
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') return new Error(`cannot listen on ${config.host}: it is not an address of this machine; choose another with --host`);
  return e as Error;
}
