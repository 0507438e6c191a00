/**
 * File bytes as the replays' download hosts serve them, one copy of the ETag and Range handling
 * rather than one per replay.
 */
import type http from 'node:http';

/**
 * Answers `bytes` as application/octet-stream. With `etag`: sent on every answer, and an equal
 * If-None-Match is a 304. A single `bytes=a-b` (or `a-`) Range is a 206 with Content-Range, its end
 * cut to the last byte (nothing else of ranges: no 416, no multipart). `acceptRanges` names which
 * answers say `Accept-Ranges: bytes`: the 200 only (`full`), the 200 and the 206 (`both`), or none.
 */
export function serveBytes(req: http.IncomingMessage, res: http.ServerResponse, bytes: Buffer, opts: { etag?: string; acceptRanges?: 'full' | 'both' } = {}): void {
  const etag = opts.etag === undefined ? {} : { etag: opts.etag };
  if (opts.etag !== undefined && req.headers['if-none-match'] === opts.etag) {
    res.writeHead(304, etag);
    res.end();
    return;
  }
  const m = /^bytes=(\d+)-(\d*)$/.exec(String(req.headers.range ?? ''));
  if (m) {
    const start = Number(m[1]);
    const end = Math.min(m[2] ? Number(m[2]) : bytes.length - 1, bytes.length - 1);
    const ranges = opts.acceptRanges === 'both' ? { 'accept-ranges': 'bytes' } : {};
    res.writeHead(206, { 'content-type': 'application/octet-stream', 'content-length': String(end - start + 1), 'content-range': `bytes ${start}-${end}/${bytes.length}`, ...etag, ...ranges });
    res.end(bytes.subarray(start, end + 1));
    return;
  }
  const ranges = opts.acceptRanges ? { 'accept-ranges': 'bytes' } : {};
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(bytes.length), ...etag, ...ranges });
  res.end(bytes);
}
