/**
 * Work for an HTTP request that stops when its client leaves: `work` gets a signal that fires when
 * the connection closes before the answer was written (a picker scrolled past a tile, a tab was
 * closed). Work not yet begun is skipped, a decode is killed, an upstream read is aborted. Its
 * reason is the error the request ends with (503: logged at warn; the client is not there to read it).
 */
import type { ServerResponse } from 'node:http';
import { hubError } from '../errors.js';

export async function whileConnected<T>(res: ServerResponse, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const gone = new AbortController();
  const onClose = () => {
    if (!res.writableFinished) gone.abort(hubError('hub-unavailable', 'the client closed the connection before its answer was ready'));
  };
  res.once('close', onClose);
  try {
    return await work(gone.signal);
  } finally {
    res.off('close', onClose);
  }
}
