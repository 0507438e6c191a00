/**
 * Reference images fetched by URL (search by image) under the hub-wide bound on reads of originals
 * the hub did not index (issue 28, item 1): with every read slot taken and the queue full, the
 * answer is 503 + Retry-After and the remote host sees no connection; a client that leaves ends
 * the fetch, its connection to the remote host closed. A real loopback server counts what it saw.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import { referenceBytes, type ReferenceDeps } from '../../src/content/image-reference.js';
import { isHubError } from '../../src/errors.js';
import { ReadSlots } from '../../src/net/read-slots.js';

const seen = { connections: 0, requests: 0, closed: 0 };
let hold: http.ServerResponse | null = null;
let onRequest: () => void = () => undefined;
const server = http.createServer((req, res) => {
  seen.requests++;
  res.on('close', () => seen.closed++);
  // Headers and a first chunk, then nothing: a fetch in progress.
  res.writeHead(200, { 'content-type': 'image/jpeg' });
  res.write(Buffer.from([0xff, 0xd8, 0xff, 0xe0]));
  hold = res;
  onRequest();
});
server.on('connection', () => seen.connections++);
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ref.jpg`;
after(() => {
  server.closeAllConnections();
  server.close();
});

function deps(reads: ReadSlots): ReferenceDeps {
  return {
    publicUrl: 'http://hub.test', mediaUrls: { verify: async () => undefined } as never, providers: { get: () => undefined },
    imagePool: { analyse: async () => { throw new Error('not used'); } } as never,
    reads, maxBytes: 1024 * 1024,
    decode: { maxPixels: 1e6, budget: 1e6, timeoutMs: 1000 },
    fetch: { allow: ['127.0.0.1'], connectTimeoutMs: 3000, totalTimeoutMs: 60_000, maxRedirects: 0 },
  };
}

test('a reference URL while every read slot is taken: 503 + Retry-After, and the remote host sees no connection', async () => {
  const reads = new ReadSlots(1, 0);
  const taken = reads.tryAcquire()!;
  const before = { ...seen };
  await assert.rejects(referenceBytes(url, deps(reads)), (e: unknown) => {
    assert.ok(isHubError(e));
    assert.equal(e.code, 'hub-unavailable');
    assert.equal(e.status, 503);
    assert.equal((e.headers as Record<string, string>)['retry-after'], '1');
    return true;
  });
  assert.equal(seen.connections, before.connections, 'no connection to the remote host');
  taken.release();
});

test('a reference fetch whose client left is ended, its connection to the remote host closed, and its slot given back', async () => {
  const reads = new ReadSlots(1, 0);
  const gone = new AbortController();
  const requested = new Promise<void>((r) => (onRequest = r));
  const fetching = referenceBytes(url, deps(reads), gone.signal);
  await requested;
  assert.equal(reads.active, 1, 'the fetch holds a read slot');
  const closed = seen.closed;
  const sawClose = new Promise<void>((r) => hold!.once('close', () => r()));
  gone.abort(new Error('the client left'));
  await assert.rejects(fetching, /the client left/);
  await sawClose;
  assert.equal(seen.closed, closed + 1, 'the remote host saw the connection closed');
  assert.equal(reads.active, 0, 'the slot was given back');
});
