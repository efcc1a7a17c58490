/**
 * Token signing keys, kept in the database so that every instance signs and verifies with the same set.
 *
 * Rollover in three steps, so that resource servers that cache the JWKS (scitokens-cpp for ten minutes)
 * never meet a `kid` they have not seen: a new key is published at once but signs only from its
 * `activates_at`, a configured time later; the key it replaces signs until then and is retired at that
 * moment; a retired key stays published and accepted until the last token it could have signed has
 * expired. Instances reload the set periodically and on an unknown `kid`.
 */
import { createPrivateKey, randomUUID, type JsonWebKey, type KeyObject } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';
import { sql } from 'kysely';
import type { Db } from '../kernel/db/database.ts';
import { dialectOf } from '../kernel/db/dialect.ts';
import { nowIso } from '../kernel/db/database.ts';

/** Advisory lock id serialising the first key's creation across instances (any constant unique to Dirigo). */
const FIRST_KEY_LOCK = 0x44697269;

/** RFC 7518 §3.3 (RS256), §3.4 (ES256); RFC 8037 §3.1 (EdDSA with Ed25519). */
export type SigningAlgorithm = 'EdDSA' | 'ES256' | 'RS256';

/** OpenID Connect Core §15.1: ID tokens are signed RS256, whatever signs access tokens. */
export const ID_TOKEN_ALGORITHM: SigningAlgorithm = 'RS256';

/** A stored public key: always with its key type (what exportJWK wrote). */
type PublicJwk = JWK & { kty: string };

interface LoadedKey {
  kid: string;
  alg: SigningAlgorithm;
  privateKey: KeyObject;
  publicKey: KeyObject;
  publicJwk: PublicJwk;
  createdAt: string;
  /** From when it signs (epoch ms). */
  activatesAt: number;
  /** When a newer key took or takes over (epoch ms); null while none is scheduled. */
  retiredAt: number | null;
}

const RELOAD_INTERVAL_MS = 30_000;
const UNKNOWN_KID_RELOAD_MS = 1_000;

export class KeyStore {
  readonly #db: Db;
  /** Signs access tokens. */
  readonly #algorithm: SigningAlgorithm;
  /** Every algorithm that has a key: the access tokens' and the ID tokens'. */
  readonly #algorithms: SigningAlgorithm[];
  /** How long a retired key must stay published: the longest lifetime of a token it signed. */
  readonly #retentionMs: number;
  /** How long a new key is published before it signs. */
  readonly #prepublicationMs: number;
  #keys: LoadedKey[] = [];
  #loadedAt = 0;
  #loading: Promise<void> | undefined;

  constructor(db: Db, algorithm: SigningAlgorithm, tokenLifetimeSeconds: number, prepublicationSeconds = 0) {
    this.#db = db;
    this.#algorithm = algorithm;
    this.#algorithms = [...new Set([algorithm, ID_TOKEN_ALGORITHM])];
    this.#retentionMs = tokenLifetimeSeconds * 1000;
    this.#prepublicationMs = prepublicationSeconds * 1000;
  }

  /** How long `rotate()` publishes the next key before it signs. */
  get prepublicationSeconds(): number {
    return this.#prepublicationMs / 1000;
  }

