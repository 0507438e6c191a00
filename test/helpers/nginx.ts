/**
 * Debian's nginx (package nginx) in front of hub processes, running the repository's own
 * deploy/nginx/damhub.conf: the file is read at start and only its `listen` ports are replaced
 * (free loopback ports instead of 443 and 80; the [::] lines dropped), each replacement checked,
 * so that a change to the shipped file is what the test runs. Around it, in a temp dir that is
 * nginx's prefix and configuration directory: a main nginx.conf (no daemon, pid, logs and temp
 * paths in the dir), the upstream file the shipped one includes (damhub-upstream.conf, one
 * `server` line per hub) and the certificate at the paths it names (tls/fullchain.pem,
 * tls/privkey.pem), a self-signed one made by the openssl CLI.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { tempDir } from './hub.js';
import { freePort, REPO_ROOT } from './process.js';
import { requireProgram } from './real-servers.js';

export const SHIPPED_CONF = path.join(REPO_ROOT, 'deploy', 'nginx', 'damhub.conf');
/** The server_name of the shipped file, used as the public host name (the test resolves it to 127.0.0.1). */
export const SHIPPED_SERVER_NAME = 'damhub.example.com';

export interface TlsCert {
  cert: string;
  key: string;
}

/** A self-signed certificate for `host` (subjectAltName), valid for a day, by the openssl CLI. */
export function selfSignedCert(host: string): TlsCert {
  const openssl = requireProgram('openssl', 'openssl');
  const dir = tempDir('damhub-cert-');
  const r = spawnSync(openssl, ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
    '-subj', `/CN=${host}`, '-addext', `subjectAltName=DNS:${host}`, '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem')], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`openssl req failed (${r.status}): ${r.stderr}`);
  const out = { cert: fs.readFileSync(path.join(dir, 'cert.pem'), 'utf8'), key: fs.readFileSync(path.join(dir, 'key.pem'), 'utf8') };
  fs.rmSync(dir, { recursive: true, force: true });
  return out;
}

export interface Nginx {
  httpsPort: number;
  httpPort: number;
  /** The configuration nginx runs (the shipped file with its ports replaced). */
  conf: string;
  errorLog(): string;
  close(): Promise<void>;
}

/** Replaces `from` by `to` in `text`, failing unless it occurs exactly `times` times. */
function replaceExactly(text: string, from: RegExp, to: string, times: number): string {
  const n = [...text.matchAll(new RegExp(from.source, 'gm'))].length;
  if (n !== times) throw new Error(`deploy/nginx/damhub.conf: expected ${times} line(s) matching ${from} (the test replaces them), found ${n}`);
  return text.replace(new RegExp(from.source, 'gm'), to);
}

/** The shipped configuration with its ports replaced. */
export function shippedConf(httpsPort: number, httpPort: number): string {
  let conf = fs.readFileSync(SHIPPED_CONF, 'utf8');
  conf = replaceExactly(conf, /^(\s*)listen \[::\]:(443|80)\b.*\n/, '', 2);
  conf = replaceExactly(conf, /^(\s*)listen 443 /, `$1listen 127.0.0.1:${httpsPort} `, 1);
  conf = replaceExactly(conf, /^(\s*)listen 80;/, `$1listen 127.0.0.1:${httpPort};`, 1);
  return conf;
}

const READY_MS = 30_000;

/**
 * nginx with the shipped damhub.conf in front of `upstreams` (host:port each), on `opts.httpsPort`
 * when given (a hub's public URL names it before nginx starts), else a free port.
 */
export async function startNginx(upstreams: string[], tls: TlsCert, opts: { httpsPort?: number } = {}): Promise<Nginx> {
  const bin = requireProgram('nginx', 'nginx');
  const dir = tempDir('damhub-nginx-');
  // Run as root (CI), nginx's workers drop to nobody and must reach the temp paths in the dir.
  fs.chmodSync(dir, 0o755);
  const [httpsPort, httpPort] = [opts.httpsPort ?? await freePort(), await freePort()];
  const conf = shippedConf(httpsPort, httpPort);
  fs.writeFileSync(path.join(dir, 'damhub.conf'), conf);
  fs.writeFileSync(path.join(dir, 'damhub-upstream.conf'), upstreams.map((u) => `server ${u};\n`).join(''));
  fs.mkdirSync(path.join(dir, 'tls'));
  fs.writeFileSync(path.join(dir, 'tls', 'fullchain.pem'), tls.cert);
  fs.writeFileSync(path.join(dir, 'tls', 'privkey.pem'), tls.key, { mode: 0o600 });
  fs.writeFileSync(path.join(dir, 'nginx.conf'), [
    'daemon off;',
    'worker_processes 1;',
    `pid ${dir}/nginx.pid;`,
    `error_log ${dir}/error.log info;`,
    'events { worker_connections 256; }',
    'http {',
    `  access_log ${dir}/access.log;`,
    ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${dir}/${t}_temp;`),
    // As Debian's /etc/nginx/nginx.conf includes conf.d/*.conf.
    `  include ${dir}/damhub.conf;`,
    '}',
    '',
  ].join('\n'));
  // -p: the prefix; relative paths of the configuration resolve against the directory of -c.
  const child = spawn(bin, ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-e', path.join(dir, 'error.log')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const errorLog = () => {
    try {
      return fs.readFileSync(path.join(dir, 'error.log'), 'utf8');
    } catch {
      return '';
    }
  };
  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGQUIT');
    const force = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(force);
    fs.rmSync(dir, { recursive: true, force: true });
  };
  const until = Date.now() + READY_MS;
  while (!(await listening(httpsPort))) {
    if (child.exitCode !== null || Date.now() > until) {
      const why = child.exitCode !== null ? `exited with ${child.exitCode}` : `was not listening within ${READY_MS} ms`;
      const log = `${out}\n${errorLog()}`;
      await close();
      throw new Error(`nginx ${why}:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { httpsPort, httpPort, conf, errorLog, close };
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
