/**
 * One upstream OpenID provider on the login page. The browser's POST to `/oauth2/login/<name>` starts an
 * authorization-code request (PKCE S256, state and nonce from `OAuth2IdProvider.submitNewSession`) whose
 * state, verifier and nonce are stored server-side, bound to the browser session and the pending
 * interaction. The callback accepts only a state this browser session started (once), checks RFC 9207 `iss`,
 * lets `parseAuthResponse` redeem the code and verify the ID token, matches the account to a registry user
 * and records which Dirigo groups the sign-in allows: the upstream groups through `groupMapping`,
 * intersected with the user's registry groups (the registry stays the authority; upstream groups only
 * narrow the choice). Codes, tokens, states and verifiers are never logged.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { OAuth2IdProvider, type UserInfo } from '@dirigo/idp-client';
import { nowIso } from '../kernel/db/database.ts';
import type { AppContext } from '../kernel/context.ts';
import type { RegistryUser } from '../registry/index.ts';
import type { LoginProvider } from '../auth/index.ts';
import { completeLogin } from '../auth/index.ts';
import { errorPage } from '../auth/index.ts';
import type { BrowserSession } from '../auth/index.ts';
import { hashToken } from '../auth/index.ts';
import type { IdentityProviderConfig } from './config-schema.ts';
import { RegistrationDesk } from './registration.ts';

/** Upstream logins must finish within this (the idp-client keeps its own sessions as long). */
const REQUEST_LIFETIME_MS = 10 * 60_000;

const RESTART = 'Go back to the application and start again.';

export class FederatedProvider implements LoginProvider {
  readonly id: string;
  readonly label: string;
  readonly #config: IdentityProviderConfig;
  readonly #ctx: AppContext;
  #idp: OAuth2IdProvider | undefined;
  readonly registration: RegistrationDesk;

  constructor(ctx: AppContext, config: IdentityProviderConfig) {
    this.#ctx = ctx;
    this.#config = config;
    this.registration = new RegistrationDesk(ctx, config);
    this.id = config.name;
    this.label = config.displayName;
  }

  /** The session method recorded for browsers this provider signed in (fits oauth_sessions.auth_method). */
  get method(): string {
    return `idp:${this.#config.name}`;
  }

  get callbackPath(): string {
    return `/oauth2/federation/${this.#config.name}/callback`;
  }

