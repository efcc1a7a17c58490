/**
 * The limits a request body can go past, as a 413 names them: the limit in bytes (or a count of parts),
 * readable, and the configuration key that sets it, so that whoever is refused knows what would fit and
 * an operator knows what to raise.
 */

/** A limit on a body or one of its parts; `setting` is its key in config.yaml. */
export type BodyLimit = { bytes: number; setting: string } | { count: number; unit: string; setting: string };

/** What a 413's JSON says of its limit (`limit` beside `error`). */
export interface BodyLimitAnswer {
  bytes?: number;
  count?: number;
  /** Readable: `4 MiB`, `1000 files`. */
  text: string;
  setting: string;
}

const UNITS = ['KiB', 'MiB', 'GiB', 'TiB'];

/** `n` bytes as a person reads them: `512 bytes`, `16 KiB`, `1.5 MiB` (binary units, as the defaults are set). */
export function readableBytes(n: number): string {
  if (n < 1024) return `${n} byte${n === 1 ? '' : 's'}`;
  let value = n;
  let unit = -1;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${Number(value.toFixed(value < 10 ? 2 : 1))} ${UNITS[unit]}`;
}

export function limitAnswer(limit: BodyLimit): BodyLimitAnswer {
  return 'bytes' in limit
    ? { bytes: limit.bytes, text: readableBytes(limit.bytes), setting: limit.setting }
    : { count: limit.count, text: `${limit.count} ${limit.unit}`, setting: limit.setting };
}

/** `what` went past `limit`, in words: "the body is larger than 1048576 bytes (1 MiB), the limit set by server.bodyLimit". */
export function tooLargeText(what: string, limit: BodyLimit): string {
  if ('bytes' in limit) {
    const readable = readableBytes(limit.bytes);
    const size = readable === `${limit.bytes} bytes` ? readable : `${limit.bytes} bytes (${readable})`;
    return `${what} is larger than ${size}, the limit set by ${limit.setting}`;
  }
  return `${what}: more than ${limit.count} ${limit.unit}, the limit set by ${limit.setting}`;
}

/** The server-wide limit of a body whose route sets none of its own. */
export const DEFAULT_BODY_LIMIT_SETTING = 'server.bodyLimit';

/**
 * Route options for a body limit of its own: Fastify enforces `bodyLimit`, and the route's 413 names
 * `setting` (error-handler.ts reads it back from the route's config).
 * @example
 *   app.post('/jobs', { ...routeBodyLimit(config.jsonBodyLimit, 'jobs.jsonBodyLimit'), schema }, handler);
 */
export function routeBodyLimit(bytes: number, setting: string): { bodyLimit: number; config: { bodyLimitSetting: string } } {
  return { bodyLimit: bytes, config: { bodyLimitSetting: setting } };
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The configuration key of the route's `bodyLimit` (routeBodyLimit); server.bodyLimit when absent. */
    bodyLimitSetting?: string;
  }
}
