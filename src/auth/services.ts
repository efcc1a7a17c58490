/**
 * The authorization server's per-service state, built once per AppContext: client registry, shared
 * revocation list, grant store, browser sessions and the login rate limiter. Background duties (revocation
 * polling, purging) start with the routes and stop with ctx.close().
 */
import type { AppContext } from '../kernel/context.ts';
import { ClientRegistry } from '../registry/index.ts';
import { RevocationList } from './revocation.ts';
import { OAuthStore } from './store.ts';
import { SessionStore } from './sessions.ts';
import { LoginLimiter } from './login.ts';
import { runDuty } from '../cluster/index.ts';

export interface OAuthServices {
  clients: ClientRegistry;
  revocations: RevocationList;
  store: OAuthStore;
  sessions: SessionStore;
  limiter: LoginLimiter;
}

const services = new WeakMap<AppContext, OAuthServices>();
const started = new WeakSet<AppContext>();

const PURGE_MS = 10 * 60_000;

export function oauth(ctx: AppContext): OAuthServices {
  let s = services.get(ctx);
  if (!s) {
    const c = ctx.config.oauth;
    const revocations = new RevocationList(ctx.db);
    s = {
      clients: new ClientRegistry(ctx.db, ctx.config.clients),
      revocations,
      store: new OAuthStore(ctx.db, revocations, {
        code: c.codeLifetime,
        refresh: c.refreshTokenLifetime,
        device: c.deviceCodeLifetime,
        access: ctx.config.tokens.accessTokenLifetime,
      }),
      sessions: new SessionStore(ctx.db, c.sessionLifetime),
      limiter: new LoginLimiter(ctx.db, c.loginAttempts, c.loginWindow),
    };
    services.set(ctx, s);
  }
  return s;
}

/** Installs the shared revocation list on the token service and starts the background duties. */
export async function startOAuth(ctx: AppContext): Promise<void> {
  if (started.has(ctx)) return;
  started.add(ctx);
  const s = oauth(ctx);
  await s.revocations.start();
  ctx.tokens.revocations = s.revocations;
  // Purging runs on one instance at a time when several share the database (a lease in cluster_duties).
  const purge = runDuty(ctx.db, 'oauth-purge', PURGE_MS, async () => void (await Promise.all([s.store.purge(), s.sessions.purge(), s.revocations.purge(), s.limiter.purge()])), { warn: () => {} });
  ctx.onClose(async () => {
    await purge.stop();
    s.revocations.stop();
  });
}
