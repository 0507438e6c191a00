/**
 * A WebDAV server an attacker controls (issue 28, "Thumbnail floods"): a loopback node:http server
 * answering PROPFIND with a folder of N large JPEG originals and GET with their bytes (a real small
 * JPEG padded with zeros to `size`, generated while sending, so N × 48 MiB costs this process
 * nothing), counting what it really sent: GETs seen, body bytes handed to the socket, answers the
 * hub closed before their end, answers still open.
 *
 * `hold`: each GET sends its head (the first chunk) and then waits for `release()`, so a test can
 * keep productions in flight without any timing: "N are running now" is a count, not a sleep.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';

export interface FloodStats {
  propfinds: number;
  /** GETs of originals seen (each one an upstream request the hub made). */
  gets: number;
  /** Body bytes handed to the sockets, all GETs together. */
  bodyBytes: number;
  /** GETs whose answer the hub closed before its end (an aborted upstream read). */
  closedEarly: number;
  /** GETs whose answer was sent whole. */
  finished: number;
  /** GETs whose answer is still being sent (or held). */
  open: number;
}

export interface FloodDav {
  url: string;
  files: string[];
  stats: FloodStats;
  /** Bytes sent per file path. */
  sentOf(name: string): number;
  /** Lets held answers (and every later one) go on. */
  release(): void;
  /** Resolves once `n` GETs are open (held or sending). */
  whenOpen(n: number): Promise<void>;
  /** Resolves once no GET is open any more. */
  whenIdle(): Promise<void>;
  close(): Promise<void>;
}

const CHUNK = 64 * 1024;

export async function startFloodDav(opts: { files: number; size: number; hold?: boolean; prefix?: string }): Promise<FloodDav> {
  const jpeg = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#3a7' } }).jpeg().toBuffer();
  const zeros = Buffer.alloc(CHUNK);
  const names = Array.from({ length: opts.files }, (_, i) => `${opts.prefix ?? 'img'}-${String(i).padStart(3, '0')}.jpg`);
  const stats: FloodStats = { propfinds: 0, gets: 0, bodyBytes: 0, closedEarly: 0, finished: 0, open: 0 };
  const sent = new Map<string, number>();
  let held = opts.hold === true;
  let releaseAll: () => void = () => undefined;
  let released = new Promise<void>((r) => (releaseAll = r));
  const watchers = new Set<() => void>();
  const changed = () => {
    for (const w of [...watchers]) w();
  };
  const until = (ok: () => boolean) => new Promise<void>((resolve) => {
    if (ok()) return resolve();
    const w = () => {
      if (!ok()) return;
      watchers.delete(w);
      resolve();
    };
    watchers.add(w);
  });

  const entry = (name: string, i: number) => `<d:response><d:href>/dav/${name}</d:href><d:propstat><d:prop><d:displayname>${name}</d:displayname><d:resourcetype/><d:getcontentlength>${opts.size}</d:getcontentlength><d:getcontenttype>image/jpeg</d:getcontenttype><d:getetag>"e-${i}"</d:getetag><d:getlastmodified>Mon, 01 Jun 2026 12:00:00 GMT</d:getlastmodified></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>`;
  const root = '<d:response><d:href>/dav/</d:href><d:propstat><d:prop><d:displayname>dav</d:displayname><d:resourcetype><d:collection/></d:resourcetype></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>';

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.method === 'PROPFIND') {
      stats.propfinds++;
      req.resume();
      const depth = req.headers.depth === '0' ? 0 : 1;
      const file = names.indexOf(decodeURIComponent(url.pathname.replace(/^\/dav\//, '')));
      const body = `<?xml version="1.0" encoding="utf-8"?><d:multistatus xmlns:d="DAV:">${file >= 0 ? entry(names[file]!, file) : `${root}${depth ? names.map(entry).join('') : ''}`}</d:multistatus>`;
      res.writeHead(207, { 'content-type': 'application/xml; charset=utf-8' }).end(body);
      return;
    }
    const name = decodeURIComponent(url.pathname.replace(/^\/dav\//, ''));
    const i = names.indexOf(name);
    if (req.method !== 'GET' || i < 0) {
      res.writeHead(404).end();
      return;
    }
    stats.gets++;
    stats.open++;
    changed();
    let done = false;
    res.on('close', () => {
      stats.open--;
      if (!done) stats.closedEarly++;
      else stats.finished++;
      changed();
    });
    const range = /^bytes=0-(\d+)$/.exec(req.headers.range ?? '');
    const total = range ? Math.min(opts.size, Number(range[1]) + 1) : opts.size;
    res.writeHead(range ? 206 : 200, {
      'content-type': 'image/jpeg', 'content-length': String(total), etag: `"e-${i}"`,
      ...(range ? { 'content-range': `bytes 0-${total - 1}/${opts.size}` } : {}),
    });
    let offset = 0;
    const chunkAt = (at: number): Buffer => {
      const n = Math.min(CHUNK, total - at);
      if (at >= jpeg.length) return zeros.subarray(0, n);
      const b = Buffer.alloc(n);
      jpeg.copy(b, 0, at, Math.min(jpeg.length, at + n));
      return b;
    };
    const pump = async () => {
      while (offset < total && !res.destroyed) {
        if (held && offset > 0) await released;
        if (res.destroyed) return;
        const b = chunkAt(offset);
        offset += b.length;
        stats.bodyBytes += b.length;
        sent.set(name, (sent.get(name) ?? 0) + b.length);
        if (!res.write(b)) await new Promise<void>((r) => {
          const go = () => {
            res.off('drain', go);
            res.off('close', go);
            r();
          };
          res.on('drain', go);
          res.on('close', go);
        });
      }
      if (!res.destroyed) {
        done = true;
        res.end();
      }
    };
    void pump();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/dav/`,
    files: names,
    stats,
    sentOf: (name) => sent.get(name) ?? 0,
    release() {
      held = false;
      releaseAll();
      released = Promise.resolve();
    },
    whenOpen: (n) => until(() => stats.open >= n),
    whenIdle: () => until(() => stats.open === 0),
    async close() {
      held = false;
      releaseAll();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
