/**
 * The DAM sign-in of `damhub connectors check`, through the connector's own sign-in: the fields of
 * a form connector (read from flags, stdin or a file, and posted to its form as a browser would),
 * or the browser step of an OAuth connector (the hub listens, the user signs in, the CLI polls).
 */
import fs from 'node:fs';
import { spawn } from 'node:child_process';
import type { FastifyInstance } from 'fastify';
import type { HubConfig } from '../config.js';
import { UsageError } from './args.js';
import type { Answer } from './connector-checks.js';

export interface GivenFields {
  values: Record<string, string>;
  /** Fields whose value was typed on the command line (not stdin, not a file). */
  fromArgs: Set<string>;
  /** Values read from stdin: scrubbed from every output. */
  secrets: string[];
}

/**
 * `--field name=value` (value `-`: the next line of stdin), `--fields-file F.json` ({"name": "value"}).
 * Flags win over the file.
 */
export function readFields(flags: string[], file: string | undefined, stdin: () => string): GivenFields {
  const out: GivenFields = { values: {}, fromArgs: new Set(), secrets: [] };
  if (file) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(fs.readFileSync(file, 'utf8'));
    } catch (e) {
      throw new UsageError(`cannot read --fields-file ${file}: ${(e as Error).message}`);
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new UsageError('--fields-file must hold one JSON object of field names to strings');
    for (const [k, v] of Object.entries(parsed)) {
      if (typeof v !== 'string') throw new UsageError(`--fields-file: field ${k} must be a string`);
      // Not all secret (a bucket, an endpoint): the form's password fields are scrubbed from the output, whatever their source.
      out.values[k] = v;
    }
  }
  let lines: string[] | null = null;
  for (const f of flags) {
    const eq = f.indexOf('=');
    if (eq < 1) throw new UsageError(`--field takes name=value (value - reads stdin), got ${JSON.stringify(f.replace(/=.*/, '=…'))}`);
    const name = f.slice(0, eq);
    let value = f.slice(eq + 1);
    if (value === '-') {
      // One line of stdin per field given as -, in the order of the flags.
      lines ??= stdin().split(/\r?\n/);
      const line = lines.shift();
      if (line === undefined || line === '') throw new UsageError(`--field ${name}=- but stdin has no line for it`);
      value = line;
      out.secrets.push(value);
    } else {
      out.fromArgs.add(name);
    }
    out.values[name] = value;
  }
  return out;
}

export interface FormField {
  name: string;
  password: boolean;
  required: boolean;
  /** The value the form already carries (the server URL given to POST /auth/login), or ''. */
  prefilled: string;
}

/**
 * The connector's sign-in form, as its page declares it (the public contract: the page a browser
 * gets), and the cookie the page set: the form's POST must carry it, as a browser's would.
 */
export async function formFields(app: FastifyInstance, pathAndQuery: string): Promise<{ fields: FormField[]; cookie: string }> {
  const page = await app.inject({ method: 'GET', url: pathAndQuery });
  if (page.statusCode !== 200) throw new Error(`the sign-in form answered ${page.statusCode}`);
  const set = page.headers['set-cookie'];
  const cookie = (Array.isArray(set) ? set : set ? [set] : []).map((c) => c.split(';')[0]!).join('; ');
  const fields: FormField[] = [];
  for (const m of page.body.matchAll(/<input\b([^>]*)>/g)) {
    const attr = (n: string) => new RegExp(`\\b${n}="([^"]*)"`).exec(m[1]!)?.[1];
    const name = attr('name');
    const type = attr('type') ?? 'text';
    if (!name || type === 'hidden' || type === 'submit') continue;
    fields.push({ name, password: type === 'password', required: /\brequired\b/.test(m[1]!), prefilled: unescape(attr('value') ?? '') });
  }
  return { fields, cookie };
}

