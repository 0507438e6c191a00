/**
 * Write benchmarks (issue 30, "Performance and safety"), against a real hub process (`damhub serve`)
 * with a partner whose writes are on:
 *
 * 1. One large upload per backend (the embedded library; WebDAV on Apache mod_dav; S3 on Swift's
 *    s3api) through `POST /api/v1/assets/upload`, side by side with a direct upload of the same
 *    bytes to the same server (library: a file written, fsynced and renamed in the same file system,
 *    as the library's own write does; WebDAV: a PUT to Apache; S3: PutObject, or a multipart upload
 *    of the parts the connector would send, one at a time, as it does). Rounds alternate hub and
 *    direct. Figures: the hub's RSS growth during its uploads (VmHWM minus VmRSS before, the peak
 *    reset before each upload; the largest of the rounds), and the median of the per-round
 *    throughput ratios hub/direct. Every stored object is read back and its SHA-256 compared with
 *    the sent bytes': a mismatch fails the run.
 * 2. `--small` concurrent small uploads to the library, each with its own Idempotency-Key and
 *    x-request-id, then every one sent again with the same key and body (a client's forced
 *    retries): the share of first-round request ids found in the audit, the assets beyond
 *    `--small` in the folder afterwards (duplicates), and the first round's p50/p99.
 * 3. A plain upload to the library whose client destroys its socket half-way: the files (hidden
 *    `.damhub-` temp files included) left in the library afterwards that were not there before.
 *
 *   npm run bench:uploads -- [--size-mib 2048] [--rounds 3] [--small 100] [--cut-mib 64] [--backends library,webdav,s3]
 *
 * The bytes come from a deterministic generator (a seeded 1 MiB pattern, each chunk headed by its
 * index in ASCII so that the type sniffing sees text and every chunk differs), never a buffer of
 * the whole size. Prints `RESULT name value unit target <op> value met|missed` lines (bench/lib.ts).
 */
import { TEMP_ROOT, cpuMsOf, median, onInterrupt, percentile, profileArgs, reportResults, result, rssOf, trackChild } from './lib.js';
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { DeleteObjectCommand, GetObjectCommand } from '@aws-sdk/client-s3';
import { signed } from '../src/providers/s3/api.js';
import { DEFAULT_BODY_LIMITS, PartReader, partSizeFor } from '../src/providers/s3/body.js';
import { tempDir } from '../test/helpers/hub.js';
import { makeKey, signPartnerJwt } from '../test/helpers/partner.js';
import { runCli, startServer, type ServerProcess } from '../test/helpers/process.js';
import { startApacheDav, startSwiftS3, type RealDav, type RealS3 } from '../test/helpers/real-servers.js';

const { values } = parseArgs({
  options: {
    'size-mib': { type: 'string', default: '2048' },
    rounds: { type: 'string', default: '3' },
    small: { type: 'string', default: '100' },
    'cut-mib': { type: 'string', default: '64' },
    backends: { type: 'string', default: 'library,webdav,s3' },
  },
});
const MiB = 1024 * 1024;
const size = Number(values['size-mib']) * MiB;
const rounds = Number(values.rounds);
const smallCount = Number(values.small);
const cutSize = Number(values['cut-mib']) * MiB;
const backends = values.backends!.split(',').map((b) => b.trim()).filter(Boolean);
for (const b of backends) if (!['library', 'webdav', 's3'].includes(b)) throw new Error(`--backends: unknown backend ${b} (library, webdav, s3)`);
if (!(size > 0 && rounds >= 1 && smallCount >= 1 && cutSize >= 2)) throw new Error('--size-mib, --rounds, --small and --cut-mib must be positive');

// ── the bytes ────────────────────────────────────────────────────────────────────────────────
const CHUNK = MiB;
const PATTERN = (() => {
  // xorshift32, seeded: the same bytes every run, fast enough to be no bottleneck once (1 MiB).
  const b = Buffer.allocUnsafe(CHUNK);
  let x = 0x9e3779b9;
  for (let i = 0; i < CHUNK; i += 4) {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    b.writeUInt32LE(x, i);
  }
  return b;
})();

