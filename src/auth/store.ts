/**
 * Database state of the authorization server, shared by every instance: grants, authorization codes,
 * refresh tokens and device codes. Only SHA-256 hashes of codes and refresh tokens are stored. State
 * changes that race (redeeming a code, rotating a refresh token, issuing a device code's tokens) are
 * conditional updates, so exactly one request wins.
 */
import { createHash, randomBytes, randomInt, randomUUID } from 'node:crypto';
import type { Db } from '../kernel/db/database.ts';
import { nowIso } from '../kernel/db/database.ts';
import type { OAuthCodeTable, OAuthDeviceCodeTable, OAuthGrantTable, OAuthRefreshTokenTable } from './tables.ts';
import { grantRevocationKey, type RevocationList } from './revocation.ts';
import { parseAuthContext, type AuthContext } from './auth-context.ts';

/** SHA-256, base64url: what the tables store instead of the secret value. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('base64url');
}

/** 256 random bits, base64url (RFC 6749 §10.10: guessing must be infeasible). */
export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}

/** RFC 8628 §6.1: letters without vowels (no words) and without look-alikes. */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';

export function generateUserCode(): string {
  let out = '';
  for (let i = 0; i < 8; i++) out += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return out;
}

/** `xxxx-xxxx`, `XXXX XXXX` → `XXXXXXXX`; undefined when it cannot be a user code. */
export function normaliseUserCode(input: string): string | undefined {
  const code = input.toUpperCase().replace(/[\s-]/g, '');
  if (code.length !== 8) return undefined;
  for (const ch of code) if (!USER_CODE_ALPHABET.includes(ch)) return undefined;
  return code;
}

export function formatUserCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

export interface GrantData {
  clientId: string;
  username: string;
  group: string;
  setup: string;
  scope: string;
  /** The sign-in behind it (OpenID Connect); absent for grants without one. */
  authContext?: AuthContext | undefined;
}

export type Grant = OAuthGrantTable;
export type CodeRow = OAuthCodeTable;
export type RefreshRow = OAuthRefreshTokenTable;
export type DeviceRow = OAuthDeviceCodeTable;

/** A grant of the account endpoints: the row, and what its refresh tokens say of it. */
export interface UserGrant {
  grant: Grant;
  /** Whether it holds a live refresh token (else it backs access tokens only, until expiresAt). */
  refreshable: boolean;
  /** When it was last refreshed; null when never. */
  refreshedAt: string | null;
  /** When its last token (refresh token, or the access token of a grant without one) expires. */
  expiresAt: string;
}

export interface StoreLifetimes {
  code: number;
  refresh: number;
  device: number;
  /** Access-token lifetime: how long a revoked grant's tokens must stay on the revocation list. */
  access: number;
}

export class OAuthStore {
  readonly #db: Db;
  readonly #revocations: RevocationList;
  readonly #life: StoreLifetimes;

  constructor(db: Db, revocations: RevocationList, lifetimes: StoreLifetimes) {
    this.#db = db;
    this.#revocations = revocations;
    this.#life = lifetimes;
  }

  get lifetimes(): StoreLifetimes {
    return this.#life;
  }

  // --- authorization codes (RFC 6749 §4.1.2) ---