/** Posts the form as a browser would and polls the login once: the tokens, or the form's own error text. */
export async function submitForm(app: FastifyInstance, id: string, state: string, fields: FormField[], values: Record<string, string>, cookie: string): Promise<{ tokens?: { access: string; refresh: string | null }; error?: string; answers: Answer[] }> {
  const body = new URLSearchParams({ state });
  for (const f of fields) {
    const v = values[f.name] ?? f.prefilled;
    if (v) body.set(f.name, v);
  }
  const t0 = performance.now();
  const submit = await app.inject({ method: 'POST', url: `/api/v1/auth/${encodeURIComponent(id)}/signin`, headers: { 'content-type': 'application/x-www-form-urlencoded', cookie }, payload: body.toString() });
  const formError = /<p class="error"[^>]*>([^<]*)<\/p>/.exec(submit.body)?.[1];
  const answers: Answer[] = [{ what: `POST /auth/${id}/signin`, status: submit.statusCode, excerpt: formError ? unescape(formError) : `${submit.body.length} bytes of HTML`, ms: Math.round(performance.now() - t0) }];
  const tokens = await poll(app, state);
  if ('access' in tokens) return { tokens, answers };
  return { error: `the sign-in failed: ${formError ? unescape(formError) : tokens.error ?? `the form answered ${submit.statusCode}`}`, answers };
}

async function poll(app: FastifyInstance, state: string): Promise<{ access: string; refresh: string | null } | { error?: string; pending: boolean }> {
  const res = await app.inject({ method: 'GET', url: `/api/v1/auth/login?state=${encodeURIComponent(state)}&polling=true` });
  const b = res.json() as { access_token?: string; refresh_token?: string; error?: string };
  if (typeof b.access_token === 'string') return { access: b.access_token, refresh: b.refresh_token ?? null };
  return { error: b.error ?? (res.statusCode === 200 ? undefined : `the login poll answered ${res.statusCode}`), pending: res.statusCode === 200 && !b.error };
}

/**
 * OAuth: the vendor sends the browser back to `<public URL>/api/v1/auth/callback/<id>`, so the hub
 * listens (on --host/--port, the address the app's registered redirect URI names) until the login
 * completes, fails, or the deadline passes.
 */
export async function oauthWait(app: FastifyInstance, config: HubConfig, redirect: string, state: string, o: { open: boolean; deadline: number; say(line: string): void }): Promise<{ tokens?: { access: string; refresh: string | null }; error?: string; answers: Answer[] }> {
  await app.listen({ host: config.host, port: config.port });
  o.say(`Open this URL in a browser, check what it names, press Continue and sign in (the hub waits at ${config.publicUrl}/api/v1/auth/callback/…):\n  ${redirect}`);
  if (o.open) {
    openBrowser(redirect);
  }
  const t0 = performance.now();
  for (;;) {
    const r = await poll(app, state);
    if ('access' in r) return { tokens: r, answers: [] };
    if (!r.pending) return { error: `the sign-in failed: ${r.error ?? 'no tokens'}`, answers: [{ what: 'GET /auth/login (poll)', status: 200, excerpt: r.error ?? '', ms: Math.round(performance.now() - t0) }] };
    if (Date.now() > o.deadline) return { error: 'the sign-in did not complete within --timeout', answers: [] };
    // Polling the hub's own login state, as the picker does: one store read per second.
    await new Promise((res) => setTimeout(res, 500));
  }
}

function unescape(s: string): string {
  return s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&');
}

/** Opens a URL in the desktop's browser (best effort: the URL is printed anyway). */
export function openBrowser(url: string): void {
  const cmd = process.platform === 'darwin' ? 'open' : process.platform === 'win32' ? 'explorer' : 'xdg-open';
  try {
    const child = spawn(cmd, [url], { stdio: 'ignore', detached: true });
    child.on('error', () => undefined);
    child.unref();
  } catch { /* no browser here: the printed URL is the way */ }
}
