/**
 * `damhub connectors check <id>`: signs in to a live account through the connector's normal
 * sign-in and runs the read-only checks of ./connector-checks.ts against it, through a hub built
 * from the usual configuration in a throwaway data dir. Exit 0 when every check passes, 1 when one
 * fails (the sign-in included), 2 on a usage error.
 *
 * Secrets (password fields, DAM and hub tokens) never reach stdout or stderr: password fields are
 * refused as literal flag values unless --allow-secret-args, and every output is scrubbed of every
 * secret the run knows before it is written.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { HubConfig } from '../config.js';
import { buildApp } from '../app.js';
import { openHub, type Hub } from '../hub.js';
import { connectorEnvPrefix, connectorsFromEnv, knownConnectors, oauthConnectors } from '../catalog.js';
import { runChecks, type CheckClient, type CheckResult } from './connector-checks.js';
import { parse, UsageError } from './args.js';
import { formFields, oauthWait, readFields, submitForm } from './connectors-signin.js';
import { signInPath } from '../providers/kit/signin-form.js';

type ConfigFrom = (values: Record<string, string | boolean | string[] | undefined>) => HubConfig;

const OPTIONS = {
  'server-url': { type: 'string' },
  field: { type: 'string', multiple: true },
  'fields-file': { type: 'string' },
  'allow-secret-args': { type: 'boolean' },
  term: { type: 'string' },
  folder: { type: 'string' },
  'max-assets': { type: 'string' },
  'max-bytes': { type: 'string' },
  timeout: { type: 'string' },
  json: { type: 'boolean' },
  open: { type: 'boolean' },
  data: { type: 'string' },
  host: { type: 'string' },
  port: { type: 'string' },
  'public-url': { type: 'string' },
  'database-url': { type: 'string' },
  'redis-url': { type: 'string' },
} as const;

export interface CheckReport {
  provider: string;
  signIn: CheckResult;
  checks: CheckResult[];
  passed: boolean;
  ms: number;
}

/** `damhub connectors <sub> ...`; `configFrom` is the CLI's (flags over env over defaults), passed in so this module does not import main.ts. */
export async function connectorsCommand(args: string[], configFrom: ConfigFrom): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'check') throw new UsageError(`unknown connectors command ${JSON.stringify(sub ?? '')}`);
  const { values, positionals } = parse(rest, OPTIONS, true);
  if (positionals.length !== 1) throw new UsageError('connectors check takes one connector id');
  const id = positionals[0]!;
  const intOpt = (name: string, dflt: number, min = 1) => {
    const v = (values as Record<string, unknown>)[name] as string | undefined;
    if (v === undefined) return dflt;
    if (!/^\d+$/.test(v) || Number(v) < min) throw new UsageError(`--${name} must be an integer of at least ${min}`);
    return Number(v);
  };
  const timeoutSec = intOpt('timeout', 300);
  const maxAssets = intOpt('max-assets', 3);
  const maxBytes = intOpt('max-bytes', 1024 * 1024);
  // The fields are read (stdin, file) before anything starts, so a usage error costs nothing.
  const given = readFields(values.field ?? [], values['fields-file'], () => fs.readFileSync(0, 'utf8'));
  if (values['server-url']) given.values.serverUrl ??= values['server-url'];

  const temp = values.data ? null : fs.mkdtempSync(path.join(os.tmpdir(), 'damhub-check-'));
  let config = configFrom({ ...values, data: values.data ?? temp! });
  // Only the connector under check: no library to index, no demo.
  config = { ...config, libraryDir: null, demo: false, logLevel: process.env.DAMHUB_LOG_LEVEL ?? 'silent', userRateLimitPerMin: 0 };
  if (knownConnectors().includes(id) && !(id in config.connectors)) {
    // Enabled for this run as DAMHUB_CONNECTORS would, with the shared DAMHUB_CONNECTOR_* settings.
    config = { ...config, connectors: { ...config.connectors, ...connectorsFromEnv({ ...process.env, DAMHUB_CONNECTORS: id }) } };
  }

  const secrets = new Set<string>(given.secrets);
  const scrub = (s: string) => {
    let out = s;
    for (const v of secrets) if (v.length >= 4) out = out.split(v).join('***');
    return out;
  };
  let opened: { hub: Hub; close(): Promise<void> } | null = null;
  let app: FastifyInstance | null = null;
  let removeSession: (() => Promise<void>) | null = null;
  const hubLog: LogRecord[] = [];
  const t0 = performance.now();
  try {
    opened = await open(config);
    const hub = opened.hub;
    if (!hub.providers.get(id)) {
      const hint = oauthConnectors().includes(id) ? `: set ${connectorEnvPrefix(id)}CLIENT_ID (and _CLIENT_SECRET)` : '';
      throw new UsageError(`no connector ${JSON.stringify(id)} is enabled${hint}; available: ${[...knownConnectors(), ...oauthConnectors()].join(', ')}`);
    }
    // The hub's log of this run, kept in memory: a failed sign-in's cause (ECONNREFUSED, a 500, an
    // answer that is not the DAM's) is logged there, while the form only says "could not be used".
    app = await buildApp(hub, { logger: { level: 'info', stream: { write: (line: string) => hubLog.push(parseLogLine(line)) } } });
    const session = await throwawaySession(hub);
    removeSession = session.remove;
    const access = session.access;
    secrets.add(access);
    const deadline = Date.now() + timeoutSec * 1000;

    const signIn = await signInStep(app, hub, config, id, access, given, {
      allowSecretArgs: values['allow-secret-args'] === true, open: values.open === true, deadline, hubLog,
      say: (line) => process.stderr.write(`${scrub(line)}\n`),
      secret: (v) => secrets.add(v),
    });
    let checks: CheckResult[] = [];
    if (signIn.tokens) {
      const client = checkClient(app, config, access, signIn.tokens, (v) => secrets.add(v));
      const timedOut = new Promise<never>((_, reject) => {
        const timer = setTimeout(() => reject(new Error(`the checks did not finish within --timeout ${timeoutSec} s`)), Math.max(0, deadline - Date.now()));
        timer.unref();
      });
      const done: CheckResult[] = [];
      checks = await Promise.race([runChecks(client, { providerId: id, term: values.term, folderId: values.folder, maxAssets, maxBytes }, done), timedOut]).catch((e) => [
        ...done, { name: 'timeout', outcome: 'fail' as const, detail: (e as Error).message, answers: [], ms: timeoutSec * 1000 },
      ]);
    }
    const report: CheckReport = { provider: id, signIn: signIn.result, checks, passed: signIn.result.outcome === 'pass' && checks.every((c) => c.outcome !== 'fail'), ms: Math.round(performance.now() - t0) };
    process.stdout.write(scrub(values.json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report)));
    return report.passed ? 0 : 1;
  } finally {
    await app?.close().catch(() => undefined);
    await removeSession?.().catch(() => undefined);
    await opened?.close().catch(() => undefined);
    if (temp) fs.rmSync(temp, { recursive: true, force: true });
  }
}

