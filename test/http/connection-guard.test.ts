/** The slow-connection guard: a connection with no bytes moving is closed; a live one is not. */
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { test } from 'node:test';
import { guardSlowConnections } from '../../src/http/connection-guard.js';

test('idle connections are closed after idleMs; connections that move bytes stay', async () => {
  const server = http.createServer((_req, res) => res.end('ok'));
  guardSlowConnections(server, 300, 50);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  const silent = net.connect(port, '127.0.0.1');
  const busy = net.connect(port, '127.0.0.1');
  const closed = new Promise<number>((r) => { const t0 = Date.now(); silent.on('close', () => r(Date.now() - t0)); });
  silent.on('error', () => undefined);
  // The busy client trickles a header line every 100 ms: bytes keep moving.
  busy.write('GET / HTTP/1.1\r\n');
  let n = 0;
  const trickle = setInterval(() => busy.write(`x-${n++}: y\r\n`), 100);
  const after = await closed;
  assert.ok(after >= 250 && after < 2000, `closed after ${after} ms`);
  assert.equal(busy.destroyed, false);
  clearInterval(trickle);
  busy.destroy();
  await new Promise<void>((r) => server.close(() => r()));
});