/** Chunk `i` of a body: the pattern, headed by its index as text (each chunk differs; the first 4 KiB sniff as text). */
function chunk(i: number, length: number): Buffer {
  const c = Buffer.allocUnsafe(length);
  PATTERN.copy(c, 0, 0, length);
  const head = `damhub-bench chunk ${i}\n`.padEnd(64, '.');
  c.write(head.slice(0, Math.min(64, length)), 0, 'latin1');
  if (i === 0 && length >= 4096) c.fill(0x61, 64, 4096); // plain text for the type check
  return c;
}

/** A body of `length` bytes, generated chunk by chunk as the consumer reads. */
function body(length: number): Readable {
  let i = 0;
  let sent = 0;
  return new Readable({
    highWaterMark: CHUNK,
    read() {
      if (sent >= length) return void this.push(null);
      const n = Math.min(CHUNK, length - sent);
      sent += n;
      this.push(chunk(i++, n));
    },
  });
}

async function sha256(stream: Readable): Promise<string> {
  const h = createHash('sha256');
  for await (const c of stream) h.update(c as Buffer);
  return h.digest('hex');
}

// ── HTTP ─────────────────────────────────────────────────────────────────────────────────────
interface Answer { status: number; text: string; headers: http.IncomingHttpHeaders; ms: number }

/** One request streaming `length` generated bytes with a Content-Length; timed until the answer's last byte. */
function send(url: string, method: string, headers: Record<string, string>, length: number): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = http.request(url, { method, agent: false, headers: { ...headers, 'content-length': String(length) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, headers: res.headers, ms: performance.now() - t0 }));
      res.on('error', reject);
    });
    req.on('error', reject);
    body(length).pipe(req);
  });
}

/** Sends half of a `length`-byte body, then destroys the socket (a client gone mid-upload). */
function sendHalf(url: string, headers: Record<string, string>, length: number): Promise<void> {
  return new Promise((resolve) => {
    const req = http.request(url, { method: 'POST', agent: false, headers: { ...headers, 'content-length': String(length) } }, (res) => {
      res.resume();
    });
    req.on('error', () => {}); // the socket we destroy
    const half = body(Math.floor(length / 2));
    half.on('data', (c: Buffer) => {
      if (!req.write(c)) {
        half.pause();
        req.once('drain', () => half.resume());
      }
    });
    half.on('end', () => {
      // Written to the socket, not only buffered: then cut.
      req.once('close', () => resolve());
      const check = () => (req.writableLength === 0 && (req.socket?.writableLength ?? 0) === 0 ? req.destroy() : setTimeout(check, 5));
      check();
    });
  });
}

/** One S3 call signed as the connector signs it, its body streamed or sent from a buffer; a non-2xx answer fails the run. */
function s3Call(s: RealS3, method: string, key: string, query: Record<string, string>, payload: Readable | Buffer, length: number): Promise<Omit<Answer, 'ms'>> {
  return signed({ endpoint: s.endpoint, region: s.region, bucket: s.bucket, accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey }, method, key, query, { 'content-length': String(length) })
    .then(({ url, headers }) => new Promise((resolve, reject) => {
      const req = http.request(url, { method, headers }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => (res.statusCode && res.statusCode < 300 ? resolve({ status: res.statusCode, text, headers: res.headers }) : reject(new Error(`S3 ${method} ${key}: ${res.statusCode} ${text.slice(0, 300)}`))));
        res.on('error', reject);
      });
      req.on('error', reject);
      if (Buffer.isBuffer(payload)) req.end(payload);
      else payload.pipe(req);
    }));
}

async function json(r: Response): Promise<any> {
  const text = await r.text();
  if (!r.ok) throw new Error(`${r.url}: ${r.status} ${text}`);
  return JSON.parse(text);
}

