/**
 * Catalogue paths: canonical absolute POSIX paths, carried in URLs as URL-safe base 64 (RFC 4648 §5).
 *
 * Decoding rules (anything else is 400 invalid_request naming the problem):
 * - the alphabet is RFC 4648 §5 (`A-Z a-z 0-9 - _`); the standard alphabet's `+` and `/` are refused so
 *   that one path has one spelling per padding choice; padding `=` is optional but, when present, must be
 *   complete; trailing bits must be zero (the encoding must round-trip);
 * - the bytes must be UTF-8; the path must start with `/`, have no empty, `.` or `..` segment, no NUL or
 *   other C0 control character, no trailing `/` except for the root, at most 4096 bytes and 255 bytes per name.
 */
import { InvalidRequest, UriTooLong } from '../kernel/errors.ts';

export const MAX_PATH_BYTES = 4096;
export const MAX_NAME_BYTES = 255;
/** The longest catalogue path in a URL: MAX_PATH_BYTES in base 64 with its padding. */
export const MAX_PATH_PARAM_CHARS = Math.ceil(MAX_PATH_BYTES / 3) * 4;

/** The answer to a URL segment longer than any catalogue path (the router's parameter limit). */
export function pathParamTooLong(): UriTooLong {
  return new UriTooLong(`a path segment is longer than ${MAX_PATH_PARAM_CHARS} characters (a catalogue path has at most ${MAX_PATH_BYTES} bytes)`);
}

const BASE64URL = /^[A-Za-z0-9_-]*(={0,2})$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Why `path` is not canonical, or undefined when it is. */
export function pathProblem(path: string): string | undefined {
  if (!path.startsWith('/')) return 'is not absolute (it must start with /)';
  if (Buffer.byteLength(path) > MAX_PATH_BYTES) return `is longer than ${MAX_PATH_BYTES} bytes`;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(path)) return 'contains a NUL or control character';
  if (path === '/') return undefined;
  if (path.endsWith('/')) return 'ends with /';
  for (const segment of path.slice(1).split('/')) {
    if (segment === '') return 'has an empty segment (//)';
    if (segment === '.' || segment === '..') return `has a '${segment}' segment`;
    if (Buffer.byteLength(segment) > MAX_NAME_BYTES) return `has a name longer than ${MAX_NAME_BYTES} bytes`;
  }
  return undefined;
}

/** @throws InvalidRequest when `path` is not canonical. */
export function checkPath(path: string, what = 'path'): string {
  const problem = pathProblem(path);
  if (problem) throw new InvalidRequest(`${what} ${JSON.stringify(path)} ${problem}`);
  return path;
}

/**
 * Decodes a path segment of a catalogue URL.
 * @example decodePathParam('L2RhdGEvcnVuMQ') // '/data/run1'
 * @throws InvalidRequest naming what is wrong with the encoding or the path.
 */
export function decodePathParam(encoded: string, what = 'path'): string {
  if (encoded.includes('+') || encoded.includes('/')) {
    throw new InvalidRequest(`${what}: '+' and '/' are not URL-safe base 64; write them as '-' and '_' (RFC 4648 §5)`);
  }
  const m = BASE64URL.exec(encoded);
  if (!m) throw new InvalidRequest(`${what}: not URL-safe base 64 (RFC 4648 §5)`);
  const padding = m[1]!.length;
  const body = encoded.slice(0, encoded.length - padding);
  if (body.length % 4 === 1) throw new InvalidRequest(`${what}: truncated base 64 (length ${body.length})`);
  if (padding > 0 && encoded.length % 4 !== 0) throw new InvalidRequest(`${what}: wrong base 64 padding`);
  const bytes = Buffer.from(body, 'base64url');
  if (bytes.toString('base64url') !== body) throw new InvalidRequest(`${what}: not canonical base 64 (non-zero trailing bits)`);
  let path: string;
  try {
    path = utf8.decode(bytes);
  } catch {
    throw new InvalidRequest(`${what}: the decoded bytes are not UTF-8`);
  }
  return checkPath(path, what);
}

/** Parent of a canonical path; the root's parent is undefined. */
export function parentOf(path: string): string | undefined {
  if (path === '/') return undefined;
  const i = path.lastIndexOf('/');
  return i === 0 ? '/' : path.slice(0, i);
}

export function baseName(path: string): string {
  return path === '/' ? '/' : path.slice(path.lastIndexOf('/') + 1);
}

/** Ancestors from the root down, excluding `path` itself. */
export function ancestorsOf(path: string): string[] {
  const out: string[] = [];
  for (let p = parentOf(path); p !== undefined; p = parentOf(p)) out.unshift(p);
  return out;
}

export function joinPath(dir: string, name: string): string {
  return dir === '/' ? `/${name}` : `${dir}/${name}`;
}

/**
 * Bounds of the strict descendants of `path` for an index range scan: `lower <= p < upper`.
 * '0' is the code point after '/', so `[dir/, dir0)` holds exactly the paths under dir on a bytewise
 * (SQLite BINARY, PostgreSQL "C") collation.
 */
export function descendantRange(path: string): { lower: string; upper: string } | undefined {
  if (path === '/') return undefined;
  return { lower: `${path}/`, upper: `${path}0` };
}