async function open(config: HubConfig): Promise<{ hub: Hub; close(): Promise<void> }> {
  const { hub, follower } = await openHub(config, { watchLibrary: false });
  try {
    await hub.start();
  } catch (e) {
    follower?.close();
    await hub.close().catch(() => undefined);
    throw e;
  }
  return { hub, close: async () => { follower?.close(); await hub.close(); } };
}

/**
 * A partner and user that exist for this run only, and a session for them: the checks go through
 * the hub's routes as a partner's would, without a partner JWT. Removing the partner at the end
 * (it takes its users and sessions) matters with --data or the cluster's stores.
 */
async function throwawaySession(hub: Hub): Promise<{ access: string; remove(): Promise<void> }> {
  const now = hub.clock.now();
  const partner = await hub.stores.partners.create({
    name: 'damhub connectors check', issuer: `urn:damhub:connectors-check:${randomUUID()}`, audience: 'urn:damhub', jwksUrl: null, jwks: { keys: [] },
    maxTokenAgeSec: 300, rateLimitPerMin: 0, allowedOrigins: [], enabled: true,
  }, now);
  const user = await hub.stores.users.upsert(partner.id, 'connectors-check', { email: '', name: 'connectors check', givenName: null, familyName: null }, now);
  const access = (await hub.exchange.openSession(user)).access_token;
  return { access, remove: async () => void (await hub.stores.partners.remove(partner.id)) };
}

