/**
 * How a browser user signs in on the login page: TLS client certificate, local password, or an upstream
 * identity provider registered through `registerLoginProvider` (the federated-login task plugs in there).
 * Password failures are rate-limited per user name and per address, and the answer never says whether the
 * user exists.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../server/context.ts';
import { hashSecret, verifySecret } from '../registry/passwords.ts';
import type { RegistryUser } from '../registry/registry.ts';
import { certificateIdentity } from './client-certificate.ts';
import type { BrowserSession } from './sessions.ts';

/** An upstream provider button on the login page ("Sign in with <label>"). */
export interface LoginProvider {
  /** Short id used in URLs (`/oauth2/login/<id>`). */
  id: string;
  label: string;
  /**
   * Starts the upstream login for the pending interaction (usually a redirect to the provider). On return
   * the provider's callback calls `completeLogin(ctx, request, reply, interactionId, username, method)`
   * from interaction-routes.ts, which signs the browser in and continues to consent.
   */
  start(ctx: AppContext, request: FastifyRequest, reply: FastifyReply, interactionId: string): Promise<unknown>;
  /**
   * The groups a session this provider signed in may choose on the consent page, or undefined when the
   * session is not one of its own. The result is further limited to the user's registry groups.
   */
  groups?(ctx: AppContext, session: BrowserSession, user: RegistryUser): Promise<readonly string[] | undefined>;
  /** Origins the login form may be redirected to (the Content-Security-Policy form-action of the login page). */
  origins?(): string[];
}

const providers = new WeakMap<AppContext, LoginProvider[]>();

/** Adds an upstream provider to the login page of this service. */
export function registerLoginProvider(ctx: AppContext, provider: LoginProvider): void {
  providers.set(ctx, [...(providers.get(ctx) ?? []), provider]);
}

export function loginProviders(ctx: AppContext): readonly LoginProvider[] {
  return providers.get(ctx) ?? [];
}

/** Groups the signed-in `session` may choose: the user's registry groups, narrowed by its login provider. */
export async function sessionGroups(ctx: AppContext, session: BrowserSession, user: RegistryUser): Promise<readonly string[]> {
  for (const p of loginProviders(ctx)) {
    const allowed = await p.groups?.(ctx, session, user);
    if (allowed) return user.groups.filter((g) => allowed.includes(g));
  }
  return user.groups;
}

/** The registered user behind the browser's TLS client certificate, if it sent a valid one. */
export function certificateLoginUser(ctx: AppContext, request: FastifyRequest): { user: RegistryUser; dn: string } | undefined {
  let identity;
  try {
    identity = certificateIdentity(ctx, request);
  } catch {
    return undefined;
  }
  if (!identity) return undefined;
  const user = ctx.registry.userByDn(identity.dn);
  return user ? { user, dn: identity.dn } : undefined;
}

/** Fixed-window failure counters keyed by user name and by address. Per instance. */
export class LoginLimiter {
  readonly #max: number;
  readonly #windowMs: number;
  readonly #failures = new Map<string, { count: number; since: number }>();

  constructor(max: number, windowSeconds: number) {
    this.#max = max;
    this.#windowMs = windowSeconds * 1000;
  }

  /** Seconds until `keys` may try again, or 0. */
  retryAfter(keys: string[]): number {
    const now = Date.now();
    let wait = 0;
    for (const key of keys) {
      const f = this.#failures.get(key);
      if (!f) continue;
      if (now - f.since >= this.#windowMs) this.#failures.delete(key);
      else if (f.count >= this.#max) wait = Math.max(wait, Math.ceil((f.since + this.#windowMs - now) / 1000));
    }
    return wait;
  }

  fail(keys: string[]): void {
    const now = Date.now();
    if (this.#failures.size > 100_000) this.#failures.clear();
    for (const key of keys) {
      const f = this.#failures.get(key);
      if (!f || now - f.since >= this.#windowMs) this.#failures.set(key, { count: 1, since: now });
      else f.count++;
    }
  }

  succeed(keys: string[]): void {
    for (const key of keys) this.#failures.delete(key);
  }
}

let dummyHash: Promise<string> | undefined;

/**
 * Checks a local password. Unknown users cost the same scrypt work as known ones, and both failures
 * produce the same outcome, so the answer does not reveal which names exist.
 */
export async function passwordLogin(ctx: AppContext, username: string, password: string): Promise<RegistryUser | undefined> {
  const user = ctx.registry.user(username);
  dummyHash ??= hashSecret('dirigo-dummy-password');
  const stored = user?.passwordHash ?? (await dummyHash);
  const ok = await verifySecret(password, stored);
  return ok && user?.passwordHash ? user : undefined;
}
