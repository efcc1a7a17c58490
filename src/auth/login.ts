/**
 * How a browser user signs in on the login page: TLS client certificate, local password, or an upstream
 * identity provider registered through `registerLoginProvider` (the federated-login task plugs in there).
 * Password failures are rate-limited per user name and per address, and the answer never says whether the
 * user exists.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../kernel/context.ts';
import type { Db } from '../kernel/db/database.ts';
import { hashSecret, verifySecret } from '../registry/index.ts';
import type { RegistryUser } from '../registry/index.ts';
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

/** Adds an upstream provider to the login page of this service. */
export function registerLoginProvider(ctx: AppContext, provider: LoginProvider): void {
  ctx.oauth.loginProviders.push(provider);
}

export function loginProviders(ctx: AppContext): readonly LoginProvider[] {
  return ctx.oauth.loginProviders;
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
  // A limited proxy may read, not sign in to act for its owner.
  if (!identity || identity.limited) return undefined;
  const user = ctx.registry.userByDn(identity.dn);
  return user ? { user, dn: identity.dn } : undefined;
}

/**
 * Fixed-window failure counters keyed by user name and by address, kept in the database so that every
 * instance counts the same attempts: N instances behind a load balancer must not give N times the tries.
 */
export class LoginLimiter {
  readonly #db: Db;
  readonly #max: number;
  readonly #windowMs: number;

  constructor(db: Db, max: number, windowSeconds: number) {
    this.#db = db;
    this.#max = max;
    this.#windowMs = windowSeconds * 1000;
  }

  /** Seconds until `keys` may try again, or 0. */
  async retryAfter(keys: string[]): Promise<number> {
    const now = Date.now();
    const rows = await this.#db.selectFrom('login_failures').select(['key', 'count', 'since']).where('key', 'in', keys).execute();
    let wait = 0;
    for (const r of rows) {
      const since = Date.parse(r.since);
      if (now - since < this.#windowMs && Number(r.count) >= this.#max) wait = Math.max(wait, Math.ceil((since + this.#windowMs - now) / 1000));
    }
    return wait;
  }

  /** Counts one failure for each key; a window that has passed starts again at 1 (one atomic upsert). */
  async fail(keys: string[]): Promise<void> {
    const now = new Date();
    const windowStart = new Date(now.getTime() - this.#windowMs).toISOString();
    for (const key of keys) {
      await this.#db
        .insertInto('login_failures')
        .values({ key, count: 1, since: now.toISOString() })
        .onConflict((oc) =>
          oc.column('key').doUpdateSet((eb) => ({
            count: eb.case().when('login_failures.since', '<', windowStart).then(1).else(eb('login_failures.count', '+', 1)).end(),
            since: eb.case().when('login_failures.since', '<', windowStart).then(now.toISOString()).else(eb.ref('login_failures.since')).end(),
          })),
        )
        .execute();
    }
  }

  async succeed(keys: string[]): Promise<void> {
    await this.#db.deleteFrom('login_failures').where('key', 'in', keys).execute();
  }

  /** Forgets windows that have passed. */
  async purge(): Promise<void> {
    await this.#db.deleteFrom('login_failures').where('since', '<', new Date(Date.now() - this.#windowMs).toISOString()).execute();
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
