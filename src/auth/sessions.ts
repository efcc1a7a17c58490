/**
 * Browser sessions for the login, consent and device pages: a random cookie value
 * (`__Host-` prefix: Secure, Path=/, no Domain), HttpOnly, SameSite=Lax; the database keeps its SHA-256
 * and an anti-CSRF token that every form must echo. Signing in replaces the session id (fixation).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Db } from '../kernel/db/database.ts';
import { nowIso } from '../kernel/db/database.ts';
import { hashToken, randomToken } from './store.ts';
import type { OAuthSessionTable } from './tables.ts';

export const SESSION_COOKIE = '__Host-dirigo-session';
const ANONYMOUS_LIFETIME_S = 3600;

export interface BrowserSession {
  idHash: string;
  csrf: string;
  username: string | null;
  authMethod: string | null;
  authTime: string | null;
}

function toSession(row: OAuthSessionTable): BrowserSession {
  return { idHash: row.id_hash, csrf: row.csrf, username: row.username, authMethod: row.auth_method, authTime: row.auth_time };
}

/**
 * The public id of a browser session: the `sid` of its ID tokens (OpenID Connect Front-Channel Logout
 * §2.1) and of the account endpoints. A digest of the stored hash, never the cookie or its hash.
 */
export function sessionId(idHash: string): string {
  return createHash('sha256').update(`sid:${idHash}`).digest('base64url').slice(0, 32);
}

/** A signed-in session as the account endpoints show it. */
export interface UserSession {
  id: string;
  method: string;
  signedInAt: string;
  expiresAt: string;
}

/** The value of cookie `name` in the request, if any. */
export function readCookie(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

function setCookie(reply: FastifyReply, value: string, maxAge: number): void {
  reply.header('set-cookie', `${SESSION_COOKIE}=${value}; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=${maxAge}`);
}

/** Constant-time comparison of a submitted CSRF token with the session's. */
export function csrfMatches(session: BrowserSession, submitted: unknown): boolean {
  if (typeof submitted !== 'string') return false;
  const a = Buffer.from(session.csrf);
  const b = Buffer.from(submitted);
  return a.length === b.length && timingSafeEqual(a, b);
}

export class SessionStore {
  readonly #db: Db;
  readonly #lifetime: number;
  /** Why a signed-in user may no longer use their session (auth/lifecycle.ts); installed by OAuthServices.start. */
  barred: (username: string) => string | undefined = () => undefined;

  constructor(db: Db, lifetimeSeconds: number) {
    this.#db = db;
    this.#lifetime = lifetimeSeconds;
  }

  /** The request's live session, or undefined. */
  async current(request: FastifyRequest): Promise<BrowserSession | undefined> {
    const value = readCookie(request, SESSION_COOKIE);
    if (!value || value.length > 100) return undefined;
    const row = await this.#db.selectFrom('oauth_sessions').selectAll().where('id_hash', '=', hashToken(value)).executeTakeFirst();
    if (!row || row.expires_at < nowIso()) return undefined;
    // A suspended, expired or removed user's browser is signed out at once.
    if (row.username !== null && this.barred(row.username) !== undefined) return undefined;
    return toSession(row);
  }

  /** The live session, or a new anonymous one (with its cookie set on the reply). */
  async ensure(request: FastifyRequest, reply: FastifyReply): Promise<BrowserSession> {
    return (await this.current(request)) ?? this.#create(reply, null, null, ANONYMOUS_LIFETIME_S);
  }

  async #create(reply: FastifyReply, username: string | null, method: string | null, lifetime: number): Promise<BrowserSession> {
    const value = randomToken();
    const row: OAuthSessionTable = {
      id_hash: hashToken(value),
      csrf: randomToken(),
      username,
      auth_method: method,
      auth_time: username ? nowIso() : null,
      created_at: nowIso(),
      expires_at: new Date(Date.now() + lifetime * 1000).toISOString(),
    };
    await this.#db.insertInto('oauth_sessions').values(row).execute();
    setCookie(reply, value, lifetime);
    return toSession(row);
  }

  /**
   * Signs the browser in: a new session id and CSRF token replace the old ones. Pending interactions move
   * to the new session.
   */
  async signIn(reply: FastifyReply, old: BrowserSession, username: string, method: string): Promise<BrowserSession> {
    const fresh = await this.#create(reply, username, method, this.#lifetime);
    await this.#db.updateTable('oauth_interactions').set({ session_hash: fresh.idHash }).where('session_hash', '=', old.idHash).execute();
    await this.#db.deleteFrom('oauth_sessions').where('id_hash', '=', old.idHash).execute();
    return fresh;
  }

  async signOut(reply: FastifyReply, session: BrowserSession): Promise<void> {
    await this.#db.deleteFrom('oauth_sessions').where('id_hash', '=', session.idHash).execute();
    setCookie(reply, '', 0);
  }

  /** The live signed-in sessions of `username`, newest sign-in first. */
  async sessionsOf(username: string): Promise<UserSession[]> {
    const rows = await this.#db
      .selectFrom('oauth_sessions')
      .select(['id_hash', 'auth_method', 'auth_time', 'created_at', 'expires_at'])
      .where('username', '=', username)
      .where('expires_at', '>', nowIso())
      .orderBy('created_at', 'desc')
      .execute();
    return rows.map((r) => ({ id: sessionId(r.id_hash), method: r.auth_method ?? 'unknown', signedInAt: r.auth_time ?? r.created_at, expiresAt: r.expires_at }));
  }

  /** Ends the session `id` (sessionId) of `username`: its cookie stops working. False when there is none. */
  async endSessionOf(username: string, id: string): Promise<boolean> {
    const rows = await this.#db.selectFrom('oauth_sessions').select('id_hash').where('username', '=', username).where('expires_at', '>', nowIso()).execute();
    const row = rows.find((r) => sessionId(r.id_hash) === id);
    if (!row) return false;
    const res = await this.#db.deleteFrom('oauth_sessions').where('id_hash', '=', row.id_hash).executeTakeFirst();
    return Number(res.numDeletedRows) === 1;
  }

  // --- pending interactions (an authorization request or device approval waiting for login/consent) ---

  async createInteraction(session: BrowserSession, kind: 'authorize' | 'device', payload: unknown): Promise<string> {
    const id = randomToken();
    await this.#db
      .insertInto('oauth_interactions')
      .values({ id, session_hash: session.idHash, kind, payload: JSON.stringify(payload), expires_at: new Date(Date.now() + 600_000).toISOString() })
      .execute();
    return id;
  }

  /** The interaction if it belongs to `session` and is still live. */
  async interaction<T>(session: BrowserSession, id: string): Promise<{ kind: 'authorize' | 'device'; payload: T } | undefined> {
    const row = await this.#db.selectFrom('oauth_interactions').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row || row.session_hash !== session.idHash || row.expires_at < nowIso()) return undefined;
    return { kind: row.kind as 'authorize' | 'device', payload: JSON.parse(row.payload) as T };
  }

  /** Consumes the interaction; false when it was already finished (double submit). */
  async finishInteraction(id: string): Promise<boolean> {
    const res = await this.#db.deleteFrom('oauth_interactions').where('id', '=', id).executeTakeFirst();
    return Number(res.numDeletedRows) === 1;
  }

  async purge(): Promise<void> {
    const now = nowIso();
    await this.#db.deleteFrom('oauth_sessions').where('expires_at', '<', now).execute();
    await this.#db.deleteFrom('oauth_interactions').where('expires_at', '<', now).execute();
  }
}
