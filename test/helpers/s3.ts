/**
 * A real S3-protocol server (the `s3rver` package) on loopback with one bucket, filled through
 * the AWS SDK v3, and a hub that serves the S3 connector with a user signed in through its form.
 * s3rver checks Signature V4 against its fixed key pair S3RVER/S3RVER.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { ManualClock } from '../../src/clock.js';
import type { HubConfig } from '../../src/config.js';
import { startTestHub, tempDir, type TestHub } from './hub.js';
import { formBrowserSignIn, TestBrowser } from './browser.js';

export const S3_KEY = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

export interface S3Server {
  endpoint: string;
  bucket: string;
  client: S3Client;
  close(): Promise<void>;
}

export async function startS3Server(objects: Record<string, Buffer | string>, opts: { meta?: Record<string, Record<string, string>> } = {}): Promise<S3Server> {
  const bucket = 'media';
  const child = spawn(process.execPath, ['--openssl-legacy-provider', fileURLToPath(new URL('./s3rver-main.js', import.meta.url)), tempDir('damhub-s3-'), bucket], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /\{"port":(\d+)\}/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`s3rver exited with ${code} before listening`)));
  });
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: S3_KEY });
  for (const [key, body] of Object.entries(objects)) {
    await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, Metadata: opts.meta?.[key] }));
  }
  return { endpoint, bucket, client, close: async () => {
    client.destroy();
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  } };
}

export interface S3Hub {
  t: TestHub;
  access: string;
  headers: Record<string, string>;
  get(url: string): Promise<{ status: number; body: any; headers: Record<string, unknown> }>;
  post(url: string, body: unknown): Promise<{ status: number; body: any }>;
}

export async function signInS3(t: TestHub, access: string, fields: { endpoint: string; region: string; bucket: string; accessKeyId: string; secretAccessKey: string }): Promise<{ token: string | null; status: number; page: string }> {
  const start = await t.app.inject({ method: 'POST', url: `/api/v1/auth/login?provider=s3&polling=true&serverUrl=${encodeURIComponent(fields.endpoint)}`, headers: { authorization: `Bearer ${access}` } });
  assert.equal(start.statusCode, 200, start.body);
  const { redirect_uri, state } = start.json();
  // As a browser does it (test/helpers/browser.ts): the form page sets the login's cookie, the POST carries it.
  const browser = new TestBrowser(t);
  const { form: page, submit } = await formBrowserSignIn(browser, redirect_uri, { ...fields });
  assert.equal(page.status, 200, page.body);
  const poll = await t.app.inject({ method: 'GET', url: `/api/v1/auth/login?state=${encodeURIComponent(state)}&polling=true` });
  return { token: poll.json().access_token ?? null, status: submit.status, page: submit.body };
}

/** `s3` may name its own key pair and region (a real server's); s3rver's fixed pair is the default. */
export async function startS3Hub(s3: { endpoint: string; bucket: string; region?: string; accessKeyId?: string; secretAccessKey?: string }, opts: { config?: Partial<HubConfig> } = {}): Promise<S3Hub> {
  // Presigned URLs are checked by the server against real time, so the hub's clock starts at now.
  const t = await startTestHub({ clock: new ManualClock(Date.now()), config: { userRateLimitPerMin: 0, connectors: { s3: { allowHosts: ['127.0.0.1'], timeoutMs: 5000 } }, ...opts.config } });
  const { access_token } = await t.login();
  const r = await signInS3(t, access_token, { endpoint: s3.endpoint, region: s3.region ?? 'us-east-1', bucket: s3.bucket, accessKeyId: s3.accessKeyId ?? S3_KEY.accessKeyId, secretAccessKey: s3.secretAccessKey ?? S3_KEY.secretAccessKey });
  assert.ok(r.token, r.page);
  const headers = { authorization: `Bearer ${access_token}`, 'provider-authorization': `Bearer ${r.token}` };
  return {
    t, access: access_token, headers,
    async get(url) {
      const res = await t.app.inject({ method: 'GET', url, headers });
      let body: any = null;
      try {
        body = res.json();
      } catch { /* not JSON */ }
      return { status: res.statusCode, body, headers: res.headers };
    },
    async post(url, body) {
      const res = await t.app.inject({ method: 'POST', url, headers, payload: body as object });
      return { status: res.statusCode, body: res.json() };
    },
  };
}