  /** Makes sure a signing key exists (first start) and loads the set. */
  async init(): Promise<void> {
    await this.reload();
    if (this.#algorithms.every((alg) => this.#keys.some((k) => k.alg === alg && k.retiredAt === null))) return;
    // Several instances starting together on a fresh database must agree on one first key: the check and
    // the insert run under a PostgreSQL advisory lock (SQLite has one instance, and serialises writers).
    await this.#db.transaction().execute(async (trx) => {
      if (dialectOf(trx) === 'postgres') await sql`select pg_advisory_xact_lock(${FIRST_KEY_LOCK})`.execute(trx);
      // The first key of an algorithm signs at once: no resource server can know an earlier one.
      for (const alg of this.#algorithms) {
        const active = await trx.selectFrom('signing_keys').select('kid').where('alg', '=', alg).where('retired_at', 'is', null).executeTakeFirst();
        if (!active) await this.#insertKey(trx, alg, new Date());
      }
    });
    await this.reload();
  }

  /**
   * Publishes a new signing key that takes over after the pre-publication time (`immediately`: at once,
   * for a compromised key). The keys it replaces sign until then and stay published until their tokens
   * expire.
   * Every algorithm in use rolls over together.
   * @returns the id of the new key that signs access tokens.
   * @example
   *   const kid = await keys.rotate(); // published now, signs after `prepublicationSeconds`
   */
  async rotate(options: { immediately?: boolean } = {}): Promise<string> {
    const activatesAt = new Date(Date.now() + (options.immediately ? 0 : this.#prepublicationMs));
    const kid = await this.#db.transaction().execute(async (trx) => {
      const kids = new Map<SigningAlgorithm, string>();
      for (const alg of this.#algorithms) {
        await trx
          .updateTable('signing_keys')
          .set({ retired_at: activatesAt.toISOString() })
          .where('alg', '=', alg)
          .where((eb) => eb.or([eb('retired_at', 'is', null), eb('retired_at', '>', activatesAt.toISOString())]))
          .execute();
        kids.set(alg, await this.#insertKey(trx, alg, activatesAt));
      }
      return kids.get(this.#algorithm)!;
    });
    await this.purge();
    await this.reload();
    return kid;
  }

  /** Deletes keys whose every token has expired. */
  async purge(): Promise<number> {
    const cutoff = new Date(Date.now() - this.#retentionMs).toISOString();
    const res = await this.#db.deleteFrom('signing_keys').where('retired_at', '<', cutoff).executeTakeFirst();
    return Number(res.numDeletedRows);
  }

  async #insertKey(db: Db, alg: SigningAlgorithm, activatesAt: Date): Promise<string> {
    // RSA keys of 2048 bits (RFC 7518 §3.3 asks at least that); Ed25519 for EdDSA.
    const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true, ...(alg === 'RS256' ? { modulusLength: 2048 } : {}) });
    const kid = randomUUID();
    await db
      .insertInto('signing_keys')
      .values({
        kid,
        alg,
        private_jwk: JSON.stringify(await exportJWK(privateKey)),
        public_jwk: JSON.stringify({ ...(await exportJWK(publicKey)), kid, alg, use: 'sig' }),
        created_at: nowIso(),
        activates_at: activatesAt.toISOString(),
        retired_at: null,
      })
      .execute();
    return kid;
  }

  async reload(): Promise<void> {
    this.#loading ??= this.#load().finally(() => (this.#loading = undefined));
    return this.#loading;
  }

  async #load(): Promise<void> {
    const rows = await this.#db.selectFrom('signing_keys').selectAll().orderBy('created_at', 'desc').execute();
    const keys: LoadedKey[] = [];
    for (const row of rows) {
      const existing = this.#keys.find((k) => k.kid === row.kid);
      const retiredAt = row.retired_at === null ? null : Date.parse(row.retired_at);
      if (existing) {
        keys.push({ ...existing, retiredAt });
        continue;
      }
      const alg = row.alg as SigningAlgorithm;
      const publicJwk = JSON.parse(row.public_jwk) as PublicJwk;
      keys.push({
        kid: row.kid,
        alg,
        // A node:crypto KeyObject: TokenService signs with node:crypto directly.
        privateKey: createPrivateKey({ key: JSON.parse(row.private_jwk) as JsonWebKey, format: 'jwk' }),
        publicKey: (await importJWK(publicJwk, alg)) as unknown as KeyObject,
        publicJwk,
        createdAt: row.created_at,
        activatesAt: Date.parse(row.activates_at ?? row.created_at),
        retiredAt,
      });
    }
    this.#keys = keys;
    this.#loadedAt = Date.now();
  }

  async #fresh(): Promise<void> {
    if (Date.now() - this.#loadedAt > RELOAD_INTERVAL_MS) await this.reload();
  }

  /**
   * The key that signs new tokens now: of the algorithm (the access tokens' by default), the latest to
   * have taken over.
   */
  async signingKey(alg: SigningAlgorithm = this.#algorithm): Promise<{ kid: string; alg: SigningAlgorithm; key: KeyObject }> {
    await this.#fresh();
    const now = Date.now();
    const mine = this.#keys.filter((k) => k.alg === alg);
    const active = mine.filter((k) => k.activatesAt <= now).sort((a, b) => b.activatesAt - a.activatesAt)[0] ?? mine[0];
    if (!active) throw new Error('no signing key; the key store was not initialised');
    return { kid: active.kid, alg: active.alg, key: active.privateKey };
  }

  /** The public key for `kid`, reloading once when another instance may have rotated. */
  async verificationKey(kid: string): Promise<{ alg: SigningAlgorithm; key: KeyObject } | undefined> {
    await this.#fresh();
    let key = this.#keys.find((k) => k.kid === kid);
    if (!key && Date.now() - this.#loadedAt > UNKNOWN_KID_RELOAD_MS) {
      await this.reload();
      key = this.#keys.find((k) => k.kid === kid);
    }
    if (!key || !this.#published(key)) return undefined;
    return { alg: key.alg, key: key.publicKey };
  }

  /** Published from creation (ahead of signing) until the last token it may have signed has expired. */
  #published(key: LoadedKey): boolean {
    return key.retiredAt === null || key.retiredAt + this.#retentionMs > Date.now();
  }

  /** The JWKS document (RFC 7517 §5). */
  async jwks(): Promise<{ keys: PublicJwk[] }> {
    await this.#fresh();
    return { keys: this.#keys.filter((k) => this.#published(k)).map((k) => k.publicJwk) };
  }
}
