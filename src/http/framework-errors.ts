/**
 * Errors raised before a request reaches the hub's hooks still get the envelope: the router's
 * (a path parameter over the length limit, a URL that does not decode) and Node's HTTP parser's
 * (headers over the size limit, a request that did not arrive in time, malformed HTTP). Fastify
 * would answer these with its own JSON shape, without a request id.
 */
import http from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hubError } from '../errors.js';
import { envelope, sendError } from './errors.js';
import { genReqId } from './request-id.js';

export function frameworkErrors(err: FastifyError, req: FastifyRequest, reply: FastifyReply): void {
  reply.header('x-request-id', req.id);
  reply.header('x-content-type-options', 'nosniff');
  const e = err.code === 'FST_ERR_MAX_PARAM_LENGTH'
    ? hubError('hub-validation-error', 'a path parameter is longer than the limit', { status: 414, message: 'The request URL is too long.' })
    : hubError('hub-validation-error', 'the URL does not decode (malformed percent-encoding)');
  sendError(e, req, reply);
}

export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed || !socket.writable) return;
  const e = err.code === 'HPE_HEADER_OVERFLOW'
    ? hubError('hub-validation-error', 'the request headers are over the size limit', { status: 431, message: 'The request headers are too large.' })
    : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? hubError('hub-validation-error', 'the request did not arrive in time', { status: 408, message: 'The request took too long to arrive.' })
      : hubError('hub-validation-error', 'the request is not valid HTTP');
  const id = genReqId({ headers: {} } as http.IncomingMessage);
  const body = JSON.stringify(envelope(e, { method: 'HTTP', url: '/', id } as FastifyRequest));
  socket.end(`HTTP/1.1 ${e.status} ${http.STATUS_CODES[e.status]}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nx-request-id: ${id}\r\nx-content-type-options: nosniff\r\n\r\n${body}`);
}
