/**
 * The authorization server's per-service state, built once by the composition root and reached as
 * `ctx.oauth` (auth/context.ts): client registry, shared revocation list, grant store, browser sessions,
 * the login rate limiter and providers, and the memory of used client assertions. Background duties (revocation polling, purging) start with the routes and
 * stop with ctx.close().
 */
import type { AppConfig } from '../kernel/config.ts';
import type { AppContext } from '../kernel/context.ts';
import type { Db } from '../kernel/db/database.ts';
import { ClientRegistry } from '../registry/index.ts';
import { RevocationList } from './revocation.ts';
import { OAuthStore } from './store.ts';
import { SessionStore } from './sessions.ts';
import { tokenRefusal } from './lifecycle.ts';
import { LoginLimiter, type LoginProvider } from './login.ts';
import { runDuty } from '../cluster/index.ts';

const PURGE_MS = 10 * 60_000;

export class OAuthServices {
  readonly clients: ClientRegistry;
  readonly revocations: RevocationList;
  readonly store: OAuthStore;
  readonly sessions: SessionStore;
  readonly limiter: LoginLimiter;
  /** Upstream providers on the login page (src/federation registers them when its routes start). */
  readonly loginProviders: LoginProvider[] = [];
  /**
   * `client jti` → expiry (s) of client assertions already used on this instance (RFC 7523 §3 item 7
   * lets the server refuse replays). Memory only: an assertion replayed to another instance within its
   * minutes of life is not caught, which the short lifetime bounds (client-assertion.ts).
   */
  readonly usedAssertions = new Map<string, number>();
  #started = false;

  constructor(db: Db, config: AppConfig) {
    const c = config.oauth;
    this.clients = new ClientRegistry(db, config.clients);
    this.revocations = new RevocationList(db);
    this.store = new OAuthStore(db, this.revocations, {
      code: c.codeLifetime,
      refresh: c.refreshTokenLifetime,
      device: c.deviceCodeLifetime,
      access: config.tokens.accessTokenLifetime,
    });
    this.sessions = new SessionStore(db, c.sessionLifetime);
    this.limiter = new LoginLimiter(db, c.loginAttempts, c.loginWindow);
  }

  /** Installs the shared revocation list on the token service and starts the background duties, once. */
  async start(ctx: AppContext): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    await this.revocations.start();
    ctx.tokens.revocations = this.revocations;
    this.sessions.barred = (username) => tokenRefusal(ctx, username);
    // Purging runs on one instance at a time when several share the database (a lease in cluster_duties).
    const purge = runDuty(ctx.db, 'oauth-purge', PURGE_MS, async () => void (await Promise.all([this.store.purge(), this.sessions.purge(), this.revocations.purge(), this.limiter.purge()])), { warn: () => {} });
    ctx.onClose(async () => {
      await purge.stop();
      this.revocations.stop();
    });
  }
}
