/**
 * GET /api/v1/auth/checkToken under autocannon vs a bare node:http server answering the same
 * bytes. Run: npm run bench:check-token [-- --rounds 3 --duration 10 --connections 50]
 * (smoke check: --rounds 1 --duration 1 --connections 4). Ends with RESULT lines (bench/lib.ts):
 * the median ratio damhub / bare node:http, target ≥ 0.8 (issue 22).
 */
import { profileArgs, REPO_ROOT, reportResults, result, sideBySide, startChild, table, sameBytesHeaders } from './lib.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { freePort } from '../test/helpers/process.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '3' }, duration: { type: 'string', default: '10' }, connections: { type: 'string', default: '50' } } });
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'damhub-bench-'));
const hubPort = await freePort();
const barePort = await freePort();
const fastifyPort = await freePort();
const hubUrl = `http://127.0.0.1:${hubPort}`;

const hub = await startChild([...profileArgs(), `${REPO_ROOT}bin/damhub.js`, 'serve', '--demo', '--port', String(hubPort), '--data', dir], 'damhub listening', { DAMHUB_LOG_LEVEL: 'warn', DAMHUB_USER_RATE_LIMIT: '0' });
let bare;
let fastify;
try {
  const { jwt } = (await (await fetch(`${hubUrl}/demo/partner-token`, { method: 'POST' })).json()) as { jwt: string };
  const { access_token } = (await (await fetch(`${hubUrl}/api/v1/auth/exchangeToken`, { method: 'POST', headers: { authorization: `Bearer ${jwt}` } })).json()) as { access_token: string };
  const headers = { authorization: `Bearer ${access_token}` };
  const sample = await fetch(`${hubUrl}/api/v1/auth/checkToken`, { headers });
  const bodyFile = path.join(dir, 'body.json');
  fs.writeFileSync(bodyFile, Buffer.from(await sample.arrayBuffer()));
  const sameHeaders = sameBytesHeaders(sample, `${bodyFile}.headers.json`);
  bare = await startChild([`${REPO_ROOT}dist/bench/bare-server.js`, String(barePort), bodyFile, sample.headers.get('content-type')!, sameHeaders], 'bare listening');

  fastify = await startChild([`${REPO_ROOT}dist/bench/fastify-server.js`, String(fastifyPort), bodyFile, sample.headers.get('content-type')!, sameHeaders], 'fastify listening');

  const opts = { rounds: Number(values.rounds), durationSec: Number(values.duration), connections: Number(values.connections) };
  const r = await sideBySide(
    { name: 'damhub checkToken', url: `${hubUrl}/api/v1/auth/checkToken`, headers },
    { name: 'bare node:http', url: `http://127.0.0.1:${barePort}/`, headers },
    { ...opts, extra: [{ name: 'bare Fastify', url: `http://127.0.0.1:${fastifyPort}/`, headers }] },
  );
  console.log(`checkToken benchmark: ${opts.rounds} alternating rounds × ${opts.durationSec} s, ${opts.connections} connections, ${os.cpus().length} cores, node ${process.version}`);
  console.log(table([
    ['side', 'req/s (median)', 'p50 ms', 'p99 ms'],
    ['damhub', r.subject.rps, r.subject.p50, r.subject.p99],
    ['bare node:http', r.baseline.rps, r.baseline.p50, r.baseline.p99],
    ['bare Fastify', r.extra['bare Fastify']!.rps, r.extra['bare Fastify']!.p50, r.extra['bare Fastify']!.p99],
  ]));
  console.log(`per-round ratios damhub / bare node:http: ${r.ratios.map((x) => x.toFixed(3)).join(', ')}`);
  console.log(`median ratio damhub / bare node:http = ${r.ratio.toFixed(3)} (target ≥ 0.8, issue 22); bare Fastify / bare node:http = ${(r.extra['bare Fastify']!.rps / r.baseline.rps).toFixed(3)}`);
  result('checktoken-vs-bare-node-http', r.ratio, 'x', ['>=', 0.8]);
  result('checktoken-rps', r.subject.rps, 'req/s');
  result('checktoken-bare-node-http-rps', r.baseline.rps, 'req/s');
  result('checktoken-bare-fastify-vs-bare-node-http', r.extra['bare Fastify']!.rps / r.baseline.rps, 'x');
} finally {
  hub.kill('SIGTERM');
  bare?.kill('SIGTERM');
  fastify?.kill('SIGTERM');
}
reportResults();
