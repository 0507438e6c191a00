#!/usr/bin/env node
// Is the hub on this machine ready? GET /readyz on the address the hub listens on (DAMHUB_HOST,
// DAMHUB_PORT, as `damhub serve` reads them), never through the proxy in front of it.
//
//   node deploy/readyz.mjs              one try: exit 0 on 200, 1 otherwise (the container's
//                                       HEALTHCHECK)
//   node deploy/readyz.mjs --wait 90    retry until ready or 90 s have passed (systemd's
//                                       ExecStartPost: the unit is "started" once the hub answers)
//
// Plain Node and no dependency, so that it runs in the runtime image as it is: the slim Node
// image has no curl or wget. What /readyz answered goes to stderr on failure, for `docker inspect`
// and the journal.
const args = process.argv.slice(2);
let waitSec = 0;
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--wait' && /^\d+$/.test(args[i + 1] ?? '')) {
    waitSec = Number(args[++i]);
  } else {
    process.stderr.write(`readyz: unknown argument ${JSON.stringify(args[i])}; usage: readyz.mjs [--wait SECONDS]\n`);
    process.exit(2);
  }
}

const port = process.env.DAMHUB_PORT || '8080';
const url = `http://${connectHost(process.env.DAMHUB_HOST)}:${port}/readyz`;
const deadline = Date.now() + waitSec * 1000;

/** The address to reach a hub listening on `host`: a wildcard is reached on loopback. */
function connectHost(host) {
  if (!host || host === '0.0.0.0') return '127.0.0.1';
  if (host === '::' || host === '[::]') return '[::1]';
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

async function once() {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(4000) });
    const body = (await res.text()).slice(0, 300);
    return res.status === 200 ? null : `${url} answered ${res.status}: ${body}`;
  } catch (e) {
    return `${url}: ${e?.cause?.code ?? e?.cause?.message ?? e?.message ?? e}`;
  }
}

let problem = await once();
while (problem !== null && Date.now() < deadline) {
  await new Promise((r) => setTimeout(r, 500));
  problem = await once();
}
if (problem !== null) {
  process.stderr.write(`readyz: not ready${waitSec ? ` after ${waitSec} s` : ''}: ${problem}\n`);
  process.exit(1);
}