/** A hub sign-in form (library, WebDAV, S3), as a browser fills it: its hidden fields, then ours. */
async function formSignIn(api: string, access: string, provider: string, serverUrl: string | null, fields: Record<string, string>): Promise<string> {
  const q = `provider=${provider}&polling=true${serverUrl ? `&serverUrl=${encodeURIComponent(serverUrl)}` : ''}`;
  const start = await json(await fetch(`${api}/auth/login?${q}`, { method: 'POST', headers: { authorization: `Bearer ${access}` } }));
  const page = await fetch(start.redirect_uri);
  const cookie = page.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  const html = await page.text();
  const action = /<form method="post" action="([^"]+)"/.exec(html)?.[1]?.replace(/&amp;/g, '&');
  if (!action) throw new Error(`${provider}: no sign-in form: ${html.slice(0, 300)}`);
  const form = new URLSearchParams();
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)) form.set(m[1]!, m[2]!.replace(/&amp;/g, '&'));
  for (const [k, v] of Object.entries(fields)) form.set(k, v);
  const signin = await fetch(new URL(action, start.redirect_uri), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) }, body: form });
  if (signin.status !== 200) throw new Error(`${provider} sign-in: ${signin.status} ${(await signin.text()).slice(0, 300)}`);
  const dam = await json(await fetch(`${api}/auth/login?state=${encodeURIComponent(start.state)}&polling=true`));
  if (!dam.access_token) throw new Error(`${provider} sign-in did not finish: ${JSON.stringify(dam)}`);
  return dam.access_token as string;
}

// ── the hub's peak RSS ───────────────────────────────────────────────────────────────────────
/**
 * Resets the process's VmHWM to its current RSS (clear_refs 5, Linux ≥ 4.0), so each upload's peak
 * is its own; where that is refused, a 10 ms sampler of VmRSS stands in (it may miss a short peak).
 */
function watchPeak(pid: number): { stop(): { beforeMiB: number; peakMiB: number } } {
  let reset = true;
  try {
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
  } catch {
    reset = false;
  }
  const before = rssOf(pid).currentMiB;
  let sampled = before;
  // Only without the reset: reading /proc 100 times a second is work on the hub side alone.
  const timer = reset ? null : setInterval(() => (sampled = Math.max(sampled, rssOf(pid).currentMiB)), 10);
  if (!reset) process.stderr.write('bench: /proc/PID/clear_refs refused; the hub\'s peak RSS is sampled every 10 ms instead\n');
  return {
    stop() {
      if (timer) clearInterval(timer);
      const now = rssOf(pid);
      return { beforeMiB: before, peakMiB: reset ? now.peakMiB : Math.max(sampled, now.currentMiB) };
    },
  };
}

// ── the servers ──────────────────────────────────────────────────────────────────────────────
console.log(`uploads benchmark: ${size / MiB} MiB × ${rounds} round(s) on ${backends.join(', ')}; ${smallCount} small uploads; a ${cutSize / MiB} MiB upload cut at 50 %; temp root ${TEMP_ROOT}`);
const stops: (() => Promise<unknown>)[] = [];
const stopAll = async () => {
  for (const s of stops.splice(0).reverse()) await s().catch((e) => process.stderr.write(`bench: stopping: ${(e as Error).message}\n`));
};
onInterrupt(stopAll);

const DAV_USER = 'bench';
const DAV_PW = 'bench-pw';
const ADMIN_KEY = `bench-admin-${randomUUID()}`;
let dav: RealDav | null = null;
let s3: RealS3 | null = null;
let hub: ServerProcess;

