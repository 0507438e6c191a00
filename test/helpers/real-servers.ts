/**
 * Real, widely deployed servers from Debian's packages, started by the tests on loopback on free
 * ports, each with its own configuration and data in a temp dir; `close()` stops their whole
 * process group and removes the dir:
 *
 * - Apache httpd with mod_dav / mod_dav_fs (package apache2), Basic authentication;
 * - `rclone serve webdav` (package rclone), a second, unrelated WebDAV implementation;
 * - OpenStack Swift (swift-proxy, -account, -container, -object) with its S3 API (s3api +
 *   tempauth, object_versioning for S3 versioning) on a one-device ring built in the temp dir,
 *   with the memcached tempauth requires.
 *
 * These are the servers the connectors meet in the field; the fake (s3rver) is kept only for
 * the case a real server cannot be made to show (no ListObjectVersions). A missing package FAILS the test
 * with the package to install (`.ci/run` installs them): a skipped real-server test would pass
 * without having proved anything.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import dgram from 'node:dgram';
import net from 'node:net';
import path from 'node:path';
import { CreateBucketCommand, PutBucketVersioningCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { freePort } from './process.js';
import { tempDir } from './hub.js';
import { writeFiles } from './library.js';

/** How long a server may take to answer after it was started. */
const READY_MS = 30_000;

/** Fails (never skips) when a package's program is missing. */
export function requireProgram(program: string, pkg: string): string {
  for (const dir of ['/usr/sbin', '/usr/bin', '/sbin', '/bin', '/usr/local/bin']) {
    const p = path.join(dir, program);
    if (existsSync(p)) return p;
  }
  throw new Error(`${program} is not installed: this test runs against the real server from Debian's package "${pkg}" (apt-get install -y ${pkg}; .ci/run installs it)`);
}

interface Proc {
  child: ChildProcess;
  name: string;
  output(): string;
}

