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

/**
 * Why `username` must first accept the AUP (docs/registry.md "AUP"), or undefined. Not a bar: sessions and
 * access tokens stay valid (the user accepts with them), only new tokens wait.
 */
export function aupRefusal(ctx: Pick<AppContext, 'registry' | 'publicUrl'>, username: string): string | undefined {
  const pending = ctx.registry.aupPending(username);
  if (!pending) return undefined;
  return `user ${username} has not accepted the acceptable-use policy version ${pending.version}: read it at ${ctx.publicUrl}/registry/aup and accept it by signing in through the browser or with POST /registry/aup/accept`;
}

/**
 * @throws AccessDenied (InvalidGrant for a refresh token, RFC 6749 §5.2) naming why the user is barred;
 * AccessDenied when the AUP waits for acceptance.
 */
export function assertMayGetTokens(ctx: Pick<AppContext, 'registry' | 'publicUrl'>, username: string, as: 'access_denied' | 'invalid_grant' = 'access_denied'): void {
  const why = tokenRefusal(ctx, username);
  if (why !== undefined) throw as === 'invalid_grant' ? new InvalidGrant(why) : new AccessDenied(why);
  const aup = aupRefusal(ctx, username);
  if (aup !== undefined) throw new AccessDenied(aup);
}