interface SignInOptions {
  allowSecretArgs: boolean;
  open: boolean;
  deadline: number;
  /** The hub's log lines of this run, as they come. */
  hubLog: LogRecord[];
  say(line: string): void;
  secret(value: string): void;
}

/** The DAM login through the connector's own sign-in: its form for form connectors, the browser for OAuth. */
async function signInStep(app: FastifyInstance, hub: Hub, config: HubConfig, id: string, access: string, given: { values: Record<string, string>; fromArgs: Set<string> }, o: SignInOptions): Promise<{ result: CheckResult; tokens: { access: string; refresh: string | null } | null }> {
  const t0 = performance.now();
  const logFrom = o.hubLog.length;
  const serverUrl = given.values.serverUrl ?? given.values.endpoint;
  const start = await app.inject({
    method: 'POST', url: `/api/v1/auth/login?provider=${encodeURIComponent(id)}&polling=true${serverUrl ? `&serverUrl=${encodeURIComponent(serverUrl)}` : ''}`,
    headers: { authorization: `Bearer ${access}` },
  });
  const result = (outcome: 'pass' | 'fail', detail: string, answers: CheckResult['answers'] = []): CheckResult => ({ name: 'sign-in', outcome, detail, answers, ms: Math.round(performance.now() - t0) });
  if (start.statusCode !== 200) return { result: result('fail', `POST /auth/login answered ${start.statusCode}: ${start.body.slice(0, 300)}`), tokens: null };
  const { redirect_uri: redirect, state } = start.json() as { redirect_uri: string; state: string };
  const base = config.publicUrl.replace(/\/+$/, '');
  let done: { tokens?: { access: string; refresh: string | null }; error?: string; answers: CheckResult['answers'] };
  // A form connector's start page is its form; an OAuth connector's is the hub's confirm page, which the user's browser passes.
  if (redirect.startsWith(`${base}/api/v1${signInPath(id)}?`)) {
    const { fields, cookie } = await formFields(app, redirect.slice(base.length));
    const pwd = fields.filter((f) => f.password).map((f) => f.name);
    for (const n of pwd) {
      if (given.fromArgs.has(n) && !o.allowSecretArgs) throw new UsageError(`--field ${n}=… puts a secret on the command line: give ${n}=- (stdin) or --fields-file, or pass --allow-secret-args`);
      if (given.values[n]) o.secret(given.values[n]!);
    }
    const missing = fields.filter((f) => f.required && !given.values[f.name] && !f.prefilled).map((f) => f.name);
    if (missing.length) throw new UsageError(`the ${id} sign-in form needs ${missing.map((n) => `--field ${n}=…`).join(', ')} (fields: ${fields.map((f) => f.name).join(', ')})`);
    done = await submitForm(app, id, state, fields, given.values, cookie);
  } else {
    done = await oauthWait(app, config, redirect, state, o);
  }
  if (!done.tokens) {
    const cause = failureCause(o.hubLog.slice(logFrom), id);
    return { result: result('fail', `${done.error ?? 'the sign-in did not complete'}${cause ? ` (${cause})` : ''}`, done.answers), tokens: null };
  }
  o.secret(done.tokens.access);
  if (done.tokens.refresh) o.secret(done.tokens.refresh);
  return { result: result('pass', 'signed in through the connector\'s sign-in', done.answers), tokens: done.tokens };
}

/** One line of the hub's (pino) log. */
interface LogRecord {
  level?: number;
  msg?: string;
  connector?: string;
  provider?: string;
  details?: string;
}

function parseLogLine(line: string): LogRecord {
  try {
    return JSON.parse(line) as LogRecord;
  } catch {
    return { msg: line };
  }
}