  async createCode(data: GrantData & { redirectUri: string | null; codeChallenge: string | null; codeChallengeMethod: string | null }): Promise<string> {
    const code = randomToken();
    await this.#db
      .insertInto('oauth_codes')
      .values({
        code_hash: hashToken(code),
        client_id: data.clientId,
        username: data.username,
        group_name: data.group,
        setup: data.setup,
        scope: data.scope,
        redirect_uri: data.redirectUri,
        code_challenge: data.codeChallenge,
        code_challenge_method: data.codeChallengeMethod,
        expires_at: new Date(Date.now() + this.#life.code * 1000).toISOString(),
        used_at: null,
        grant_id: null,
        auth_context: data.authContext ? JSON.stringify(data.authContext) : null,
      })
      .execute();
    return code;
  }

  async findCode(code: string): Promise<CodeRow | undefined> {
    return this.#db.selectFrom('oauth_codes').selectAll().where('code_hash', '=', hashToken(code)).executeTakeFirst();
  }

  /**
   * Redeems a code once: creates its grant and first refresh token. Returns undefined when another request
   * redeemed it first (a replay; the caller revokes the grant, RFC 6749 §4.1.2).
   */
  async redeemCode(row: CodeRow, withRefresh: boolean): Promise<{ grant: Grant; refreshToken: string | undefined } | undefined> {
    return this.#db.transaction().execute(async (trx) => {
      const now = nowIso();
      const res = await trx.updateTable('oauth_codes').set({ used_at: now }).where('code_hash', '=', row.code_hash).where('used_at', 'is', null).executeTakeFirst();
      if (Number(res.numUpdatedRows) !== 1) return undefined;
      const grant = await this.#insertGrant(trx, { clientId: row.client_id, username: row.username, group: row.group_name, setup: row.setup, scope: row.scope, authContext: parseAuthContext(row.auth_context) });
      await trx.updateTable('oauth_codes').set({ grant_id: grant.id }).where('code_hash', '=', row.code_hash).execute();
      const refreshToken = withRefresh ? await this.#insertRefresh(trx, grant) : undefined;
      return { grant, refreshToken };
    });
  }

  async #insertGrant(db: Db, data: GrantData): Promise<Grant> {
    const grant: Grant = {
      id: randomUUID(),
      client_id: data.clientId,
      username: data.username,
      group_name: data.group,
      setup: data.setup,
      scope: data.scope,
      created_at: nowIso(),
      revoked_at: null,
      auth_context: data.authContext ? JSON.stringify(data.authContext) : null,
    };
    await db.insertInto('oauth_grants').values(grant).execute();
    return grant;
  }

  async #insertRefresh(db: Db, grant: Grant): Promise<string> {
    const token = randomToken();
    await db
      .insertInto('oauth_refresh_tokens')
      .values({
        token_hash: hashToken(token),
        grant_id: grant.id,
        client_id: grant.client_id,
        expires_at: new Date(Date.now() + this.#life.refresh * 1000).toISOString(),
        created_at: nowIso(),
        used_at: null,
        revoked_at: null,
      })
      .execute();
    return token;
  }

  async grant(id: string): Promise<Grant | undefined> {
    return this.#db.selectFrom('oauth_grants').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /**
   * Revokes a grant: its refresh tokens stop working and its access tokens go on the shared revocation
   * list (code replay, refresh-token reuse, RFC 7009 §2.1 revocation of a refresh token).
   */
  async revokeGrant(grantId: string): Promise<void> {
    const now = nowIso();
    await this.#db.transaction().execute(async (trx) => {
      await trx.updateTable('oauth_grants').set({ revoked_at: now }).where('id', '=', grantId).where('revoked_at', 'is', null).execute();
      await trx.updateTable('oauth_refresh_tokens').set({ revoked_at: now }).where('grant_id', '=', grantId).where('revoked_at', 'is', null).execute();
      await this.#revocations.revoke(grantRevocationKey(grantId), new Date(Date.now() + (this.#life.access + 60) * 1000), trx);
    });
  }

  /**
   * The grants of `username` that still back a token, newest first: not revoked, and holding a live refresh
   * token or younger than an access token's lifetime. With each, its live refresh token's expiry and when
   * it was last refreshed (null when never).
   */
  async grantsOf(username: string): Promise<UserGrant[]> {
    const grants = await this.#db.selectFrom('oauth_grants').selectAll().where('username', '=', username).where('revoked_at', 'is', null).orderBy('created_at', 'desc').execute();
    if (grants.length === 0) return [];
    const family = await this.#db
      .selectFrom('oauth_refresh_tokens')
      .select(['grant_id', 'created_at', 'expires_at', 'used_at'])
      .where('grant_id', 'in', this.#db.selectFrom('oauth_grants').select('id').where('username', '=', username).where('revoked_at', 'is', null))
      .where('revoked_at', 'is', null)
      .execute();
    const now = nowIso();
    const accessEnds = (g: Grant) => new Date(Date.parse(g.created_at) + this.#life.access * 1000).toISOString();
    const out: UserGrant[] = [];
    for (const grant of grants) {
      const rows = family.filter((r) => r.grant_id === grant.id);
      const live = rows.find((r) => r.used_at === null && r.expires_at > now);
      if (!live && accessEnds(grant) <= now) continue;
      // Each refresh marks the old token used and issues the live one in the same transaction; used tokens
      // are purged once expired, and then a live token much younger than the grant still shows a refresh.
      const refreshed = live && (rows.some((r) => r.used_at !== null) || Date.parse(live.created_at) - Date.parse(grant.created_at) > 60_000);
      out.push({ grant, refreshable: live !== undefined, refreshedAt: refreshed ? live.created_at : null, expiresAt: live?.expires_at ?? accessEnds(grant) });
    }
    return out;
  }

  /** Revokes the grant `grantId` of `username` (revokeGrant); false when `username` has no such unrevoked grant. */
  async revokeGrantOf(username: string, grantId: string): Promise<boolean> {
    const grant = await this.grant(grantId);
    if (!grant || grant.username !== username || grant.revoked_at !== null) return false;
    await this.revokeGrant(grantId);
    return true;
  }

  /** The live grants of `clientId` that came from the sign-in `sid` (RP-initiated logout ends them). */
  async grantsOfSignIn(clientId: string, sid: string): Promise<string[]> {
    const rows = await this.#db.selectFrom('oauth_grants').select(['id', 'auth_context']).where('client_id', '=', clientId).where('revoked_at', 'is', null).where('auth_context', 'is not', null).execute();
    return rows.filter((r) => parseAuthContext(r.auth_context)?.sid === sid).map((r) => r.id);
  }

  // --- refresh tokens (RFC 6749 §6, RFC 9700 §4.14.2 rotation) ---

  async findRefresh(token: string): Promise<RefreshRow | undefined> {
    return this.#db.selectFrom('oauth_refresh_tokens').selectAll().where('token_hash', '=', hashToken(token)).executeTakeFirst();
  }

  /** Marks `row` used and issues its successor; undefined when it was already used (reuse). */
  async rotateRefresh(row: RefreshRow, grant: Grant): Promise<string | undefined> {
    return this.#db.transaction().execute(async (trx) => {
      const res = await trx
        .updateTable('oauth_refresh_tokens')
        .set({ used_at: nowIso() })
        .where('token_hash', '=', row.token_hash)
        .where('used_at', 'is', null)
        .where('revoked_at', 'is', null)
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) !== 1) return undefined;
      return this.#insertRefresh(trx, grant);
    });
  }

  // --- device codes (RFC 8628) ---

  async createDeviceCode(clientId: string, scope: string, interval: number): Promise<{ deviceCode: string; userCode: string }> {
    for (let attempt = 0; ; attempt++) {
      const deviceCode = randomToken();
      const userCode = generateUserCode();
      try {
        await this.#db
          .insertInto('oauth_device_codes')
          .values({
            device_code_hash: hashToken(deviceCode),
            user_code: userCode,
            client_id: clientId,
            scope,
            status: 'pending',
            username: null,
            group_name: null,
            setup: null,
            interval_seconds: interval,
            auth_context: null,
            last_polled_at: null,
            expires_at: new Date(Date.now() + this.#life.device * 1000).toISOString(),
            created_at: nowIso(),
          })
          .execute();
        return { deviceCode, userCode };
      } catch (err) {
        // A user-code collision (unique index): purge expired codes and draw again.
        if (attempt >= 3) throw err;
        await this.#db.deleteFrom('oauth_device_codes').where('expires_at', '<', nowIso()).execute();
      }
    }
  }

  async findDeviceCode(deviceCode: string): Promise<DeviceRow | undefined> {
    return this.#db.selectFrom('oauth_device_codes').selectAll().where('device_code_hash', '=', hashToken(deviceCode)).executeTakeFirst();
  }

  async findUserCode(userCode: string): Promise<DeviceRow | undefined> {
    return this.#db.selectFrom('oauth_device_codes').selectAll().where('user_code', '=', userCode).executeTakeFirst();
  }

  /** Records a poll; `slowDown` raises the interval by 5 s for this and later polls (RFC 8628 §3.5). */
  async recordPoll(row: DeviceRow, slowDown: boolean): Promise<void> {
    await this.#db
      .updateTable('oauth_device_codes')
      .set({ last_polled_at: nowIso(), ...(slowDown ? { interval_seconds: row.interval_seconds + 5 } : {}) })
      .where('device_code_hash', '=', row.device_code_hash)
      .execute();
  }

  /** The user's decision on the verification page; only a pending, unexpired code changes. */
  async decideDeviceCode(
    userCode: string,
    decision: { approved: true; username: string; group: string; setup: string; authContext: AuthContext } | { approved: false },
  ): Promise<boolean> {
    const res = await this.#db
      .updateTable('oauth_device_codes')
      .set(
        decision.approved
          ? { status: 'approved', username: decision.username, group_name: decision.group, setup: decision.setup, auth_context: JSON.stringify(decision.authContext) }
          : { status: 'denied' },
      )
      .where('user_code', '=', userCode)
      .where('status', '=', 'pending')
      .where('expires_at', '>', nowIso())
      .executeTakeFirst();
    return Number(res.numUpdatedRows) === 1;
  }

  /** Issues an approved device code's grant once; undefined when another poll got it first. */
  async redeemDeviceCode(row: DeviceRow, withRefresh: boolean): Promise<{ grant: Grant; refreshToken: string | undefined } | undefined> {
    return this.#db.transaction().execute(async (trx) => {
      const res = await trx
        .updateTable('oauth_device_codes')
        .set({ status: 'issued' })
        .where('device_code_hash', '=', row.device_code_hash)
        .where('status', '=', 'approved')
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) !== 1) return undefined;
      const grant = await this.#insertGrant(trx, {
        clientId: row.client_id,
        username: row.username!,
        group: row.group_name!,
        setup: row.setup!,
        scope: row.scope,
        authContext: parseAuthContext(row.auth_context),
      });
      const refreshToken = withRefresh ? await this.#insertRefresh(trx, grant) : undefined;
      return { grant, refreshToken };
    });
  }

  /** Deletes expired codes, device codes and refresh tokens. */
  async purge(): Promise<void> {
    const now = nowIso();
    await this.#db.deleteFrom('oauth_codes').where('expires_at', '<', new Date(Date.now() - 3600_000).toISOString()).execute();
    await this.#db.deleteFrom('oauth_device_codes').where('expires_at', '<', now).execute();
    await this.#db.deleteFrom('oauth_refresh_tokens').where('expires_at', '<', now).execute();
    // A grant without refresh tokens only backs access tokens, which expire within their lifetime.
    const idle = new Date(Date.now() - (this.#life.access + 3600) * 1000).toISOString();
    await this.#db
      .deleteFrom('oauth_grants')
      .where('created_at', '<', idle)
      .where(({ not, exists, selectFrom }) => not(exists(selectFrom('oauth_refresh_tokens').select('token_hash').whereRef('oauth_refresh_tokens.grant_id', '=', 'oauth_grants.id'))))
      .execute();
  }
}
