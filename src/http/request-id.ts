import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** A caller's x-request-id is echoed when it is a sane token; anything else gets a fresh id. */
const SANE = /^[A-Za-z0-9._:@\-]{1,128}$/;

export function genReqId(req: IncomingMessage): string {
  const h = req.headers['x-request-id'];
  return typeof h === 'string' && SANE.test(h) ? h : randomUUID();
}
