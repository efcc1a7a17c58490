/** DIRAC-style results returned by the provider (camelCase) operations, which never throw. */

export interface OkResult<T> { OK: true; Value: T }
export interface ErrorResult { OK: false; Message: string; Errno?: string }
export type Result<T> = OkResult<T> | ErrorResult;

/**
 * A success result.
 * @example const r = S_OK({ sub: 'alice' }); if (r.OK) console.log(r.Value.sub);
 */
export function S_OK<T>(value: T): OkResult<T>;
export function S_OK(): OkResult<undefined>;
export function S_OK<T>(value?: T): OkResult<T | undefined> {
  return { OK: true, Value: value };
}

/**
 * An error result; `Errno` carries an OAuth error code when there is one.
 * @example return S_ERROR('token is expired');
 */
export function S_ERROR(message = 'Unknown error', errno?: string): ErrorResult {
  return errno === undefined ? { OK: false, Message: message } : { OK: false, Message: message, Errno: errno };
}

/** The message of any thrown value, for S_ERROR. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
