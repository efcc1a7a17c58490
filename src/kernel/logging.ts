/**
 * Logger options: access tokens, codes and secrets never reach the log, whether they travel in headers,
 * query strings or bodies (bodies are never logged).
 */
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { BufferedOutput } from './log-output.ts';
import { RequestLogger } from './request-logger.ts';
import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyServerOptions, type FastifyRequest } from 'fastify';

/** An incoming `X-Request-Id` is kept when it is short and made of characters safe in logs and headers. */
const VALID_REQUEST_ID = /^[A-Za-z0-9._~:@/+=-]{1,128}$/;

/**
 * The request's id: the caller's `X-Request-Id` when valid, otherwise a random UUID, unique across
 * instances (a per-process counter is not).
 */
export function requestIdFrom(header: string | string[] | undefined): string {
  return typeof header === 'string' && VALID_REQUEST_ID.test(header) ? header : randomUUID();
}

// signature: a presigned sandbox URL's (/sandboxes/{sha256}/content?…&signature=), good until it expires.
const SECRET_NAMES = 'access_token|refresh_token|id_token|code|code_verifier|client_secret|secret|password|device_code|subject_token|actor_token|token|assertion|client_assertion|state|user_code|signature';
const SECRET_PARAMETERS = new RegExp(`^(${SECRET_NAMES})$`, 'i');
/** A query with no escapes names its parameters as they are: one test finds whether any is secret. */
const PLAIN_SECRET_PARAMETER = new RegExp(`(?:^|&)(?:${SECRET_NAMES})(?:=|&|$)`, 'i');

/** `/x?access_token=abc&a=1` → `/x?access_token=[REDACTED]&a=1`. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q === -1) return url;
  // Every request's access line passes here: the common query (no escapes, no secret) is returned as is.
  const query = url.slice(q + 1);
  if (!query.includes('%') && !query.includes('+') && !PLAIN_SECRET_PARAMETER.test(query)) return url;
  const parts = query
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const key = decodeURIComponentSafe(eq === -1 ? pair : pair.slice(0, eq));
      return SECRET_PARAMETERS.test(key) && eq !== -1 ? `${pair.slice(0, eq)}=[REDACTED]` : pair;
    });
  return `${url.slice(0, q)}?${parts.join('&')}`;
}

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return s;
  }
}

const WRITES_INFO = new Set(['info', 'debug', 'trace']);

/** Who made the request, for the access log; auth decorates requests with a principal once it knows. */
function principalOf(request: FastifyRequest): string | undefined {
  const principal = (request as { principal?: { username?: string; clientId?: string } | null }).principal;
  return principal ? principal.username || `client:${principal.clientId}` : undefined;
}

/** What pino keeps on a logger that the access line reads: public symbols (`pino.symbols`). */
interface PinoInternals {
  [pino.symbols.timeSym]: () => string;
  [pino.symbols.streamSym]: { write(line: string): unknown; [METADATA]?: boolean };
}
/** A destination that reads the last line's fields (pino.multistream) needs pino's own write. */
const METADATA = Symbol.for('pino.metadata');

/**
 * One access line per request, written when the response is done: method, route, redacted URL, status,
 * duration and principal (the request id comes from the request's logger). Fastify's default writes two
 * lines with full serializers, which cost a fifth of the throughput of a small request.
 *
 * The info line is written as text, in the form pino gives it (level, time, the logger's bindings and
 * the request id, then the fields and `msg`): every request pays for it, and pino's generic path (an
 * object, its serializers and redaction, a walk of its keys) was most of the line's cost. Its fields
 * need no redaction: the URL is redacted here and the rest are names and numbers.
 */
export class AccessLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (!error && !WRITES_INFO.has(request.log.level)) return;
    const route = request.routeOptions.url ?? 'unmatched';
    const url = redactUrl(request.url);
    const ms = Math.round(reply.elapsedTime * 10) / 10;
    const principal = principalOf(request);
    const log = request.log;
    const root = log instanceof RequestLogger ? (log.parent as unknown as PinoInternals) : undefined;
    const stream = root?.[pino.symbols.streamSym];
    if (error || !root || !stream || stream[METADATA]) {
      const line = { method: request.method, route, url, status: reply.statusCode, ms, principal };
      if (error) log.error({ ...line, err: error }, 'request failed after its response');
      else log.info(line, 'request');
      return;
    }
    const who = principal === undefined ? '' : `,"principal":${JSON.stringify(principal)}`;
    stream.write(
      `{"level":30${root[pino.symbols.timeSym]()}${(log as RequestLogger).bindingsText},"method":${JSON.stringify(request.method)},"route":${JSON.stringify(route)},"url":${JSON.stringify(url)},"status":${reply.statusCode},"ms":${ms}${who},"msg":"request"}\n`,
    );
  }
}

/** Fastify's options for request ids and logging. */
export function loggingOptions(level: string, stream?: pino.DestinationStream): Pick<FastifyServerOptions, 'logger' | 'genReqId' | 'requestIdHeader' | 'logController' | 'childLoggerFactory'> {
  return {
    logger: loggerOptions(level, stream),
    requestIdHeader: false,
    genReqId: (req) => requestIdFrom(req.headers['x-request-id']),
    logController: new AccessLog({ requestIdLogLabel: 'requestId' }),
    // A route-level log level needs a real child at once; Dirigo sets none.
    childLoggerFactory: (logger, bindings, options) =>
      options.level === undefined ? (new RequestLogger(logger as pino.Logger, String(bindings.requestId)) as unknown as FastifyBaseLogger) : logger.child(bindings, options),
  };
}

/** One per process: every service in it shares standard output. */
let stdout: BufferedOutput | undefined;

function loggerOptions(level: string, stream?: pino.DestinationStream): FastifyServerOptions['logger'] {
  return {
    level,
    stream: stream ?? (stdout ??= new BufferedOutput(1)),
    // A safety net: no code logs headers, bodies or credentials. Exact paths only: a wildcard path makes
    // every line pay for a walk of its object (a third of the cost of an access line).
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization', 'headers.cookie', 'password', 'client_secret', 'access_token', 'refresh_token'],
      censor: '[REDACTED]',
    },
    serializers: {
      req(request: FastifyRequest) {
        return {
          method: request.method,
          url: redactUrl(request.url),
          remoteAddress: request.ip,
        };
      },
      res(reply: { statusCode: number }) {
        return { statusCode: reply.statusCode };
      },
    },
  };
}