/** Starts a program in its own process group (so close() ends it and anything it forked). */
function start(name: string, cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Proc {
  const child = spawn(cmd, args, { cwd: opts.cwd, env: { ...process.env, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  const keep = (d: Buffer) => {
    out = (out + d.toString()).slice(-8000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  child.on('error', (e) => keep(Buffer.from(String(e))));
  return { child, name, output: () => out };
}

async function stopAll(procs: Proc[]): Promise<void> {
  await Promise.all(procs.map(async (p) => {
    if (p.child.exitCode !== null || p.child.signalCode !== null || p.child.pid === undefined) return;
    const exited = new Promise((r) => p.child.once('exit', r));
    try {
      process.kill(-p.child.pid, 'SIGTERM');
    } catch { /* already gone */ }
    const t = setTimeout(() => {
      try {
        process.kill(-p.child.pid!, 'SIGKILL');
      } catch { /* gone */ }
    }, 5000);
    await exited;
    clearTimeout(t);
  }));
}

/** Polls `probe` until it resolves true, failing with the servers' output after READY_MS. */
async function ready(procs: Proc[], what: string, probe: () => Promise<boolean>): Promise<void> {
  const until = Date.now() + READY_MS;
  for (;;) {
    const dead = procs.find((p) => p.child.exitCode !== null);
    if (dead) throw new Error(`${dead.name} exited with ${dead.child.exitCode} before ${what} was ready:\n${dead.output()}`);
    if (await probe().catch(() => false)) return;
    if (Date.now() > until) {
      await stopAll(procs);
      throw new Error(`${what} was not ready within ${READY_MS} ms:\n${procs.map((p) => `--- ${p.name}\n${p.output()}`).join('\n')}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

/** Apache and Swift drop root for an unprivileged user, who must be able to read (and write) the temp dir. */
function handOver(dir: string, uid: number, gid: number): void {
  chownSync(dir, uid, gid);
  if (statSync(dir).isDirectory()) for (const e of readdirSync(dir)) handOver(path.join(dir, e), uid, gid);
}

function unprivileged(): { user: string; group: string; uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  const id = (flag: string) => Number(spawnSync('id', [flag, 'nobody'], { encoding: 'utf8' }).stdout.trim());
  return { user: 'nobody', group: 'nogroup', uid: id('-u'), gid: id('-g') };
}

/** {SHA} entries: a format both mod_authn_file and rclone read (`htpasswd -s` writes them). */
function htpasswd(users: Record<string, string>): string {
  return Object.entries(users).map(([u, p]) => `${u}:{SHA}${createHash('sha1').update(p).digest('base64')}\n`).join('');
}

export interface RealDav {
  /** The collection URL the connector signs in to (ends in '/'). */
  url: string;
  /** The folder the server serves. */
  root: string;
  close(): Promise<void>;
}

/** Apache httpd with mod_dav_fs serving `files` at /dav/, Basic authentication for `users`. */
export async function startApacheDav(files: Record<string, Buffer | string>, users: Record<string, string> = { alice: 'alice-pw' }): Promise<RealDav> {
  const httpd = requireProgram('apache2', 'apache2');
  const dir = tempDir('damhub-apache-');
  const root = path.join(dir, 'files');
  mkdirSync(root);
  writeFiles(root, files);
  writeFileSync(path.join(dir, 'htpasswd'), htpasswd(users));
  const port = await freePort();
  const as = unprivileged();
  const mods = ['mpm_event', 'authz_core', 'authn_core', 'authn_file', 'auth_basic', 'authz_user', 'dav', 'dav_fs', 'alias', 'dir', 'mime'];
  writeFileSync(path.join(dir, 'httpd.conf'), [
    'ServerRoot /usr/lib/apache2',
    `PidFile ${dir}/httpd.pid`,
    `Listen 127.0.0.1:${port}`,
    'ServerName 127.0.0.1',
    ...mods.map((m) => `LoadModule ${m}_module modules/mod_${m}.so`),
    ...(as ? [`User ${as.user}`, `Group ${as.group}`] : []),
    `ErrorLog ${dir}/error.log`,
    'LogLevel warn',
    'TypesConfig /etc/mime.types',
    `DavLockDB ${dir}/DavLock`,
    `Alias /dav ${root}`,
    `<Directory ${root}>`,
    '  Dav On',
    // Apache 2.4.54+ refuses bodies over 1 GiB by default; a DAM's files are larger (the upload benchmark's 2 GiB).
    '  LimitRequestBody 0',
    '  AuthType Basic',
    '  AuthName "damhub-test"',
    `  AuthUserFile ${dir}/htpasswd`,
    '  Require valid-user',
    '</Directory>',
    '',
  ].join('\n'));
  if (as) {
    handOver(dir, as.uid, as.gid);
    chmodSync(dir, 0o755);
  }
  const p = start('apache2', httpd, ['-f', path.join(dir, 'httpd.conf'), '-DFOREGROUND'], { env: { APACHE_RUN_DIR: dir, APACHE_LOCK_DIR: dir, APACHE_LOG_DIR: dir } });
  await ready([p], 'Apache httpd', () => listening(port));
  return { url: `http://127.0.0.1:${port}/dav/`, root, close: () => stopAll([p]).then(() => rmSync(dir, { recursive: true, force: true })) };
}

/** `rclone serve webdav` over `files`, Basic authentication for `users` (an htpasswd file). */
export async function startRcloneDav(files: Record<string, Buffer | string>, users: Record<string, string> = { alice: 'alice-pw' }): Promise<RealDav> {
  const rclone = requireProgram('rclone', 'rclone');
  const dir = tempDir('damhub-rclone-');
  const root = path.join(dir, 'files');
  mkdirSync(root);
  writeFiles(root, files);
  writeFileSync(path.join(dir, 'htpasswd'), htpasswd(users));
  const port = await freePort();
  const p = start('rclone', rclone, ['serve', 'webdav', root, '--addr', `127.0.0.1:${port}`, '--htpasswd', path.join(dir, 'htpasswd'), '--config', path.join(dir, 'rclone.conf')]);
  await ready([p], 'rclone serve webdav', () => listening(port));
  return { url: `http://127.0.0.1:${port}/`, root, close: () => stopAll([p]).then(() => rmSync(dir, { recursive: true, force: true })) };
}

export interface RealS3 {
  endpoint: string;
  bucket: string;
  region: string;
  /** tempauth's account:user and key, which s3api takes as access key id and secret. */
  accessKeyId: string;
  secretAccessKey: string;
  client: S3Client;
  close(): Promise<void>;
}

/**
 * OpenStack Swift with its S3 API: account, container and object servers and a proxy on free
 * loopback ports, a one-device ring per server type, everything (swift.conf included, read from
 * `swift_dir`) in a temp dir. One bucket, versioned when `versioning` is set, filled through the
 * AWS SDK v3. The container_quotas middleware is on (a test sets X-Container-Meta-Quota-Bytes
 * through the Swift API); `minPartBytes` lowers s3api's smallest multipart part (5 MiB) so a test
 * of several parts stays small.
 */
export async function startSwiftS3(objects: Record<string, Buffer | string>, opts: { versioning?: boolean; meta?: Record<string, Record<string, string>>; minPartBytes?: number } = {}): Promise<RealS3> {
  for (const [prog, pkg] of [['swift-proxy-server', 'swift-proxy'], ['swift-account-server', 'swift-account'], ['swift-container-server', 'swift-container'], ['swift-object-server', 'swift-object'], ['swift-ring-builder', 'swift']]) requireProgram(prog, pkg);
  const memcached = requireProgram('memcached', 'memcached');
  const dir = tempDir('damhub-swift-');
  const devices = path.join(dir, 'srv');
  mkdirSync(path.join(devices, 'sdb1'), { recursive: true });
  const as = unprivileged();
  const user = as?.user ?? spawnSync('id', ['-un'], { encoding: 'utf8' }).stdout.trim();
  const [proxy, account, container, object, cache] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()]);
  // Swift logs to syslog; containers often have no /dev/log, so its servers send to a UDP port
  // the helper reads, and a failure quotes the last of it.
  let logText = '';
  const logSock = dgram.createSocket('udp4');
  logSock.on('message', (m) => {
    logText = (logText + m.toString() + '\n').slice(-8000);
  });
  await new Promise<void>((r) => logSock.bind(0, '127.0.0.1', () => r()));
  const logs = logSock.address().port;
  writeFileSync(path.join(dir, 'swift.conf'), '[swift-hash]\nswift_hash_path_suffix = damhub-test\nswift_hash_path_prefix = damhub-test\n\n[storage-policy:0]\nname = Policy-0\ndefault = yes\n');
  const common = (port: number) => `[DEFAULT]\nbind_ip = 127.0.0.1\nbind_port = ${port}\nworkers = 0\nuser = ${user}\nswift_dir = ${dir}\ndevices = ${devices}\nmount_check = false\nlog_udp_host = 127.0.0.1\nlog_udp_port = ${logs}\nlog_level = WARNING\n`;
  for (const [kind, port] of [['account', account], ['container', container], ['object', object]] as const) {
    writeFileSync(path.join(dir, `${kind}-server.conf`), `${common(port)}\n[pipeline:main]\npipeline = ${kind}-server\n\n[app:${kind}-server]\nuse = egg:swift#${kind}\n`);
    const builder = path.join(dir, `${kind}.builder`);
    for (const args of [['create', '0', '1', '1'], ['add', `r1z1-127.0.0.1:${port}/sdb1`, '1'], ['rebalance']]) {
      const r = spawnSync('swift-ring-builder', [builder, ...args], { encoding: 'utf8' });
      // rebalance exits 1 with a warning about a single device being "balanced" enough; 2 is an error.
      if (r.status === null || r.status >= 2) throw new Error(`swift-ring-builder ${args.join(' ')} failed: ${r.stdout}${r.stderr}`);
    }
  }
  // s3api sits before its auth filter (tempauth), which keeps its tokens in memcached (it refuses
  // to work without); S3 versioning needs object_versioning, which is
  // enabled by versioned_writes' allow_object_versioning and relies on symlink and copy.
  writeFileSync(path.join(dir, 'proxy-server.conf'), `${common(proxy)}
[pipeline:main]
pipeline = catch_errors gatekeeper proxy-logging cache listing_formats s3api tempauth container-quotas copy slo dlo versioned_writes symlink proxy-logging proxy-server

[app:proxy-server]
use = egg:swift#proxy
account_autocreate = true

[filter:catch_errors]
use = egg:swift#catch_errors
[filter:gatekeeper]
use = egg:swift#gatekeeper
[filter:proxy-logging]
use = egg:swift#proxy_logging
[filter:cache]
use = egg:swift#memcache
memcache_servers = 127.0.0.1:${cache}
[filter:listing_formats]
use = egg:swift#listing_formats
[filter:s3api]
use = egg:swift#s3api
location = us-east-1
${opts.minPartBytes ? `min_segment_size = ${opts.minPartBytes}\n` : ''}[filter:tempauth]
use = egg:swift#tempauth
user_test_tester = testing .admin
[filter:container-quotas]
use = egg:swift#container_quotas
[filter:copy]
use = egg:swift#copy
[filter:slo]
use = egg:swift#slo
[filter:dlo]
use = egg:swift#dlo
[filter:versioned_writes]
use = egg:swift#versioned_writes
allow_versioned_writes = true
allow_object_versioning = true
[filter:symlink]
use = egg:swift#symlink
`);
  if (as) handOver(dir, as.uid, as.gid);
  const procs = (['account', 'container', 'object', 'proxy'] as const).map((k) => start(`swift-${k}-server`, `swift-${k}-server`, [path.join(dir, `${k}-server.conf`)]));
  procs.push(start('memcached', memcached, ['-l', '127.0.0.1', '-p', String(cache), '-U', '0', '-m', '16', ...(as ? ['-u', as.user] : [])]));
  const endpoint = `http://127.0.0.1:${proxy}`;
  const close = async () => {
    await stopAll(procs);
    logSock.close();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await ready(procs, 'Swift', async () => (await Promise.all([account, container, object, cache].map(listening))).every(Boolean) && (await fetch(`${endpoint}/info`)).ok);
    const region = 'us-east-1';
    const cred = { accessKeyId: 'test:tester', secretAccessKey: 'testing' };
    const client = new S3Client({ endpoint, region, forcePathStyle: true, credentials: cred });
    const bucket = 'media';
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
    if (opts.versioning) await client.send(new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: 'Enabled' } }));
    for (const [key, body] of Object.entries(objects)) await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, Metadata: opts.meta?.[key] }));
    return { endpoint, bucket, region, ...cred, client, close: async () => {
      client.destroy();
      await close();
    } };
  } catch (e) {
    await close();
    throw new Error(`Swift with s3api could not be set up: ${(e as Error).message}\n--- Swift's log (last lines):\n${logText.slice(-3000)}`);
  }
}
