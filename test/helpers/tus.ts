/**
 * Resumable-upload (tus) test kit: deterministic bytes, Upload-Metadata, and a TCP proxy in front
 * of a hub that cuts a request's connection after so many bytes (a client whose network drops).
 */
import { createHash } from 'node:crypto';
import net from 'node:net';

export const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
export const bytes = (n: number, seed = 1) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + seed * 7) % 251));
export const meta = (m: Record<string, string>) => Object.entries(m).map(([k, v]) => `${k} ${Buffer.from(v).toString('base64')}`).join(',');

/** A TCP proxy in front of the hub that can cut the next request after so many bytes (a dropped connection). */
/** Listens first (its port names the hub's public URL); `to(port)` names the hub once it listens. */
export async function cuttingProxy() {
  let port = 0;
  let cutAfter: number | null = null;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    sockets.add(client).add(upstream);
    let sent = 0;
    client.on('data', (d: Buffer) => {
      sent += d.length;
      if (cutAfter !== null && sent >= cutAfter) {
        // The hub gets the bytes up to the cut, then the connection ends (as when a client's network drops).
        upstream.end(d.subarray(0, d.length - (sent - cutAfter)));
        cutAfter = null;
        client.destroy();
        return;
      }
      if (!upstream.write(d)) client.pause();
    });
    upstream.on('drain', () => client.resume());
    upstream.on('data', (d) => client.write(d));
    client.on('error', () => upstream.destroy()).on('close', () => upstream.end());
    upstream.on('error', () => client.destroy()).on('close', () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    to(p: number) {
      port = p;
    },
    /** Cuts the connection that carries the next `n` bytes from the client, counted from now. */
    cut(n: number) {
      cutAfter = n;
      for (const s of sockets) s.destroy();
      sockets.clear();
    },
    close: () => new Promise<void>((r) => {
      for (const s of sockets) s.destroy();
      server.close(() => r());
    }),
  };
}

