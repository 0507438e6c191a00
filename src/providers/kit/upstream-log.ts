/**
 * The connectors' log. The upstream client (http.ts) reports here what only it knows: an upstream
 * that could not be reached, and why (refused, DNS, timeout, TLS). Providers are built with the hub,
 * before the Fastify app and its logger exist, so they log into a relay that the app connects to
 * its logger when it is built (src/app.ts); until then, and in processes without an app (`damhub
 * mcp`), lines are dropped.
 */

/** The part of a pino logger the connectors use. */
export interface UpstreamLog {
  warn(fields: Record<string, unknown>, msg: string): void;
}

export class LogRelay implements UpstreamLog {
  private sink: UpstreamLog | null = null;

  /** From now on, lines go to `sink` (the app's logger). */
  attach(sink: UpstreamLog): void {
    this.sink = sink;
  }

  warn(fields: Record<string, unknown>, msg: string): void {
    this.sink?.warn(fields, msg);
  }
}