  /** Built on first use: the redirect URI needs the public URL, known once the server listens. */
  get idp(): OAuth2IdProvider {
    if (!this.#idp) {
      const c = this.#config;
      this.#idp = new OAuth2IdProvider({
        name: c.displayName,
        ...(c.issuer ? { issuer: c.issuer } : { server_metadata_url: c.metadataUrl }),
        client_id: c.clientId,
        ...(c.clientSecret ? { client_secret: c.clientSecret } : { token_endpoint_auth_method: 'none' }),
        scope: c.scopes.join(' '),
        redirect_uri: this.#ctx.publicUrl + this.callbackPath,
        group_mapping: { ...c.groupMapping },
        verify: c.verify ?? true,
        // Proxies and CA bundles come from the config only (nothing but config.ts reads the environment).
        trust_env: false,
        default_timeout: 15,
      });
    }
    return this.#idp;
  }

  origins(): string[] {
    const out = new Set<string>();
    for (const url of [this.#config.issuer, this.#config.metadataUrl, this.#idp?.metadata.authorization_endpoint]) {
      if (typeof url === 'string') out.add(new URL(url).origin);
    }
    return [...out];
  }

  async close(): Promise<void> {
    await this.#idp?.close();
  }

  /** POST /oauth2/login/<name>: sends the browser to the provider's authorization endpoint. */
  async start(ctx: AppContext, request: FastifyRequest, reply: FastifyReply, interactionId: string): Promise<unknown> {
    const session = await ctx.oauth.sessions.current(request);
    if (!session) return errorPage(reply, 400, 'Sign-in expired', `This sign-in request has expired. ${RESTART}`);
    const started = await this.idp.submitNewSession();
    if (!started.OK) {
      request.log.warn({ provider: this.id, errno: started.Errno }, 'federated login: cannot start');
      return errorPage(reply, 502, 'Sign-in unavailable', `${this.label} cannot be reached right now. Try again later or use another sign-in method.`);
    }
    const state = new URL(started.Value).searchParams.get('state') ?? '';
    const kept = this.idp.getSession(state);
    if (!kept) return errorPage(reply, 500, 'Sign-in unavailable', `The sign-in with ${this.label} could not be prepared.`);
    const db = ctx.db;
    await db.deleteFrom('federation_requests').where('expires_at', '<', nowIso()).execute();
    await db
      .insertInto('federation_requests')
      .values({
        state_hash: hashToken(state),
        session_hash: session.idHash,
        interaction_id: interactionId,
        provider: this.id,
        state,
        code_verifier: kept.code_verifier ?? null,
        nonce: kept.nonce ?? null,
        expires_at: new Date(Date.now() + REQUEST_LIFETIME_MS).toISOString(),
      })
      .execute();
    return reply.redirect(started.Value, 303);
  }

  /** Groups a session signed in by this provider may choose; undefined for sessions of other methods. */
  async groups(ctx: AppContext, session: BrowserSession): Promise<readonly string[] | undefined> {
    if (session.authMethod !== this.method) return undefined;
    const row = await ctx.db.selectFrom('federation_sessions').select(['groups', 'provider']).where('session_hash', '=', session.idHash).executeTakeFirst();
    // Fail closed: a federated session without its record allows nothing.
    return row && row.provider === this.id ? (JSON.parse(row.groups) as string[]) : [];
  }

  /** GET /oauth2/federation/<name>/callback (RFC 6749 §4.1.2, OIDC Core §3.1.2.5). */
  /** `q`: the callback's query, as the route's schema checked it. */
  async callback(request: FastifyRequest, q: Readonly<Record<string, string | undefined>>, reply: FastifyReply): Promise<FastifyReply> {
    const ctx = this.#ctx;
    const { sessions } = ctx.oauth;
    const session = await sessions.current(request);
    if (!session) return errorPage(reply, 400, 'Sign-in expired', `This browser has no sign-in in progress (its session expired or cookies are blocked). ${RESTART}`);
    const pending = await this.#takeRequest(q.state, session);
    if (!pending) {
      return errorPage(reply, 400, 'Sign-in failed', `The answer from ${this.label} does not belong to a sign-in started in this browser (state mismatch). ${RESTART}`);
    }
    if (!(await sessions.interaction(session, pending.interaction_id))) return errorPage(reply, 400, 'Sign-in expired', `This sign-in request has expired. ${RESTART}`);
    // RFC 9207 §2.4: an iss that is not this provider's means a mix-up; refuse before redeeming anything.
    await this.idp.fetch_metadata();
    if (q.iss !== undefined && q.iss !== this.idp.metadata.issuer) {
      return errorPage(reply, 400, 'Sign-in failed', `The answer claims to come from another issuer than ${this.label}. ${RESTART}`);
    }
    if (q.error !== undefined) {
      const detail = q.error_description ? `${q.error}: ${q.error_description.slice(0, 300)}` : q.error;
      request.log.info({ provider: this.id, error: q.error.slice(0, 64) }, 'federated login: upstream error');
      return errorPage(reply, q.error === 'access_denied' ? 403 : 502, 'Sign-in refused', `${this.label} did not sign you in (${detail}). ${RESTART}`);
    }
    const result = await this.idp.parseAuthResponse(this.#ctx.publicUrl + request.url, {
      state: pending.state,
      ...(pending.code_verifier ? { code_verifier: pending.code_verifier } : {}),
      ...(pending.nonce ? { nonce: pending.nonce } : {}),
    });
    if (!result.OK) {
      request.log.warn({ provider: this.id, errno: result.Errno }, 'federated login: the answer could not be verified');
      return errorPage(reply, 502, 'Sign-in failed', `The sign-in with ${this.label} could not be completed (${result.Errno ?? 'invalid response'}). ${RESTART}`);
    }
    const info = result.Value;
    let user = this.#match(info);
    if (!user.ok && this.#config.registration === 'approval' && info.issuer) return this.registration.offer(reply, session, pending.interaction_id, info);
    if (!user.ok && this.#config.registration === 'auto' && info.issuer) {
      const name = await this.registration.registerNow(info);
      request.log.info({ provider: this.id, user: name }, 'federated login: user registered automatically');
      const created = ctx.registry.user(name);
      user = created ? { ok: true, user: created } : user;
    }
    if (!user.ok) return errorPage(reply, 403, 'Unknown user', user.message);
    // A provider that registers people vouches for its registration group as well as for the mapped ones.
    const vouched = this.#config.registration === 'refuse' || !this.#config.registrationGroup ? info.groups : [...info.groups, this.#config.registrationGroup];
    const allowed = user.user.groups.filter((g) => vouched.includes(g));
    if (allowed.length === 0) {
      const seen = info.upstream_groups.length ? `It named the groups ${info.upstream_groups.slice(0, 10).join(', ')}` : 'It named no groups';
      return errorPage(reply, 403, 'No group', `Your ${this.label} account gives ${user.user.name} none of its Dirigo groups. ${seen}; ask your administrator to map one to a Dirigo group you belong to.`);
    }
    return completeLogin(ctx, request, reply, pending.interaction_id, user.user.name, this.method, async (fresh) => {
      await ctx.db
        .insertInto('federation_sessions')
        .values({ session_hash: fresh.idHash, provider: this.id, groups: JSON.stringify(allowed), expires_at: new Date(Date.now() + ctx.config.oauth.sessionLifetime * 1000).toISOString() })
        .execute();
      await ctx.db.deleteFrom('federation_sessions').where('expires_at', '<', nowIso()).execute();
    });
  }

  /** Consumes the pending request for `state` if this browser session started it with this provider. */
  async #takeRequest(state: string | undefined, session: BrowserSession) {
    if (!state || state.length > 128) return undefined;
    const hash = hashToken(state);
    const row = await this.#ctx.db.selectFrom('federation_requests').selectAll().where('state_hash', '=', hash).executeTakeFirst();
    if (!row || row.session_hash !== session.idHash || row.provider !== this.id) return undefined;
    // Single use: only the request that deletes the row goes on (a replayed callback finds nothing).
    const res = await this.#ctx.db.deleteFrom('federation_requests').where('state_hash', '=', hash).executeTakeFirst();
    if (Number(res.numDeletedRows) !== 1 || row.expires_at < nowIso()) return undefined;
    return row;
  }

  #match(info: UserInfo): { ok: true; user: RegistryUser } | { ok: false; message: string } {
    const registry = this.#ctx.registry;
    if (this.#config.matchBy === 'identity') {
      const issuer = info.issuer ?? '';
      const user = registry.userByIdentity(issuer, info.sub);
      if (user) return { ok: true, user };
      return { ok: false, message: `No Dirigo user is linked to your ${this.label} account (issuer ${issuer}, subject ${info.sub}). Ask your administrator to add it to your user's identities.` };
    }
    if (!info.email) return { ok: false, message: `${this.label} did not tell us your email address, so no Dirigo user can be found for you.` };
    if (this.#config.requireVerifiedEmail && info.claims.email_verified !== true) {
      return { ok: false, message: `${this.label} has not verified your email address ${info.email}, so it cannot identify a Dirigo user.` };
    }
    const user = registry.userByEmail(info.email);
    if (user) return { ok: true, user };
    return { ok: false, message: `No Dirigo user has the email address ${info.email} of your ${this.label} account.` };
  }
}
