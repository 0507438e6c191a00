/**
 * oauth4webapi's `customFetch` over a connector's kit upstream client, so token, refresh and
 * discovery requests get the connector's address policy (a tenant's serverUrl cannot point the
 * hub at a private address), deadline and circuit breaker like every other upstream call. Error
 * statuses are handed back as responses: reading OAuth error bodies is oauth4webapi's job.
 */
import { Readable } from 'node:stream';
import type { UpstreamClient } from '../kit/http.js';

const PASS_THROUGH = [400, 401, 403, 404, 405, 409, 410, 415, 422, 429, 500, 501, 502, 503, 504];

export type CustomFetch = (url: string, options: { method: string; headers: Record<string, string>; body?: unknown; redirect?: string }) => Promise<Response>;

export function kitFetch(http: UpstreamClient): CustomFetch {
  return async (url, options) => {
    const body = options.body === undefined || options.body === null ? undefined
      : typeof options.body === 'string' ? options.body : Buffer.from(await new Response(options.body as BodyInit).arrayBuffer());
    const r = await http.send({
      method: options.method, url, headers: options.headers, body,
      accept: PASS_THROUGH, idempotent: options.method === 'GET', what: `OAuth ${new URL(url).pathname}`,
    });
    const headers = new Headers();
    for (const [k, v] of Object.entries(r.headers)) for (const x of v === undefined ? [] : [v].flat()) headers.append(k, x);
    return new Response(Readable.toWeb(r.body) as ReadableStream, { status: r.status, headers });
  };
}
