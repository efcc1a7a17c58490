/**
 * Each request's logger, made when the request first logs something other than its access line.
 * Fastify makes a pino child logger per request for the request id; building one (its bindings
 * serialised to text) cost about as much as the access line itself, and most requests log nothing
 * else. This stands in for it: the same methods, forwarded to the child once one is needed, and the
 * parent's bindings and the request id for the access line (logging.ts), which is written as text.
 */
import type { FastifyBaseLogger } from 'fastify';
import pino from 'pino';

type Method = 'info' | 'error' | 'debug' | 'fatal' | 'warn' | 'trace';

export class RequestLogger {
  readonly parent: pino.Logger;
  readonly requestId: string;
  #child: FastifyBaseLogger | undefined;

  constructor(parent: pino.Logger, requestId: string) {
    this.parent = parent;
    this.requestId = requestId;
  }

  get #logger(): FastifyBaseLogger {
    return (this.#child ??= this.parent.child({ requestId: this.requestId }));
  }

  get level(): string {
    return (this.#child ?? this.parent).level;
  }

  set level(level: string) {
    this.#logger.level = level;
  }

  /** The `"requestId":…` binding as pino writes it, after the parent's. */
  get bindingsText(): string {
    return `${(this.parent as unknown as Record<symbol, string>)[pino.symbols.chindingsSym]},"requestId":${JSON.stringify(this.requestId)}`;
  }

  // Methods on the prototype, not arrow-function fields: a request must not pay for seven closures.
  info(...args: unknown[]): void {
    this.#forward('info', args);
  }
  error(...args: unknown[]): void {
    this.#forward('error', args);
  }
  warn(...args: unknown[]): void {
    this.#forward('warn', args);
  }
  debug(...args: unknown[]): void {
    this.#forward('debug', args);
  }
  trace(...args: unknown[]): void {
    this.#forward('trace', args);
  }
  fatal(...args: unknown[]): void {
    this.#forward('fatal', args);
  }
  silent(): void {}

  child(bindings: pino.Bindings, options?: pino.ChildLoggerOptions): FastifyBaseLogger {
    return this.#logger.child(bindings, options);
  }

  #forward(method: Method, args: unknown[]): void {
    // A level the parent does not write needs no child.
    if (!this.#child && !this.parent.isLevelEnabled(method)) return;
    (this.#logger[method] as (...a: unknown[]) => void)(...args);
  }
}
