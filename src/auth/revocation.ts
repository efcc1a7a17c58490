/**
 * Shared revocation list behind TokenService.revocations: rows in `revoked_tokens` (a token's `jti`, or
 * `grant:<id>` for every token of a grant), mirrored into an in-memory set that each instance refreshes
 * every second, so resource requests never query the database and a revocation reaches every instance
 * within about a second.
 */
import type { Db } from '../kernel/db/database.ts';
import { nowIso } from '../kernel/db/database.ts';
import type { RevocationCheck } from './tokens.ts';

const POLL_MS = 1_000;
/** Rows are read again for this long after they were written, so slow commits are not missed. */
const OVERLAP_MS = 30_000;

export const grantRevocationKey = (grantId: string): string => `grant:${grantId}`;

export class RevocationList implements RevocationCheck {
  readonly #db: Db;
  /** key → expiry (ms). */
  readonly #revoked = new Map<string, number>();
  #lastPoll = 0;
  #timer: NodeJS.Timeout | undefined;
  #polling: Promise<void> | undefined;

  constructor(db: Db) {
    this.#db = db;
  }

  isRevoked(key: string): boolean {
    return this.#revoked.has(key);
  }

  /** Loads every live row, then polls. */
  async start(): Promise<void> {
    const now = nowIso();
    const rows = await this.#db.selectFrom('revoked_tokens').select(['jti', 'expires_at']).where('expires_at', '>', now).execute();
    for (const r of rows) this.#revoked.set(r.jti, Date.parse(r.expires_at));
    this.#lastPoll = Date.now();
    this.#timer = setInterval(() => void this.poll(), POLL_MS);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  async poll(): Promise<void> {
    this.#polling ??= this.#poll().finally(() => (this.#polling = undefined));
    return this.#polling;
  }

  async #poll(): Promise<void> {
    const started = Date.now();
    const since = new Date(this.#lastPoll - OVERLAP_MS).toISOString();
    try {
      const rows = await this.#db.selectFrom('revoked_tokens').select(['jti', 'expires_at']).where('revoked_at', '>=', since).execute();
      for (const r of rows) this.#revoked.set(r.jti, Date.parse(r.expires_at));
      this.#lastPoll = started;
    } catch {
      // The database is briefly unavailable: keep the set and retry on the next tick.
      return;
    }
    for (const [key, exp] of this.#revoked) if (exp < started - 60_000) this.#revoked.delete(key);
  }

  /** Records a revocation (idempotent) and applies it locally at once. */
  async revoke(key: string, expiresAt: Date, db: Db = this.#db): Promise<void> {
    // Concurrent revocations of the same key (a replay racing a reuse) must not fail each other.
    await db
      .insertInto('revoked_tokens')
      .values({ jti: key, expires_at: expiresAt.toISOString(), revoked_at: nowIso() })
      .onConflict((oc) => oc.column('jti').doNothing())
      .execute();
    this.#revoked.set(key, expiresAt.getTime());
  }

  /** Deletes rows whose tokens have expired anyway. */
  async purge(): Promise<void> {
    await this.#db.deleteFrom('revoked_tokens').where('expires_at', '<', new Date(Date.now() - 60_000).toISOString()).execute();
  }
}
