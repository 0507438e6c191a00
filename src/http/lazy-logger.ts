/**
 * Request loggers created on first use.
 *
 * Fastify gives every request a child of the server logger carrying its request id, and passes
 * the route's log level along, which makes pino rebuild every log method of the child: a few
 * microseconds per request, on a path whose whole budget is ~20 µs, for a logger that at the
 * usual production levels is never written to for a successful request. This stand-in answers the
 * level checks itself and creates the real child (same bindings, same options, so the same log
 * lines) only when something is actually logged.
 */
import type { FastifyBaseLogger } from 'fastify';

type Level = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';
type Pino = FastifyBaseLogger & { levels: { values: Record<string, number> }; levelVal: number };

class LazyLogger {
  private real: FastifyBaseLogger | null = null;

  constructor(
    private readonly parent: Pino,
    private readonly bindings: Record<string, unknown>,
    private readonly opts: { level?: string; serializers?: unknown },
  ) {}

  private get logger(): FastifyBaseLogger {
    return (this.real ??= this.parent.child(this.bindings, this.opts as never));
  }

  private enabled(level: Level): boolean {
    if (this.real) return (this.real as Pino & { isLevelEnabled?(l: string): boolean }).isLevelEnabled?.(level) ?? true;
    const values = this.parent.levels.values;
    const threshold = this.opts.level ? (values[this.opts.level] ?? Infinity) : this.parent.levelVal;
    return values[level]! >= threshold;
  }

  get level(): string {
    return this.real ? this.real.level : (this.opts.level ?? this.parent.level);
  }

  set level(level: string) {
    this.logger.level = level;
  }

  isLevelEnabled(level: Level): boolean {
    return this.enabled(level);
  }

  trace(...args: unknown[]): void {
    if (this.enabled('trace')) (this.logger.trace as (...a: unknown[]) => void)(...args);
  }
  debug(...args: unknown[]): void {
    if (this.enabled('debug')) (this.logger.debug as (...a: unknown[]) => void)(...args);
  }
  info(...args: unknown[]): void {
    if (this.enabled('info')) (this.logger.info as (...a: unknown[]) => void)(...args);
  }
  warn(...args: unknown[]): void {
    if (this.enabled('warn')) (this.logger.warn as (...a: unknown[]) => void)(...args);
  }
  error(...args: unknown[]): void {
    if (this.enabled('error')) (this.logger.error as (...a: unknown[]) => void)(...args);
  }
  fatal(...args: unknown[]): void {
    if (this.enabled('fatal')) (this.logger.fatal as (...a: unknown[]) => void)(...args);
  }
  silent(): void {}

  child(bindings: Record<string, unknown>, opts?: Record<string, unknown>): FastifyBaseLogger {
    return this.logger.child(bindings, opts as never);
  }
}

/** For Fastify's `childLoggerFactory` option. */
export function lazyChildLogger(logger: FastifyBaseLogger, bindings: Record<string, unknown>, opts: object): FastifyBaseLogger {
  // A logger without pino's level table (a custom one handed in by a test) gets a plain child.
  if (!(logger as Pino).levels?.values) return logger.child(bindings, opts as never);
  return new LazyLogger(logger as Pino, bindings, opts as { level?: string }) as unknown as FastifyBaseLogger;
}