/**
 * What the hub logged about a failed sign-in of connector `id`: the upstream it could not reach and
 * why (src/providers/kit/http.ts), else the cause the form logged (src/providers/kit/signin-form.ts).
 */
function failureCause(log: LogRecord[], id: string): string | null {
  const unreachable = log.find((r) => r.connector === id && r.msg);
  if (unreachable) return unreachable.msg!;
  const failed = log.find((r) => r.provider === id && r.msg === 'sign-in check failed' && r.details);
  return failed?.details ?? null;
}

/** The checks' view of the hub: its routes through inject, downloads as a partner's server would fetch them. */
function checkClient(app: FastifyInstance, config: HubConfig, access: string, tokens: { access: string; refresh: string | null }, secret: (v: string) => void): CheckClient {
  let dam = tokens.access;
  const base = config.publicUrl.replace(/\/+$/, '');
  const client: CheckClient = {
    damRefreshToken: tokens.refresh,
    setDamTokens(a, r) {
      secret(a);
      if (r) secret(r);
      dam = a;
      client.damRefreshToken = r;
    },
    async request(method, p, headers) {
      const res = await app.inject({ method, url: `/api/v1${p}`, headers: { authorization: `Bearer ${access}`, 'provider-authorization': `Bearer ${dam}`, ...headers } });
      let body: unknown = null;
      try {
        body = res.json();
      } catch { /* not JSON: the check quotes the text */ }
      // Token answers (refresh) are not quoted in the report.
      const text = res.body.replace(/"(access_token|refresh_token)"\s*:\s*"[^"]*"/g, '"$1":"***"');
      return { status: res.statusCode, body, text };
    },
    async fetchPlain(url, maxBytes) {
      if (url.startsWith(`${base}/`)) {
        // The hub's own download route, without any session: streamed, so --max-bytes bounds memory.
        const res = await app.inject({ method: 'GET', url: url.slice(base.length), payloadAsStream: true });
        return { status: res.statusCode, contentType: String(res.headers['content-type'] ?? ''), ...(await capped(res.stream(), maxBytes)) };
      }
      let res: Response;
      try {
        res = await fetch(url, { redirect: 'follow' });
      } catch (e) {
        // undici says only "fetch failed"; the cause (ENOTFOUND, ECONNREFUSED, a TLS error) is what helps.
        const cause = (e as { cause?: { code?: string; message?: string } }).cause;
        throw new Error(`${new URL(url).host} could not be reached: ${cause?.code ?? cause?.message ?? (e as Error).message}`);
      }
      const out = res.body ? await capped(res.body, maxBytes) : { bytes: 0, truncated: false };
      return { status: res.status, contentType: res.headers.get('content-type') ?? '', ...out };
    },
  };
  return client;
}

/** Counts a body's bytes, stopping (and closing the stream) past maxBytes. */
async function capped(stream: AsyncIterable<Uint8Array> & { destroy?: () => void; cancel?: () => Promise<void> }, maxBytes: number): Promise<{ bytes: number; truncated: boolean }> {
  let bytes = 0;
  for await (const chunk of stream) {
    bytes += chunk.byteLength;
    if (bytes > maxBytes) {
      // Breaking out of for-await closes the iterator, which destroys/cancels the stream.
      return { bytes: maxBytes, truncated: true };
    }
  }
  return { bytes, truncated: false };
}

/** The plain-text report: one line per check, then what the system answered. */
export function formatReport(r: CheckReport): string {
  const lines = [`damhub connectors check ${r.provider}`];
  for (const c of [r.signIn, ...r.checks]) {
    lines.push(`${c.outcome.toUpperCase().padEnd(4)}  ${c.name}  (${c.ms} ms)`, `      ${c.detail}`);
    for (const a of c.answers) lines.push(`        ${a.what} -> ${a.status} (${a.ms} ms) ${a.excerpt}`);
  }
  const failed = [r.signIn, ...r.checks].filter((c) => c.outcome === 'fail');
  lines.push('', r.passed ? `all checks passed (${r.ms} ms)` : `${failed.length} failed: ${failed.map((c) => c.name).join('; ')} (${r.ms} ms)`, '');
  return lines.join('\n');
}
