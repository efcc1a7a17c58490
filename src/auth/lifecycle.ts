/**
 * Whether a user may get tokens and use sessions now (docs/registry.md "Lifecycle"). The one place every
 * grant, the sign-in pages, browser sessions and `authenticate` ask, so that AUP acceptance joins here.
 * Job and pilot tokens are not user tokens and are not checked: running jobs keep running.
 */
import type { AppContext } from '../kernel/context.ts';
import { AccessDenied, InvalidGrant } from '../kernel/errors.ts';

/** Why `username` may not get tokens now, or undefined. */
export function tokenRefusal(ctx: Pick<AppContext, 'registry'>, username: string): string | undefined {
  const barred = ctx.registry.barred(username);
  return barred === undefined ? undefined : `user ${username} is ${barred === 'unknown user' ? 'unknown' : barred}`;
}

/** @throws AccessDenied (InvalidGrant for a refresh token, RFC 6749 §5.2) naming why the user is barred. */
export function assertMayGetTokens(ctx: Pick<AppContext, 'registry'>, username: string, as: 'access_denied' | 'invalid_grant' = 'access_denied'): void {
  const why = tokenRefusal(ctx, username);
  if (why === undefined) return;
  throw as === 'invalid_grant' ? new InvalidGrant(why) : new AccessDenied(why);
}
