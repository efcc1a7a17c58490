/**
 * Joining through an upstream provider (docs/registry.md "Joining"): an account the provider verified but
 * no user matches is, by `identityProviders[].registration`, refused, offered the "Request registration"
 * form (a request a manager of registrationGroup decides), or registered at once. What the ID token said
 * stays server-side (federation_registrations, bound to the browser session) between the callback and the
 * form, so the form can change only the proposed name, the display name and the message.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { UserInfo } from '@dirigo/idp-client';
import type { AppContext } from '../kernel/context.ts';
import { nowIso } from '../kernel/db/database.ts';
import { DirigoError } from '../kernel/errors.ts';
import type { BrowserSession } from '../auth/index.ts';
import { checkedSession, errorPage, esc, field, sendPage } from '../auth/index.ts';
import type { IdentityProviderConfig } from './config-schema.ts';

/** The form must be sent within this. */
const FORM_LIFETIME_MS = 30 * 60_000;

export interface UpstreamAccount {
  issuer: string;
  subject: string;
  email: string | undefined;
  displayName: string | undefined;
}

/** Who the verified ID token says this is; the address only when the provider says it is verified. */
export function upstreamAccount(info: UserInfo): UpstreamAccount {
  const verified = info.claims.email_verified === true;
  return { issuer: info.issuer ?? '', subject: info.sub, email: verified && info.email ? info.email : undefined, displayName: info.name ?? undefined };
}

/** The names to propose, best first: the provider's user name, then the address's local part. */
export function nameCandidates(info: UserInfo, account: UpstreamAccount): (string | undefined)[] {
  return [info.username ?? undefined, account.email?.split('@')[0]];
}

const hidden = (name: string, value: string) => `<input type="hidden" name="${esc(name)}" value="${esc(value)}">`;

interface FormView {
  action: string;
  csrf: string;
  interaction: string;
  label: string;
  group: string;
  name: string;
  displayName: string;
  email: string | undefined;
  message: string;
  error?: string;
}

function formBody(v: FormView): string {
  return [
    `<p>Your ${esc(v.label)} account is not yet a Dirigo user. You may ask to join; a manager of the group <strong>${esc(v.group)}</strong> decides.</p>`,
    v.error ? `<p class="error" role="alert">${esc(v.error)}</p>` : '',
    `<form method="post" action="${esc(v.action)}">${hidden('csrf', v.csrf)}${hidden('interaction', v.interaction)}`,
    `<label for="user">User name</label><input id="user" name="user" required maxlength="64" pattern="[A-Za-z0-9_.\\-]{1,64}" autocomplete="username" value="${esc(v.name)}">`,
    '<p><small>Letters, digits, _ . - (at most 64).</small></p>',
    `<label for="display_name">Display name</label><input id="display_name" name="display_name" maxlength="256" autocomplete="name" value="${esc(v.displayName)}">`,
    `<p><small>Email: ${v.email ? esc(v.email) : 'none (the provider gave no verified address)'}</small></p>`,
    `<label for="message">Message for the managers</label><input id="message" name="message" maxlength="1024" value="${esc(v.message)}">`,
    '<button type="submit">Request registration</button></form>',
  ].join('\n');
}

export function pendingPage(reply: FastifyReply, id: number, user: string, group: string): FastifyReply {
  return sendPage(
    reply,
    'Registration requested',
    `<p role="status">Your request (number ${id}) to join as <strong>${esc(user)}</strong> in <strong>${esc(group)}</strong> is pending. A manager of the group decides; once it is approved, sign in again.</p>`,
  );
}

export class RegistrationDesk {
  readonly #ctx: AppContext;
  readonly #config: IdentityProviderConfig;
  readonly action: string;

  constructor(ctx: AppContext, config: IdentityProviderConfig) {
    this.#ctx = ctx;
    this.#config = config;
    this.action = `/oauth2/federation/${config.name}/register`;
  }

  get #group(): string {
    return this.#config.registrationGroup ?? '';
  }

  /** registration: auto. The new user's name, or an error page when it cannot be created. */
  async registerNow(info: UserInfo): Promise<string> {
    const account = upstreamAccount(info);
    const requests = this.#ctx.joining.requests;
    const user = await requests.proposeName(nameCandidates(info, account));
    await requests.registerNow({ user, group: this.#group, provider: this.#config.name, issuer: account.issuer, subject: account.subject, email: account.email, displayName: account.displayName });
    return user;
  }

  /** registration: approval. The form (or, when this account already asked, that its request is pending). */
  async offer(reply: FastifyReply, session: BrowserSession, interactionId: string, info: UserInfo): Promise<FastifyReply> {
    const account = upstreamAccount(info);
    const requests = this.#ctx.joining.requests;
    const pending = await requests.pendingRegistration(account.issuer, account.subject);
    if (pending) return pendingPage(reply, pending.id, pending.user, pending.group);
    const name = await requests.proposeName(nameCandidates(info, account));
    const db = this.#ctx.db;
    await db.deleteFrom('federation_registrations').where((eb) => eb.or([eb('session_hash', '=', session.idHash), eb('expires_at', '<', nowIso())])).execute();
    await db
      .insertInto('federation_registrations')
      .values({
        session_hash: session.idHash,
        provider: this.#config.name,
        interaction_id: interactionId,
        issuer: account.issuer,
        subject: account.subject,
        email: account.email ?? null,
        display_name: account.displayName?.slice(0, 256) ?? null,
        proposed_name: name,
        expires_at: new Date(Date.now() + FORM_LIFETIME_MS).toISOString(),
      })
      .execute();
    return this.#form(reply, session, interactionId, { name, displayName: account.displayName ?? '', email: account.email, message: '' });
  }

  #form(reply: FastifyReply, session: BrowserSession, interaction: string, v: Pick<FormView, 'name' | 'displayName' | 'email' | 'message' | 'error'>, status = 200): FastifyReply {
    return sendPage(reply, 'Request registration', formBody({ ...v, action: this.action, csrf: session.csrf, interaction, label: this.#config.displayName, group: this.#group }), { status });
  }

  /** POST of the form: the request is created (and announced), or the form comes back naming the problem. */
  async submit(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const session = await checkedSession(this.#ctx, request, reply);
    if (!session) return reply;
    const db = this.#ctx.db;
    const row = await db.selectFrom('federation_registrations').selectAll().where('session_hash', '=', session.idHash).executeTakeFirst();
    if (!row || row.provider !== this.#config.name || row.expires_at < nowIso()) {
      return errorPage(reply, 400, 'Registration expired', `No registration is in progress in this browser, or it expired. Sign in with ${this.#config.displayName} again.`);
    }
    const user = (field(request.body, 'user') ?? '').trim();
    const displayName = (field(request.body, 'display_name') ?? '').trim();
    const message = (field(request.body, 'message') ?? '').trim();
    const view = { name: user, displayName, email: row.email ?? undefined, message };
    try {
      const created = await this.#ctx.joining.requests.requestRegistration({
        user,
        group: this.#group,
        provider: this.#config.name,
        issuer: row.issuer,
        subject: row.subject,
        email: row.email ?? undefined,
        displayName: displayName || undefined,
        message: message || undefined,
      });
      await db.deleteFrom('federation_registrations').where('session_hash', '=', session.idHash).execute();
      return pendingPage(reply, created.id, created.user, created.group);
    } catch (err) {
      if (err instanceof DirigoError && err.status < 500) return this.#form(reply, session, row.interaction_id, { ...view, error: err.message }, err.status);
      throw err;
    }
  }
}
