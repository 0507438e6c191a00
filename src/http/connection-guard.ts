/**
 * Slow-client protection without a timer per socket. A socket timeout (Fastify's
 * `connectionTimeout`) re-arms a timer on every read and write of every connection: measurable on
 * the hottest routes. This guard gives the same bound — a connection with no bytes moving either
 * way for `idleMs` is destroyed (a client that stops reading its response, or trickles a request)
 * — by looking at every open connection once every `everyMs`, so its cost is per connection and
 * per sweep, not per request. Header and request deadlines stay with Node (headersTimeout,
 * requestTimeout) and idle keep-alive connections with keepAliveTimeout.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

export function guardSlowConnections(server: Server, idleMs = 60_000, everyMs = Math.min(15_000, idleMs / 4)): void {
  const open = new Map<Socket, { moved: number; since: number }>();
  let sweep: NodeJS.Timeout | null = null;
  server.on('connection', (socket: Socket) => {
    open.set(socket, { moved: 0, since: Date.now() });
    socket.once('close', () => open.delete(socket));
  });
  server.on('listening', () => {
    sweep ??= setInterval(() => {
      const now = Date.now();
      for (const [socket, s] of open) {
        const moved = socket.bytesRead + socket.bytesWritten;
        if (moved !== s.moved) {
          s.moved = moved;
          s.since = now;
        } else if (now - s.since >= idleMs) {
          socket.destroy();
        }
      }
    }, everyMs);
    sweep.unref();
  });
  server.on('close', () => {
    if (sweep) clearInterval(sweep);
    sweep = null;
  });
}