try {
  if (backends.includes('webdav')) {
    dav = await startApacheDav({}, { [DAV_USER]: DAV_PW });
    stops.push(() => dav!.close());
  }
  if (backends.includes('s3')) {
    s3 = await startSwiftS3({});
    stops.push(() => s3!.close());
  }
  const data = tempDir('damhub-bench-data-');
  const library = tempDir('damhub-bench-library-');
  // The direct uploads' files: next to the library (the same file system), not in it.
  const directDir = tempDir('damhub-bench-direct-');
  const key = await makeKey();
  const issuer = 'https://partner.uploads.example/';
  const jwksFile = path.join(data, 'jwks.json');
  fs.writeFileSync(jwksFile, JSON.stringify({ keys: [key.publicJwk] }));
  const cli = async (args: string[], input?: string) => {
    const r = await runCli(args, {}, input);
    if (r.code !== 0) throw new Error(`damhub ${args.join(' ')}: ${r.code} ${r.stderr}`);
  };
  await cli(['partners', 'add', '--issuer', issuer, '--jwks-file', jwksFile, '--data', data, '--rate-limit', '100000', '--writes']);
  await cli(['users', 'add', 'writer', '--password-stdin', '--write-folders', '/', '--data', data], 'writer-pw\n');
  hub = await startServer(['--data', data, '--library', library], {
    DAMHUB_CONNECTORS: [dav && 'webdav', s3 && 's3'].filter(Boolean).join(','),
    DAMHUB_CONNECTOR_ALLOW_HOSTS: '127.0.0.1',
    DAMHUB_USER_RATE_LIMIT: '0',
    DAMHUB_MAX_UPLOAD_BYTES: String(Math.max(size, cutSize) + MiB),
    DAMHUB_ADMIN_KEY: ADMIN_KEY,
    DAMHUB_LOG_LEVEL: 'error',
  }, undefined, profileArgs());
  trackChild(hub.child);
  stops.push(() => hub.stop());
  const pid = hub.child.pid!;
  const api = `${hub.url}/api/v1`;
  const jwt = await signPartnerJwt(Date.now(), { key, issuer, sub: 'uploader' });
  const { access_token: access } = await json(await fetch(`${api}/auth/exchangeToken`, { method: 'POST', headers: { authorization: `Bearer ${jwt}` } }));
  const headersFor = (dam: string) => ({ authorization: `Bearer ${access}`, 'provider-authorization': `Bearer ${dam}`, 'content-type': 'application/octet-stream' });
  const libHeaders = headersFor(await formSignIn(api, access, 'library', null, { username: 'writer', password: 'writer-pw' }));

  // ── 1. the large upload, per backend ──
  const expected = await sha256(body(size));
  console.log(`body: ${size} bytes, SHA-256 ${expected}`);
  interface Backend {
    name: string;
    headers: Record<string, string>;
    direct(name: string): Promise<number>;
    /** The stored bytes' SHA-256 (read back from disk or the server), then removes them. */
    readBackAndRemove(name: string, via: 'hub' | 'direct'): Promise<string>;
  }
  const all: Backend[] = [];
  if (backends.includes('library')) {
    all.push({
      name: 'library',
      headers: libHeaders,
      async direct(name) {
        // As the library writes: a hidden temp file, fsynced, renamed into place.
        const t0 = performance.now();
        const tmp = path.join(directDir, `.tmp-${name}`);
        const out = fs.createWriteStream(tmp);
        await pipeline(body(size), out);
        const fd = fs.openSync(tmp, 'r');
        fs.fsyncSync(fd);
        fs.closeSync(fd);
        fs.renameSync(tmp, path.join(directDir, name));
        return performance.now() - t0;
      },
      async readBackAndRemove(name, via) {
        const p = path.join(via === 'hub' ? library : directDir, name);
        const h = await sha256(fs.createReadStream(p));
        fs.rmSync(p);
        return h;
      },
    });
  }
  if (dav) {
    const d = dav;
    const basic = `Basic ${Buffer.from(`${DAV_USER}:${DAV_PW}`).toString('base64')}`;
    all.push({
      name: 'webdav',
      headers: headersFor(await formSignIn(api, access, 'webdav', d.url, { serverUrl: d.url, username: DAV_USER, password: DAV_PW })),
      async direct(name) {
        const r = await send(`${d.url}${name}`, 'PUT', { authorization: basic, 'content-type': 'application/octet-stream' }, size);
        if (r.status !== 201 && r.status !== 204) throw new Error(`direct PUT to Apache: ${r.status} ${r.text.slice(0, 200)}`);
        return r.ms;
      },
      async readBackAndRemove(name) {
        // mod_dav_fs stores the resource as a plain file under its root.
        const p = path.join(d.root, name);
        const h = await sha256(fs.createReadStream(p));
        const del = await fetch(`${d.url}${name}`, { method: 'DELETE', headers: { authorization: basic } });
        if (del.status !== 204) throw new Error(`DELETE on Apache: ${del.status}`);
        return h;
      },
    });
  }
  if (s3) {
    const s = s3;
    all.push({
      name: 's3',
      headers: headersFor(await formSignIn(api, access, 's3', s.endpoint, { endpoint: s.endpoint, region: s.region, bucket: s.bucket, accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey })),
      async direct(name) {
        // What the connector sends (src/providers/s3/body.ts), signed as it signs (UNSIGNED-PAYLOAD,
        // src/providers/s3/api.ts): one streamed PutObject up to putMaxBytes, else a multipart
        // upload of parts read one at a time, with the connector's part size. (The SDK would hash
        // each body for its signature over http, or send a stream aws-chunked, which s3api refuses.)
        const limits = DEFAULT_BODY_LIMITS;
        const t0 = performance.now();
        if (size <= limits.putMaxBytes) {
          await s3Call(s, 'PUT', name, {}, body(size), size);
          return performance.now() - t0;
        }
        const created = await s3Call(s, 'POST', name, { uploads: '' }, Buffer.alloc(0), 0);
        const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(created.text)?.[1];
        if (!uploadId) throw new Error(`CreateMultipartUpload: no UploadId in ${created.text.slice(0, 300)}`);
        const reader = new PartReader(body(size), partSizeFor(size, limits));
        const etags: string[] = [];
        for (let part = await reader.next(), n = 1; part; part = await reader.next(), n++) {
          const r = await s3Call(s, 'PUT', name, { partNumber: String(n), uploadId }, part, part.length);
          etags.push(String(r.headers.etag));
        }
        const xml = `<CompleteMultipartUpload>${etags.map((e, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${e}</ETag></Part>`).join('')}</CompleteMultipartUpload>`;
        const done = await s3Call(s, 'POST', name, { uploadId }, Buffer.from(xml), Buffer.byteLength(xml));
        if (/<Error>/.test(done.text)) throw new Error(`CompleteMultipartUpload: ${done.text.slice(0, 300)}`);
        return performance.now() - t0;
      },
      async readBackAndRemove(name) {
        const got = await s.client.send(new GetObjectCommand({ Bucket: s.bucket, Key: name }));
        const h = await sha256(got.Body as Readable);
        await s.client.send(new DeleteObjectCommand({ Bucket: s.bucket, Key: name }));
        return h;
      },
    });
  }

  for (const b of all) {
    // One 16 MiB upload first, so the first measured one does not carry the first write's one-off
    // costs in its RSS: modules loaded on first use, the connector's first connections, the
    // library's hash worker threads (started by the first body of 8 MiB or more, then kept: ≈ 28 MiB).
    const warm = `warm-up-${randomUUID().slice(0, 8)}.bin`;
    const w = await send(`${api}/assets/upload?parentId=root&name=${warm}`, 'POST', b.headers, 16 * MiB);
    if (w.status !== 201) throw new Error(`${b.name}: the warm-up upload answered ${w.status}: ${w.text.slice(0, 300)}`);
    await b.readBackAndRemove(warm, 'hub');
    const ratios: number[] = [];
    const growth: number[] = [];
    const hubMs: number[] = [];
    const directMs: number[] = [];
    const hubCpuMs: number[] = [];
    for (let r = 0; r < rounds; r++) {
      // Alternate which side goes first, so both meet the same drift.
      const order: ('hub' | 'direct')[] = r % 2 ? ['direct', 'hub'] : ['hub', 'direct'];
      const round: Record<string, number> = {};
      for (const side of order) {
        const name = `big-${side}-${r}-${randomUUID().slice(0, 8)}.bin`;
        if (side === 'hub') {
          const peak = watchPeak(pid);
          const cpu0 = cpuMsOf(pid);
          const a = await send(`${api}/assets/upload?parentId=root&name=${encodeURIComponent(name)}`, 'POST', b.headers, size);
          hubCpuMs.push(cpuMsOf(pid) - cpu0);
          const rss = peak.stop();
          if (a.status !== 201) throw new Error(`${b.name}: hub upload answered ${a.status}: ${a.text.slice(0, 300)}`);
          growth.push(Math.max(0, rss.peakMiB - rss.beforeMiB));
          round.hub = a.ms;
          hubMs.push(a.ms);
        } else {
          round.direct = await b.direct(name);
          directMs.push(round.direct);
        }
        const got = await b.readBackAndRemove(name, side);
        if (got !== expected) throw new Error(`${b.name}: the ${side} upload stored SHA-256 ${got}, sent ${expected}`);
      }
      // Throughput ratio hub/direct = direct time / hub time (the same bytes).
      ratios.push(round.direct! / round.hub!);
      console.log(`${b.name} round ${r + 1}: hub ${(size / MiB / (round.hub! / 1000)).toFixed(1)} MiB/s, direct ${(size / MiB / (round.direct! / 1000)).toFixed(1)} MiB/s, hub RSS growth ${growth.at(-1)!.toFixed(1)} MiB, hub CPU ${hubCpuMs.at(-1)!.toFixed(0)} ms; SHA-256 checked`);
    }
    const tag = `${size / MiB}mib`;
    result(`upload-${b.name}-${tag}-rss-growth`, Math.max(...growth), 'MiB', ['<=', 64], 'non-negative');
    result(`upload-${b.name}-${tag}-throughput-ratio`, median(ratios), 'x', ['>=', 0.9]);
    result(`upload-${b.name}-${tag}-hub-throughput`, size / MiB / (median(hubMs) / 1000), 'MiB/s');
    result(`upload-${b.name}-${tag}-direct-throughput`, size / MiB / (median(directMs) / 1000), 'MiB/s');
    // The hub's own CPU per GiB relayed: what the extra hop costs a shared machine, steadier than the ratio.
    result(`upload-${b.name}-${tag}-hub-cpu`, median(hubCpuMs) / (size / (1024 * MiB)), 'ms/GiB');
  }

  // ── 2. concurrent small uploads with forced retries (library) ──
  const folder = await json(await fetch(`${api}/assets/folder`, { method: 'POST', headers: { ...libHeaders, 'content-type': 'application/json' }, body: JSON.stringify({ parentId: 'root', name: 'small' }) }));
  const small = Array.from({ length: smallCount }, (_, i) => ({ key: randomUUID(), requestId: `bench-small-${i}-${randomUUID().slice(0, 8)}`, name: `small-${i}.bin` }));
  const smallUrl = (name: string) => `${api}/assets/upload?parentId=${encodeURIComponent(folder.id)}&name=${encodeURIComponent(name)}`;
  const SMALL_BYTES = 64 * 1024;
  const first = await Promise.all(small.map((s) => send(smallUrl(s.name), 'POST', { ...libHeaders, 'idempotency-key': s.key, 'x-request-id': s.requestId }, SMALL_BYTES)));
  const firstBad = first.filter((a) => a.status !== 201);
  if (firstBad.length) throw new Error(`${firstBad.length} of ${smallCount} small uploads failed, e.g. ${firstBad[0]!.status} ${firstBad[0]!.text.slice(0, 300)}`);
  const retries = await Promise.all(small.map((s) => send(smallUrl(s.name), 'POST', { ...libHeaders, 'idempotency-key': s.key, 'x-request-id': `${s.requestId}-retry` }, SMALL_BYTES)));
  const replayed = retries.filter((a) => a.status === 201 && a.headers['idempotent-replayed'] === 'true').length;
  const retryStatuses = new Map<number, number>();
  for (const a of retries) retryStatuses.set(a.status, (retryStatuses.get(a.status) ?? 0) + 1);
  const audited = new Set<string>();
  for (let before: string | undefined; ;) {
    const page = await json(await fetch(`${api}/admin/audit?limit=1000${before ? `&before=${encodeURIComponent(before)}` : ''}`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } }));
    for (const e of page.entries as { requestId: string; operation: string; result: string }[]) if (e.operation === 'upload' && e.result === 'ok') audited.add(e.requestId);
    if (!page.more) break;
    before = page.more;
  }
  const found = small.filter((s) => audited.has(s.requestId)).length;
  const listing = await json(await fetch(`${api}/assets/folder/${encodeURIComponent(folder.id)}?size=1000`, { headers: libHeaders }));
  const listed = (listing.assets as unknown[]).length;
  const onDisk = fs.readdirSync(path.join(library, 'small')).filter((n) => !n.startsWith('.')).length;
  const lat = first.map((a) => a.ms);
  console.log(`${smallCount} concurrent uploads of ${SMALL_BYTES / 1024} KiB: retries answered ${[...retryStatuses].map(([k, v]) => `${k}: ${v}`).join(', ')} (${replayed} replayed); ${found} of ${smallCount} request ids in the audit; ${listed} assets listed, ${onDisk} files on disk`);
  result(`upload-small-${smallCount}-audit-coverage`, (100 * found) / smallCount, '%', ['>=', 100], 'non-negative');
  result(`upload-small-${smallCount}-duplicates`, Math.max(listed, onDisk) - smallCount, 'assets', ['<=', 0], 'non-negative');
  result(`upload-small-${smallCount}-p50`, percentile(lat, 50), 'ms');
  result(`upload-small-${smallCount}-p99`, percentile(lat, 99), 'ms');

  // ── 3. a plain upload cut at 50 % leaves nothing behind (library) ──
  const walk = (dir: string, out = new Set<string>()): Set<string> => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      out.add(p);
      if (e.isDirectory()) walk(p, out);
    }
    return out;
  };
  const before = walk(library);
  const cutName = `cut-${randomUUID().slice(0, 8)}.bin`;
  // Watched while it streams: the hub's temp file must show up, or the cut proved nothing.
  let seenDuring = 0;
  const watcher = setInterval(() => (seenDuring = Math.max(seenDuring, [...walk(library)].filter((p) => !before.has(p)).length)), 10);
  await sendHalf(`${api}/assets/upload?parentId=root&name=${cutName}`, libHeaders, cutSize);
  clearInterval(watcher);
  if (!seenDuring) throw new Error('the cut upload: no new file appeared in the library while it streamed (nothing was written before the cut?)');
  // The hub notices the closed socket and discards what it wrote; wait (at most 10 s) until no
  // new entry is left, and count whatever still is.
  let left: string[] = [];
  for (const until = Date.now() + 10_000; ;) {
    const after = walk(library);
    left = [...after].filter((p) => !before.has(p));
    if (!left.length || Date.now() > until) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const check = await fetch(`${api}/auth/checkToken`, { headers: { authorization: `Bearer ${access}` } });
  if (!check.ok) throw new Error(`the hub does not answer after the cut upload: ${check.status}`);
  console.log(`cut upload of ${cutSize / MiB} MiB at 50 %: ${seenDuring} new entries while it streamed, ${left.length} new entries left in the library${left.length ? `: ${left.map((p) => path.relative(library, p)).join(', ')}` : ''}`);
  result('upload-cut-leftovers', left.length, 'files', ['<=', 0], 'non-negative');
  reportResults();
} finally {
  await stopAll();
}
