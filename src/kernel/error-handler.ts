/**
 * The single mapping from anything thrown to an HTTP answer. DirigoError carries its own status and code;
 * Fastify's and the database driver's errors are translated here; everything else is a 500 whose
 * description leaks nothing.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { DEFAULT_BODY_LIMIT_SETTING } from './body-limits.ts';
import { DirigoError, InsufficientStorage, InvalidRequest, PayloadTooLarge, ServerError, ServiceUnavailable, UnsupportedMediaType } from './errors.ts';

/** Connection-level failures of PostgreSQL or SQLite mean "try again later", not "bug". */
const DATABASE_UNAVAILABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', '57P01', '57P02', '57P03', '08000', '08001', '08003', '08006', 'ERR_SQLITE_BUSY']);

/** node-postgres reports a lost or refused connection without a code. */
const PG_CONNECTION_LOST = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error)/;

/**
 * @param request when known, names the limit of a body the framework refused as too large: the route's
 *   `bodyLimit` and the setting its config names (body-limits.ts routeBodyLimit), else server.bodyLimit.
 */
export function toDirigoError(err: unknown, request?: FastifyRequest): DirigoError {
  if (err instanceof DirigoError) return err;
  const e = err as FastifyError & { validation?: unknown; validationContext?: string };
  if (e?.validation) return new InvalidRequest(e.message);
  switch (e?.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      if (!request) return new PayloadTooLarge('the body is too large');
      return new PayloadTooLarge('the body', { bytes: request.routeOptions.bodyLimit, setting: request.routeOptions.config.bodyLimitSetting ?? DEFAULT_BODY_LIMIT_SETTING });
    // Multipart limits: the submission reader (jobs/submission.ts) names each with its setting; these are
    // what would get past it.
    case 'FST_REQ_FILE_TOO_LARGE':
    case 'FST_FILES_LIMIT':
    case 'FST_PARTS_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return new PayloadTooLarge(e.message);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new UnsupportedMediaType(e.message);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
    case 'FST_PROTO_VIOLATION':
      return new InvalidRequest(e.message);
  }
  if (e?.code === 'ENOSPC' || e?.code === 'EDQUOT') return new InsufficientStorage('no space left on the server to store this; try again later');
  if ((e?.code && DATABASE_UNAVAILABLE.has(e.code)) || PG_CONNECTION_LOST.test(e?.message ?? '')) {
    return new ServiceUnavailable('the database is unavailable');
  }
  if (e instanceof SyntaxError && (e as { statusCode?: number }).statusCode === 400) return new InvalidRequest(`body is not valid JSON: ${e.message}`);
  if (typeof e?.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return new DirigoError('invalid_request', e.statusCode, e.message);
  }
  return new ServerError();
}

export function errorHandler(err: unknown, request: FastifyRequest, reply: FastifyReply): void {
  const mapped = toDirigoError(err, request);
  if (mapped.status >= 500) request.log.error({ err }, 'request failed');
  else request.log.info({ error: mapped.code, status: mapped.status }, mapped.message);
  // Sent as text: a route's own response schema for this status (a partial bulk import's 400, say) must
  // not be applied to the shared error body.
  // A body the handler stopped reading (a sandbox upload that failed half-way) would keep the client
  // writing into a connection nobody reads: answer, then close it (RFC 9112 §9.6).
  if (!request.raw.complete) reply.header('connection', 'close');
  reply
    .code(mapped.status)
    .headers(mapped.headers)
    .header('x-request-id', request.id)
    .type('application/json; charset=utf-8')
    .send(JSON.stringify({ ...mapped.toJSON(), request_id: request.id }));
}
